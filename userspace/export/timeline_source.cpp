#include "export/timeline_source.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <string_view>
#include <unordered_map>

#include "store/stack_text.h"

namespace gpuobs::exporter {
namespace {

// Device memory, as everywhere in gpuobs (docs/schema.md, "Device memory";
// the reports_test checks every such list is this one): the kinds device,
// pitch, async, pool and physical (cuMemCreate). Host, managed and virtual
// (address reservations) are not device memory.
constexpr const char* kMemorySql =
    "SELECT process_id, kind, ts_mono_ns, live_bytes FROM memory_timeline"
    " WHERE kind IN ('device', 'pitch', 'async', 'pool', 'physical') ORDER BY process_id, ts_mono_ns";

// One statement per table: the union would sort 1M rows in SQLite; each table
// is read in its (process, ts) index order and the calls merged in C++.
constexpr const char* kCallSql[] = {
    ("SELECT id, ts_mono_ns, NULL, process_id, tid, api, NULL, coalesce(kernel_name, printf('function 0x%x', "
     "function)),"
     " stack_id FROM kernel_launches_between()"),  // store/launch_table.h: runs decoded in C++
    "SELECT id, ts_mono_ns, duration_ns, process_id, tid, api, result, NULL, stack_id FROM memory_ops",
    "SELECT id, ts_mono_ns, duration_ns, process_id, tid, api, result, NULL, stack_id FROM copies",
    "SELECT id, ts_mono_ns, duration_ns, process_id, tid, api, result, NULL, stack_id FROM stream_ops",
    "SELECT id, ts_mono_ns, duration_ns, process_id, tid, api, result, NULL, stack_id FROM syncs",
    "SELECT id, ts_mono_ns, duration_ns, process_id, tid, api, result, NULL, stack_id FROM gpu_modules",
    "SELECT id, ts_mono_ns, latency_ns, process_id, tid, printf('ioctl 0x%x', cmd), ret, NULL, stack_id FROM ioctls",
    // Schema 17; an older capture reads an empty view (store/schema.cpp).
    ("SELECT id, ts_mono_ns, duration_ns, process_id, tid, api, result, NULL, stack_id, coalesce(comm_hash, 0),"
     " coalesce(seq, 0), coalesce(comm_id, 0), coalesce(rank, -1), coalesce(nranks, 0), bytes, op FROM nccl_calls"),
};
static_assert(std::size(kCallSql) == std::size(kHostTables), "a host table without its statement");

class Interner {
 public:
  explicit Interner(std::vector<std::string>& strings) : strings_(strings) {
    for (uint32_t i = 0; i < strings_.size(); ++i) index_.emplace(strings_[i], i);
  }
  uint32_t operator()(const unsigned char* text) {
    if (!text) return 0;
    std::string s(reinterpret_cast<const char*>(text));
    auto [it, fresh] = index_.emplace(std::move(s), static_cast<uint32_t>(strings_.size()));
    if (fresh) strings_.push_back(it->first);
    return it->second;
  }

 private:
  std::vector<std::string>& strings_;
  std::unordered_map<std::string, uint32_t> index_;
};

// Frames of a stack shown in a slice's "stack" argument (innermost first).
constexpr int kStackArgFrames = 24;

Error query_error(Db& db, const std::string& what) {
  return make_error("cannot read " + what + " from the capture: " + db.errmsg(),
                    "is this a gpuobs capture of schema 7 or later?", 2);
}

}  // namespace

int host_table_index(const std::string& table) {
  for (size_t i = 0; i < std::size(kHostTables); ++i)
    if (table == kHostTables[i]) return static_cast<int>(i);
  return -1;
}

Result<Timeline> load_timeline(Db& db) {
  Timeline t;
  Interner intern(t.strings);
  {
    Stmt st(db.get(), "SELECT start_mono_ns, coalesce(end_mono_ns, 0) FROM capture");
    if (!st.valid()) return query_error(db, "the capture row");
    if (st.step() != SQLITE_ROW) return make_error("the capture has no capture row", "is it a gpuobs capture?", 2);
    t.start_ns = sqlite3_column_int64(st.get(), 0);
    t.end_ns = sqlite3_column_int64(st.get(), 1);
  }
  {
    Stmt st(db.get(), "SELECT id, tgid, coalesce(comm, '') FROM processes ORDER BY id");
    if (!st.valid()) return query_error(db, "processes");
    while (st.step() == SQLITE_ROW)
      t.processes.push_back(ProcessInfo{sqlite3_column_int64(st.get(), 0),
                                        static_cast<uint32_t>(sqlite3_column_int64(st.get(), 1)),
                                        reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 2))});
  }
  // Each stack as one line (Python frames with their file:line), for the
  // slices' "stack" argument.
  auto stack_lines = gpuobs::stack_lines(db, kStackArgFrames);
  if (!stack_lines) return stack_lines.error();
  for (uint8_t table = 0; table < std::size(kHostTables); ++table) {
    Stmt st(db.get(), kCallSql[table]);
    if (!st.valid()) return query_error(db, kHostTables[table]);
    int rc;
    while ((rc = st.step()) == SQLITE_ROW) {
      sqlite3_stmt* s = st.get();
      HostCall c;
      c.row_id = sqlite3_column_int64(s, 0);
      c.ts_ns = sqlite3_column_int64(s, 1);
      if (sqlite3_column_type(s, 2) != SQLITE_NULL) c.dur_ns = sqlite3_column_int64(s, 2);
      c.process_id = sqlite3_column_int64(s, 3);
      c.tid = static_cast<uint32_t>(sqlite3_column_int64(s, 4));
      c.table = table;
      c.name = intern(sqlite3_column_text(s, 5));
      if (sqlite3_column_type(s, 6) != SQLITE_NULL) c.result = sqlite3_column_int64(s, 6);
      c.detail = intern(sqlite3_column_text(s, 7));
      if (sqlite3_column_type(s, 8) != SQLITE_NULL)
        if (auto it = stack_lines->find(sqlite3_column_int64(s, 8)); it != stack_lines->end())
          c.stack = intern(reinterpret_cast<const unsigned char*>(it->second.c_str()));
      if (table == kNcclTable) {
        NcclCallInfo n;
        n.comm_hash = static_cast<uint64_t>(sqlite3_column_int64(s, 9));
        n.seq = sqlite3_column_int64(s, 10);
        n.comm_id = sqlite3_column_int64(s, 11);
        n.rank = sqlite3_column_int64(s, 12);
        n.nranks = sqlite3_column_int64(s, 13);
        if (sqlite3_column_type(s, 14) != SQLITE_NULL) n.bytes = sqlite3_column_int64(s, 14);
        n.op = intern(sqlite3_column_text(s, 15));
        t.nccl.push_back(n);
        c.nccl = static_cast<uint32_t>(t.nccl.size());
      }
      t.calls.push_back(c);
    }
    if (rc != SQLITE_DONE) return query_error(db, kHostTables[table]);
  }
  std::stable_sort(t.calls.begin(), t.calls.end(), [](const HostCall& a, const HostCall& b) {
    return a.ts_ns != b.ts_ns ? a.ts_ns < b.ts_ns : a.table != b.table ? a.table < b.table : a.row_id < b.row_id;
  });
  {
    // live_bytes is per (process, kind): a process's device memory is the sum
    // of its kinds' latest values.
    Stmt st(db.get(), kMemorySql);
    if (!st.valid()) return query_error(db, "memory_timeline");
    std::map<std::string, int64_t> by_kind;
    int64_t process = -1;
    int rc;
    while ((rc = st.step()) == SQLITE_ROW) {
      sqlite3_stmt* s = st.get();
      int64_t pid = sqlite3_column_int64(s, 0);
      if (pid != process) by_kind.clear(), process = pid;
      by_kind[reinterpret_cast<const char*>(sqlite3_column_text(s, 1))] = sqlite3_column_int64(s, 3);
      int64_t ts = sqlite3_column_int64(s, 2), live = 0;
      for (auto& [k, v] : by_kind) live += v;
      if (!t.memory.empty() && t.memory.back().process_id == pid && t.memory.back().ts_ns == ts)
        t.memory.back().live_bytes = live;  // changes at one instant: the last state
      else t.memory.push_back(MemorySample{pid, ts, live});
    }
    if (rc != SQLITE_DONE) return query_error(db, "memory_timeline");
  }
  {
    // GPU metrics (schema 19; an older capture reads empty views). The
    // clocks-event flags are a bit set, not a level: drawn as the number.
    Stmt g(db.get(), "SELECT id, name FROM gpus ORDER BY id");
    if (!g.valid()) return query_error(db, "gpus");
    while (g.step() == SQLITE_ROW) {
      const unsigned char* name = sqlite3_column_text(g.get(), 1);
      int64_t id = sqlite3_column_int64(g.get(), 0);
      t.gpus.push_back(GpuTrackInfo{
          id, "GPU " + std::to_string(id) + (name ? std::string(": ") + reinterpret_cast<const char*>(name) : "")});
    }
    Stmt st(db.get(),
            "SELECT gpu_id, metric || ' (' || unit || ')', ts_mono_ns, value FROM gpu_metrics"
            " ORDER BY gpu_id, metric, ts_mono_ns");
    if (!st.valid()) return query_error(db, "gpu_metrics");
    int rc;
    while ((rc = st.step()) == SQLITE_ROW) {
      sqlite3_stmt* s = st.get();
      t.gpu_samples.push_back(GpuSample{sqlite3_column_int64(s, 0), intern(sqlite3_column_text(s, 1)),
                                        sqlite3_column_int64(s, 2), sqlite3_column_double(s, 3)});
    }
    if (rc != SQLITE_DONE) return query_error(db, "gpu_metrics");
  }
  {
    Stmt st(db.get(), "SELECT call_table, row_id, start_mono_ns, end_mono_ns FROM gpu_times");
    if (!st.valid()) return query_error(db, "gpu_times");
    int rc;
    while ((rc = st.step()) == SQLITE_ROW) {
      sqlite3_stmt* s = st.get();
      int table = host_table_index(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)));
      if (table < 0) continue;
      t.gpu_times[(uint64_t(table) << 56) | static_cast<uint64_t>(sqlite3_column_int64(s, 1))] = {
          sqlite3_column_int64(s, 2), sqlite3_column_int64(s, 3)};
    }
    if (rc != SQLITE_DONE) return query_error(db, "gpu_times");
  }
  {
    // GPU jobs (schema 26): a capture before it has no gpu_jobs table.
    Stmt has(db.get(), "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'gpu_jobs'");
    if (has.valid() && has.step() == SQLITE_ROW && sqlite3_column_int64(has.get(), 0) > 0) {
      Stmt st(db.get(),
              "SELECT coalesce(device, ''), coalesce(ring, '(unknown ring)'), id, coalesce(process_id, 0), run_mono_ns,"
              " coalesce(done_mono_ns, signaled_mono_ns), queued_mono_ns, fence_seqno FROM gpu_jobs"
              " WHERE run_mono_ns IS NOT NULL ORDER BY 1, 2, run_mono_ns, id");
      if (!st.valid()) return query_error(db, "gpu_jobs");
      int rc;
      auto opt = [](sqlite3_stmt* s, int i) {
        return sqlite3_column_type(s, i) == SQLITE_NULL ? std::nullopt
                                                        : std::optional<int64_t>(sqlite3_column_int64(s, i));
      };
      while ((rc = st.step()) == SQLITE_ROW) {
        sqlite3_stmt* s = st.get();
        t.gpu_jobs.push_back(GpuJobSpan{intern(sqlite3_column_text(s, 0)), intern(sqlite3_column_text(s, 1)),
                                        sqlite3_column_int64(s, 2), sqlite3_column_int64(s, 3),
                                        sqlite3_column_int64(s, 4), opt(s, 5), opt(s, 6), opt(s, 7)});
      }
      if (rc != SQLITE_DONE) return query_error(db, "gpu_jobs");
    }
  }
  if (t.end_ns == 0) {
    for (auto& c : t.calls) t.end_ns = std::max(t.end_ns, c.ts_ns + c.dur_ns.value_or(0));
    for (auto& m : t.memory) t.end_ns = std::max(t.end_ns, m.ts_ns);
  }
  return t;
}

}  // namespace gpuobs::exporter
