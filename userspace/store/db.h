// Minimal RAII over SQLite: a connection and prepared statements.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "common/result.h"

namespace gpuobs {

class Stmt {
 public:
  // A named parameter (":ts") of one prepared statement, resolved to its
  // number once (param()) so that binding by name costs what binding by
  // number does: no name lookup per row.
  struct Param {
    int index = 0;  // 0: not in the statement
  };

  Stmt() = default;
  Stmt(sqlite3* db, std::string_view sql);
  explicit Stmt(sqlite3_stmt* prepared) : s_(prepared) {}  // takes ownership
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(Stmt&& o) noexcept : s_(o.s_), unresolved_(std::move(o.unresolved_)) { o.s_ = nullptr; }
  Stmt& operator=(Stmt&& o) noexcept {
    std::swap(s_, o.s_);
    std::swap(unresolved_, o.unresolved_);
    return *this;
  }
  bool valid() const { return s_ != nullptr; }
  sqlite3_stmt* get() const { return s_; }

  Stmt& bind(int i, int64_t v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  Stmt& bind(int i, uint64_t v) {
    sqlite3_bind_int64(s_, i, static_cast<int64_t>(v));
    return *this;
  }
  // The wire structs use __u64/__s64 (unsigned long long / long long).
  Stmt& bind(int i, unsigned long long v) {
    sqlite3_bind_int64(s_, i, static_cast<int64_t>(v));
    return *this;
  }
  Stmt& bind(int i, long long v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  Stmt& bind(int i, int32_t v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  Stmt& bind(int i, uint32_t v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  Stmt& bind(int i, double v) {
    sqlite3_bind_double(s_, i, v);
    return *this;
  }
  Stmt& bind(int i, std::string_view v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& bind_null(int i) {
    sqlite3_bind_null(s_, i);
    return *this;
  }
  // NULL when there is no value.
  template <class T>
  Stmt& bind(int i, const std::optional<T>& v) {
    return v ? bind(i, *v) : bind_null(i);
  }

  // Named parameters: resolve each once after preparing, then bind through it.
  // A name the statement lacks resolves to 0 and is remembered in unresolved().
  Param param(std::string_view name);
  const std::string& unresolved() const { return unresolved_; }
  template <class T>
  Stmt& bind(Param p, const T& v) {
    return bind(p.index, v);
  }
  Stmt& bind(Param p, const char* v) { return bind(p.index, std::string_view(v)); }
  Stmt& bind_null(Param p) { return bind_null(p.index); }
  // Runs to completion (for INSERT/UPDATE); resets for reuse. Returns the SQLite code.
  int exec();
  int step() { return sqlite3_step(s_); }
  void reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }

 private:
  sqlite3_stmt* s_ = nullptr;
  std::string unresolved_;  // named parameters param() did not find, space-separated
};

class Db {
 public:
  // flags: SQLITE_OPEN_* ; the error names the path.
  static Result<Db> open(const std::string& path, int flags);
  Db() = default;
  ~Db() {
    if (db_) sqlite3_close_v2(db_);
  }
  Db(Db&& o) noexcept : db_(o.db_) { o.db_ = nullptr; }
  Db& operator=(Db&& o) noexcept {
    std::swap(db_, o.db_);
    return *this;
  }

  sqlite3* get() const { return db_; }
  Status exec(std::string_view sql);  // one or more statements, no results
  Result<int64_t> scalar(std::string_view sql);
  std::string errmsg() const { return sqlite3_errmsg(db_); }

 private:
  sqlite3* db_ = nullptr;
};

}  // namespace gpuobs
