#include "diff/diff_side.h"

#include <sqlite3.h>

#include <cstdio>
#include <limits>
#include <unordered_map>

#include "store/db.h"
#include "store/schema.h"

namespace gpuobs::diff {

std::string_view to_string(Measure m) {
  switch (m) {
    case Measure::launches: return "launches";
    case Measure::gpu_time: return "gpu_time";
    case Measure::calls: return "calls";
    case Measure::latency: return "latency";
    case Measure::blocked: return "blocked";
    case Measure::copy_bytes: return "copy_bytes";
    case Measure::copy_bandwidth: return "copy_bandwidth";
    case Measure::alloc_peak: return "alloc_peak";
    case Measure::launch_gap: return "launch_gap";
    case Measure::nccl_bytes: return "nccl_bytes";
  }
  return "?";
}

bool is_distribution(Measure m) { return m != Measure::launches && m != Measure::calls && m != Measure::alloc_peak; }

bool higher_is_worse(Measure m) { return m != Measure::copy_bandwidth; }

namespace {

// The diff reads the documented views, which schema 10 and later have (as the reports do).
constexpr int kOldestSchema = 10;

std::string col_text(sqlite3_stmt* s, int i) {
  auto* t = sqlite3_column_text(s, i);
  return t ? reinterpret_cast<const char*>(t) : std::string();
}

std::string hex(int64_t v) {
  char b[32];
  std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(v));
  return b;
}

std::string basename_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Reads one capture file into the side.
class FileReader {
 public:
  FileReader(Db& db, const std::string& path, const Filters& f, Side& side)
      : db_(db), path_(path), f_(f), side_(side) {}

  Status read(const WindowSpec& w) {
    auto v = db_.scalar("PRAGMA user_version");
    if (!v) return v.error();
    schema_ = int(*v);
    if (schema_ < kOldestSchema)
      return make_error(path_ + " has schema version " + std::to_string(schema_) + "; gpuobs diff reads " +
                            std::to_string(kOldestSchema) + " and later",
                        "gpuobs upgrade " + path_ + " (converts it in place; copy it first to keep the original)", 2);
    auto& info = side_.info;
    info.files.push_back(path_);
    info.min_schema = info.min_schema ? std::min(info.min_schema, schema_) : schema_;
    info.max_schema = std::max(info.max_schema, schema_);
    if (auto st = read_capture_row(w); !st) return st;
    if (f_.stacks)
      if (auto st = read_stacks(); !st) return st;
    if (schema_ >= 20)
      if (auto st = read_gpu_times(); !st) return st;
    for (auto step : {&FileReader::read_stream_creates, &FileReader::read_launches, &FileReader::read_calls,
                      &FileReader::read_syncs, &FileReader::read_copies, &FileReader::read_alloc_peaks})
      if (auto st = (this->*step)(); !st) return st;
    if (schema_ >= 17)
      if (auto st = read_nccl(); !st) return st;
    // Per second means per second of activity: from the window's first
    // launch or call to its last, not the capture's start-up and tear-down.
    if (last_ns_ > first_ns_) side_.info.seconds += double(last_ns_ - first_ns_) / 1e9;
    return {};
  }

 private:
  Db& db_;
  const std::string& path_;
  const Filters& f_;
  Side& side_;
  int schema_ = 0;
  int64_t lo_ = std::numeric_limits<int64_t>::min(), hi_ = std::numeric_limits<int64_t>::max();
  int64_t first_ns_ = std::numeric_limits<int64_t>::max(), last_ns_ = std::numeric_limits<int64_t>::min();
  void saw(int64_t ts) {
    first_ns_ = std::min(first_ns_, ts);
    last_ns_ = std::max(last_ns_, ts);
  }
  struct StackNames {
    std::string signature, text;
    bool python_seen = false;  // a Python frame was added (the main thread's marker goes before the first)
  };
  std::unordered_map<int64_t, StackNames> stacks_;
  std::unordered_map<int64_t, int64_t> launch_gpu_ns_, copy_gpu_ns_;  // row id -> measured GPU duration
  // Stream labels per process: handle -> legacy, per-thread, stream#N.
  std::map<std::pair<int64_t, int64_t>, std::string> stream_label_;
  std::map<int64_t, int> streams_seen_;

  Error query_error(const std::string& what) {
    return capture_error(db_.get(), "gpuobs diff: reading " + what + " of " + path_);
  }

  // Prepares sql and binds :lo, :hi, :pid, :process, :kernel where it has them.
  Result<Stmt> prepare(const std::string& what, const std::string& sql) {
    Stmt st(db_.get(), sql);
    if (!st.valid()) return query_error(what);
    auto bind_opt = [&](const char* name, auto value, bool set) {
      if (int i = sqlite3_bind_parameter_index(st.get(), name); i > 0) {
        if (set) st.bind(i, value);
        else st.bind_null(i);
      }
    };
    bind_opt(":lo", lo_, lo_ != std::numeric_limits<int64_t>::min());
    bind_opt(":hi", hi_, hi_ != std::numeric_limits<int64_t>::max());
    bind_opt(":pid", f_.pid, f_.pid != 0);
    bind_opt(":process", std::string_view(f_.process), !f_.process.empty());
    bind_opt(":kernel", std::string_view(f_.kernel), !f_.kernel.empty());
    return st;
  }

  // Steps through every row; fn(sqlite3_stmt*) per row.
  template <class Fn>
  Status each_row(const std::string& what, const std::string& sql, Fn fn) {
    auto st = prepare(what, sql);
    if (!st) return st.error();
    int rc;
    while ((rc = st->step()) == SQLITE_ROW) fn(st->get());
    if (rc != SQLITE_DONE) return query_error(what);
    return {};
  }

  Status read_capture_row(const WindowSpec& w) {
    std::string sql = "SELECT start_mono_ns, coalesce(end_mono_ns";
    sql += schema_ >= 11 ? ", committed_mono_ns" : "";
    sql += ", start_mono_ns), host, gpuobs_version, ";
    sql += schema_ >= 15 ? "unwind" : "NULL";
    sql += ", segment FROM capture WHERE id = 1";
    int64_t start = 0, end = 0;
    bool found = false;
    auto st = each_row("the capture row", sql, [&](sqlite3_stmt* s) {
      found = true;
      start = sqlite3_column_int64(s, 0);
      end = sqlite3_column_int64(s, 1);
      side_.info.hosts.insert(col_text(s, 2));
      side_.info.gpuobs_versions.insert(col_text(s, 3));
      if (sqlite3_column_type(s, 4) != SQLITE_NULL) side_.info.unwinds.insert(col_text(s, 4));
      if (sqlite3_column_type(s, 5) != SQLITE_NULL) side_.info.segments = true;
    });
    if (!st) return st;
    if (!found) return make_error(path_ + " has no capture row", "gpuobs check " + path_, 2);
    if (w.since_s >= 0) lo_ = start + int64_t(w.since_s * 1e9);
    if (w.last_s >= 0) lo_ = std::max(lo_, end - int64_t(w.last_s * 1e9));
    if (w.until_s >= 0) hi_ = start + int64_t(w.until_s * 1e9);
    return {};
  }

  // Each stack's signature (its frames' function names, innermost first:
  // stable across runs and rebuilds that keep the names) and its text.
  Status read_stacks() {
    std::string sql = "SELECT stack_id, module, symbol, file, line, offset, ";
    sql += schema_ >= 18 ? "kind" : "'native'";
    // The main thread's Python frames (22: this thread ran none) follow a
    // "[main thread]" marker, so they never read as this thread's callers.
    sql += schema_ >= 22 ? ", (SELECT python_thread FROM stacks WHERE id = stack_id) IS 'main'" : ", 0";
    sql += " FROM stack_symbols ORDER BY stack_id, position";
    return each_row("the stacks", sql, [&](sqlite3_stmt* s) {
      auto& n = stacks_[sqlite3_column_int64(s, 0)];
      std::string module = basename_of(col_text(s, 1)), symbol = col_text(s, 2), file = col_text(s, 3);
      bool python = col_text(s, 6) == "python";
      // A frame without a symbol: its file and offset (the same binary gives the same offset).
      std::string sig = symbol.empty() ? module + "+0x" + hex(sqlite3_column_int64(s, 5)) : symbol;
      if (python) sig = symbol + " (" + basename_of(file) + ")";
      std::string text = symbol.empty() ? "?" : symbol;
      if (!file.empty() && sqlite3_column_type(s, 4) != SQLITE_NULL)
        text += " (" + (python ? file : basename_of(file)) + ":" + std::to_string(sqlite3_column_int64(s, 4)) + ")";
      if (python && !n.python_seen && sqlite3_column_int(s, 7)) {
        sig = "[main thread];" + sig;
        text = "[main thread] <- " + text;
      }
      n.python_seen = n.python_seen || python;
      n.signature += (n.signature.empty() ? "" : ";") + sig;
      n.text += (n.text.empty() ? "" : " <- ") + text;
    });
  }

  Status read_gpu_times() {
    return each_row("the GPU times",
                    "SELECT call_table, row_id, duration_ns FROM gpu_time_rows WHERE call_table IN (0, 1)",
                    [&](sqlite3_stmt* s) {
                      auto& m = sqlite3_column_int(s, 0) == 0 ? launch_gpu_ns_ : copy_gpu_ns_;
                      m[sqlite3_column_int64(s, 1)] = sqlite3_column_int64(s, 2);
                    });
  }

  const StackNames* stack_of(int64_t id) const {
    if (!f_.stacks || id == 0) return nullptr;
    auto it = stacks_.find(id);
    return it == stacks_.end() ? nullptr : &it->second;
  }

  Series& series(Measure m, std::string process, std::string name, std::string stream, int64_t stack_id) {
    const StackNames* s = stack_of(stack_id);
    Key k{m, std::move(process), std::move(name), std::move(stream), s ? s->signature : std::string()};
    auto& out = side_.series[k];
    if (out.stack_text.empty() && s) out.stack_text = s->text;
    if (s && m != Measure::alloc_peak && m != Measure::launch_gap) side_.info.stacks.insert(s->signature);
    return out;
  }

  // Handles differ from run to run: a stream is named by what it is, or by
  // its order of creation (read_stream_creates), or else of first use.
  const std::string& stream_label(int64_t tgid, int64_t handle, bool per_thread) {
    int64_t key = handle;
    if (handle == 1 || (handle == 0 && !per_thread)) key = -1;
    else if (handle == 2 || (handle == 0 && per_thread)) key = -2;
    auto [it, fresh] = stream_label_.try_emplace({tgid, key});
    if (fresh)
      it->second = key == -1 ? "legacy" : key == -2 ? "per-thread" : "stream#" + std::to_string(++streams_seen_[tgid]);
    return it->second;
  }

  // Streams are numbered in the order the process created them (over the
  // whole capture, so two windows of one capture agree), which is the
  // program's order even when several threads use them.
  Status read_stream_creates() {
    return each_row("the stream creations",
                    "SELECT tgid, stream FROM stream_ops WHERE op = 'stream_create' AND coalesce(result, 0) = 0 "
                    "AND stream IS NOT NULL ORDER BY ts_mono_ns, id",
                    [&](sqlite3_stmt* s) {
                      // Every creation is a new stream, even at a handle used before (a
                      // destroyed stream's address comes back): later uses resolve to the
                      // newest creation.
                      int64_t tgid = sqlite3_column_int64(s, 0), handle = sqlite3_column_int64(s, 1);
                      if (handle == 0 || handle == 1 || handle == 2) return;
                      stream_label_[{tgid, handle}] = "stream#" + std::to_string(++streams_seen_[tgid]);
                    });
  }

  static constexpr const char* kProcessFilter =
      " AND (:pid IS NULL OR p.tgid = :pid) AND (:process IS NULL OR p.comm = :process)";

  Status read_launches() {
    std::string sql =
        "SELECT p.comm, CASE WHEN coalesce(k.kernel_name, '') = '' THEN printf('function 0x%x', k.function) "
        "ELSE k.kernel_name END, k.tgid, k.stream, k.per_thread_stream, coalesce(k.stack_id, 0), k.ts_mono_ns, k.id "
        "FROM kernel_launches_between(:lo, :hi) k JOIN processes p ON p.id = k.process_id WHERE 1";
    sql += kProcessFilter;
    sql += " ORDER BY k.ts_mono_ns, k.id";
    std::map<std::pair<int64_t, std::string>, int64_t> last_launch;  // (tgid, stream) -> previous launch
    return each_row("the launches", sql, [&](sqlite3_stmt* s) {
      std::string comm = col_text(s, 0), kernel = col_text(s, 1);
      int64_t tgid = sqlite3_column_int64(s, 2), ts = sqlite3_column_int64(s, 6);
      std::string stream = stream_label(tgid, sqlite3_column_int64(s, 3), sqlite3_column_int(s, 4) != 0);
      int64_t stack = sqlite3_column_int64(s, 5);
      // Steps and launch gaps count every launch; --kernel keeps the launch
      // and GPU time rows of the kernels it names.
      if (!f_.step_kernel.empty() && kernel == f_.step_kernel) ++side_.info.steps;
      auto [it, fresh] = last_launch.try_emplace({tgid, stream}, ts);
      if (!fresh) {
        series(Measure::launch_gap, comm, "", stream, 0).samples.add(double(ts - it->second));
        it->second = ts;
      }
      saw(ts);
      ++side_.info.events;
      if (!f_.kernel.empty() && kernel.find(f_.kernel) == std::string::npos) return;
      ++series(Measure::launches, comm, kernel, stream, stack).count;
      side_.info.kernels.insert(kernel);
      if (auto g = launch_gpu_ns_.find(sqlite3_column_int64(s, 7)); g != launch_gpu_ns_.end()) {
        series(Measure::gpu_time, comm, kernel, stream, stack).samples.add(double(g->second));
        ++side_.info.gpu_timed;
      }
    });
  }

  // Every timed API call but launches and synchronizations (their blocked
  // time is its own measure); a failed call is its own key.
  Status read_calls() {
    std::string sql =
        "SELECT p.comm, a.api, coalesce(a.result, 0), coalesce(a.stack_id, 0), a.duration_ns, a.family, a.ts_mono_ns "
        "FROM api_calls_timed a JOIN processes p ON p.id = a.process_id "
        "WHERE (:lo IS NULL OR a.ts_mono_ns >= :lo) AND (:hi IS NULL OR a.ts_mono_ns <= :hi)";
    sql += kProcessFilter;
    return each_row("the API calls", sql, [&](sqlite3_stmt* s) {
      std::string comm = col_text(s, 0), api = col_text(s, 1), family = col_text(s, 5);
      int64_t result = sqlite3_column_int64(s, 2), stack = sqlite3_column_int64(s, 3);
      if (result != 0) api += " [failed]";
      ++series(Measure::calls, comm, api, "", stack).count;
      saw(sqlite3_column_int64(s, 6));
      ++side_.info.events;
      if (!f_.step_api.empty() && col_text(s, 1) == f_.step_api) ++side_.info.steps;
      if (family != "sync" && sqlite3_column_type(s, 4) != SQLITE_NULL)
        series(Measure::latency, comm, api, "", stack).samples.add(double(sqlite3_column_int64(s, 4)));
    });
  }

  Status read_syncs() {
    std::string sql =
        "SELECT p.comm, s.api, s.target, coalesce(s.stack_id, 0), s.blocked_ns FROM syncs s "
        "JOIN processes p ON p.id = s.process_id WHERE s.blocked_ns IS NOT NULL AND coalesce(s.result, 0) = 0 "
        "AND (:lo IS NULL OR s.ts_mono_ns >= :lo) AND (:hi IS NULL OR s.ts_mono_ns <= :hi)";
    sql += kProcessFilter;
    return each_row("the synchronizations", sql, [&](sqlite3_stmt* s) {
      series(Measure::blocked, col_text(s, 0), col_text(s, 1) + " " + col_text(s, 2), "", sqlite3_column_int64(s, 3))
          .samples.add(double(sqlite3_column_int64(s, 4)));
    });
  }

  Status read_copies() {
    std::string sql =
        "SELECT p.comm, c.api, coalesce(c.direction, c.kind), c.tgid, coalesce(c.stream, 0), c.per_thread_stream, "
        "coalesce(c.stack_id, 0), coalesce(c.bytes, 0), c.async, c.id FROM copies c "
        "JOIN processes p ON p.id = c.process_id WHERE coalesce(c.result, 0) = 0 "
        "AND (:lo IS NULL OR c.ts_mono_ns >= :lo) AND (:hi IS NULL OR c.ts_mono_ns <= :hi)";
    sql += kProcessFilter;
    sql += " ORDER BY c.ts_mono_ns, c.id";
    return each_row("the copies", sql, [&](sqlite3_stmt* s) {
      std::string comm = col_text(s, 0), name = col_text(s, 1) + " " + col_text(s, 2);
      bool async = sqlite3_column_int(s, 8) != 0;
      std::string stream =
          async ? stream_label(sqlite3_column_int64(s, 3), sqlite3_column_int64(s, 4), sqlite3_column_int(s, 5) != 0)
                : "";
      int64_t stack = sqlite3_column_int64(s, 6);
      double bytes = double(sqlite3_column_int64(s, 7));
      auto& sz = series(Measure::copy_bytes, comm, name, stream, stack);
      sz.samples.add(bytes);
      sz.total = sz.samples.sum();
      // Bandwidth from the GPU's time (--gpu-time) only: a synchronous copy's
      // host time is its latency row already, and an async call returns at once.
      if (auto g = copy_gpu_ns_.find(sqlite3_column_int64(s, 9)); g != copy_gpu_ns_.end()) {
        ++side_.info.gpu_timed;
        if (g->second > 0 && bytes > 0)
          series(Measure::copy_bandwidth, comm, name, stream, stack).samples.add(bytes / double(g->second) * 1e9);
      }
    });
  }

  // Peak live bytes per process and kind in the window (memory_timeline
  // counts from the capture's start); per name, the largest process's.
  Status read_alloc_peaks() {
    std::string sql =
        "SELECT p.comm, m.kind, max(m.live_bytes) FROM memory_timeline m JOIN processes p ON p.id = m.process_id "
        "WHERE (:lo IS NULL OR m.ts_mono_ns >= :lo) AND (:hi IS NULL OR m.ts_mono_ns <= :hi)";
    sql += kProcessFilter;
    sql += " GROUP BY m.process_id, m.kind";
    return each_row("the allocations", sql, [&](sqlite3_stmt* s) {
      auto& peak = series(Measure::alloc_peak, col_text(s, 0), col_text(s, 1), "", 0);
      ++peak.count;
      peak.peak = std::max(peak.peak, double(sqlite3_column_int64(s, 2)));
    });
  }

  Status read_nccl() {
    std::string sql =
        "SELECT p.comm, n.op || CASE WHEN n.datatype IS NULL THEN '' ELSE ' ' || n.datatype END, n.bytes, "
        "coalesce(n.stack_id, 0) FROM nccl_calls n JOIN processes p ON p.id = n.process_id "
        "WHERE n.bytes IS NOT NULL AND n.seq IS NOT NULL "
        "AND (:lo IS NULL OR n.ts_mono_ns >= :lo) AND (:hi IS NULL OR n.ts_mono_ns <= :hi)";
    sql += kProcessFilter;
    return each_row("the collectives", sql, [&](sqlite3_stmt* s) {
      auto& b = series(Measure::nccl_bytes, col_text(s, 0), col_text(s, 1), "", sqlite3_column_int64(s, 3));
      b.samples.add(double(sqlite3_column_int64(s, 2)));
      b.total = b.samples.sum();
    });
  }
};

}  // namespace

Result<Side> read_side(const WindowSpec& w, const Filters& f) {
  Side side;
  for (const auto& path : w.files) {
    auto db = open_capture_readonly(path);
    if (!db) return db.error();
    // One snapshot of the file: a segment being written (gpuobsd's rolling
    // comparison) commits between the reader's queries otherwise.
    (void)db->exec("BEGIN");
    FileReader r(*db, path, f, side);
    auto st = r.read(w);
    (void)db->exec("COMMIT");
    if (!st) return st.error();
  }
  for (auto& [k, s] : side.series) {
    s.samples.sort();
    if (is_distribution(k.measure) && k.measure != Measure::copy_bytes && k.measure != Measure::nccl_bytes) {
      s.count = s.samples.count();
      s.total = s.samples.sum();
    } else if (k.measure == Measure::copy_bytes || k.measure == Measure::nccl_bytes) {
      s.count = s.samples.count();
    }
  }
  return side;
}

}  // namespace gpuobs::diff
