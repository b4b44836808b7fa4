#include "replay/exec_schedule.h"

#include <sqlite3.h>
#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>
#include <tuple>

#include "replay/replay_engine.h"

namespace gpuobs::replay {

const char* to_string(StepKind k) {
  switch (k) {
    case StepKind::kernel: return "kernel";
    case StepKind::graph: return "graph";
    case StepKind::host_func: return "host_func";
    case StepKind::copy: return "copy";
    case StepKind::memset: return "memset";
    case StepKind::event_record: return "event_record";
    case StepKind::event_wait: return "event_wait";
    case StepKind::stream_sync: return "stream_sync";
    case StepKind::event_sync: return "event_sync";
    case StepKind::context_sync: return "context_sync";
  }
  return "?";
}

const char* to_string(DurationSource s) {
  switch (s) {
    case DurationSource::none: return "none";
    case DurationSource::measured: return "measured";
    case DurationSource::window: return "window";
    case DurationSource::same_name: return "same_name";
    case DurationSource::fallback: return "fallback";
  }
  return "?";
}

namespace {

using detail::Call;
using detail::Table;

std::optional<StepKind> op_step(const std::string& kind) {
  if (kind == "launch") return StepKind::kernel;
  if (kind == "graph_launch") return StepKind::graph;
  if (kind == "host_func") return StepKind::host_func;
  if (kind == "copy") return StepKind::copy;
  if (kind == "memset") return StepKind::memset;
  if (kind == "event_record") return StepKind::event_record;
  if (kind == "wait_event") return StepKind::event_wait;
  return std::nullopt;  // alloc_async, free_async: not re-executed (skipped, counted)
}

std::optional<StepKind> sync_step(const std::string& kind) {
  if (kind == "stream_sync") return StepKind::stream_sync;
  if (kind == "event_sync") return StepKind::event_sync;
  if (kind == "context_sync") return StepKind::context_sync;
  return std::nullopt;  // queries prove but do not wait; a sync copy is its copy step
}

bool is_work(StepKind k) { return k == StepKind::kernel || k == StepKind::graph || k == StepKind::host_func; }

Table table_of(const std::string& name) {
  for (Table t : {Table::kernel_launches, Table::copies, Table::memory_ops, Table::stream_ops, Table::syncs})
    if (name == detail::table_name(t)) return t;
  return Table::kernel_launches;
}

struct Duration {
  int64_t ns = 0;
  DurationSource from = DurationSource::none;
};

// Each work op's GPU length: measured, else its share of the span that a
// blocking observation proved (the queue was busy from the group's first
// enqueue, or the previous group's end, until the host's wait returned),
// else the median of its kernel name's known lengths, else the fallback.
std::vector<Duration> durations(const detail::Input& in, const replay::Result& r) {
  std::vector<Duration> d(r.ops.size());
  std::map<int64_t, std::vector<size_t>> by_queue;
  for (size_t i = 0; i < r.ops.size(); ++i) {
    const Op& o = r.ops[i];
    auto k = op_step(o.kind);
    if (!k || !is_work(*k)) continue;
    auto m = in.gpu_times.find({table_of(o.source_table), o.source_id});
    if (m != in.gpu_times.end()) d[i] = {m->second.end_ns - m->second.start_ns, DurationSource::measured};
    by_queue[o.queue_id].push_back(i);
  }
  for (auto& [q, idx] : by_queue) {
    int64_t prev_end = 0;
    for (size_t a = 0; a < idx.size();) {
      size_t b = a;
      while (b < idx.size() && r.ops[idx[b]].bound_by == r.ops[idx[a]].bound_by) ++b;
      const Op& first = r.ops[idx[a]];
      if (first.bound_by) {
        const Observation& ob = r.observations[static_cast<size_t>(*first.bound_by - 1)];
        int64_t start = std::max(first.enqueue_ns, prev_end);
        if (ob.blocked_ns > 0 && ob.end_ns > start) {
          int64_t open = 0, known = 0;
          for (size_t i = a; i < b; ++i) d[idx[i]].from == DurationSource::measured ? known += d[idx[i]].ns : ++open;
          int64_t share = open ? std::max<int64_t>(0, ob.end_ns - start - known) / open : 0;
          for (size_t i = a; i < b; ++i)
            if (d[idx[i]].from == DurationSource::none) d[idx[i]] = {share, DurationSource::window};
          prev_end = ob.end_ns;
        }
      }
      a = b;
    }
  }
  std::map<std::string, std::vector<int64_t>> by_name;
  for (size_t i = 0; i < r.ops.size(); ++i)
    if (d[i].from == DurationSource::measured || d[i].from == DurationSource::window)
      by_name[r.ops[i].name].push_back(d[i].ns);
  for (auto& [n, v] : by_name) std::sort(v.begin(), v.end());
  for (size_t i = 0; i < r.ops.size(); ++i) {
    auto k = op_step(r.ops[i].kind);
    if (!k || !is_work(*k) || d[i].from != DurationSource::none) continue;
    auto it = by_name.find(r.ops[i].name);
    d[i] = it != by_name.end() ? Duration{it->second[it->second.size() / 2], DurationSource::same_name}
                               : Duration{kFallbackKernelNs, DurationSource::fallback};
  }
  return d;
}

// A candidate step before the options are applied: an op or an observation.
struct Candidate {
  int64_t ts = 0, end = 0;
  int64_t process_id = 0;
  uint32_t tgid = 0, tid = 0;
  bool sync = false;
  size_t index = 0;  // into r.ops or r.observations
};

}  // namespace

gpuobs::Result<Schedule> build_schedule(const detail::Input& in, const replay::Result& r,
                                        const std::map<std::pair<int64_t, uint64_t>, int32_t>& priorities,
                                        const ScheduleOptions& opts) {
  if (!(opts.speed > 0) || !std::isfinite(opts.speed))
    return make_error("the speed factor must be a positive number", "--speed 2 halves every host gap");
  std::map<std::pair<Table, int64_t>, const Call*> calls;
  for (const Call& c : in.calls) calls[{c.table, c.id}] = &c;
  std::map<int64_t, const Queue*> queues;
  for (const Queue& q : r.queues) queues[q.id] = &q;
  for (auto [from, into] : opts.merge)
    if (!queues.count(from) || !queues.count(into) || queues[from]->process_id != queues[into]->process_id)
      return make_error("cannot merge queue " + std::to_string(from) + " into " + std::to_string(into),
                        "both must be queues of one process (gpuobs report replay_queues FILE lists them)");

  std::vector<Candidate> cands;
  for (size_t i = 0; i < r.ops.size(); ++i) {
    const Op& o = r.ops[i];
    const Queue& q = *queues.at(o.queue_id);
    auto c = calls.find({table_of(o.source_table), o.source_id});
    int64_t end = c != calls.end() ? c->second->end() : o.enqueue_ns;
    cands.push_back({o.enqueue_ns, end, q.process_id, q.tgid, o.tid, false, i});
  }
  std::map<int64_t, uint32_t> tgid_of;
  for (const Queue& q : r.queues) tgid_of[q.process_id] = q.tgid;
  for (size_t i = 0; i < r.observations.size(); ++i) {
    const Observation& ob = r.observations[i];
    if (!sync_step(ob.kind)) continue;
    cands.push_back({ob.start_ns, ob.end_ns, ob.process_id, tgid_of[ob.process_id], ob.tid, true, i});
  }
  // The capture's order: entry time, then ops before syncs, then their own order.
  std::stable_sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
    return std::tie(a.ts, a.sync, a.index) < std::tie(b.ts, b.sync, b.index);
  });

  std::vector<Duration> dur = durations(in, r);
  Schedule s;
  s.no_host_gaps = opts.no_host_gaps;
  s.speed = opts.speed;
  std::map<int64_t, int32_t> stream_of;  // queue id -> ExecStream id
  for (const Queue& q : r.queues) {
    if (opts.pid && q.tgid != *opts.pid) continue;
    auto p = priorities.find({q.process_id, q.handle});
    int32_t prio = q.kind == "created" && p != priorities.end() ? p->second : 0;
    stream_of[q.id] = static_cast<int32_t>(s.streams.size());
    s.streams.push_back(
        {static_cast<int32_t>(s.streams.size()), q.id, q.process_id, q.tgid, q.kind, q.label, q.non_blocking, prio});
  }
  std::map<std::pair<int64_t, uint32_t>, int32_t> thread_of;
  std::map<std::pair<int64_t, uint32_t>, int64_t> prev_end;  // (process, tid) -> the last candidate's return
  std::map<std::pair<int64_t, uint64_t>, int32_t> event_of;
  std::map<int64_t, int64_t> step_of_op;  // replay op id -> step index
  auto event_id = [&](int64_t process, uint64_t handle) {
    auto [it, fresh] = event_of.try_emplace({process, handle}, s.events);
    if (fresh) ++s.events;
    return it->second;
  };
  auto dropped = [&](const Observation& ob) {
    return opts.drop_syncs || std::find(opts.drop_observations.begin(), opts.drop_observations.end(), ob.id) !=
                                  opts.drop_observations.end();
  };
  for (const Candidate& c : cands) {
    if (opts.pid && c.tgid != *opts.pid) continue;
    if (opts.from_ns && c.ts < opts.capture_start_ns + *opts.from_ns) continue;
    if (opts.to_ns && c.ts >= opts.capture_start_ns + *opts.to_ns) continue;
    auto key = std::make_pair(c.process_id, c.tid);
    auto pe = prev_end.find(key);
    int64_t gap = pe == prev_end.end() ? 0 : std::max<int64_t>(0, c.ts - pe->second);
    prev_end[key] = std::max(c.end, pe == prev_end.end() ? c.end : pe->second);
    ExecStep st;
    if (c.sync) {
      const Observation& ob = r.observations[c.index];
      if (dropped(ob)) {
        ++s.dropped_syncs;
        continue;  // its blocked time leaves the next gap: prev_end moved past it above
      }
      st.kind = *sync_step(ob.kind);
      st.observation_id = ob.id;
      st.name = ob.api;
      if (ob.queue_id && st.kind == StepKind::stream_sync) st.stream = stream_of.at(*ob.queue_id);
      if (st.kind == StepKind::event_sync) st.event = event_id(ob.process_id, ob.event);
    } else {
      const Op& o = r.ops[c.index];
      auto k = op_step(o.kind);
      if (!k) {
        ++s.skipped[o.kind];
        continue;
      }
      st.kind = *k;
      st.op_id = o.id;
      st.name = o.name;
      int64_t q = o.queue_id;
      for (auto [from, into] : opts.merge)
        if (q == from) q = into;
      st.stream = stream_of.at(q);
      st.bytes = o.bytes;
      st.direction = o.direction;
      auto call = calls.find({table_of(o.source_table), o.source_id});
      st.async = call != calls.end() && call->second->async;
      if (st.kind == StepKind::event_record || st.kind == StepKind::event_wait)
        st.event = event_id(c.process_id, o.event);
      st.gpu_ns = dur[c.index].ns;
      st.gpu_from = dur[c.index].from;
    }
    auto [th, fresh] = thread_of.try_emplace(key, static_cast<int32_t>(s.threads.size()));
    if (fresh) s.threads.push_back({th->second, c.process_id, c.tid});
    st.thread = th->second;
    st.index = static_cast<int64_t>(s.steps.size());
    if (s.steps.empty()) s.start_ns = c.ts;
    st.at_ns = c.ts - s.start_ns;
    st.host_ns = c.end - c.ts;
    st.gap_ns = opts.no_host_gaps ? 0 : static_cast<int64_t>(std::llround(static_cast<double>(gap) / opts.speed));
    if (st.op_id) step_of_op[st.op_id] = st.index;
    s.steps.push_back(std::move(st));
  }
  for (const Dependency& d : r.deps) {
    auto a = step_of_op.find(d.op_id), b = step_of_op.find(d.on_op_id);
    if (a == step_of_op.end() || b == step_of_op.end()) continue;
    ExecStep& st = s.steps[static_cast<size_t>(a->second)];
    if (s.steps[static_cast<size_t>(b->second)].stream != st.stream) st.after.push_back(b->second);
  }
  for (const ExecStep& st : s.steps) {
    int64_t end = s.start_ns + st.at_ns + st.host_ns;
    if (st.op_id) {
      const Op& o = r.ops[static_cast<size_t>(st.op_id - 1)];
      if (o.latest_end_ns) end = std::max(end, *o.latest_end_ns);
      auto m = in.gpu_times.find({table_of(o.source_table), o.source_id});
      if (m != in.gpu_times.end()) end = std::max(end, m->second.end_ns);
    }
    s.end_ns = std::max(s.end_ns, end);
  }
  return s;
}

gpuobs::Result<ScheduleSource> load_schedule_source(Db& capture) {
  auto in = detail::load_input(capture);
  if (!in) return in.error();
  ScheduleSource src;
  src.input = std::move(*in);
  src.replay = detail::Engine(src.input).run();
  Stmt st(capture.get(),
          "SELECT process_id, stream, priority FROM stream_ops WHERE op = 'stream_create' AND priority IS NOT NULL "
          "AND coalesce(result, 0) = 0 AND stream IS NOT NULL ORDER BY id");
  if (!st.valid()) return make_error("cannot read the stream priorities: " + capture.errmsg());
  while (st.step() == SQLITE_ROW)
    src.priorities[{sqlite3_column_int64(st.get(), 0), static_cast<uint64_t>(sqlite3_column_int64(st.get(), 1))}] =
        static_cast<int32_t>(sqlite3_column_int64(st.get(), 2));
  if (auto t0 = capture.scalar("SELECT coalesce((SELECT start_mono_ns FROM capture WHERE id = 1), 0)"))
    src.capture_start_ns = *t0;
  return src;
}

gpuobs::Result<Schedule> build_schedule(const ScheduleSource& src, const ScheduleOptions& opts) {
  ScheduleOptions o = opts;
  o.capture_start_ns = src.capture_start_ns;
  return build_schedule(src.input, src.replay, src.priorities, o);
}

gpuobs::Result<Schedule> build_schedule(Db& capture, const ScheduleOptions& opts) {
  auto src = load_schedule_source(capture);
  if (!src) return src.error();
  return build_schedule(*src, opts);
}

std::string schedule_json(const Schedule& s) {
  nlohmann::ordered_json j;
  j["format"] = "gpuobs-schedule";
  j["version"] = 1;
  j["start_mono_ns"] = s.start_ns;
  j["duration_ns"] = s.end_ns - s.start_ns;
  j["events"] = s.events;
  j["dropped_syncs"] = s.dropped_syncs;
  j["no_host_gaps"] = s.no_host_gaps;
  j["speed"] = s.speed;
  j["skipped"] = s.skipped;
  auto& streams = j["streams"] = nlohmann::ordered_json::array();
  for (const ExecStream& x : s.streams)
    streams.push_back({{"id", x.id},
                       {"queue_id", x.queue_id},
                       {"process_id", x.process_id},
                       {"pid", x.tgid},
                       {"kind", x.kind},
                       {"label", x.label},
                       {"non_blocking", x.non_blocking},
                       {"priority", x.priority}});
  auto& threads = j["threads"] = nlohmann::ordered_json::array();
  for (const ExecThread& t : s.threads) threads.push_back({{"id", t.id}, {"process_id", t.process_id}, {"tid", t.tid}});
  auto& steps = j["steps"] = nlohmann::ordered_json::array();
  for (const ExecStep& st : s.steps) {
    nlohmann::ordered_json x{{"i", st.index},     {"kind", to_string(st.kind)}, {"thread", st.thread},
                             {"at_ns", st.at_ns}, {"host_ns", st.host_ns},      {"gap_ns", st.gap_ns},
                             {"name", st.name}};
    if (st.stream >= 0) x["stream"] = st.stream;
    if (st.event >= 0) x["event"] = st.event;
    if (is_work(st.kind)) {
      x["gpu_ns"] = st.gpu_ns;
      x["gpu_from"] = to_string(st.gpu_from);
    }
    if (st.kind == StepKind::copy || st.kind == StepKind::memset) x["bytes"] = st.bytes;
    if (st.kind == StepKind::copy) {
      x["direction"] = st.direction;
      x["async"] = st.async;
    }
    if (!st.after.empty()) x["after"] = st.after;
    if (st.op_id) x["op"] = st.op_id;
    if (st.observation_id) x["observation"] = st.observation_id;
    steps.push_back(std::move(x));
  }
  return j.dump(1) + "\n";
}

}  // namespace gpuobs::replay
