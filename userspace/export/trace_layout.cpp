#include "export/trace_layout.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

namespace gpuobs::exporter {
namespace {

// A stream whose windows overlap more than this many at once gets no more
// lanes: its further operations are drawn as instants at their earliest start
// (a capture that never synchronizes a stream would otherwise need one lane
// per operation, all ending at the capture's end).
constexpr size_t kMaxLanes = 32;

class Builder {
 public:
  Builder(Timeline& t, const replay::Result& r) : t_(t), r_(r) {
    L_.strings = std::move(t.strings);
    for (uint32_t i = 0; i < L_.strings.size(); ++i) index_.emplace(L_.strings[i], i);
    for (auto& p : t.processes) processes_.emplace(p.process_id, &p);
  }

  TraceLayout build() {
    L_.start_ns = t_.start_ns;
    L_.end_ns = std::max(t_.end_ns, r_.end_ns);
    add_host_calls();
    add_queues();
    add_memory();
    add_gpu_metrics();
    add_gpu_jobs();
    sort_and_nest();
    return std::move(L_);
  }

 private:
  uint32_t intern(const std::string& s) {
    auto [it, fresh] = index_.emplace(s, static_cast<uint32_t>(L_.strings.size()));
    if (fresh) L_.strings.push_back(s);
    return it->second;
  }

  uint64_t add_track(TrackKind kind, uint64_t parent, std::string name, uint32_t pid, uint32_t tid = 0) {
    L_.tracks.push_back(Track{L_.tracks.size() + 1, parent, kind, std::move(name), pid, tid});
    return L_.tracks.size();
  }

  uint64_t process_track(int64_t process_id) {
    auto it = process_tracks_.find(process_id);
    if (it != process_tracks_.end()) return it->second;
    auto p = processes_.find(process_id);
    uint32_t tgid = p == processes_.end() ? 0 : p->second->tgid;
    std::string name = p == processes_.end() || p->second->name.empty() ? "process" : p->second->name;
    uint64_t uuid = add_track(TrackKind::process, 0, name, tgid);
    process_tracks_.emplace(process_id, uuid);
    return uuid;
  }

  uint64_t thread_track(int64_t process_id, uint32_t tid) {
    auto key = std::make_pair(process_id, tid);
    auto it = thread_tracks_.find(key);
    if (it != thread_tracks_.end()) return it->second;
    uint64_t parent = process_track(process_id);
    const Track& p = L_.tracks[parent - 1];
    uint64_t uuid = add_track(TrackKind::thread, parent, p.name, p.pid, tid);
    thread_tracks_.emplace(key, uuid);
    return uuid;
  }

  static uint64_t row_key(uint8_t table, int64_t row) { return (uint64_t{table} << 56) | static_cast<uint64_t>(row); }

  void add_host_calls() {
    for (const HostCall& c : t_.calls) {
      Slice s;
      s.track = thread_track(c.process_id, c.tid);
      s.start_ns = c.ts_ns;
      s.end_ns = c.ts_ns + c.dur_ns.value_or(0);
      s.instant = s.end_ns <= s.start_ns;  // entry-only calls (launches) and zero-time calls
      if (s.instant) s.end_ns = s.start_ns;
      s.name = c.name;
      if (c.detail) s.args.push_back(Arg{"kernel", true, c.detail});
      if (c.result) s.args.push_back(Arg{c.table == kIoctlTable ? "ret" : "result", false, *c.result});
      if (!c.dur_ns) s.args.push_back(Arg{"entry_only", false, 1});
      if (c.stack) s.args.push_back(Arg{"stack", true, c.stack});
      const NcclCallInfo* nccl = c.nccl ? &t_.nccl[c.nccl - 1] : nullptr;
      if (nccl) add_nccl_args(s, *nccl);
      host_slice_.emplace(row_key(c.table, c.row_id), static_cast<uint32_t>(L_.slices.size()));
      L_.slices.push_back(s);
      if (nccl && (nccl->comm_hash || nccl->comm_id)) add_to_communicator(std::move(s), c, *nccl);
    }
    // One collective across its ranks: a flow from each rank's call to the
    // next one to enter (calls are in time order already), so the timeline
    // shows who came first and who last; each call says its place.
    uint64_t n = 0;
    for (auto& [key, slices] : collectives_) {
      int64_t first = L_.slices[slices[0]].start_ns;
      for (size_t i = 0; i < slices.size(); ++i) {
        Slice& s = L_.slices[slices[i]];
        s.args.push_back(Arg{"arrival", false, static_cast<int64_t>(i) + 1});
        s.args.push_back(Arg{"after_first_ns", false, s.start_ns - first});
        if (i == 0) continue;
        uint64_t id = kCollectiveFlowBase + n++;
        L_.slices[slices[i - 1]].flows_out.push_back(id);
        s.flows_in.push_back(id);
      }
    }
  }

  void add_nccl_args(Slice& s, const NcclCallInfo& n) {
    if (n.op) s.args.push_back(Arg{"op", true, n.op});
    if (n.comm_hash) s.args.push_back(Arg{"comm", true, intern(hex(n.comm_hash))});
    if (n.seq) s.args.push_back(Arg{"seq", false, n.seq});
    if (n.rank >= 0) s.args.push_back(Arg{"rank", false, n.rank});
    if (n.nranks > 0) s.args.push_back(Arg{"nranks", false, n.nranks});
    if (n.bytes) s.args.push_back(Arg{"bytes", false, *n.bytes});
  }

  static std::string hex(uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
    return buf;
  }

  // A communicator: one across processes when its hash is known, else the
  // process's own (ncclCommInitAll's, or one made before the capture).
  using CommKey = std::pair<uint64_t, int64_t>;  // (hash, 0) or (0, nccl_comms.id)
  static CommKey comm_key(const NcclCallInfo& n) {
    return n.comm_hash ? CommKey{n.comm_hash, 0} : CommKey{0, n.comm_id};
  }

  // The call again, on its rank's track under the communicator: the ranks'
  // calls one above the other, so the time between their arrivals shows.
  void add_to_communicator(Slice s, const HostCall& c, const NcclCallInfo& n) {
    CommKey key = comm_key(n);
    auto [ci, fresh] = communicators_.try_emplace(key);
    Communicator& comm = ci->second;
    if (fresh) {
      uint32_t pid = kCommPidBase + static_cast<uint32_t>(communicators_.size());
      std::string name = "NCCL comm " + (n.comm_hash ? hex(n.comm_hash) : "local #" + std::to_string(n.comm_id));
      if (n.nranks > 0) name += " (" + std::to_string(n.nranks) + (n.nranks == 1 ? " rank)" : " ranks)");
      comm.track = add_track(TrackKind::communicator, 0, name, pid);
    }
    auto [ri, new_rank] = comm.ranks.try_emplace(std::make_pair(c.process_id, n.rank));
    std::vector<std::pair<uint64_t, int64_t>>& lanes = ri->second;  // (track, last end)
    size_t lane = 0;
    while (lane < lanes.size() && lanes[lane].second > s.start_ns) ++lane;
    if (lane == lanes.size()) {
      // Calls of one rank overlap only when several of its threads use the
      // communicator at once: a further lane of the same name.
      auto p = processes_.find(c.process_id);
      uint32_t tgid = p == processes_.end() ? 0 : p->second->tgid;
      std::string name = n.rank >= 0 ? "rank " + std::to_string(n.rank) + " · " : "";
      name += "pid " + std::to_string(tgid);
      if (p != processes_.end() && !p->second->name.empty()) name += " " + p->second->name;
      const Track& parent = L_.tracks[comm.track - 1];
      uint64_t uuid = add_track(TrackKind::rank, comm.track, name, parent.pid);
      Track& t = L_.tracks[uuid - 1];
      // tid rank + 1 sorts the ranks in Chrome's viewer; taken (a second
      // lane, or a second process claiming the rank): one of its own.
      t.tid = kRankTidBase + static_cast<uint32_t>(uuid);
      if (n.rank >= 0 && comm.tids.insert(static_cast<uint32_t>(n.rank) + 1).second)
        t.tid = static_cast<uint32_t>(n.rank) + 1;
      t.order = n.rank >= 0 ? static_cast<int32_t>(n.rank) : std::numeric_limits<int32_t>::max();
      lanes.emplace_back(uuid, s.start_ns);
    }
    if (!s.instant) lanes[lane].second = s.end_ns;
    s.track = lanes[lane].first;
    if (n.seq) collectives_[{key, n.seq}].push_back(static_cast<uint32_t>(L_.slices.size()));
    L_.slices.push_back(std::move(s));
  }

  std::string queue_name(const replay::Queue& q) {
    char buf[96];
    if (q.kind == "legacy") std::snprintf(buf, sizeof buf, "Stream legacy (pid %u)", q.tgid);
    else if (q.kind == "per_thread")
      std::snprintf(buf, sizeof buf, "Stream per-thread tid %u (pid %u)", q.tid.value_or(0), q.tgid);
    else if (!q.label.empty())  // stream_names' label: the one reports and diff use
      std::snprintf(buf, sizeof buf, "Stream %s 0x%llx (pid %u)", q.label.c_str(),
                    static_cast<unsigned long long>(q.handle), q.tgid);
    else std::snprintf(buf, sizeof buf, "Stream 0x%llx (pid %u)", static_cast<unsigned long long>(q.handle), q.tgid);
    return buf;
  }

  // Notes shown on every replayed operation, interned once.
  struct OpNotes {
    uint32_t bounds, open, crowded, measured;
  };

  void add_queues() {
    std::unordered_map<int64_t, const replay::Observation*> obs;
    for (auto& o : r_.observations) obs.emplace(o.id, &o);
    std::unordered_map<int64_t, size_t> queue_index;
    for (size_t i = 0; i < r_.queues.size(); ++i) queue_index.emplace(r_.queues[i].id, i);
    std::vector<uint64_t> stream_track(r_.queues.size());
    for (size_t i = 0; i < r_.queues.size(); ++i) {
      const replay::Queue& q = r_.queues[i];
      stream_track[i] = add_track(TrackKind::stream, process_track(q.process_id), queue_name(q), q.tgid);
    }
    // Operations per queue, by window.
    std::vector<std::vector<const replay::Op*>> per_queue(r_.queues.size());
    for (auto& op : r_.ops) {
      auto it = queue_index.find(op.queue_id);
      if (it != queue_index.end()) per_queue[it->second].push_back(&op);
    }
    const OpNotes notes{intern("estimated: earliest start / latest end derived from host observations, not measured"),
                        intern("never proven complete: folded into one marker per stream, from the first such "
                               "operation's earliest start to the capture's end"),
                        intern("overlaps too many windows on this stream: drawn as an instant at its earliest start"),
                        intern("measured on the GPU by CUPTI (record --gpu-time)")};
    for (size_t qi = 0; qi < per_queue.size(); ++qi) add_queue_ops(qi, stream_track[qi], per_queue[qi], notes, obs);
    add_dependency_flows();
    add_depth_counters(queue_index, stream_track);
  }

  // One queue's operations, in windows on lanes under its stream track (at
  // most kMaxLanes; past that an operation is drawn as an instant).
  void add_queue_ops(size_t qi, uint64_t stream_track, std::vector<const replay::Op*>& ops, const OpNotes& notes,
                     const std::unordered_map<int64_t, const replay::Observation*>& obs) {
    // Operations never proven complete would each be a window to the
    // capture's end, one lane apiece (a stream never synchronized filled 32
    // lanes): they become one marker on their own lane (issue 20).
    std::vector<const replay::Op*> open;
    std::erase_if(ops, [&](const replay::Op* o) {
      if (o->latest_end_ns) return false;
      open.push_back(o);
      return true;
    });
    auto end_of = [&](const replay::Op* o) { return std::max(o->earliest_start_ns, *o->latest_end_ns); };
    std::stable_sort(ops.begin(), ops.end(), [&](const replay::Op* a, const replay::Op* b) {
      if (a->earliest_start_ns != b->earliest_start_ns) return a->earliest_start_ns < b->earliest_start_ns;
      if (end_of(a) != end_of(b)) return end_of(a) < end_of(b);
      return a->id < b->id;
    });
    std::vector<std::pair<uint64_t, int64_t>> lanes;            // (track, last end)
    const std::string name = L_.tracks[stream_track - 1].name;  // a copy: add_track reallocates
    for (const replay::Op* op : ops) {
      Slice s;
      s.start_ns = op->earliest_start_ns;
      s.end_ns = end_of(op);
      s.instant = s.end_ns == s.start_ns;
      size_t lane = 0;
      while (lane < lanes.size() && lanes[lane].second > s.start_ns) ++lane;
      if (lane == lanes.size() && lanes.size() < kMaxLanes)
        lanes.emplace_back(add_track(TrackKind::lane, stream_track, name, r_.queues[qi].tgid), s.start_ns);
      if (lane < lanes.size()) {
        if (!s.instant) lanes[lane].second = s.end_ns;
      } else {
        lane = 0;  // no free lane: an instant on the first, which cannot break its nesting
        s.instant = true;
        s.args.push_back(Arg{"drawn", true, notes.crowded});
      }
      s.track = lanes[lane].first;
      if (s.instant) s.end_ns = s.start_ns;
      add_op_args(s, *op, notes, obs);
      int table = host_table_index(op->source_table);
      auto host = table < 0 ? host_slice_.end() : host_slice_.find(row_key(uint8_t(table), op->source_id));
      if (host != host_slice_.end()) {
        L_.slices[host->second].flows_out.push_back(static_cast<uint64_t>(op->id));
        s.flows_in.push_back(static_cast<uint64_t>(op->id));
      }
      s.flow_rank = 1;
      op_slice_.emplace(op->id, static_cast<uint32_t>(L_.slices.size()));
      L_.slices.push_back(std::move(s));
    }
    if (!open.empty()) {
      add_open_marker(qi, stream_track, name, open, notes);
      lanes.emplace_back(L_.slices.back().track, r_.end_ns);
    }
    queue_lanes_.push_back(lanes.size());
    add_measured(qi, stream_track, name, ops, open, notes);
  }

  // record --gpu-time: the operations of this stream as CUPTI measured them,
  // on a track of their own under the stream ("... measured"), beside the
  // replay's estimated windows. One stream runs one operation at a time;
  // one that would overlap its predecessor (two clocks' rounding) starts
  // where the predecessor ended.
  void add_measured(size_t qi, uint64_t stream_track, const std::string& name,
                    const std::vector<const replay::Op*>& ops, const std::vector<const replay::Op*>& open,
                    const OpNotes& notes) {
    if (t_.gpu_times.empty()) return;
    std::vector<std::pair<const replay::Op*, std::pair<int64_t, int64_t>>> measured;
    for (const auto* list : {&ops, &open})
      for (const replay::Op* op : *list) {
        int table = host_table_index(op->source_table);
        if (table < 0) continue;
        auto it = t_.gpu_times.find(row_key(uint8_t(table), op->source_id));
        if (it != t_.gpu_times.end()) measured.emplace_back(op, it->second);
      }
    if (measured.empty()) return;
    std::sort(measured.begin(), measured.end(), [](const auto& a, const auto& b) {
      return a.second.first != b.second.first ? a.second.first < b.second.first : a.first->id < b.first->id;
    });
    uint64_t track = add_track(TrackKind::lane, stream_track, name + " measured", r_.queues[qi].tgid);
    int64_t last_end = INT64_MIN;
    for (auto& [op, span] : measured) {
      Slice s;
      s.track = track;
      s.start_ns = std::max(span.first, last_end);
      s.end_ns = std::max(s.start_ns, span.second);
      s.instant = s.end_ns == s.start_ns;
      last_end = s.end_ns;
      s.name = intern(op->name);
      s.args.push_back(Arg{"timing", true, notes.measured});
      s.args.push_back(Arg{"op_id", false, op->id});
      s.args.push_back(Arg{"gpu_ns", false, span.second - span.first});
      L_.slices.push_back(std::move(s));
    }
  }

  // One slice for a stream's operations never proven complete: from the first
  // one's earliest start to the capture's end, named by their count, with
  // their kinds and ids in args; every host call that enqueued one flows into
  // it, and event dependencies on them start or end there.
  void add_open_marker(size_t qi, uint64_t stream_track, const std::string& name,
                       const std::vector<const replay::Op*>& open, const OpNotes& notes) {
    Slice s;
    s.track = add_track(TrackKind::lane, stream_track, name, r_.queues[qi].tgid);
    s.start_ns = open.front()->earliest_start_ns;
    for (const replay::Op* op : open) s.start_ns = std::min(s.start_ns, op->earliest_start_ns);
    s.end_ns = std::max(s.start_ns, r_.end_ns);
    s.instant = s.end_ns == s.start_ns;
    s.name = intern(std::to_string(open.size()) + (open.size() == 1 ? " operation" : " operations") +
                    " never proven complete");
    std::map<std::string, int64_t> kinds;
    for (const replay::Op* op : open) ++kinds[op->kind];
    std::string kind_list, ids;
    for (auto& [k, n] : kinds) kind_list += (kind_list.empty() ? "" : ", ") + k + " " + std::to_string(n);
    constexpr size_t kIdsShown = 20;
    for (size_t i = 0; i < open.size() && i < kIdsShown; ++i) ids += (i ? ", " : "") + std::to_string(open[i]->id);
    if (open.size() > kIdsShown) ids += ", ... (" + std::to_string(open.size() - kIdsShown) + " more)";
    s.args.push_back(Arg{"open", true, notes.open});
    s.args.push_back(Arg{"bounds", true, notes.bounds});
    s.args.push_back(Arg{"operations", false, static_cast<int64_t>(open.size())});
    s.args.push_back(Arg{"kinds", true, intern(kind_list)});
    s.args.push_back(Arg{"op_ids", true, intern(ids)});
    s.flow_rank = 1;
    const auto index = static_cast<uint32_t>(L_.slices.size());
    for (const replay::Op* op : open) {
      int table = host_table_index(op->source_table);
      auto host = table < 0 ? host_slice_.end() : host_slice_.find(row_key(uint8_t(table), op->source_id));
      if (host != host_slice_.end()) {
        L_.slices[host->second].flows_out.push_back(static_cast<uint64_t>(op->id));
        s.flows_in.push_back(static_cast<uint64_t>(op->id));
      }
      op_slice_.emplace(op->id, index);
    }
    L_.slices.push_back(std::move(s));
  }

  void add_op_args(Slice& s, const replay::Op& op, const OpNotes& notes,
                   const std::unordered_map<int64_t, const replay::Observation*>& obs) {
    s.name = intern(op.name);
    s.args.push_back(Arg{"api", true, intern(op.api)});
    s.args.push_back(Arg{"kind", true, intern(op.kind)});
    s.args.push_back(Arg{"op_id", false, op.id});
    s.args.push_back(Arg{"seq", false, op.seq});
    s.args.push_back(Arg{"bounds", true, notes.bounds});
    s.args.push_back(Arg{"enqueue_ns", false, op.enqueue_ns});
    s.args.push_back(Arg{"earliest_start_ns", false, op.earliest_start_ns});
    if (op.latest_end_ns) {
      s.args.push_back(Arg{"latest_end_ns", false, *op.latest_end_ns});
    } else {
      s.args.push_back(Arg{"open", true, notes.open});
    }
    if (op.bound_by) {
      auto o = obs.find(*op.bound_by);
      s.args.push_back(Arg{"bound_by", true,
                           intern(o == obs.end() ? "observation " + std::to_string(*op.bound_by)
                                                 : o->second->api + " (" + o->second->kind + ", observation " +
                                                       std::to_string(o->first) + ")")});
    }
    if (op.bytes) s.args.push_back(Arg{"bytes", false, static_cast<int64_t>(op.bytes)});
    if (!op.direction.empty()) s.args.push_back(Arg{"direction", true, intern(op.direction)});
    if (op.event) s.args.push_back(Arg{"event", false, static_cast<int64_t>(op.event)});
  }

  // Flows along the event dependencies, and their ranks (record -> wait -> ...).
  void add_dependency_flows() {
    for (size_t i = 0; i < r_.deps.size(); ++i) {
      const replay::Dependency& d = r_.deps[i];
      if (d.kind != "event") continue;
      auto from = op_slice_.find(d.on_op_id), to = op_slice_.find(d.op_id);
      if (from == op_slice_.end() || to == op_slice_.end()) continue;
      if (from->second == to->second) continue;  // both in one never-proven marker
      L_.slices[from->second].flows_out.push_back(kDependencyFlowBase + i);
      L_.slices[to->second].flows_in.push_back(kDependencyFlowBase + i);
    }
    // Ranks along the event edges, to a fixed point.
    for (bool changed = true; changed;) {
      changed = false;
      for (auto& d : r_.deps) {
        if (d.kind != "event") continue;
        auto from = op_slice_.find(d.on_op_id), to = op_slice_.find(d.op_id);
        if (from == op_slice_.end() || to == op_slice_.end() || from->second == to->second) continue;
        uint8_t want = static_cast<uint8_t>(std::min(255, L_.slices[from->second].flow_rank + 1));
        if (L_.slices[to->second].flow_rank < want) L_.slices[to->second].flow_rank = want, changed = true;
      }
    }
  }

  // A queue-depth counter track under each stream track that has depth changes.
  void add_depth_counters(const std::unordered_map<int64_t, size_t>& queue_index,
                          const std::vector<uint64_t>& stream_track) {
    std::unordered_map<int64_t, uint64_t> depth_track;
    for (auto& d : r_.depth) {
      auto it = depth_track.find(d.queue_id);
      if (it == depth_track.end()) {
        auto qi = queue_index.find(d.queue_id);
        if (qi == queue_index.end()) continue;
        uint64_t parent = stream_track[qi->second];
        it = depth_track
                 .emplace(d.queue_id, add_track(TrackKind::depth_counter, parent, L_.tracks[parent - 1].name + " depth",
                                                r_.queues[qi->second].tgid))
                 .first;
      }
      L_.counters.push_back(CounterPoint{it->second, d.ts_ns, d.depth});
    }
  }

  void add_memory() {
    std::unordered_map<int64_t, uint64_t> track;
    for (auto& m : t_.memory) {
      auto it = track.find(m.process_id);
      if (it == track.end()) {
        uint64_t parent = process_track(m.process_id);
        it = track
                 .emplace(m.process_id,
                          add_track(TrackKind::memory_counter, parent, "device memory", L_.tracks[parent - 1].pid))
                 .first;
      }
      L_.counters.push_back(CounterPoint{it->second, m.ts_ns, m.live_bytes});
    }
  }

  // One track per GPU, a counter track per metric under it (schema 19).
  void add_gpu_metrics() {
    std::map<int64_t, uint64_t> gpu_track;
    for (auto& g : t_.gpus)
      gpu_track[g.gpu_id] = add_track(TrackKind::gpu, 0, g.name, kGpuPidBase + static_cast<uint32_t>(g.gpu_id));
    std::map<std::pair<int64_t, uint32_t>, uint64_t> metric_track;
    for (auto& m : t_.gpu_samples) {
      auto key = std::make_pair(m.gpu_id, m.metric);
      auto it = metric_track.find(key);
      if (it == metric_track.end()) {
        auto g = gpu_track.find(m.gpu_id);
        if (g == gpu_track.end()) continue;  // a sample of a GPU without a row: nothing to hang it on
        it = metric_track
                 .emplace(key, add_track(TrackKind::gpu_counter, g->second, L_.strings[m.metric],
                                         L_.tracks[g->second - 1].pid))
                 .first;
      }
      L_.counters.push_back(CounterPoint{it->second, m.ts_ns, static_cast<int64_t>(m.value), m.value});
    }
  }

  // GPU jobs (schema 26): per device a track, per ring its jobs from run to
  // done. A ring holds several jobs at once (hw_job_count: handed over,
  // not finished), so overlapping jobs go to further lanes of the ring's
  // name, which the UI shows together.
  void add_gpu_jobs() {
    std::map<uint32_t, uint64_t> device_track;
    std::map<std::pair<uint32_t, uint32_t>, std::vector<std::pair<uint64_t, int64_t>>> lanes;  // (track, last end)
    uint32_t rings = 0;
    for (const auto& j : t_.gpu_jobs) {
      auto d = device_track.find(j.device);
      if (d == device_track.end()) {
        const std::string& dev = L_.strings[j.device];
        d = device_track
                .emplace(j.device, add_track(TrackKind::gpu, 0, "GPU jobs " + (dev.empty() ? "(device unknown)" : dev),
                                             kGpuJobPidBase + static_cast<uint32_t>(device_track.size())))
                .first;
      }
      auto& ring_lanes = lanes[{j.device, j.ring}];
      if (ring_lanes.empty()) ++rings;
      int64_t end = j.end_ns.value_or(L_.end_ns);
      end = std::max(end, j.run_ns);
      uint64_t track = 0;
      for (auto& [t, last] : ring_lanes)
        if (last <= j.run_ns) {
          track = t;
          last = end;
          break;
        }
      if (!track) {
        uint32_t tid = rings * 64 + static_cast<uint32_t>(ring_lanes.size()) + 1;
        track = add_track(TrackKind::ring, d->second, L_.strings[j.ring], L_.tracks[d->second - 1].pid, tid);
        ring_lanes.emplace_back(track, end);
      }
      Slice s;
      s.track = track;
      s.start_ns = j.run_ns;
      s.end_ns = end;
      auto p = processes_.find(j.process_id);
      s.name = intern(p == processes_.end() || p->second->name.empty() ? "job" : p->second->name);
      s.args.push_back(Arg{"gpu_job_id", false, j.job_id});
      if (p != processes_.end()) s.args.push_back(Arg{"pid", false, p->second->tgid});
      if (j.seqno) s.args.push_back(Arg{"fence_seqno", false, *j.seqno});
      if (j.queued_ns) s.args.push_back(Arg{"queue_wait_ns", false, j.run_ns - *j.queued_ns});
      if (!j.end_ns) s.args.push_back(Arg{"unfinished", false, 1});
      L_.slices.push_back(std::move(s));
    }
  }

  // Slices on one track must nest. Host calls nest by construction (an ioctl
  // returns before the API call that made it), but a call whose probes lost an
  // event may not: such a slice is clipped to its parent's end, and says so.
  void sort_and_nest() {
    std::vector<uint32_t> order(L_.slices.size());
    for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      const Slice &x = L_.slices[a], &y = L_.slices[b];
      if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
      return x.end_ns > y.end_ns;
    });
    std::vector<Slice> sorted;
    sorted.reserve(order.size());
    for (uint32_t i : order) sorted.push_back(std::move(L_.slices[i]));
    L_.slices = std::move(sorted);
    std::unordered_map<uint64_t, std::vector<int64_t>> open;  // track -> ends of the open slices
    for (Slice& s : L_.slices) {
      if (s.instant) continue;
      auto& stack = open[s.track];
      while (!stack.empty() && stack.back() <= s.start_ns) stack.pop_back();
      if (!stack.empty() && s.end_ns > stack.back()) {
        s.args.push_back(Arg{"clipped_end_ns", false, s.end_ns});
        s.end_ns = stack.back();
      }
      stack.push_back(s.end_ns);
    }
  }

  Timeline& t_;
  const replay::Result& r_;
  TraceLayout L_;
  std::unordered_map<std::string, uint32_t> index_;
  std::unordered_map<int64_t, const ProcessInfo*> processes_;
  std::unordered_map<int64_t, uint64_t> process_tracks_;
  std::map<std::pair<int64_t, uint32_t>, uint64_t> thread_tracks_;
  std::unordered_map<uint64_t, uint32_t> host_slice_;
  struct Communicator {
    uint64_t track = 0;
    std::set<uint32_t> tids;  // of its rank tracks
    // (process id, rank) -> its lanes: (track, end of the last call on it)
    std::map<std::pair<int64_t, int64_t>, std::vector<std::pair<uint64_t, int64_t>>> ranks;
  };
  std::map<CommKey, Communicator> communicators_;
  std::map<std::pair<CommKey, int64_t>, std::vector<uint32_t>> collectives_;  // (communicator, seq) -> rank slices
  std::unordered_map<int64_t, uint32_t> op_slice_;
  std::vector<size_t> queue_lanes_;
};

}  // namespace

TraceLayout build_layout(Timeline timeline, const replay::Result& replay) { return Builder(timeline, replay).build(); }

std::vector<TraceEvent> ordered_events(const TraceLayout& L) {
  std::vector<TraceEvent> ev;
  ev.reserve(L.slices.size() * 2 + L.counters.size());
  for (uint32_t i = 0; i < L.slices.size(); ++i) {
    const Slice& s = L.slices[i];
    if (s.instant) {
      ev.push_back(TraceEvent{s.start_ns, TraceEvent::instant, i});
    } else {
      ev.push_back(TraceEvent{s.start_ns, TraceEvent::begin, i});
      ev.push_back(TraceEvent{s.end_ns, TraceEvent::end, i});
    }
  }
  for (uint32_t i = 0; i < L.counters.size(); ++i)
    ev.push_back(TraceEvent{L.counters[i].ts_ns, TraceEvent::counter, i});
  // Slices are sorted outermost first: begins in index order, ends in
  // reverse. Instants and begins are one class: on one track either order
  // nests, across tracks the flow rank decides. (On one track, begins at one
  // instant have one rank: host calls are all 0, lanes hold disjoint windows.)
  auto cls = [](TraceEvent::Phase p) { return p == TraceEvent::instant ? TraceEvent::begin : p; };
  std::sort(ev.begin(), ev.end(), [&](const TraceEvent& a, const TraceEvent& b) {
    if (a.ts_ns != b.ts_ns) return a.ts_ns < b.ts_ns;
    if (cls(a.phase) != cls(b.phase)) return cls(a.phase) < cls(b.phase);
    if (a.phase == TraceEvent::end) return a.index > b.index;
    if (a.phase == TraceEvent::counter) return a.index < b.index;
    uint8_t ra = L.slices[a.index].flow_rank, rb = L.slices[b.index].flow_rank;
    return ra != rb ? ra < rb : a.index < b.index;
  });
  return ev;
}

}  // namespace gpuobs::exporter
