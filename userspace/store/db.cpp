#include "store/db.h"

#include "store/launch_table.h"

namespace gpuobs {

Stmt::Stmt(sqlite3* db, std::string_view sql) {
  sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &s_, nullptr);
}

Stmt::Param Stmt::param(std::string_view name) {
  std::string n(name);  // SQLite wants a NUL-terminated name
  int i = s_ ? sqlite3_bind_parameter_index(s_, n.c_str()) : 0;
  if (i == 0) unresolved_ += (unresolved_.empty() ? "" : " ") + n;
  return Param{i};
}

int Stmt::exec() {
  int rc = sqlite3_step(s_);
  reset();
  return rc == SQLITE_ROW ? SQLITE_DONE : rc;
}

Result<Db> Db::open(const std::string& path, int flags) {
  // Before SQLite's first use in the process: no memory statistics (nothing
  // reads them), whose global mutex every sqlite3_malloc/free takes, a few
  // times per inserted row (issue 17 profile). Ignored (SQLITE_MISUSE) if
  // SQLite is already initialised.
  static const bool configured = [] { return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0) == SQLITE_OK; }();
  (void)configured;
  Db d;
  int rc = sqlite3_open_v2(path.c_str(), &d.db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = d.db_ ? sqlite3_errmsg(d.db_) : sqlite3_errstr(rc);
    return make_error("cannot open " + path + ": " + msg);
  }
  sqlite3_busy_timeout(d.db_, 2000);
  if (int rc = register_launch_table(d.db_); rc != SQLITE_OK)
    return make_error("cannot open " + path + ": kernel_launches_between: " + sqlite3_errstr(rc));
  return d;
}

Status Db::exec(std::string_view sql) {
  char* err = nullptr;
  std::string s(sql);
  if (sqlite3_exec(db_, s.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    return make_error(msg);
  }
  return {};
}

Result<int64_t> Db::scalar(std::string_view sql) {
  Stmt st(db_, sql);
  if (!st.valid()) return make_error(errmsg());
  int rc = st.step();
  if (rc != SQLITE_ROW) return make_error(rc == SQLITE_DONE ? "no row" : errmsg());
  return sqlite3_column_int64(st.get(), 0);
}

}  // namespace gpuobs
