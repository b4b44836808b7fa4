// Small helpers shared by the tests: a temporary directory and SQL lookups.
#pragma once

#include <sys/wait.h>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "store/db.h"

namespace gpuobs::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gpuobs-test-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data()) ? tmpl : std::string();
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline int64_t scalar(Db& db, const std::string& sql) {
  auto r = db.scalar(sql);
  return r ? *r : -1;
}

// The first column of the first row as text; "<null>" for NULL or no row.
inline std::string text(Db& db, const std::string& sql) {
  Stmt st(db.get(), sql);
  if (st.step() != SQLITE_ROW || sqlite3_column_type(st.get(), 0) == SQLITE_NULL) return "<null>";
  return reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 0));
}

// The first column of every row as text ("<null>" for NULL).
inline std::vector<std::string> column(Db& db, const std::string& sql) {
  std::vector<std::string> out;
  Stmt st(db.get(), sql);
  while (st.step() == SQLITE_ROW)
    out.push_back(sqlite3_column_type(st.get(), 0) == SQLITE_NULL
                      ? "<null>"
                      : reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 0)));
  return out;
}

// Runs a shell command line; returns (exit status, stdout + stderr).
inline std::pair<int, std::string> run_output(const std::string& cmd) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while (p && (n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int st = p ? pclose(p) : -1;
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

// A CSV report (`--format csv`) as rows of column -> value. Cells hold no
// commas in the reports the tests read this way.
inline std::vector<std::map<std::string, std::string>> csv_rows(const std::string& csv) {
  std::vector<std::map<std::string, std::string>> rows;
  std::istringstream in(csv);
  std::string header, line;
  std::getline(in, header);
  while (std::getline(in, line)) {
    std::map<std::string, std::string> row;
    std::istringstream h(header), l(line);
    std::string k, v;
    while (std::getline(h, k, ',') && std::getline(l, v, ',')) row[k] = v;
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace gpuobs::testing
