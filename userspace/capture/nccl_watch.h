// The NCCL stall watch: from the NCCL calls of every process (in ring
// order) and the calls entered but not returned (BPF's outer_inflight map),
// finds the collectives a communicator is stuck on: entered by some ranks
// and not by others seen on this host for longer than the threshold (kind
// "missing"; a rank never seen here is "unseen", not missing: another
// host's), or entered by every rank and not returned from by some (kind
// "not_returned"). A communicator all of whose ranks exited or destroyed it
// is forgotten.
// Ranks are matched by the communicator's id hash (decode/nccl_record.h)
// and the collectives' sequence numbers. Each stall is reported once.
// Runs on the polling thread; no I/O.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "decode/nccl_record.h"
#include "events.h"
#include "store/nccl_rows.h"

namespace gpuobs {

class NcclWatch {
 public:
  explicit NcclWatch(int64_t threshold_ns) : threshold_ns_(threshold_ns) {}

  // A returned (or entry-only) NCCL call, in ring order.
  void on_call(const ApiCallEvent& e, const ApiSpec& spec);
  // The process ended: its ranks are "exited" from now on.
  void on_exit(uint32_t tgid);
  // Whether any communicator of 2 or more ranks is known (else check() has
  // nothing to do and the in-flight map need not be read).
  bool watching() const { return !comms_.empty(); }
  // The stalls at now_ns (CLOCK_MONOTONIC) not reported before; inflight:
  // the NCCL entries of call_inflight (Engine::inflight_calls_between).
  std::vector<NcclStall> check(int64_t now_ns, std::span<const gpuobs_api_call> inflight);
  uint64_t stalls_found() const { return stalls_found_; }

 private:
  struct Rank {
    uint32_t tgid = 0;
    uint64_t comm = 0;     // the handle in that process
    int64_t last_seq = 0;  // the last collective it entered and returned from
    int64_t last_ts = 0;   // its entry time
    std::string last_api;
    bool exited = false;
    bool gone = false;  // exited, or destroyed its communicator
  };
  struct Comm {
    std::optional<int64_t> nranks;
    std::map<int64_t, Rank> ranks;           // by rank
    std::map<int64_t, int64_t> first_entry;  // seq -> the earliest entry seen (pruned)
    std::map<int64_t, std::string> op_of;    // seq -> op (pruned with first_entry)
  };
  void prune(Comm& c);
  void forget_if_gone(uint64_t hash);

  int64_t threshold_ns_;
  NcclComms handles_;                                              // (tgid, handle) -> identity, seq
  std::map<uint64_t, Comm> comms_;                                 // by id hash
  std::set<std::tuple<uint64_t, int64_t, std::string>> reported_;  // (comm, seq, kind)
  uint64_t stalls_found_ = 0;
};

}  // namespace gpuobs
