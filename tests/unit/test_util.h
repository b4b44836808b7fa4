// Small helpers shared by the tests: a temporary directory and SQL lookups.
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

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

}  // namespace gpuobs::testing
