#include "gpu_time/activity_join.h"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <unordered_map>

namespace gpuobs::gpu_time {
namespace {

constexpr uint64_t kNoLimit = std::numeric_limits<uint64_t>::max();
// CUPTI callback ids of the graph launches (cupti_driver_cbid.h, cupti_runtime_cbid.h).
constexpr uint32_t kCbidCuGraphLaunch = 514, kCbidCuGraphLaunchPtsz = 515;
constexpr uint32_t kCbidCudaGraphLaunch = 311, kCbidCudaGraphLaunchPtsz = 312;

// The GPU activities of one call: one correlation id of one process.
struct Group {
  uint32_t correlation_id = 0;
  std::vector<const Activity*> acts;
  const Activity* driver = nullptr;  // its driver API record, if any, else its runtime API record

  bool graph = false;  // a CUDA graph launch's work (set by the join)

  // The kind of call that issues this: one kernel a launch, one copy a copy,
  // one memset a memset; a graph launch (several activities, or its API's
  // callback id) a graph launch.
  HostCallKind call_kind() const {
    if (graph || acts.size() > 1) return HostCallKind::graph;
    switch (acts.front()->kind) {
      case ActivityKind::memcpy: return HostCallKind::copy;
      case ActivityKind::memset: return HostCallKind::memset;
      default: return HostCallKind::launch;
    }
  }
};

uint64_t sub_floor(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }
uint64_t add_cap(uint64_t a, uint64_t b) { return a > kNoLimit - b ? kNoLimit : a + b; }

// The join of one process's calls and activities.
class ProcessJoin {
 public:
  ProcessJoin(std::span<const HostCall> calls, std::vector<size_t> rows, const JoinOptions& opt,
              std::vector<bool>& done, JoinResult& out)
      : calls_(calls), rows_(std::move(rows)), opt_(opt), done_(done), out_(out) {
    auto by_time = [&](size_t a, size_t b) {
      return calls_[a].ts_ns != calls_[b].ts_ns ? calls_[a].ts_ns < calls_[b].ts_ns
                                                : calls_[a].row_id < calls_[b].row_id;
    };
    std::sort(rows_.begin(), rows_.end(), by_time);
    for (size_t i : rows_) {
      by_thread_kind_[key(calls_[i].tid, calls_[i].kind)].push_back(i);
      by_kind_[static_cast<size_t>(calls_[i].kind)].push_back(i);
    }
  }

  void run(const std::vector<const Activity*>& acts) {
    std::unordered_map<uint32_t, const Activity*> drivers, runtimes;
    std::map<uint32_t, Group> groups;  // by correlation id
    for (const Activity* a : acts) {
      if (a->kind == ActivityKind::driver_api) {
        drivers.try_emplace(a->correlation_id, a);
        anchors_.push_back(a);
      } else if (a->kind == ActivityKind::runtime_api) {
        runtimes.try_emplace(a->correlation_id, a);
      } else {
        Group& g = groups[a->correlation_id];
        g.correlation_id = a->correlation_id;
        g.acts.push_back(a);
      }
    }
    auto by_start = [](const Activity* a, const Activity* b) {
      return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->correlation_id < b->correlation_id;
    };
    std::sort(anchors_.begin(), anchors_.end(),
              [](const Activity* a, const Activity* b) { return a->correlation_id < b->correlation_id; });
    std::vector<Group*> by_driver, by_order;
    for (auto& [corr, g] : groups) {
      std::sort(g.acts.begin(), g.acts.end(), by_start);
      if (auto it = drivers.find(corr); it != drivers.end()) g.driver = it->second;
      else if (auto rt = runtimes.find(corr); rt != runtimes.end()) g.driver = rt->second;
      g.graph = graph_launch(g);
      if (g.graph) out_.counts.graph_activities += g.acts.size();
      (g.driver ? by_driver : by_order).push_back(&g);
    }
    std::sort(by_driver.begin(), by_driver.end(),
              [&](const Group* a, const Group* b) { return by_start(a->driver, b->driver); });
    for (Group* g : by_driver) join_by_driver(*g);
    join_by_order(by_order);
  }

 private:
  static uint64_t key(uint32_t tid, HostCallKind kind) { return uint64_t{tid} << 8 | static_cast<uint64_t>(kind); }

  const std::vector<size_t>* rows_of(uint32_t tid, HostCallKind kind) const {
    auto it = by_thread_kind_.find(key(tid, kind));
    return it == by_thread_kind_.end() ? nullptr : &it->second;
  }

  // Rows (time-sorted indices) whose ts lies in [lo, hi].
  std::span<const size_t> in_window(const std::vector<size_t>& rows, uint64_t lo, uint64_t hi) const {
    auto first =
        std::lower_bound(rows.begin(), rows.end(), lo, [&](size_t i, uint64_t t) { return calls_[i].ts_ns < t; });
    auto last = std::upper_bound(first, rows.end(), hi, [&](uint64_t t, size_t i) { return t < calls_[i].ts_ns; });
    return {first, last};
  }

  void learn_stream(const HostCall& call, const Group& g) {
    if (call.stream == 0) return;
    auto [it, fresh] = stream_ids_.try_emplace(call.stream, g.acts.front()->stream_id);
    if (!fresh && it->second != g.acts.front()->stream_id) {
      ++out_.counts.stream_conflicts;
      it->second = g.acts.front()->stream_id;
    }
  }

  void join(size_t row, const Group& g, bool by_order) {
    done_[row] = true;
    const HostCall& call = calls_[row];
    GpuTime t;
    t.row_id = call.row_id;
    t.start_ns = g.acts.front()->start_ns;
    for (const Activity* a : g.acts) t.end_ns = std::max(t.end_ns, a->end_ns);
    t.device_id = g.acts.front()->device_id;
    t.stream_id = g.acts.front()->stream_id;
    t.correlation_id = g.correlation_id;
    t.activities = static_cast<uint32_t>(g.acts.size());
    t.by_order = by_order;
    out_.rows.push_back(t);
    (by_order ? out_.counts.joined_by_order : out_.counts.joined_by_correlation) += g.acts.size();
    out_.counts.extra_activities += g.acts.size() - 1;
    if (!by_order) learn_stream(call, g);
  }

  // Rule 1: the unclaimed call of the driver record's thread and the group's
  // kind within [entry - lead, entry + lag]: the latest at or before the
  // entry (the probe fires first), else the first after it (clock
  // conversion error). Two such calls at the same time are ambiguous.
  // Without a thread (the writer had pthread ids only), a call of any thread.
  // A CUDA graph's launch (its API by CUPTI's callback id, or several GPU
  // operations under one correlation id): its call is the graph launch
  // (stream_ops), never a neighbouring kernel launch.
  static bool graph_launch(const Group& g) {
    if (g.acts.size() > 1) return true;
    if (!g.driver) return false;
    uint32_t cbid = g.driver->cbid;
    return g.driver->kind == ActivityKind::driver_api
               ? (cbid == kCbidCuGraphLaunch || cbid == kCbidCuGraphLaunchPtsz)
               : (cbid == kCbidCudaGraphLaunch || cbid == kCbidCudaGraphLaunchPtsz);
  }

  void join_by_driver(const Group& g) {
    const Activity& d = *g.driver;
    if (d.kind == ActivityKind::runtime_api) return join_by_runtime(g);
    const std::vector<size_t>* rows =
        d.tid != 0 ? rows_of(d.tid, g.call_kind()) : &by_kind_[static_cast<size_t>(g.call_kind())];
    size_t before = kNone, after = kNone;
    bool tie_before = false, tie_after = false;
    if (rows) {
      for (size_t i : in_window(*rows, sub_floor(d.start_ns, opt_.max_lead_ns), add_cap(d.start_ns, opt_.max_lag_ns))) {
        if (done_[i]) continue;
        uint64_t ts = calls_[i].ts_ns;
        if (ts <= d.start_ns) {  // rows are by time: the last one seen is the latest
          tie_before = before != kNone && calls_[before].ts_ns == ts;
          before = i;
        } else if (after == kNone) {
          after = i;
        } else if (calls_[after].ts_ns == ts) {
          tie_after = true;
        }
      }
    }
    size_t best = before != kNone ? before : after;
    bool tie = before != kNone ? tie_before : tie_after;
    if (best == kNone) out_.counts.activities_without_row += g.acts.size();
    else if (tie) out_.counts.activities_ambiguous += g.acts.size();
    else join(best, g, false);
  }

  // Rule 1 through a runtime API record (cudaLaunchKernel, cudaMemcpyAsync):
  // the driver call gpuobs probed runs inside it, so the call is the first
  // unclaimed one of that thread and kind at or after its entry and before
  // its return (max_lag_ns either side for clock rounding).
  // The probed call runs inside the runtime call: past its return only
  // clock rounding (a call found later is the next API's).
  static constexpr uint64_t kRuntimeSlackNs = 1'000;
  void join_by_runtime(const Group& g) {
    const Activity& r = *g.driver;
    const std::vector<size_t>* rows =
        r.tid != 0 ? rows_of(r.tid, g.call_kind()) : &by_kind_[static_cast<size_t>(g.call_kind())];
    size_t best = kNone;
    bool tie = false;
    if (rows)
      for (size_t i : in_window(*rows, sub_floor(r.start_ns, opt_.max_lag_ns), add_cap(r.end_ns, kRuntimeSlackNs))) {
        if (done_[i]) continue;
        if (best == kNone) best = i;
        else if (calls_[i].ts_ns == calls_[best].ts_ns) tie = true;
        else break;
      }
    if (best == kNone) out_.counts.activities_without_row += g.acts.size();
    else if (tie) out_.counts.activities_ambiguous += g.acts.size();
    else join(best, g, false);
  }

  // Rule 2: groups without a driver record, between the driver
  // records (of any call) just below and above their correlation id; the
  // unclaimed calls of each kind whose time falls between those records'
  // entries are theirs in order, when the numbers agree. A call there whose
  // own driver record came but no activity (a failed launch, a dropped
  // record) makes the numbers disagree: the record's API (cbid) would tell,
  // this join does not read it, so the window is counted ambiguous.
  void join_by_order(const std::vector<Group*>& groups) {
    std::map<size_t, std::vector<Group*>> gaps;  // index of the anchor above -> groups, by correlation id
    for (Group* g : groups) {
      auto hi = std::upper_bound(anchors_.begin(), anchors_.end(), g->correlation_id,
                                 [](uint32_t c, const Activity* a) { return c < a->correlation_id; });
      gaps[static_cast<size_t>(hi - anchors_.begin())].push_back(g);
    }
    for (auto& [hi, gap] : gaps) {
      uint64_t lo_ns = hi > 0 ? anchors_[hi - 1]->start_ns : 0;
      uint64_t hi_ns = hi < anchors_.size() ? anchors_[hi]->start_ns : kNoLimit;
      for (size_t k = 0; k < by_kind_.size(); ++k) {
        std::vector<const Group*> want;
        for (const Group* g : gap)
          if (static_cast<size_t>(g->call_kind()) == k) want.push_back(g);
        if (want.empty()) continue;
        std::vector<size_t> have;
        for (size_t i : in_window(by_kind_[k], lo_ns, hi_ns))
          if (!done_[i] && calls_[i].ts_ns < hi_ns) have.push_back(i);
        match_in_order(want, have);
      }
    }
  }

  void match_in_order(const std::vector<const Group*>& want, const std::vector<size_t>& have) {
    uint64_t n = 0;
    for (const Group* g : want) n += g->acts.size();
    if (have.empty()) {
      out_.counts.activities_without_row += n;
      return;
    }
    bool agree = have.size() == want.size();
    for (size_t j = 0; agree && j < have.size(); ++j) {
      auto s = stream_ids_.find(calls_[have[j]].stream);
      if (calls_[have[j]].stream != 0 && s != stream_ids_.end() && s->second != want[j]->acts.front()->stream_id)
        agree = false;
    }
    if (!agree) {
      out_.counts.activities_ambiguous += n;
      return;
    }
    for (size_t j = 0; j < have.size(); ++j) join(have[j], *want[j], true);
  }

  static constexpr size_t kNone = std::numeric_limits<size_t>::max();

  std::span<const HostCall> calls_;
  std::vector<size_t> rows_;  // this process's calls, by time
  const JoinOptions& opt_;
  std::vector<bool>& done_;  // per call: joined
  JoinResult& out_;
  std::unordered_map<uint64_t, std::vector<size_t>> by_thread_kind_;
  std::array<std::vector<size_t>, 4> by_kind_;
  std::vector<const Activity*> anchors_;               // every driver record, by correlation id
  std::unordered_map<uint64_t, uint32_t> stream_ids_;  // stream handle -> CUPTI stream id
};

}  // namespace

const GpuTime* JoinResult::find(uint64_t row_id) const {
  auto it =
      std::lower_bound(rows.begin(), rows.end(), row_id, [](const GpuTime& t, uint64_t id) { return t.row_id < id; });
  return it != rows.end() && it->row_id == row_id ? &*it : nullptr;
}

JoinResult join_activities(std::span<const HostCall> calls, std::span<const Activity> activities,
                           const JoinOptions& options) {
  JoinResult out;
  std::map<uint32_t, std::vector<const Activity*>> acts_by_pid;
  for (const Activity& a : activities) acts_by_pid[a.pid].push_back(&a);
  std::unordered_map<uint32_t, std::vector<size_t>> rows_by_pid;
  for (size_t i = 0; i < calls.size(); ++i) rows_by_pid[calls[i].tgid].push_back(i);

  std::vector<bool> done(calls.size(), false);
  for (auto& [pid, acts] : acts_by_pid) {
    auto rows = rows_by_pid.find(pid);
    ProcessJoin pj(calls, rows == rows_by_pid.end() ? std::vector<size_t>{} : std::move(rows->second), options, done,
                   out);
    pj.run(acts);
  }
  for (size_t i = 0; i < calls.size(); ++i) {
    if (done[i]) continue;
    if (acts_by_pid.contains(calls[i].tgid)) ++out.counts.rows_without_activity;
    else ++out.counts.rows_without_process;
  }
  std::sort(out.rows.begin(), out.rows.end(), [](const GpuTime& a, const GpuTime& b) { return a.row_id < b.row_id; });
  return out;
}

}  // namespace gpuobs::gpu_time
