#include "store/launch_table.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "store/launch_runs.h"

namespace gpuobs {
namespace {

// kernel_launches' columns, in its order, then the two arguments.
constexpr const char* kSchema =
    "CREATE TABLE x(id, ts_mono_ns, process_id, tgid, tid, api, function, grid_x, grid_y, grid_z, block_x, block_y,"
    " block_z, shared_mem_bytes, stream, kernel_params, extra, args_complete, kernel_name, cooperative, cluster_x,"
    " cluster_y, cluster_z, per_thread_stream, attributes, stack_id, vendor, lo_ns HIDDEN, hi_ns HIDDEN)";
constexpr int kColumns = 27;
constexpr int kLo = 27, kHi = 28;
// The columns a launch shape holds (kernel_launches' columns 2..26), read once.
constexpr const char* kShapes =
    "SELECT s.id, s.process_id, s.tgid, s.tid, a.text, s.function, s.grid_x, s.grid_y, s.grid_z, s.block_x,"
    " s.block_y, s.block_z, s.shared_mem_bytes, s.stream, s.kernel_params, s.extra, s.args_complete, k.text,"
    " s.cooperative, s.cluster_x, s.cluster_y, s.cluster_z, s.per_thread_stream, s.attributes, s.stack_id, v.text"
    " FROM launch_shapes s LEFT JOIN strings a ON a.id = s.api_id LEFT JOIN strings k ON k.id = s.kernel_name_id"
    " LEFT JOIN strings v ON v.id = s.vendor_id";
// A run spans at most this many keys (store/launch_rows.cpp cuts it there):
// the runs of a window start at most this far before it.
constexpr int64_t kRunSpanKeys = kMaxRunSpanNs * 8;

// One value of a shape's column, as SQLite gave it.
struct Value {
  int type = SQLITE_NULL;
  int64_t i = 0;
  std::string text;
};
using ShapeRow = std::vector<Value>;  // kernel_launches' columns 2..26
// Every shape by id, as read at one moment: a capture still being written
// gains shapes, so a later query reads them again (a new snapshot; cursors
// keep the one they started with).
struct Shapes {
  int64_t max_id = -1, count = -1;
  std::vector<std::unique_ptr<ShapeRow>> by_id;
};

struct Table : sqlite3_vtab {
  sqlite3* db = nullptr;
  bool runs = false;  // schema 16: launch_runs and launch_rows
  int64_t t0 = 0;
  std::shared_ptr<const Shapes> shapes;
};

struct Cursor : sqlite3_vtab_cursor {
  Table* table() const { return static_cast<Table*>(pVtab); }
  std::shared_ptr<const Shapes> shapes;
  // Schema 16: the window's launches, decoded, in key order (held in memory:
  // 16 bytes a launch).
  std::vector<RunLaunch> launches;
  size_t at = 0;
  // Older captures: kernel_launches itself.
  sqlite3_stmt* old = nullptr;
  bool old_done = true;
  // The arguments, returned as the hidden columns: SQLite re-checks a
  // constraint it was not told to omit (past its 16th), and would drop rows.
  sqlite3_value* args[2] = {nullptr, nullptr};
  ~Cursor() {
    sqlite3_finalize(old);
    for (auto* a : args) sqlite3_value_free(a);
  }
};

int fail(sqlite3_vtab* vt, sqlite3* db) {
  sqlite3_free(vt->zErrMsg);
  vt->zErrMsg = sqlite3_mprintf("%s", sqlite3_errmsg(db));
  return sqlite3_errcode(db) == SQLITE_OK ? SQLITE_ERROR : sqlite3_errcode(db);
}

bool has_table(sqlite3* db, const char* name) {
  sqlite3_stmt* st = nullptr;
  bool found = false;
  if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE name = ?", -1, &st, nullptr) == SQLITE_OK) {
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    found = sqlite3_step(st) == SQLITE_ROW;
  }
  sqlite3_finalize(st);
  return found;
}

int connect(sqlite3* db, void*, int, const char* const*, sqlite3_vtab** out, char**) {
  if (int rc = sqlite3_declare_vtab(db, kSchema); rc != SQLITE_OK) return rc;
  auto* t = new Table();
  t->db = db;
  *out = t;
  return SQLITE_OK;
}

int disconnect(sqlite3_vtab* vt) {
  delete static_cast<Table*>(vt);
  return SQLITE_OK;
}

int best_index(sqlite3_vtab* vt, sqlite3_index_info* info) {
  int next = 1;
  int lo = -1, hi = -1;
  for (int i = 0; i < info->nConstraint; ++i) {
    const auto& c = info->aConstraint[i];
    if (c.op != SQLITE_INDEX_CONSTRAINT_EQ) continue;
    if (c.iColumn == kLo) {
      if (!c.usable) return SQLITE_CONSTRAINT;
      lo = i;
    } else if (c.iColumn == kHi) {
      if (!c.usable) return SQLITE_CONSTRAINT;
      hi = i;
    }
  }
  // idxNum: bit 0 lo given, bit 1 hi given, in that argument order.
  info->idxNum = 0;
  if (lo >= 0) info->aConstraintUsage[lo].argvIndex = next++, info->aConstraintUsage[lo].omit = 1, info->idxNum |= 1;
  if (hi >= 0) info->aConstraintUsage[hi].argvIndex = next++, info->aConstraintUsage[hi].omit = 1, info->idxNum |= 2;
  info->estimatedCost = info->idxNum == 3 ? 1e4 : 1e7;
  // Rows come in id order. Since schema 12 the id is the time key, so that is
  // also ts_mono_ns order; before, ids are in arrival order.
  if (info->nOrderBy == 1 && !info->aOrderBy[0].desc &&
      (info->aOrderBy[0].iColumn == 0 ||
       (info->aOrderBy[0].iColumn == 1 && has_table(static_cast<Table*>(vt)->db, "launch_shapes"))))
    info->orderByConsumed = 1;
  return SQLITE_OK;
}

int open_cursor(sqlite3_vtab*, sqlite3_vtab_cursor** out) {
  *out = new Cursor();
  return SQLITE_OK;
}

int close_cursor(sqlite3_vtab_cursor* c) {
  delete static_cast<Cursor*>(c);
  return SQLITE_OK;
}

int load_shapes(Table* t) {
  // max(id) and count(*) tell whether shapes were added since the last read
  // (the writer only ever adds them).
  int64_t max_id = 0, count = 0;
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(t->db, "SELECT coalesce(max(id), 0), count(*) FROM launch_shapes", -1, &st, nullptr) !=
      SQLITE_OK)
    return fail(t, t->db);
  if (sqlite3_step(st) == SQLITE_ROW) max_id = sqlite3_column_int64(st, 0), count = sqlite3_column_int64(st, 1);
  sqlite3_finalize(st);
  if (t->shapes && t->shapes->max_id == max_id && t->shapes->count == count) return SQLITE_OK;
  auto shapes = std::make_shared<Shapes>();
  shapes->max_id = max_id, shapes->count = count;
  if (sqlite3_prepare_v2(t->db, kShapes, -1, &st, nullptr) != SQLITE_OK) return fail(t, t->db);
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t id = sqlite3_column_int64(st, 0);
    if (id < 1 || id > (int64_t{1} << 31)) continue;  // not a shape the writer makes: its launches show NULLs
    auto row = std::make_unique<ShapeRow>(kColumns - 2);
    for (int c = 0; c < kColumns - 2; ++c) {
      Value& v = (*row)[static_cast<size_t>(c)];
      v.type = sqlite3_column_type(st, c + 1);
      if (v.type == SQLITE_TEXT) v.text = reinterpret_cast<const char*>(sqlite3_column_text(st, c + 1));
      else if (v.type != SQLITE_NULL) v.i = sqlite3_column_int64(st, c + 1);
    }
    if (static_cast<size_t>(id) >= shapes->by_id.size()) shapes->by_id.resize(static_cast<size_t>(id) + 1);
    shapes->by_id[static_cast<size_t>(id)] = std::move(row);
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) return fail(t, t->db);
  t->shapes = std::move(shapes);
  return SQLITE_OK;
}

int filter_runs(Cursor* cur, std::optional<int64_t> lo_ns, std::optional<int64_t> hi_ns) {
  Table* t = cur->table();
  // Keys: (ts - t0) * 8 + n. Saturating: a window far outside the capture.
  auto key_of = [&](int64_t ns, int64_t n) {
    __int128 k = (static_cast<__int128>(ns) - t->t0) * 8 + n;
    return static_cast<int64_t>(std::clamp<__int128>(k, INT64_MIN / 2, INT64_MAX / 2));
  };
  const int64_t lo = lo_ns ? key_of(*lo_ns, 0) : INT64_MIN / 2;
  const int64_t hi = hi_ns ? key_of(*hi_ns, 7) : INT64_MAX / 2;
  if (lo > hi) return SQLITE_OK;
  sqlite3_stmt* runs = nullptr;
  if (sqlite3_prepare_v2(t->db, "SELECT id, launches FROM launch_runs WHERE id BETWEEN ? AND ? ORDER BY id", -1, &runs,
                         nullptr) != SQLITE_OK)
    return fail(t, t->db);
  sqlite3_bind_int64(runs, 1, lo - kRunSpanKeys);
  sqlite3_bind_int64(runs, 2, hi);
  int rc;
  std::vector<RunLaunch> run;
  while ((rc = sqlite3_step(runs)) == SQLITE_ROW) {
    const auto* p = static_cast<const uint8_t*>(sqlite3_column_blob(runs, 1));
    run.clear();
    // A run that does not decode shows what decodes before the damage, as the view does.
    (void)decode_launch_run(sqlite3_column_int64(runs, 0), {p, static_cast<size_t>(sqlite3_column_bytes(runs, 1))},
                            run);
    for (const RunLaunch& l : run)
      if (l.key >= lo && l.key <= hi) cur->launches.push_back(l);
  }
  sqlite3_finalize(runs);
  if (rc != SQLITE_DONE) return fail(t, t->db);
  sqlite3_stmt* rows = nullptr;
  if (sqlite3_prepare_v2(t->db, "SELECT id, shape_id FROM launch_rows WHERE id BETWEEN ? AND ?", -1, &rows, nullptr) !=
      SQLITE_OK)
    return fail(t, t->db);
  sqlite3_bind_int64(rows, 1, lo);
  sqlite3_bind_int64(rows, 2, hi);
  const size_t from_runs = cur->launches.size();
  while ((rc = sqlite3_step(rows)) == SQLITE_ROW)
    cur->launches.push_back(RunLaunch{sqlite3_column_int64(rows, 0), sqlite3_column_int64(rows, 1)});
  sqlite3_finalize(rows);
  if (rc != SQLITE_DONE) return fail(t, t->db);
  auto by_key = [](const RunLaunch& a, const RunLaunch& b) { return a.key < b.key; };
  // Runs come in key order; a rare row (late, or a nanosecond's fifth) is merged in.
  if (cur->launches.size() > from_runs) {
    std::sort(cur->launches.begin() + static_cast<std::ptrdiff_t>(from_runs), cur->launches.end(), by_key);
    std::inplace_merge(cur->launches.begin(), cur->launches.begin() + static_cast<std::ptrdiff_t>(from_runs),
                       cur->launches.end(), by_key);
  }
  return SQLITE_OK;
}

int filter(sqlite3_vtab_cursor* c, int idx, const char*, int argc, sqlite3_value** argv) {
  auto* cur = static_cast<Cursor*>(c);
  Table* t = cur->table();
  cur->launches.clear();
  cur->at = 0;
  sqlite3_finalize(cur->old);
  cur->old = nullptr;
  cur->old_done = true;
  std::optional<int64_t> lo, hi;
  int a = 0;
  for (auto*& v : cur->args) {
    sqlite3_value_free(v);
    v = nullptr;
  }
  auto arg = [&](std::optional<int64_t>& out) {
    sqlite3_value* v = argv[a++];
    cur->args[&out == &lo ? 0 : 1] = sqlite3_value_dup(v);
    int type = sqlite3_value_type(v);
    if (type == SQLITE_INTEGER) out = sqlite3_value_int64(v);
    else if (type != SQLITE_NULL) out = static_cast<int64_t>(std::clamp(sqlite3_value_double(v), -9e18, 9e18));
  };
  if ((idx & 1) && a < argc) arg(lo);
  if ((idx & 2) && a < argc) arg(hi);
  // What the capture holds is looked up at each query (not at connect: a
  // migration may create the tables after the module is registered).
  t->runs = has_table(t->db, "launch_runs");
  if (!t->runs) {
    const char* sql =
        "SELECT id, ts_mono_ns, process_id, tgid, tid, api, function, grid_x, grid_y, grid_z, block_x, block_y,"
        " block_z, shared_mem_bytes, stream, kernel_params, extra, args_complete, kernel_name, cooperative, cluster_x,"
        " cluster_y, cluster_z, per_thread_stream, attributes, stack_id, vendor FROM kernel_launches"
        " WHERE (?1 IS NULL OR ts_mono_ns >= ?1) AND (?2 IS NULL OR ts_mono_ns <= ?2) ORDER BY id";
    if (sqlite3_prepare_v2(t->db, sql, -1, &cur->old, nullptr) != SQLITE_OK) return fail(t, t->db);
    if (lo) sqlite3_bind_int64(cur->old, 1, *lo);
    if (hi) sqlite3_bind_int64(cur->old, 2, *hi);
    int rc = sqlite3_step(cur->old);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return fail(t, t->db);
    cur->old_done = rc == SQLITE_DONE;
    return SQLITE_OK;
  }
  sqlite3_stmt* st = nullptr;
  t->t0 = 0;
  if (sqlite3_prepare_v2(t->db, "SELECT start_mono_ns FROM capture WHERE id = 1", -1, &st, nullptr) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    t->t0 = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  if (int rc = load_shapes(t); rc != SQLITE_OK) return rc;
  cur->shapes = t->shapes;
  return filter_runs(cur, lo, hi);
}

int next(sqlite3_vtab_cursor* c) {
  auto* cur = static_cast<Cursor*>(c);
  if (cur->old) {
    int rc = sqlite3_step(cur->old);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return fail(cur->pVtab, cur->table()->db);
    cur->old_done = rc == SQLITE_DONE;
    return SQLITE_OK;
  }
  ++cur->at;
  return SQLITE_OK;
}

int eof(sqlite3_vtab_cursor* c) {
  auto* cur = static_cast<Cursor*>(c);
  return cur->old ? cur->old_done : cur->at >= cur->launches.size();
}

int column(sqlite3_vtab_cursor* c, sqlite3_context* ctx, int col) {
  auto* cur = static_cast<Cursor*>(c);
  if (col == kLo || col == kHi) {
    if (sqlite3_value* v = cur->args[col - kLo]) sqlite3_result_value(ctx, v);
    return SQLITE_OK;
  }
  if (cur->old) {
    sqlite3_result_value(ctx, sqlite3_column_value(cur->old, col));
    return SQLITE_OK;
  }
  const RunLaunch& l = cur->launches[cur->at];
  if (col == 0) {
    sqlite3_result_int64(ctx, l.key);
  } else if (col == 1) {
    sqlite3_result_int64(ctx, (l.key >> 3) + cur->table()->t0);
  } else if (col < kColumns) {
    const auto& shapes = cur->shapes->by_id;
    const ShapeRow* s = l.shape > 0 && static_cast<size_t>(l.shape) < shapes.size()
                            ? shapes[static_cast<size_t>(l.shape)].get()
                            : nullptr;
    if (!s) return SQLITE_OK;  // NULL, as the view's LEFT JOIN shows a shape id that points at nothing
    const Value& v = (*s)[static_cast<size_t>(col - 2)];
    if (v.type == SQLITE_TEXT) sqlite3_result_text(ctx, v.text.data(), static_cast<int>(v.text.size()), SQLITE_STATIC);
    else if (v.type != SQLITE_NULL) sqlite3_result_int64(ctx, v.i);
  }
  return SQLITE_OK;
}

int rowid(sqlite3_vtab_cursor* c, sqlite3_int64* out) {
  auto* cur = static_cast<Cursor*>(c);
  *out = cur->old ? sqlite3_column_int64(cur->old, 0) : cur->launches[cur->at].key;
  return SQLITE_OK;
}

sqlite3_module make_module() {
  sqlite3_module m{};
  m.iVersion = 1;
  m.xCreate = nullptr;  // eponymous only: used as kernel_launches_between(lo, hi)
  m.xConnect = connect;
  m.xBestIndex = best_index;
  m.xDisconnect = disconnect;
  m.xOpen = open_cursor;
  m.xClose = close_cursor;
  m.xFilter = filter;
  m.xNext = next;
  m.xEof = eof;
  m.xColumn = column;
  m.xRowid = rowid;
  return m;
}

const sqlite3_module kModule = make_module();

}  // namespace

int register_launch_table(sqlite3* db) {
  return sqlite3_create_module_v2(db, "kernel_launches_between", &kModule, nullptr, nullptr);
}

}  // namespace gpuobs
