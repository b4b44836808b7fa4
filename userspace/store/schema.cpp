#include "store/schema.h"

#include <grp.h>
#include <pwd.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <sstream>
#include <string>

#include "events.h"

#include "store/embedded_sql.h"
#include "store/launch_runs.h"

namespace gpuobs {
namespace {

int version_of(std::string_view migration_name) {
  return std::atoi(std::string(migration_name.substr(0, migration_name.find('_'))).c_str());
}

}  // namespace

int schema_version() {
  const auto& m = sql::migrations();
  return m.empty() ? 0 : version_of(m.back().name);
}

Status migrate(Db& db, int up_to) {
  auto cur = db.scalar("PRAGMA user_version");
  if (!cur) return cur.error();
  if (std::string why = newer_than_build(db); !why.empty())
    return make_error("the capture was written by a newer gpuobs (" + why + ")", "upgrade gpuobs", 2);
  if (auto s = db.exec("CREATE TABLE IF NOT EXISTS schema_migrations ("
                       " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_utc TEXT NOT NULL)");
      !s)
    return s;
  for (const auto& m : sql::migrations()) {
    int v = version_of(m.name);
    if (v <= *cur || v > up_to) continue;
    std::string tx = "BEGIN;\n" + std::string(m.text) + "\nINSERT INTO schema_migrations VALUES (" + std::to_string(v) +
                     ", '" + std::string(m.name) + "', strftime('%Y-%m-%dT%H:%M:%SZ','now'));\n" +
                     "PRAGMA user_version = " + std::to_string(v) + ";\nCOMMIT;";
    if (auto s = db.exec(tx); !s) {
      (void)db.exec("ROLLBACK");
      return make_error("migration " + std::string(m.name) + " failed: " + s.error().message);
    }
  }
  return db.exec("PRAGMA application_id = " + std::to_string(kApplicationId));
}

namespace {

int64_t file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
}

// Once per file and process: `report` over several segments, or a command
// that opens a file twice, warns once for each file.
void warn_newer_once(const std::string& path, const std::string& why) {
  static std::mutex mu;
  static std::set<std::string> warned;
  std::lock_guard lk(mu);
  if (!warned.insert(path).second) return;
  spdlog::warn(
      "{} was written by a newer gpuobs ({}): reading it as schema {}; what the newer version added "
      "is not shown, and this gpuobs will not write into it",
      path, why, schema_version());
}

}  // namespace

std::string newer_than_build(Db& db) {
  std::string why;
  auto add = [&](const std::string& s) { why += (why.empty() ? "" : ", ") + s; };
  const std::string known = std::to_string(schema_version());
  if (auto v = db.scalar("PRAGMA user_version"); v && *v > schema_version())
    add("schema version " + std::to_string(*v) + ", this gpuobs knows " + known);
  // A migration row beyond ours, even with user_version unchanged.
  if (auto m = db.scalar("SELECT coalesce(max(version), 0) FROM schema_migrations"); m && *m > schema_version())
    add("migration " + std::to_string(*m) + " applied, this gpuobs knows up to " + known);
  if (auto a = db.scalar("SELECT abi_version FROM capture WHERE id = 1"); a && *a > GPUOBS_ABI_VERSION)
    add("event ABI " + std::to_string(*a) + ", this gpuobs knows " + std::to_string(GPUOBS_ABI_VERSION));
  return why;
}

Status refuse_if_newer(Db& db, const std::string& path) {
  if (std::string why = newer_than_build(db); !why.empty())
    return make_error("refusing to write into " + path + ": it was written by a newer gpuobs (" + why + ")",
                      "upgrade gpuobs, or write elsewhere", 2);
  return {};
}

Status refuse_replacing_newer(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
  auto db = Db::open(path, SQLITE_OPEN_READONLY);
  if (!db) return {};
  auto app = db->scalar("PRAGMA application_id");
  if (!app || *app != kApplicationId) return {};
  if (std::string why = newer_than_build(*db); !why.empty())
    return make_error("refusing to replace " + path + ": it was written by a newer gpuobs (" + why + ")",
                      "upgrade gpuobs, or record into another file", 2);
  return {};
}

bool is_corruption(int rc) {
  int primary = rc & 0xff;
  return primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB;
}

Error capture_error(sqlite3* db, const std::string& what, int exit_code) {
  const char* file = sqlite3_db_filename(db, "main");
  std::string path = file && *file ? file : "the capture";
  if (is_corruption(sqlite3_extended_errcode(db))) {
    Error e =
        make_error("capture is corrupt: " + path + ": " + sqlite3_errmsg(db),
                   "run gpuobs check " + path + " to list the damage; the data in it cannot be trusted", exit_code);
    e.corrupt = true;
    return e;
  }
  return make_error(what + ": " + sqlite3_errmsg(db), "", exit_code);
}

namespace {

// Interned ids (schema 12, 14) that point at nothing: intact pages, wrong data
// (a file edited by hand, or written by a broken build). The views would
// show such launches with NULL names; the check names them.
void add_reference_problems(Db& db, int max, std::vector<std::string>& problems) {
  if (auto has = db.scalar("SELECT count(*) FROM sqlite_master WHERE name = 'launch_shapes'"); !has || !*has) return;
  static constexpr std::pair<const char*, const char*> kChecks[] = {
      {"launches whose shape_id is not in launch_shapes",
       "SELECT count(*) FROM launches l WHERE NOT EXISTS (SELECT 1 FROM launch_shapes s WHERE s.id = l.shape_id)"},
      {"launch_counts whose shape_id is not in launch_shapes",
       "SELECT count(*) FROM launch_counts c WHERE NOT EXISTS (SELECT 1 FROM launch_shapes s WHERE s.id = c.shape_id)"},
      {"launch shapes whose api_id, vendor_id or kernel_name_id is not in strings",
       "SELECT count(*) FROM launch_shapes s WHERE NOT EXISTS (SELECT 1 FROM strings t WHERE t.id = s.api_id)"
       " OR NOT EXISTS (SELECT 1 FROM strings t WHERE t.id = s.vendor_id)"
       " OR (s.kernel_name_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM strings t WHERE t.id = s.kernel_name_id))"},
  };
  auto count = [&](const std::string& what, const std::string& sql) {
    if (problems.size() >= static_cast<size_t>(max)) return;
    auto n = db.scalar(sql);
    if (!n) problems.push_back("cannot check " + what + ": " + n.error().message);
    else if (*n) problems.push_back(std::to_string(*n) + " " + what);
  };
  // Schema 16: launches are in runs. The launches view would unpack them in
  // SQL (seconds per million), so the runs are decoded here, their shape ids
  // checked against the shapes' and their bytes checked, and launch_rows in SQL.
  bool runs = false;
  if (auto has = db.scalar("SELECT count(*) FROM sqlite_master WHERE name = 'launch_runs'"); has && *has) runs = true;
  for (const auto& [what, sql] : kChecks)
    if (!(runs && what == kChecks[0].first)) count(what, sql);
  if (runs && problems.size() < static_cast<size_t>(max)) {
    std::vector<bool> shape_known;
    Stmt ids(db.get(), "SELECT id FROM launch_shapes");
    while (ids.valid() && ids.step() == SQLITE_ROW) {
      int64_t id = sqlite3_column_int64(ids.get(), 0);
      if (id < 1 || id > (int64_t{1} << 31)) continue;
      if (static_cast<size_t>(id) >= shape_known.size()) shape_known.resize(static_cast<size_t>(id) + 1);
      shape_known[static_cast<size_t>(id)] = true;
    }
    auto known = [&](int64_t id) {
      return id > 0 && static_cast<size_t>(id) < shape_known.size() && shape_known[size_t(id)];
    };
    Stmt runs_st(db.get(), "SELECT id, launches FROM launch_runs");
    int64_t bad = 0, unknown = 0;
    std::vector<RunLaunch> scratch;
    int rc = SQLITE_ERROR;
    while (runs_st.valid() && (rc = runs_st.step()) == SQLITE_ROW) {
      const auto* p = static_cast<const uint8_t*>(sqlite3_column_blob(runs_st.get(), 1));
      scratch.clear();
      if (!decode_launch_run(sqlite3_column_int64(runs_st.get(), 0),
                             {p, static_cast<size_t>(sqlite3_column_bytes(runs_st.get(), 1))}, scratch))
        ++bad;
      for (const RunLaunch& l : scratch) unknown += !known(l.shape);
    }
    Stmt rows(db.get(),
              "SELECT id, shape_id FROM launch_rows");  // few: the late launches and a nanosecond's fifth and later
    while (rc == SQLITE_DONE && rows.valid() && (rc = rows.step()) == SQLITE_ROW)
      unknown += !known(sqlite3_column_int64(rows.get(), 1));
    if (rc != SQLITE_DONE) problems.push_back(std::string("cannot check the launches: ") + db.errmsg());
    if (unknown) problems.push_back(std::to_string(unknown) + " " + kChecks[0].first);
    if (bad) problems.push_back(std::to_string(bad) + " launch_runs rows whose bytes do not decode");
  }
  // Schema 14: the call tables' text ids (NULL is a NULL text, not a broken id).
  if (auto has = db.scalar("SELECT count(*) FROM sqlite_master WHERE name = 'copy_rows'"); !has || !*has) return;
  // Each table and its id columns, comma-separated.
  static constexpr std::pair<const char*, const char*> kIdColumns[] = {
      {"memory_op_rows", "api_id, op_id, kind_id, vendor_id"},
      {"copy_shapes", "api_id, kind_id, direction_id, vendor_id"},
      {"stream_op_rows", "api_id, op_id, vendor_id"},
      {"sync_rows", "api_id, target_id, vendor_id"},
      {"gpu_module_shapes", "api_id, op_id, kind_id, path_id, name_id, vendor_id"},
      {"kernel_name_rows", "kind_id, name_id, demangled_id, api_id, vendor_id"},
  };
  for (const auto& [table, columns] : kIdColumns) {
    std::string broken;
    std::istringstream list(columns);
    for (std::string c; std::getline(list >> std::ws, c, ',');)
      broken += (broken.empty() ? "" : " OR ") +
                ("(r." + c + " IS NOT NULL AND NOT EXISTS (SELECT 1 FROM strings t" + " WHERE t.id = r." + c + "))");
    count(std::string(table) + " rows whose " + columns + " is not in strings",
          std::string("SELECT count(*) FROM ") + table + " r WHERE " + broken);
  }
  // Calls stored as a time and a shape.
  count("copy_rows whose shape_id is not in copy_shapes",
        "SELECT count(*) FROM copy_rows r WHERE NOT EXISTS (SELECT 1 FROM copy_shapes s WHERE s.id = r.shape_id)");
  count("gpu_module_rows whose shape_id is not in gpu_module_shapes",
        "SELECT count(*) FROM gpu_module_rows r WHERE NOT EXISTS"
        " (SELECT 1 FROM gpu_module_shapes s WHERE s.id = r.shape_id)");
}

}  // namespace

Result<std::vector<std::string>> integrity_problems(Db& db, bool quick, int max) {
  std::string sql = std::string(quick ? "PRAGMA quick_check(" : "PRAGMA integrity_check(") + std::to_string(max) + ")";
  Stmt st(db.get(), sql);
  if (!st.valid()) return capture_error(db.get(), "cannot check the capture");
  std::vector<std::string> problems;
  int rc;
  while ((rc = st.step()) == SQLITE_ROW) {
    const unsigned char* t = sqlite3_column_text(st.get(), 0);
    // One row can hold several lines, under a "*** in database main ***" heading.
    std::istringstream rows(t ? reinterpret_cast<const char*>(t) : "");
    for (std::string line; std::getline(rows, line);)
      if (line != "ok" && !line.empty() && line.rfind("*** in database", 0) != 0) problems.push_back(line);
  }
  // The check itself can stop at a page too damaged to walk.
  if (rc != SQLITE_DONE) {
    if (!is_corruption(rc)) return capture_error(db.get(), "cannot check the capture");
    problems.push_back(sqlite3_errmsg(db.get()));
    return problems;
  }
  if (!quick && problems.empty()) add_reference_problems(db, max, problems);
  return problems;
}

namespace {

// A capture of schema 10 to 21 read by this build: no NCCL tables (17): empty
// views stand in for them; no Python frames (18): frames.kind reads 'native'
// and stacks.python_end NULL; no GPU metrics (19), GPU times (20) or replay
// idle-time tables (21): empty views; stacks.python_thread (22) reads
// 'calling' where a Python walk was stored, capture.python_main_thread
// NULL; no library_maps (23) or context_ops (24): empty views; the columns later migrations
// added to `capture` read as NULL (what they mean for a capture that predates
// them), through a TEMP view that shadows the table for this connection only.
// The file is opened read-only: nothing is written into it. Schema 12's
// compact launch tables need nothing: kernel_launches and launch_agg are
// tables there, with the same columns.
void present_as_current(Db& db, int64_t version) {
  (void)db.exec("PRAGMA query_only = 0");
  if (version < 17) {
    // No NCCL tables before 17: empty ones, so the nccl reports and users'
    // SQL answer "no rows" instead of "no such table".
    // Each view's text in parentheses: adjacent literals of one element.
    const char* empty[] = {
        ("CREATE TEMP VIEW nccl_comms AS SELECT NULL AS id, NULL AS process_id, NULL AS tgid, NULL AS comm,"
         " NULL AS comm_hash, NULL AS rank, NULL AS nranks, NULL AS device, NULL AS parent_hash,"
         " NULL AS created_mono_ns, NULL AS api, NULL AS result, NULL AS stack_id WHERE 0"),
        ("CREATE TEMP VIEW nccl_calls AS SELECT NULL AS id, NULL AS ts_mono_ns, NULL AS duration_ns,"
         " NULL AS process_id, NULL AS tgid, NULL AS tid, NULL AS api, NULL AS op, NULL AS comm_id, NULL AS comm,"
         " NULL AS comm_hash, NULL AS rank, NULL AS nranks, NULL AS seq, NULL AS count, NULL AS datatype,"
         " NULL AS redop, NULL AS peer, NULL AS stream, NULL AS bytes, NULL AS send_buf, NULL AS recv_buf,"
         " NULL AS result, NULL AS stack_id WHERE 0"),
        ("CREATE TEMP VIEW nccl_stalls AS SELECT NULL AS id, NULL AS detected_mono_ns, NULL AS comm_hash,"
         " NULL AS seq, NULL AS op, NULL AS kind, NULL AS nranks, NULL AS ranks_in, NULL AS ranks_missing,"
         " NULL AS waited_ns WHERE 0"),
        ("CREATE TEMP VIEW nccl_stall_ranks AS SELECT NULL AS stall_id, NULL AS rank, NULL AS tgid, NULL AS state,"
         " NULL AS last_seq, NULL AS last_api, NULL AS last_call_mono_ns WHERE 0")};
    for (const char* sql : empty)
      if (auto s = db.exec(sql); !s)
        spdlog::warn("cannot present the schema-{} capture's NCCL tables: {}", version, s.error().message);
  }
  if (version < 18) {
    // No Python frames before 18: every frame is native, no stack had a
    // Python walk (frames.kind, stacks.python_end, stack_symbols.kind).
    const char* views[] = {
        "CREATE TEMP VIEW frames AS SELECT *, 'native' AS kind FROM main.frames",
        "CREATE TEMP VIEW stacks AS SELECT *, NULL AS python_end, NULL AS python_thread FROM main.stacks",
        ("CREATE TEMP VIEW stack_symbols AS SELECT sf.stack_id, sf.position, f.id AS frame_id, m.path AS module,"
         " s.name AS symbol, f.symbol_offset, f.file, f.line, f.offset, f.kind FROM stack_frames sf"
         " JOIN frames f ON f.id = sf.frame_id JOIN modules m ON m.id = f.module_id"
         " LEFT JOIN symbols s ON s.id = f.symbol_id")};
    for (const char* sql : views)
      if (auto s = db.exec(sql); !s)
        spdlog::warn("cannot present the schema-{} capture's stacks as schema {}: {}", version, schema_version(),
                     s.error().message);
  }
  if (version < 19) {
    // No GPU metrics before 19: empty tables and views of the same columns,
    // so gpu_sum, gpu_procs and users' SQL answer "no rows".
    const char* empty[] = {
        ("CREATE TEMP VIEW gpus AS SELECT NULL AS id, NULL AS vendor, NULL AS uuid, NULL AS name,"
         " NULL AS pci_bus_id, NULL AS driver, NULL AS memory_total_bytes, NULL AS gpm WHERE 0"),
        "CREATE TEMP VIEW gpu_metric_names AS SELECT NULL AS id, NULL AS name, NULL AS unit, NULL AS description WHERE "
        "0",
        "CREATE TEMP VIEW gpu_throttle_reasons AS SELECT NULL AS bit, NULL AS name WHERE 0",
        ("CREATE TEMP VIEW gpu_sources AS SELECT NULL AS source, NULL AS library, NULL AS status, NULL AS gpus,"
         " NULL AS hz WHERE 0"),
        ("CREATE TEMP VIEW gpu_sample_rows AS SELECT NULL AS t_ns, NULL AS gpu_id, NULL AS metric_id,"
         " NULL AS value WHERE 0"),
        ("CREATE TEMP VIEW gpu_process_rows AS SELECT NULL AS t_ns, NULL AS gpu_id, NULL AS pid,"
         " NULL AS sm_util_pct, NULL AS mem_util_pct, NULL AS memory_bytes, NULL AS gone WHERE 0"),
        "CREATE TEMP VIEW gpu_events AS SELECT NULL AS ts_mono_ns, NULL AS gpu_id, NULL AS kind, NULL AS code WHERE 0",
        ("CREATE TEMP VIEW gpu_metrics AS SELECT NULL AS ts_mono_ns, NULL AS until_mono_ns, NULL AS gpu_id,"
         " NULL AS gpu_uuid, NULL AS metric, NULL AS unit, NULL AS value WHERE 0"),
        ("CREATE TEMP VIEW gpu_process_metrics AS SELECT NULL AS ts_mono_ns, NULL AS until_mono_ns,"
         " NULL AS gpu_id, NULL AS gpu_uuid, NULL AS pid, NULL AS process_id, NULL AS sm_util_pct,"
         " NULL AS mem_util_pct, NULL AS memory_bytes, NULL AS gone WHERE 0")};
    for (const char* sql : empty)
      if (auto s = db.exec(sql); !s)
        spdlog::warn("cannot present the schema-{} capture's GPU metric tables: {}", version, s.error().message);
  }
  if (version < 20) {
    // No GPU times before 20 (record --gpu-time).
    const char* empty[] = {
        ("CREATE TEMP VIEW gpu_time_rows AS SELECT NULL AS call_table, NULL AS row_id, NULL AS process_id,"
         " NULL AS name_id, NULL AS start_ns, NULL AS duration_ns, NULL AS device, NULL AS stream_id,"
         " NULL AS correlation_id, NULL AS activities, NULL AS by_order WHERE 0"),
        ("CREATE TEMP VIEW gpu_times AS SELECT NULL AS call_table, NULL AS row_id, NULL AS process_id,"
         " NULL AS kernel, NULL AS start_mono_ns, NULL AS end_mono_ns, NULL AS duration_ns, NULL AS device,"
         " NULL AS stream_id, NULL AS correlation_id, NULL AS activities, NULL AS joined_by WHERE 0")};
    for (const char* sql : empty)
      if (auto s = db.exec(sql); !s)
        spdlog::warn("cannot present the schema-{} capture's GPU time tables: {}", version, s.error().message);
  }
  if (version < 21) {
    // No idle-time tables before 21: empty views, so gpu_idle and
    // gpu_idle_buckets answer "no rows" (the capture needs `gpuobs replay`,
    // which migrates it, anyway).
    const char* empty[] = {
        ("CREATE TEMP VIEW replay_idle_spans AS SELECT NULL AS process_id, NULL AS queue_id, NULL AS start_ns,"
         " NULL AS end_ns, NULL AS work_ops, NULL AS measured_ops, NULL AS busy_ns, NULL AS idle_ns, NULL AS gaps"
         " WHERE 0"),
        ("CREATE TEMP VIEW replay_idle_gaps AS SELECT NULL AS id, NULL AS process_id, NULL AS queue_id,"
         " NULL AS start_ns, NULL AS end_ns, NULL AS host_wait_ns, NULL AS sync_wait_ns, NULL AS dependency_wait_ns,"
         " NULL AS other_ns, NULL AS measured, NULL AS prev_op_id, NULL AS next_op_id, NULL AS tid,"
         " NULL AS before_stack_id, NULL AS after_stack_id WHERE 0"),
        ("CREATE TEMP VIEW replay_idle_pieces AS SELECT NULL AS gap_id, NULL AS kind, NULL AS start_ns,"
         " NULL AS end_ns WHERE 0")};
    for (const char* sql : empty)
      if (auto s = db.exec(sql); !s)
        spdlog::warn("cannot present the schema-{} capture's idle-time tables: {}", version, s.error().message);
  }
  if (version >= 18 && version < 22) {
    // Whose Python frames (22): before it, always the calling thread's.
    const char* sql =
        "CREATE TEMP VIEW stacks AS SELECT *, CASE WHEN python_end IS NOT NULL THEN 'calling' END AS python_thread"
        " FROM main.stacks";
    if (auto s = db.exec(sql); !s)
      spdlog::warn("cannot present the schema-{} capture's stacks as schema {}: {}", version, schema_version(),
                   s.error().message);
  }
  if (version < 23) {
    // No record of library mappings before 23: an empty view (what the
    // capture could have missed is not known: capture.state said 'complete').
    const char* sql =
        "CREATE TEMP VIEW library_maps AS SELECT NULL AS id, NULL AS tgid, NULL AS comm, NULL AS library,"
        " NULL AS dev, NULL AS inode, NULL AS mapped_mono_ns, NULL AS hold, NULL AS held_ns,"
        " NULL AS attached_mono_ns, NULL AS calls_before_attach, NULL AS reason WHERE 0";
    if (auto s = db.exec(sql); !s)
      spdlog::warn("cannot present the schema-{} capture's library mappings: {}", version, s.error().message);
  }
  if (version < 24) {
    // No set-up calls before 24 (cuInit, cuDeviceGet, cuCtxCreate, ...).
    const char* sql =
        "CREATE TEMP VIEW context_ops AS SELECT NULL AS id, NULL AS ts_mono_ns, NULL AS duration_ns,"
        " NULL AS process_id, NULL AS tgid, NULL AS tid, NULL AS api, NULL AS result, NULL AS op, NULL AS device,"
        " NULL AS context, NULL AS flags, NULL AS ordinal, NULL AS attribute, NULL AS value, NULL AS stack_id,"
        " NULL AS vendor WHERE 0";
    if (auto s = db.exec(sql); !s)
      spdlog::warn("cannot present the schema-{} capture's set-up calls: {}", version, s.error().message);
  }
  if (version < 25) {
    // The names views (025_names.sql) read tables every older capture has:
    // the migration's own text, as temporary views.
    for (const auto& m : sql::migrations()) {
      if (version_of(m.name) != 25) continue;
      std::string text(m.text);
      for (size_t at = 0; (at = text.find("CREATE VIEW", at)) != std::string::npos; at += 16)
        text.replace(at, 11, "CREATE TEMP VIEW");
      if (auto s = db.exec(text); !s)
        spdlog::warn("cannot present the schema-{} capture's process and stream names: {}", version, s.error().message);
    }
  }
  std::string extra;
  if (version < 10) extra += ", NULL AS segment";
  if (version < 11) extra += ", NULL AS state, NULL AS committed_mono_ns";
  if (version < 15) extra += ", NULL AS stack_depth, NULL AS unwind, NULL AS stack_copy_bytes";
  if (version < 18) extra += ", NULL AS python_stacks";
  extra += ", NULL AS python_main_thread";  // 22
  (void)db.exec("PRAGMA query_only = 0");
  if (auto s = db.exec("CREATE TEMP VIEW capture AS SELECT *" + extra + " FROM main.capture"); !s)
    spdlog::warn("cannot present the schema-{} capture's metadata as schema {}: {}", version, schema_version(),
                 s.error().message);
  (void)db.exec("PRAGMA query_only = 1");
}

}  // namespace

Result<Db> open_capture_readonly(const std::string& path, OpenCheck check, Threads threads) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == EACCES)
      return make_error("permission denied: " + path + " (a directory on the way is not searchable)", "", 2);
    return make_error("cannot open capture " + path + ": no such file", "", 2);
  }
  // SQLite would say "unable to open database file": say whose file it is.
  if (::access(path.c_str(), R_OK) != 0 && errno == EACCES) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    const group* g = ::getgrgid(st.st_gid);
    const passwd* u = ::getpwuid(st.st_uid);
    std::string group_name = g ? g->gr_name : std::to_string(st.st_gid);
    return make_error("permission denied: " + path + " (mode " + mode + ", owner " +
                          (u ? std::string(u->pw_name) : std::to_string(st.st_uid)) + ", group " + group_name + ")",
                      "members of group " + group_name + " can read it (usermod -aG " + group_name +
                          " USER, then log in again), or run as root",
                      2);
  }
  auto db = Db::open(path, SQLITE_OPEN_READONLY | (threads == Threads::one ? SQLITE_OPEN_NOMUTEX : 0));
  if (!db) return make_error(db.error().message, "", 2);
  (void)db->exec("PRAGMA query_only = 1");
  // A writer commits in milliseconds; a lock held longer is reported, not waited on forever.
  sqlite3_busy_timeout(db->get(), 2000);
  auto app = db->scalar("PRAGMA application_id");
  if (!app) {
    int rc = sqlite3_errcode(db->get());
    if (rc == SQLITE_BUSY)
      return make_error(path + " is locked by another process", "retry when its writer has finished", 2);
    if (is_corruption(rc)) {
      Error e = make_error(path +
                               " is not a readable SQLite database (not a capture, or a capture whose header is "
                               "corrupt): " +
                               app.error().message,
                           "gpuobs check " + path, 2);
      e.corrupt = true;
      return e;
    }
    return make_error(path + " is not a readable SQLite database: " + app.error().message, "", 2);
  }
  if (*app != kApplicationId)
    return make_error(path + " is not a gpuobs capture (application_id " + std::to_string(*app) + ")", "", 2);
  auto ver = db->scalar("PRAGMA user_version");
  if (!ver) return make_error(path + ": " + ver.error().message, "", 2);
  if (*ver < 1) return make_error(path + " is an incomplete gpuobs capture (no schema)", "", 2);
  if (check == OpenCheck::quick && file_size(path) + file_size(path + "-wal") <= kQuickCheckMaxBytes) {
    auto problems = integrity_problems(*db, true, 5);
    if (!problems) return problems.error();
    if (!problems->empty()) {
      std::string list;
      for (const auto& p : *problems) list += (list.empty() ? "" : "; ") + p;
      Error e = make_error("capture is corrupt: " + path + ": " + list,
                           "run gpuobs check " + path + " to list the damage; the data in it cannot be trusted", 2);
      e.corrupt = true;
      return e;
    }
  }
  // A cheap structural check catches truncated files before a report half-prints.
  auto ok = db->scalar("SELECT count(*) FROM capture");
  if (!ok) {
    if (is_corruption(sqlite3_errcode(db->get()))) return capture_error(db->get(), path);
    return make_error(path + " is damaged: " + ok.error().message, "", 2);
  }
  if (std::string why = newer_than_build(*db); !why.empty()) warn_newer_once(path, why);
  if (*ver < schema_version()) present_as_current(*db, *ver);
  return std::move(db.value());
}

}  // namespace gpuobs
