#include "replay/replay_input.h"

#include <algorithm>
#include <tuple>

#include "store/schema.h"

namespace gpuobs::replay::detail {

const char* table_name(Table t) {
  switch (t) {
    case Table::kernel_launches: return "kernel_launches";
    case Table::copies: return "copies";
    case Table::memory_ops: return "memory_ops";
    case Table::stream_ops: return "stream_ops";
    case Table::syncs: return "syncs";
  }
  return "?";
}

uint32_t Strings::intern(const std::string& s) {
  auto [it, added] = index_.emplace(s, static_cast<uint32_t>(all_.size()));
  if (added) all_.push_back(s);
  return it->second;
}

namespace {

// Columns 0..9 of every query below: the fields all call tables share.
constexpr const char* kCommon =
    "id, ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, per_thread_stream, coalesce(stack_id, 0)";

std::string text(sqlite3_stmt* s, int col) {
  auto* p = sqlite3_column_text(s, col);
  return p ? std::string(reinterpret_cast<const char*>(p)) : std::string();
}
std::optional<int64_t> opt(sqlite3_stmt* s, int col) {
  if (sqlite3_column_type(s, col) == SQLITE_NULL) return std::nullopt;
  return sqlite3_column_int64(s, col);
}
uint64_t u64(sqlite3_stmt* s, int col) { return static_cast<uint64_t>(sqlite3_column_int64(s, col)); }

Call read_common(sqlite3_stmt* s, Table t, Strings& str) {
  Call c;
  c.table = t;
  c.id = sqlite3_column_int64(s, 0);
  c.ts = sqlite3_column_int64(s, 1);
  c.duration = opt(s, 2).value_or(-1);
  c.process_id = sqlite3_column_int64(s, 3);
  c.tgid = static_cast<uint32_t>(sqlite3_column_int64(s, 4));
  c.tid = static_cast<uint32_t>(sqlite3_column_int64(s, 5));
  c.api = str.intern(text(s, 6));
  c.result = opt(s, 7);
  c.per_thread = sqlite3_column_int64(s, 8) != 0;
  c.stack_id = sqlite3_column_int64(s, 9);
  return c;
}

// Runs one query and hands each row to fill(); the error names the table.
template <class Fill>
Status each_row(Db& db, const std::string& sql, const char* table, Fill fill) {
  Stmt st(db.get(), sql);
  if (!st.valid())
    return make_error(std::string("cannot read ") + table + " for replay: " + db.errmsg(),
                      "the capture's schema may be too old: record it again with this gpuobs", 2);
  int rc;
  while ((rc = st.step()) == SQLITE_ROW) fill(st.get());
  if (rc != SQLITE_DONE) return capture_error(db.get(), std::string("cannot read ") + table);
  return {};
}

std::optional<int64_t> opt_end(Db& db) {
  Stmt st(db.get(), "SELECT end_mono_ns FROM capture WHERE end_mono_ns IS NOT NULL");
  if (st.valid() && st.step() == SQLITE_ROW) return sqlite3_column_int64(st.get(), 0);
  return std::nullopt;
}

}  // namespace

Result<Input> load_input(Db& db) {
  Input in;
  Strings& str = in.strings;
  auto& calls = in.calls;
  const std::string common = kCommon;
  Status st;
  // Launches have no duration or result: NULL stands in for both.
  st = each_row(
      db,
      "SELECT id, ts_mono_ns, NULL, process_id, tgid, tid, api, NULL, per_thread_stream, coalesce(stack_id, 0),"
      " stream, coalesce(kernel_name, '') FROM kernel_launches_between()",  // runs decoded in C++
                                                                            // (store/launch_table.h)
      "kernel_launches", [&](sqlite3_stmt* r) {
        Call c = read_common(r, Table::kernel_launches, str);
        c.op = str.intern("launch");
        c.stream = u64(r, 10);
        c.name = str.intern(text(r, 11));
        calls.push_back(c);
      });
  if (!st) return st.error();
  st = each_row(db,
                "SELECT " + common +
                    ", kind, coalesce(direction, ''), coalesce(dst, 0), coalesce(src, 0), bytes, stream, async"
                    " FROM copies",
                "copies", [&](sqlite3_stmt* r) {
                  Call c = read_common(r, Table::copies, str);
                  c.op = str.intern(text(r, 10));
                  c.kind = str.intern(text(r, 11));
                  c.dst = u64(r, 12), c.src = u64(r, 13), c.bytes = u64(r, 14);
                  if (auto v = opt(r, 15)) c.stream = static_cast<uint64_t>(*v);
                  c.async = sqlite3_column_int64(r, 16) != 0;
                  calls.push_back(c);
                });
  if (!st) return st.error();
  st = each_row(
      db, "SELECT " + common + ", op, kind, coalesce(address, 0), coalesce(bytes, 0), stream, alloc_id FROM memory_ops",
      "memory_ops", [&](sqlite3_stmt* r) {
        Call c = read_common(r, Table::memory_ops, str);
        c.op = str.intern(text(r, 10));
        c.kind = str.intern(text(r, 11));
        c.address = u64(r, 12), c.bytes = u64(r, 13);
        if (auto v = opt(r, 14)) c.stream = static_cast<uint64_t>(*v);
        c.alloc_id = opt(r, 15);
        calls.push_back(c);
      });
  if (!st) return st.error();
  st = each_row(db, "SELECT " + common + ", op, stream, coalesce(event, 0), coalesce(flags, 0) FROM stream_ops",
                "stream_ops", [&](sqlite3_stmt* r) {
                  Call c = read_common(r, Table::stream_ops, str);
                  c.op = str.intern(text(r, 10));
                  if (auto v = opt(r, 11)) c.stream = static_cast<uint64_t>(*v);
                  c.event = u64(r, 12), c.flags = u64(r, 13);
                  calls.push_back(c);
                });
  if (!st) return st.error();
  st = each_row(db, "SELECT " + common + ", target, stream, coalesce(event, 0) FROM syncs", "syncs",
                [&](sqlite3_stmt* r) {
                  Call c = read_common(r, Table::syncs, str);
                  c.op = str.intern(text(r, 10));
                  if (auto v = opt(r, 11)) c.stream = static_cast<uint64_t>(*v);
                  c.event = u64(r, 12);
                  calls.push_back(c);
                });
  if (!st) return st.error();
  // The total order: entry time, then table rank, then row id (docs/replay.md).
  std::sort(calls.begin(), calls.end(),
            [](const Call& a, const Call& b) { return std::tie(a.ts, a.table, a.id) < std::tie(b.ts, b.table, b.id); });
  // Schema 20's measured GPU intervals (idle time). A capture without the
  // gpu_times view (opened without open_capture_readonly's views) has none.
  if (Stmt gt(db.get(), "SELECT call_table, row_id, start_mono_ns, end_mono_ns FROM gpu_times"); gt.valid()) {
    int rc;
    while ((rc = gt.step()) == SQLITE_ROW) {
      std::string t = text(gt.get(), 0);
      Table table = t == "kernel_launches" ? Table::kernel_launches : t == "copies" ? Table::copies : Table::stream_ops;
      int64_t start = sqlite3_column_int64(gt.get(), 2);
      in.gpu_times[{table, sqlite3_column_int64(gt.get(), 1)}] =
          Measured{start, std::max<int64_t>(start, sqlite3_column_int64(gt.get(), 3))};
    }
    if (rc != SQLITE_DONE) return capture_error(db.get(), "cannot read gpu_times");
  }
  int64_t last = 0;
  for (const Call& c : calls) last = std::max(last, c.end());
  in.end_ns = last;
  if (auto e = opt_end(db)) in.end_ns = *e;
  // Best effort: a capture without the view (it is presented for every
  // schema) would only name streams by handle.
  (void)each_row(db, "SELECT process_id, stream, label FROM stream_names WHERE stream > 2", "stream_names",
                 [&](sqlite3_stmt* r) {
                   const unsigned char* t = sqlite3_column_text(r, 2);
                   in.stream_labels[{sqlite3_column_int64(r, 0), static_cast<uint64_t>(sqlite3_column_int64(r, 1))}] =
                       t ? reinterpret_cast<const char*>(t) : "";
                 });
  return in;
}

}  // namespace gpuobs::replay::detail
