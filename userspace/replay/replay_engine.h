// The replay's state machine (private to userspace/replay): queues with vector
// clocks, events, the host clock, live allocations and the hazard detectors.
// docs/replay.md states the model this implements.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <vector>

#include "replay/replay_input.h"
#include "replay/replay_model.h"

namespace gpuobs::replay::detail {

// A vector clock over one process's queues, indexed by the queue's local
// index in its process (a process has few queues): entry i = the highest seq
// of queue i known complete-before / ordered-before.
using Clock = std::vector<int64_t>;
void merge(Clock& into, const Clock& from);
inline int64_t at(const Clock& c, size_t i) { return i < c.size() ? c[i] : 0; }

struct QueueState {
  size_t index = 0;  // into Result::queues (Queue::id - 1)
  size_t local = 0;  // index in its process's clocks
  Clock clock;
  int64_t lb = 0;  // lower bound on when the queue's next op can start
  int64_t seq = 0;
  int64_t last_op = 0;  // Op::id of the newest op (0: none)
  bool legacy = false;
  bool blocking = true;  // synchronizes with the legacy default stream
  bool destroyed = false;
  bool retired = false;        // destroyed and every op known complete: off ProcessState::active
  bool capturing = false;      // between capture_begin and capture_end: ops go into a graph, not the queue
  size_t capture_origin = 0;   // while capturing: the queue whose capture_begin started it (itself, or
                               // the origin of a captured event this queue waited on: a fork)
  std::vector<size_t> forked;  // on an origin: the queues its capture forked into, released at capture_end
};

struct EventState {
  bool recorded = false;
  Clock clock;
  int64_t lb = 0;
  int64_t record_op = 0;
  // Its last record happened while its stream was being captured: a graph
  // node, not a record on the queue. The origin queue of that capture.
  std::optional<size_t> captured_by;
};

// One operation's memory access, remembered per allocation and queue.
struct Access {
  int64_t op = 0;    // Op::id
  size_t queue = 0;  // QueueState index
  int64_t seq = 0;
  uint64_t lo = 0, hi = 0;  // [lo, hi)
};

struct Allocation {
  int64_t row = 0;  // memory_ops.id of the alloc
  uint64_t address = 0, bytes = 0;
  bool host = false;            // pinned host memory (kind host)
  std::vector<Access> pending;  // ops naming it, not yet known complete
  size_t prune_at = 64;         // prune proven ones when pending grows past this; then twice the survivors
  std::map<size_t, Access> last_write, last_read;  // by QueueState index
};

// Launches each followed by a host sync, per thread (hazard 5).
struct LaunchRun {
  int64_t count = 0;  // launches in the run that a sync followed
  int64_t first_op = 0, last_op = 0, pending_op = 0;
  bool pending_synced = true;
  const Call* first_sync = nullptr;
};

struct ProcessState {
  std::vector<size_t> queues;  // QueueState index by local index
  // Queues not retired: what the legacy stream's implicit sync and a context
  // sync must look at (a loop of create/launch/sync/destroy stays linear).
  std::vector<size_t> active;
  std::optional<size_t> legacy;
  std::map<uint32_t, size_t> per_thread;  // tid -> QueueState index
  std::map<uint64_t, size_t> handles;     // stream handle -> its current queue
  std::map<uint64_t, EventState> events;
  Clock host;                           // everything an observation has proven complete
  std::map<uint64_t, Allocation> live;  // by address
  std::map<uint32_t, LaunchRun> runs;   // by tid
};

// An observation waiting for its return before its proof reaches the host clock.
struct PendingProof {
  int64_t end_ns;
  int64_t observation;  // Observation::id: ties in end_ns keep entry order
  int64_t process_id;
  Clock frontier;
  bool operator>(const PendingProof& o) const {
    return end_ns != o.end_ns ? end_ns > o.end_ns : observation > o.observation;
  }
};

// (queue, seq) that an observation proves complete: what the window sweep reads.
struct Cover {
  size_t queue;
  int64_t seq;
  size_t observation;  // index in Result::observations
};

class Engine {
 public:
  explicit Engine(const Input& in) : in_(in) {}
  replay::Result run();

 private:
  // replay_engine.cpp
  void step(const Call& c);
  void apply_proofs(int64_t until_ns);
  ProcessState& process(const Call& c);
  std::optional<size_t> find_queue(ProcessState& p, const Call& c, uint64_t handle, bool create);
  size_t new_queue(ProcessState& p, const Call& c, const char* kind, uint64_t handle);
  Op& enqueue(ProcessState& p, size_t q, const Call& c, const char* kind, const EventState* wait);
  std::optional<size_t> op_queue(ProcessState& p, const Call& c);
  void observe(ProcessState& p, const Call& c, const char* kind, std::optional<size_t> q, const Clock* frontier);
  void on_stream_op(ProcessState& p, const Call& c);
  // on_stream_op's parts: queries (proofs of completion), stream lifetime,
  // event records and waits, stream capture.
  void on_query(ProcessState& p, const Call& c, const std::string& op);
  void on_stream_lifetime(ProcessState& p, const Call& c, const std::string& op);
  void on_event_record(ProcessState& p, const Call& c);
  void on_wait_event(ProcessState& p, const Call& c);
  void on_capture(ProcessState& p, const Call& c, bool begin);
  void on_sync(ProcessState& p, const Call& c);
  void on_copy(ProcessState& p, const Call& c);
  void on_memory(ProcessState& p, const Call& c);
  void host_synced(ProcessState& p, const Call& c);
  void on_launch_for_runs(ProcessState& p, const Call& c, int64_t op);
  void end_run(const Call& sync_owner, LaunchRun& r, int64_t process_id, uint32_t tid);
  void retire_done(ProcessState& p);
  Hazard& hazard(const char* kind, const Call& c);
  std::string stream_label(size_t q) const;
  const std::string& s(uint32_t i) const { return in_.strings[i]; }

  // replay_memory.cpp: hazards 3, 4 and 6.
  Allocation* find_allocation(ProcessState& p, uint64_t address);
  void memory_access(ProcessState& p, const Call& c, const Op& op);
  void check_free(ProcessState& p, const Call& c, const Op* free_op);
  void pageable_check(ProcessState& p, const Call& c, const Op& op);

  // replay_windows.cpp
  void windows_and_depth();
  // replay_idle.cpp: idle gaps per queue and process (after the windows).
  void idle_time();

  const Input& in_;
  replay::Result r_;
  std::vector<QueueState> qs_;
  std::map<int64_t, ProcessState> procs_;
  std::priority_queue<PendingProof, std::vector<PendingProof>, std::greater<>> proofs_;
  std::vector<Cover> covers_;
  std::vector<const Call*> op_calls_;  // by Op::id - 1: the call that enqueued it
};

}  // namespace gpuobs::replay::detail
