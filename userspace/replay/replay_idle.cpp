// Where each queue, and each process's GPU work as a whole, sat idle, and why
// (docs/replay.md, "Idle time"). Runs after the windows: a work op is busy over
// its measured GPU interval, else over its window.
#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

#include "replay/replay_engine.h"

namespace gpuobs::replay::detail {
namespace {

bool is_work(const std::string& kind) {
  return kind == "launch" || kind == "copy" || kind == "memset" || kind == "host_func" || kind == "graph_launch";
}

struct Busy {
  int64_t start = 0, end = 0;
  size_t op = 0;  // index in Result::ops
  bool measured = false;
};

using ThreadKey = std::pair<int64_t, uint32_t>;  // (process_id, tid)

// Per thread: the merged intervals it spent inside a blocking call, and the
// entries of its calls (ops and observations) with their stacks.
struct Threads {
  std::map<ThreadKey, std::vector<std::pair<int64_t, int64_t>>> blocked;  // sorted, disjoint
  std::map<ThreadKey, std::vector<std::pair<int64_t, int64_t>>> calls;    // (entry, stack), by entry (stable)
};

Threads threads_of(const Result& r) {
  Threads t;
  for (const Op& o : r.ops)
    t.calls[{r.queues[o.queue_id - 1].process_id, o.tid}].emplace_back(o.enqueue_ns, o.stack_id);
  for (const Observation& o : r.observations) {
    t.calls[{o.process_id, o.tid}].emplace_back(o.start_ns, o.stack_id);
    if (o.blocked_ns > 0) t.blocked[{o.process_id, o.tid}].emplace_back(o.start_ns, o.end_ns);
  }
  for (auto& [k, v] : t.calls)
    std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [k, v] : t.blocked) {
    std::sort(v.begin(), v.end());
    std::vector<std::pair<int64_t, int64_t>> merged;
    for (const auto& iv : v) {
      if (!merged.empty() && iv.first <= merged.back().second)
        merged.back().second = std::max(merged.back().second, iv.second);
      else merged.push_back(iv);
    }
    v = std::move(merged);
  }
  return t;
}

class Gaps {
 public:
  Gaps(Result& r, const Threads& t, const std::vector<char>& dep_wait) : r_(r), t_(t), dep_wait_(dep_wait) {}

  // One span's sweep over its busy intervals, sorted by (start, op).
  void sweep(std::vector<Busy>& v, int64_t process_id, std::optional<int64_t> queue_id) {
    if (v.empty()) return;
    std::sort(v.begin(), v.end(),
              [](const Busy& a, const Busy& b) { return std::tie(a.start, a.op) < std::tie(b.start, b.op); });
    IdleSpan s;
    s.process_id = process_id;
    s.queue_id = queue_id;
    s.start_ns = v.front().start;
    int64_t end = std::numeric_limits<int64_t>::min();
    const Busy* prev = nullptr;
    for (const Busy& b : v) {
      s.work_ops += 1;
      s.measured_ops += b.measured;
      if (prev && b.start > end) {
        const IdleGap& g = gap(end, b.start, *prev, b, process_id, queue_id);
        s.idle_ns += g.end_ns - g.start_ns;
        s.gaps += 1;
      }
      if (!prev || b.end >= end) end = b.end, prev = &b;  // ties: the later-starting op ends the busy run
    }
    s.end_ns = end;
    s.busy_ns = s.end_ns - s.start_ns - s.idle_ns;
    r_.idle_spans.push_back(s);
  }

 private:
  const IdleGap& gap(int64_t a, int64_t b, const Busy& prev, const Busy& next, int64_t process_id,
                     std::optional<int64_t> queue_id) {
    const Op& n = r_.ops[next.op];
    IdleGap g;
    g.id = static_cast<int64_t>(r_.idle_gaps.size()) + 1;
    g.process_id = process_id;
    g.queue_id = queue_id;
    g.start_ns = a;
    g.end_ns = b;
    g.measured = prev.measured && next.measured;
    g.prev_op_id = r_.ops[prev.op].id;
    g.next_op_id = n.id;
    g.tid = n.tid;
    g.after_stack_id = n.stack_id;
    const ThreadKey key{process_id, n.tid};
    if (auto it = t_.calls.find(key); it != t_.calls.end()) {  // the last call entered before a
      auto c = std::lower_bound(it->second.begin(), it->second.end(), a,
                                [](const auto& call, int64_t t) { return call.first < t; });
      if (c != it->second.begin()) g.before_stack_id = std::prev(c)->second;
    }
    auto piece = [&](const char* kind, int64_t from, int64_t to) {
      if (to <= from) return;
      if (!g.pieces.empty() && g.pieces.back().kind == kind) g.pieces.back().end_ns = to;
      else g.pieces.push_back(IdlePiece{kind, from, to});
    };
    // Before the next op was enqueued: the host had not submitted it yet,
    // blocked in a sync or doing something else.
    const int64_t host_end = std::min(b, n.enqueue_ns);
    int64_t t = a;
    if (auto it = t_.blocked.find(key); it != t_.blocked.end() && host_end > a) {
      const auto& v = it->second;  // disjoint and sorted: their ends are sorted too
      auto iv = std::upper_bound(v.begin(), v.end(), a, [](int64_t x, const auto& p) { return x < p.second; });
      for (; iv != v.end() && iv->first < host_end; ++iv) {
        piece("host_wait", t, iv->first);
        int64_t until = std::min(iv->second, host_end);
        piece("sync_wait", std::max(t, iv->first), until);
        t = until;
      }
    }
    piece("host_wait", t, host_end);
    // After it was enqueued: waiting for another queue, or for the GPU to start it.
    piece(dep_wait_[next.op] ? "dependency_wait" : "other", std::max(a, n.enqueue_ns), b);
    for (const IdlePiece& p : g.pieces) {
      int64_t d = p.end_ns - p.start_ns;
      if (p.kind == "host_wait") g.host_wait_ns += d;
      else if (p.kind == "sync_wait") g.sync_wait_ns += d;
      else if (p.kind == "dependency_wait") g.dependency_wait_ns += d;
      else g.other_ns += d;
    }
    r_.idle_gaps.push_back(std::move(g));
    return r_.idle_gaps.back();
  }

  Result& r_;
  const Threads& t_;
  const std::vector<char>& dep_wait_;
};

}  // namespace

void Engine::idle_time() {
  const size_t nops = r_.ops.size();
  // A work op waited for another queue when a cross-queue dependency edge (an
  // event wait, the legacy stream's implicit sync) sits on an op of its queue
  // after the previous work op, up to and including itself.
  std::vector<char> has_dep(nops, 0), dep_wait(nops, 0);
  for (const Dependency& d : r_.deps)  // a wait on an event of its own queue orders nothing new
    if (r_.ops[d.op_id - 1].queue_id != r_.ops[d.on_op_id - 1].queue_id) has_dep[d.op_id - 1] = 1;
  std::vector<char> pending(r_.queues.size(), 0);
  std::vector<std::vector<Busy>> by_queue(r_.queues.size());
  std::map<int64_t, std::vector<Busy>> by_process;
  for (size_t i = 0; i < nops; ++i) {  // ids grow with seq on each queue
    const Op& o = r_.ops[i];
    size_t q = static_cast<size_t>(o.queue_id - 1);
    pending[q] |= has_dep[i];
    if (!is_work(o.kind)) continue;
    dep_wait[i] = pending[q];
    pending[q] = 0;
    Busy b{o.earliest_start_ns, o.latest_end_ns.value_or(r_.end_ns), i, false};
    const Call& c = *op_calls_[i];
    if (auto m = in_.gpu_times.find({c.table, c.id}); m != in_.gpu_times.end())
      b = Busy{m->second.start_ns, m->second.end_ns, i, true};
    b.end = std::max(b.end, b.start);
    by_queue[q].push_back(b);
    by_process[r_.queues[q].process_id].push_back(b);
  }
  Threads threads = threads_of(r_);
  Gaps gaps(r_, threads, dep_wait);
  for (size_t q = 0; q < by_queue.size(); ++q) gaps.sweep(by_queue[q], r_.queues[q].process_id, r_.queues[q].id);
  for (auto& [pid, v] : by_process) gaps.sweep(v, pid, std::nullopt);
}

}  // namespace gpuobs::replay::detail
