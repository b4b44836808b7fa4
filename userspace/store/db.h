// Minimal RAII over SQLite: a connection and prepared statements.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace gpuobs {

class Stmt {
 public:
  Stmt() = default;
  Stmt(sqlite3* db, std::string_view sql);
  explicit Stmt(sqlite3_stmt* prepared) : s_(prepared) {}  // takes ownership
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(Stmt&& o) noexcept : s_(o.s_) { o.s_ = nullptr; }
  Stmt& operator=(Stmt&& o) noexcept {
    std::swap(s_, o.s_);
    return *this;
  }
  bool valid() const { return s_ != nullptr; }
  sqlite3_stmt* get() const { return s_; }

  Stmt& bind(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); return *this; }
  Stmt& bind(int i, uint64_t v) { sqlite3_bind_int64(s_, i, static_cast<int64_t>(v)); return *this; }
  // The wire structs use __u64/__s64 (unsigned long long / long long).
  Stmt& bind(int i, unsigned long long v) { sqlite3_bind_int64(s_, i, static_cast<int64_t>(v)); return *this; }
  Stmt& bind(int i, long long v) { sqlite3_bind_int64(s_, i, v); return *this; }
  Stmt& bind(int i, int32_t v) { sqlite3_bind_int64(s_, i, v); return *this; }
  Stmt& bind(int i, uint32_t v) { sqlite3_bind_int64(s_, i, v); return *this; }
  Stmt& bind(int i, std::string_view v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& bind_null(int i) { sqlite3_bind_null(s_, i); return *this; }
  // Runs to completion (for INSERT/UPDATE); resets for reuse. Returns the SQLite code.
  int exec();
  int step() { return sqlite3_step(s_); }
  void reset() { sqlite3_reset(s_); sqlite3_clear_bindings(s_); }

 private:
  sqlite3_stmt* s_ = nullptr;
};

class Db {
 public:
  // flags: SQLITE_OPEN_* ; the error names the path.
  static Result<Db> open(const std::string& path, int flags);
  Db() = default;
  ~Db() { if (db_) sqlite3_close_v2(db_); }
  Db(Db&& o) noexcept : db_(o.db_) { o.db_ = nullptr; }
  Db& operator=(Db&& o) noexcept { std::swap(db_, o.db_); return *this; }

  sqlite3* get() const { return db_; }
  Status exec(std::string_view sql);  // one or more statements, no results
  Result<int64_t> scalar(std::string_view sql);
  std::string errmsg() const { return sqlite3_errmsg(db_); }

 private:
  sqlite3* db_ = nullptr;
};

}  // namespace gpuobs
