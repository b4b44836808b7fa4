// The re-execution's comparison (exec_compare.h): each side's streams
// measured the same way, from its own replay, within its own window.
#include "replay/exec_compare.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

namespace gpuobs::replay {
namespace {

int64_t overlap(int64_t a0, int64_t a1, Window w) {
  return std::max<int64_t>(0, std::min(a1, w.to_ns) - std::max(a0, w.from_ns));
}

bool is_work(const std::string& kind) {
  return kind == "launch" || kind == "copy" || kind == "memset" || kind == "host_func" || kind == "graph_launch";
}

// Nearest-rank percentile of the kernel and graph steps' host gaps.
std::pair<int64_t, int64_t> gap_percentiles(const Schedule& s, int64_t& launches) {
  std::vector<int64_t> g;
  for (const ExecStep& st : s.steps)
    if (st.kind == StepKind::kernel || st.kind == StepKind::graph) g.push_back(st.gap_ns);
  launches = static_cast<int64_t>(g.size());
  if (g.empty()) return {0, 0};
  std::sort(g.begin(), g.end());
  auto at = [&](double p) {
    size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(g.size())));
    return g[std::clamp<size_t>(rank, 1, g.size()) - 1];
  };
  return {at(0.5), at(0.9)};
}

void add(StreamUse& total, const StreamUse& u) {
  total.work_ops += u.work_ops, total.measured_ops += u.measured_ops;
  total.busy_ns += u.busy_ns, total.idle_ns += u.idle_ns;
  total.host_wait_ns += u.host_wait_ns, total.sync_wait_ns += u.sync_wait_ns;
  total.dependency_wait_ns += u.dependency_wait_ns, total.other_ns += u.other_ns;
}

// The executor's queue that replayed schedule stream `id`, if it ran.
std::optional<int64_t> exec_queue(const replay::Result& r, const std::vector<ExecPart>& parts, const ExecStream& s) {
  for (const ExecPart& p : parts) {
    if (p.process_id != s.process_id) continue;
    for (const ExecPart::Stream& x : p.streams) {
      if (x.id != s.id) continue;
      for (const Queue& q : r.queues) {
        if (q.tgid != p.pid) continue;
        bool match = s.kind == "legacy"       ? q.kind == "legacy"
                     : s.kind == "per_thread" ? q.kind == "per_thread" && q.tid && *q.tid == x.tid
                                              : q.kind != "legacy" && q.kind != "per_thread" && q.handle == x.handle;
        if (match) return q.id;
      }
    }
  }
  return std::nullopt;
}

}  // namespace

gpuobs::Result<std::vector<ExecPart>> read_exec_report(const std::string& path) {
  std::ifstream in(path);
  if (!in) return make_error("cannot read the executor's report " + path);
  std::vector<ExecPart> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return make_error(path + ": a line is not JSON");
    try {
      ExecPart p;
      p.process_id = j.at("process_id").get<int64_t>();
      p.pid = j.at("pid").get<uint32_t>();
      p.t0_mono_ns = j.at("t0_mono_ns").get<int64_t>();
      p.issued_mono_ns = j.at("issued_mono_ns").get<int64_t>();
      p.end_mono_ns = j.at("end_mono_ns").get<int64_t>();
      const auto& c = j.at("calibration");
      p.calibration = c.value("source", c.at("measured").get<bool>() ? "events" : "default");
      p.ns_per_cycle = c.at("ns_per_cycle").get<double>();
      p.fixed_ns = c.at("fixed_ns").get<double>();
      for (const auto& s : j.at("streams"))
        p.streams.push_back({s.at("id").get<int32_t>(), s.at("handle").get<uint64_t>(), s.at("tid").get<uint32_t>()});
      out.push_back(std::move(p));
    } catch (const nlohmann::json::exception& e) { return make_error(path + ": " + e.what()); }
  }
  if (out.empty()) return make_error("the executor's report " + path + " is empty: the executor did not finish");
  return out;
}

StreamUse stream_use(const replay::Result& r, int64_t queue_id, Window w) {
  StreamUse u;
  u.queue_id = queue_id;
  for (const IdleSpan& s : r.idle_spans) {
    if (!s.queue_id || *s.queue_id != queue_id) continue;
    u.busy_ns = overlap(s.start_ns, s.end_ns, w);
    if (s.start_ns >= w.from_ns && s.end_ns <= w.to_ns) u.measured_ops = s.measured_ops;
  }
  for (const Op& o : r.ops)
    if (o.queue_id == queue_id && is_work(o.kind) && o.enqueue_ns >= w.from_ns && o.enqueue_ns < w.to_ns) ++u.work_ops;
  u.measured_ops = std::min(u.measured_ops, u.work_ops);
  for (const IdleGap& g : r.idle_gaps) {
    if (!g.queue_id || *g.queue_id != queue_id) continue;
    u.idle_ns += overlap(g.start_ns, g.end_ns, w);
    for (const IdlePiece& p : g.pieces) {
      int64_t ns = overlap(p.start_ns, p.end_ns, w);
      if (p.kind == "host_wait") u.host_wait_ns += ns;
      else if (p.kind == "sync_wait") u.sync_wait_ns += ns;
      else if (p.kind == "dependency_wait") u.dependency_wait_ns += ns;
      else u.other_ns += ns;
    }
  }
  u.busy_ns = std::max<int64_t>(0, u.busy_ns - u.idle_ns);
  return u;
}

double StreamCompare::busy_error() const {
  if (orig.busy_ns == 0) return exec.busy_ns == 0 ? 0.0 : 1.0;
  return static_cast<double>(exec.busy_ns - orig.busy_ns) / static_cast<double>(orig.busy_ns);
}

double ExecCompare::e2e_error() const {
  if (orig_e2e_ns == 0) return exec_e2e_ns == 0 ? 0.0 : 1.0;
  return static_cast<double>(exec_e2e_ns - orig_e2e_ns) / static_cast<double>(orig_e2e_ns);
}

ExecCompare compare_execution(const Schedule& orig, const replay::Result& orig_replay, const Schedule& exec,
                              const replay::Result& exec_replay, const std::vector<ExecPart>& parts) {
  ExecCompare c;
  c.steps = static_cast<int64_t>(orig.steps.size());
  c.orig_e2e_ns = orig.end_ns - orig.start_ns;
  c.exec_e2e_ns = exec.end_ns - exec.start_ns;
  std::tie(c.orig_gap_p50_ns, c.orig_gap_p90_ns) = gap_percentiles(orig, c.orig_launches);
  std::tie(c.exec_gap_p50_ns, c.exec_gap_p90_ns) = gap_percentiles(exec, c.exec_launches);
  Window ow{orig.start_ns, orig.end_ns + 1}, ew{exec.start_ns, exec.end_ns + 1};
  for (const ExecStream& s : orig.streams) {
    StreamCompare sc;
    sc.stream = s.id, sc.kind = s.kind, sc.label = s.label, sc.priority = s.priority;
    sc.orig = stream_use(orig_replay, s.queue_id, ow);
    if (auto q = exec_queue(exec_replay, parts, s)) sc.exec = stream_use(exec_replay, *q, ew);
    add(c.orig_total, sc.orig);
    add(c.exec_total, sc.exec);
    c.streams.push_back(std::move(sc));
  }
  return c;
}

std::optional<SpinFit> fit_spin_kernel(const std::vector<std::pair<uint64_t, int64_t>>& samples) {
  std::map<uint64_t, std::vector<int64_t>> by;
  for (auto [c, ns] : samples) by[c].push_back(ns);
  if (by.size() < 2) return std::nullopt;
  std::vector<std::pair<double, double>> pts;  // (cycles, median ns)
  for (auto& [c, v] : by) {
    std::sort(v.begin(), v.end());
    pts.emplace_back(static_cast<double>(c), static_cast<double>(v[v.size() / 2]));
  }
  double n = static_cast<double>(pts.size()), sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (auto [x, y] : pts) sx += x, sy += y, sxx += x * x, sxy += x * y;
  double den = n * sxx - sx * sx;
  if (den <= 0) return std::nullopt;
  SpinFit f;
  f.ns_per_cycle = (n * sxy - sx * sy) / den;
  f.fixed_ns = std::max(0.0, (sy - f.ns_per_cycle * sx) / n);
  if (!(f.ns_per_cycle > 0)) return std::nullopt;
  return f;
}

Status write_exec_runs(Db& db, const std::vector<ExecRun>& runs) {
  if (auto s = db.exec("BEGIN IMMEDIATE"); !s) return s;
  Status s = db.exec("DELETE FROM replay_exec_streams; DELETE FROM replay_exec_runs;");
  Stmt run(db.get(), "INSERT INTO replay_exec_runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  Stmt st(db.get(), "INSERT INTO replay_exec_streams VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  if (s && (!run.valid() || !st.valid())) s = make_error("cannot prepare the replay_exec inserts: " + db.errmsg());
  auto side = [](Stmt& x, int i, const StreamUse& u) {
    x.bind(i, u.busy_ns).bind(i + 1, u.idle_ns).bind(i + 2, u.host_wait_ns).bind(i + 3, u.sync_wait_ns);
    x.bind(i + 4, u.dependency_wait_ns).bind(i + 5, u.other_ns);
  };
  for (const ExecRun& r : runs) {
    if (!s) break;
    const ExecCompare& c = r.cmp;
    run.bind(1, r.run).bind(2, r.exec_capture).bind(3, r.edits).bind(4, r.calibration);
    run.bind(5, r.ns_per_cycle).bind(6, r.fixed_ns).bind(7, c.steps).bind(8, c.orig_launches).bind(9, c.exec_launches);
    run.bind(10, c.orig_e2e_ns).bind(11, c.exec_e2e_ns).bind(12, c.e2e_error());
    run.bind(13, c.orig_gap_p50_ns).bind(14, c.exec_gap_p50_ns).bind(15, c.orig_gap_p90_ns).bind(16, c.exec_gap_p90_ns);
    side(run, 17, c.orig_total);
    side(run, 23, c.exec_total);
    if (run.exec() != SQLITE_DONE) s = make_error("cannot write replay_exec_runs: " + db.errmsg());
    for (const StreamCompare& x : c.streams) {
      if (!s) break;
      st.bind(1, r.run).bind(2, x.stream).bind(3, x.kind).bind(4, x.label).bind(5, x.priority);
      st.bind(6, x.orig.queue_id).bind(7, x.exec.queue_id);
      st.bind(8, x.orig.work_ops).bind(9, x.exec.work_ops).bind(10, x.orig.measured_ops).bind(11, x.exec.measured_ops);
      side(st, 12, x.orig);
      side(st, 18, x.exec);
      st.bind(24, x.busy_error());
      if (st.exec() != SQLITE_DONE) s = make_error("cannot write replay_exec_streams: " + db.errmsg());
    }
  }
  if (s) s = db.exec("COMMIT");
  if (!s) (void)db.exec("ROLLBACK");
  return s;
}

}  // namespace gpuobs::replay
