// The replay's main loop: queues, vector clocks, events and observations
// (docs/replay.md, "Model"). Memory hazards: replay_memory.cpp; windows and
// queue depth: replay_windows.cpp.
#include "replay/replay_engine.h"

#include <algorithm>
#include <cstdio>

#include "replay/replay.h"

namespace gpuobs::replay {
namespace detail {

void merge(Clock& into, const Clock& from) {
  if (into.size() < from.size()) into.resize(from.size(), 0);
  for (size_t i = 0; i < from.size(); ++i) into[i] = std::max(into[i], from[i]);
}

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

std::string Engine::stream_label(size_t q) const {
  const Queue& k = r_.queues[q];
  if (k.kind == "legacy") return "the legacy default stream";
  if (k.kind == "per_thread") return "thread " + std::to_string(k.tid.value_or(0)) + "'s per-thread default stream";
  if (!k.label.empty()) return k.label + " (" + hex(k.handle) + ")";
  return "stream " + hex(k.handle);
}

ProcessState& Engine::process(const Call& c) { return procs_[c.process_id]; }

size_t Engine::new_queue(ProcessState& p, const Call& c, const char* kind, uint64_t handle) {
  Queue q;
  q.id = static_cast<int64_t>(r_.queues.size()) + 1;
  q.process_id = c.process_id;
  q.tgid = c.tgid;
  q.kind = kind;
  q.handle = handle;
  if (auto it = in_.stream_labels.find({c.process_id, handle}); it != in_.stream_labels.end()) q.label = it->second;
  if (q.kind == "per_thread") q.tid = c.tid;
  QueueState st;
  st.index = r_.queues.size();
  st.local = p.queues.size();
  st.legacy = q.kind == "legacy";
  r_.queues.push_back(std::move(q));
  p.queues.push_back(st.index);
  p.active.push_back(st.index);
  qs_.push_back(std::move(st));
  return qs_.back().index;
}

// Which queue a stream argument names (docs/replay.md, "Queues"). CU_STREAM_LEGACY
// (0x1) is the legacy stream in every variant; 0 is the per-thread stream in
// _ptsz/_ptds variants; CU_STREAM_PER_THREAD (0x2) always is.
std::optional<size_t> Engine::find_queue(ProcessState& p, const Call& c, uint64_t handle, bool create) {
  if ((handle == 0 && !c.per_thread) || handle == 1) {
    if (!p.legacy && create) p.legacy = new_queue(p, c, "legacy", 0);
    return p.legacy;
  }
  if (handle == 0 || handle == 2) {
    auto it = p.per_thread.find(c.tid);
    if (it != p.per_thread.end()) return it->second;
    if (!create) return std::nullopt;
    size_t q = new_queue(p, c, "per_thread", 0);
    p.per_thread[c.tid] = q;
    return q;
  }
  auto it = p.handles.find(handle);
  if (it != p.handles.end()) return it->second;
  if (!create) return std::nullopt;
  size_t q = new_queue(p, c, "unknown", handle);  // created before the capture, or by an unprobed call
  p.handles[handle] = q;
  return q;
}

// The queue an operation goes to; none while its stream is being captured
// into a graph (those calls enqueue nothing until the graph is launched).
std::optional<size_t> Engine::op_queue(ProcessState& p, const Call& c) {
  uint64_t handle = c.table == Table::copies && !c.async ? 0 : c.stream.value_or(0);
  auto q = find_queue(p, c, handle, true);
  if (q && qs_[*q].capturing) return std::nullopt;
  return q;
}

// Drops destroyed queues whose every op the host knows complete from the
// active list: the host clock already covers their clocks, so neither the
// legacy stream's implicit sync nor a context sync learns anything from them.
void Engine::retire_done(ProcessState& p) {
  std::erase_if(p.active, [&](size_t qi) {
    QueueState& q = qs_[qi];
    if (!q.destroyed || at(p.host, q.local) < q.seq) return false;
    q.retired = true;
    return true;
  });
}

Hazard& Engine::hazard(const char* kind, const Call& c) {
  Hazard h;
  h.kind = kind;
  h.process_id = c.process_id;
  h.source_table = table_name(c.table);
  h.source_id = c.id;
  h.api = s(c.api);
  h.ts_ns = c.ts;
  h.stack_id = c.stack_id;
  r_.hazards.push_back(std::move(h));
  return r_.hazards.back();
}

Op& Engine::enqueue(ProcessState& p, size_t qi, const Call& c, const char* kind, const EventState* wait) {
  const int64_t id = static_cast<int64_t>(r_.ops.size()) + 1;
  QueueState& q = qs_[qi];
  // Work enqueued after the host saw X complete runs after X.
  merge(q.clock, p.host);
  int64_t lb = q.lb;
  // Legacy default stream semantics: the legacy stream waits for every
  // blocking stream, and every blocking stream waits for the legacy stream.
  auto take = [&](size_t bi) {
    const QueueState& b = qs_[bi];
    if (b.seq == 0) return;
    if (b.seq > at(q.clock, b.local)) r_.deps.push_back(Dependency{id, b.last_op, "legacy"});
    merge(q.clock, b.clock);
    lb = std::max(lb, b.lb);
  };
  if (q.retired) {  // enqueued after its destroy (a hazard below): back on the active list
    q.retired = false;
    p.active.push_back(qi);
  }
  if (q.legacy) {
    retire_done(p);
    for (size_t bi : p.active)
      if (bi != qi && qs_[bi].blocking) take(bi);
  } else if (q.blocking && p.legacy) {
    take(*p.legacy);
  }
  if (wait) {
    r_.deps.push_back(Dependency{id, wait->record_op, "event"});
    merge(q.clock, wait->clock);
    lb = std::max(lb, wait->lb);
  }
  q.seq += 1;
  if (q.clock.size() <= q.local) q.clock.resize(q.local + 1, 0);
  q.clock[q.local] = q.seq;
  Op op;
  op.id = id;
  op.queue_id = r_.queues[qi].id;
  op.seq = q.seq;
  op.kind = kind;
  op.api = s(c.api);
  op.name = c.name ? s(c.name) : op.api;
  op.source_table = table_name(c.table);
  op.source_id = c.id;
  op.tid = c.tid;
  op.stack_id = c.stack_id;
  op.enqueue_ns = c.ts;
  op.earliest_start_ns = std::max(c.ts, lb);
  q.lb = op.earliest_start_ns;
  q.last_op = id;
  r_.queues[qi].ops += 1;
  if (q.destroyed) {
    Hazard& h = hazard("destroyed_stream", c);
    h.op_id = id;
    h.detail = op.api + " enqueued a " + op.kind + " on " + stream_label(qi) + " after cuStreamDestroy destroyed it (" +
               std::to_string(c.ts - *r_.queues[qi].destroyed_ns) +
               " ns earlier); create a new stream or keep this one alive until its last use";
  }
  r_.ops.push_back(std::move(op));
  op_calls_.push_back(&c);
  return r_.ops.back();
}

void Engine::observe(ProcessState& p, const Call& c, const char* kind, std::optional<size_t> q, const Clock* frontier) {
  Observation o;
  o.id = static_cast<int64_t>(r_.observations.size()) + 1;
  o.process_id = c.process_id;
  o.tid = c.tid;
  o.kind = kind;
  o.api = s(c.api);
  o.source_table = table_name(c.table);
  o.source_id = c.id;
  o.start_ns = c.ts;
  o.end_ns = c.end();
  if (q) o.queue_id = r_.queues[*q].id;
  o.event = c.event;
  bool query = o.kind == "stream_query" || o.kind == "event_query";
  o.blocked_ns = query ? 0 : std::max<int64_t>(c.duration, 0);
  o.stack_id = c.stack_id;
  size_t index = r_.observations.size();
  if (frontier) {
    // What the host already knows complete was proven by an observation that
    // returned earlier: covering it again changes no window.
    for (size_t qi : p.active) {
      size_t i = qs_[qi].local;
      if (at(*frontier, i) > at(p.host, i)) covers_.push_back(Cover{qi, at(*frontier, i), index});
    }
    proofs_.push(PendingProof{o.end_ns, o.id, c.process_id, *frontier});
  }
  r_.observations.push_back(std::move(o));
}

// A proof reaches the host clock when its call returns.
void Engine::apply_proofs(int64_t until_ns) {
  while (!proofs_.empty() && proofs_.top().end_ns <= until_ns) {
    merge(procs_[proofs_.top().process_id].host, proofs_.top().frontier);
    proofs_.pop();
  }
}

void Engine::step(const Call& c) {
  apply_proofs(c.ts);
  ProcessState& p = process(c);
  switch (c.table) {
    case Table::kernel_launches: {
      auto q = op_queue(p, c);
      if (!q) return;
      int64_t id = enqueue(p, *q, c, "launch", nullptr).id;
      on_launch_for_runs(p, c, id);
      return;
    }
    case Table::copies: return on_copy(p, c);
    case Table::memory_ops: return on_memory(p, c);
    case Table::stream_ops: return on_stream_op(p, c);
    case Table::syncs: return on_sync(p, c);
  }
}

void Engine::on_copy(ProcessState& p, const Call& c) {
  if (!c.ok()) return;
  bool memset = s(c.op) == "memset";
  auto q = op_queue(p, c);
  if (!q) return;
  // A synchronous HtoD proves what was on its queue before it: the queue's
  // clock before enqueue merges the legacy stream's implicit syncs into it.
  Clock before = qs_[*q].clock;
  merge(before, p.host);
  Op& op = enqueue(p, *q, c, memset ? "memset" : "copy", nullptr);
  op.dst = c.dst;
  op.src = memset ? 0 : c.src;
  op.bytes = c.bytes;
  op.direction = memset ? "" : s(c.kind);
  memory_access(p, c, op);
  if (memset) return;
  const std::string& dir = s(c.kind);
  if (c.async) {
    pageable_check(p, c, op);
    return;
  }
  // CUDA's documented API sync behavior: a synchronous copy to pageable host
  // memory returns after the copy completed; one from pageable host memory
  // starts after a stream sync (so what came before is complete, not the copy).
  // Only a copy that returned success with a measured duration observes
  // anything: without its return the capture does not know when (or whether)
  // it completed.
  if (!(c.result && *c.result == 0 && c.duration >= 0)) return;
  const QueueState& qs = qs_[*q];
  if (dir == "DtoH" || dir == "AtoH") {
    observe(p, c, "sync_copy", q, &qs.clock);
    host_synced(p, c);
  } else if (dir == "HtoD") {
    observe(p, c, "sync_copy", q, &before);
    host_synced(p, c);
  }
}

void Engine::on_memory(ProcessState& p, const Call& c) {
  if (!c.ok()) return;
  const std::string& op = s(c.op);
  if (op == "alloc" && c.address) {
    if (c.stream) {
      if (auto q = op_queue(p, c)) {
        Op& o = enqueue(p, *q, c, "alloc_async", nullptr);
        o.dst = c.address;
        o.bytes = c.bytes;
      }
    }
    Allocation a;
    a.row = c.id;
    a.address = c.address;
    a.bytes = c.bytes;
    a.host = s(c.kind) == "host";
    p.live[c.address] = std::move(a);
  } else if (op == "free") {
    const Op* free_op = nullptr;
    if (c.stream) {
      if (auto q = op_queue(p, c)) {
        Op& o = enqueue(p, *q, c, "free_async", nullptr);
        o.dst = c.address;
        o.bytes = c.bytes;
        free_op = &o;
      }
    }
    check_free(p, c, free_op);
    auto it = p.live.find(c.address);
    if (it != p.live.end() && (!c.alloc_id || *c.alloc_id == it->second.row)) p.live.erase(it);
  }
}

void Engine::on_stream_op(ProcessState& p, const Call& c) {
  const std::string& op = s(c.op);
  if (op == "stream_query" || op == "event_query") return on_query(p, c, op);
  if (!c.ok()) return;
  if (op == "stream_create" || op == "stream_destroy") {
    on_stream_lifetime(p, c, op);
  } else if (op == "event_create") {
    p.events[c.event] = EventState{};
  } else if (op == "event_destroy") {
    p.events.erase(c.event);
  } else if (op == "event_record") {
    on_event_record(p, c);
  } else if (op == "wait_event") {
    on_wait_event(p, c);
  } else if (op == "host_func" || op == "graph_launch") {
    if (auto q = op_queue(p, c)) enqueue(p, *q, c, op == "host_func" ? "host_func" : "graph_launch", nullptr);
  } else if (op == "capture_begin" || op == "capture_end") {
    on_capture(p, c, op == "capture_begin");
  }
}

// A successful query proves the queue (or the event's work) complete.
void Engine::on_query(ProcessState& p, const Call& c, const std::string& op) {
  bool query_ok = c.result && *c.result == 0;  // 600 (NOT_READY) proves nothing
  if (op == "stream_query") {
    if (!query_ok) return;
    auto q = find_queue(p, c, c.stream.value_or(0), false);
    Clock f = q ? qs_[*q].clock : Clock{};
    observe(p, c, "stream_query", q, q ? &f : nullptr);
    return;
  }
  if (!query_ok) return;  // event_query
  auto it = p.events.find(c.event);
  if (it != p.events.end() && it->second.recorded) {
    Clock f = it->second.clock;
    observe(p, c, "event_query", std::nullopt, &f);
  } else if (it == p.events.end()) {  // created before the capture saw it: unknown, not unrecorded
    observe(p, c, "event_query", std::nullopt, nullptr);
  } else {
    hazard("wait_unrecorded_event", c).detail =
        s(c.api) + " queried event " + hex(c.event) +
        " which was never recorded since it was created: the query proves nothing; record it (cuEventRecord) first";
    observe(p, c, "event_query", std::nullopt, nullptr);
  }
}

void Engine::on_stream_lifetime(ProcessState& p, const Call& c, const std::string& op) {
  if (op == "stream_create") {
    if (!c.stream || *c.stream == 0) return;
    size_t q = new_queue(p, c, "created", *c.stream);
    qs_[q].blocking = !(c.flags & 1);  // CU_STREAM_NON_BLOCKING / hipStreamNonBlocking
    r_.queues[q].non_blocking = !qs_[q].blocking;
    r_.queues[q].created_ns = c.ts;
    p.handles[*c.stream] = q;
  } else {
    auto it = p.handles.find(c.stream.value_or(0));
    if (it == p.handles.end()) return;
    qs_[it->second].destroyed = true;
    r_.queues[it->second].destroyed_ns = c.ts;
  }
}

void Engine::on_event_record(ProcessState& p, const Call& c) {
  auto q = find_queue(p, c, c.stream.value_or(0), true);
  if (!q) return;
  if (qs_[*q].capturing) {  // a graph node: a wait on it forks the capture (see wait_event)
    p.events[c.event].captured_by = qs_[*q].capture_origin;
    return;
  }
  Op& o = enqueue(p, *q, c, "event_record", nullptr);
  o.event = c.event;
  EventState& e = p.events[c.event];
  e.captured_by.reset();
  e.recorded = true;
  e.clock = qs_[*q].clock;
  e.lb = qs_[*q].lb;
  e.record_op = o.id;
}

void Engine::on_wait_event(ProcessState& p, const Call& c) {
  auto it = p.events.find(c.event);
  if (it != p.events.end() && it->second.captured_by) {
    // Fork: waiting on an event recorded in a capture joins this stream to
    // that capture until the origin's capture_end; the wait is a graph edge.
    size_t origin = *it->second.captured_by;
    auto q = find_queue(p, c, c.stream.value_or(0), true);
    if (!q || !qs_[origin].capturing) return;  // the capture ended: the event was never recorded on a queue
    if (!qs_[*q].capturing) {
      qs_[*q].capturing = true;
      qs_[*q].capture_origin = origin;
      qs_[origin].forked.push_back(*q);
    }
    return;
  }
  const EventState* e = it != p.events.end() && it->second.recorded ? &it->second : nullptr;
  auto q = op_queue(p, c);
  if (!q) return;
  Op& o = enqueue(p, *q, c, "wait_event", e);
  o.event = c.event;
  // An event with no state was created before the capture saw it (process
  // attached mid-run): whether it was recorded is unknown, so no hazard.
  if (!e && it != p.events.end()) {
    int64_t id = o.id;
    Hazard& h = hazard("wait_unrecorded_event", c);
    h.op_id = id;
    h.detail = s(c.api) + " made " + stream_label(*q) + " wait on event " + hex(c.event) +
               " which was never recorded since it was created: the wait orders nothing; record the event on the "
               "producing stream before waiting on it";
  }
}

void Engine::on_capture(ProcessState& p, const Call& c, bool begin) {
  if (begin) {
    if (auto q = find_queue(p, c, c.stream.value_or(0), true)) {
      qs_[*q].capturing = true;
      qs_[*q].capture_origin = *q;
    }
  } else {
    if (auto q = find_queue(p, c, c.stream.value_or(0), true)) {
      qs_[*q].capturing = false;
      for (size_t f : qs_[*q].forked) qs_[f].capturing = false;  // joined back before the end
      qs_[*q].forked.clear();
    }
  }
}

void Engine::on_sync(ProcessState& p, const Call& c) {
  if (!(c.result && *c.result == 0)) return;
  const std::string& target = s(c.op);
  if (target == "stream") {
    auto q = find_queue(p, c, c.stream.value_or(0), false);
    Clock f = q ? qs_[*q].clock : Clock{};
    observe(p, c, "stream_sync", q, q ? &f : nullptr);
  } else if (target == "event") {
    auto it = p.events.find(c.event);
    if (it != p.events.end() && it->second.recorded) {
      Clock f = it->second.clock;
      observe(p, c, "event_sync", std::nullopt, &f);
    } else if (it == p.events.end()) {  // created before the capture saw it: unknown, not unrecorded
      observe(p, c, "event_sync", std::nullopt, nullptr);
    } else {
      hazard("wait_unrecorded_event", c).detail =
          s(c.api) + " waited for event " + hex(c.event) +
          " which was never recorded since it was created: it returns at once and proves nothing; record it first";
      observe(p, c, "event_sync", std::nullopt, nullptr);
    }
  } else {  // context (cuCtxSynchronize, hipDeviceSynchronize): every queue of the process
    Clock f = p.host;
    retire_done(p);
    for (size_t qi : p.active) merge(f, qs_[qi].clock);
    observe(p, c, "context_sync", std::nullopt, &f);
  }
  host_synced(p, c);
}

// Hazard 5: a thread that synchronizes after each launch serializes host and GPU.
void Engine::host_synced(ProcessState& p, const Call& c) {
  LaunchRun& r = p.runs[c.tid];
  if (!r.pending_op || r.pending_synced) return;
  r.pending_synced = true;
  if (r.count == 0) {
    r.first_op = r.pending_op;
    r.first_sync = &c;
  }
  r.count += 1;
  r.last_op = r.pending_op;
}

void Engine::on_launch_for_runs(ProcessState& p, const Call& c, int64_t op) {
  LaunchRun& r = p.runs[c.tid];
  if (r.pending_op && !r.pending_synced) end_run(c, r, c.process_id, c.tid);
  r.pending_op = op;
  r.pending_synced = false;
}

constexpr int64_t kSyncRunMin = 8;

void Engine::end_run(const Call&, LaunchRun& r, int64_t, uint32_t tid) {
  if (r.count >= kSyncRunMin && r.first_sync) {
    const Op& first = r_.ops[r.first_op - 1];
    Hazard& h = hazard("sync_after_every_launch", *r.first_sync);
    h.ts_ns = first.enqueue_ns;
    h.op_id = r.first_op;
    h.other_op_id = r.last_op;
    h.other_stack_id = first.stack_id;
    h.detail = "thread " + std::to_string(tid) + " waited for the GPU (" + s(r.first_sync->api) + ") after each of " +
               std::to_string(r.count) + " consecutive launches (ops #" + std::to_string(r.first_op) + " to #" +
               std::to_string(r.last_op) +
               "): the host and the GPU take turns; queue the launches and synchronize once after the last";
  }
  r.count = 0;
  r.first_sync = nullptr;
}

replay::Result Engine::run() {
  for (const Call& c : in_.calls) step(c);
  for (auto& [pid, p] : procs_) {
    for (auto& [tid, r] : p.runs) end_run(in_.calls.front(), r, pid, tid);
  }
  r_.end_ns = in_.end_ns;
  windows_and_depth();
  idle_time();
  std::stable_sort(r_.hazards.begin(), r_.hazards.end(),
                   [](const Hazard& a, const Hazard& b) { return a.ts_ns < b.ts_ns; });
  for (size_t i = 0; i < r_.hazards.size(); ++i) r_.hazards[i].id = static_cast<int64_t>(i) + 1;
  return std::move(r_);
}

}  // namespace detail

gpuobs::Result<replay::Result> run(Db& capture) {
  auto in = detail::load_input(capture);
  if (!in) return in.error();
  return detail::Engine(*in).run();
}

}  // namespace gpuobs::replay
