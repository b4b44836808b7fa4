// Recordings a suite makes once per ctest run, shared by its test processes.
// gtest_discover_tests runs every test in a process of its own, so a
// suite's SetUpTestSuite ran once per test: DiffRuns recorded its five
// captures eight times (50 s of the suite's 51). Under ctest the fixture
// `shared_recordings` (tests/CMakeLists.txt) empties GPUOBS_TEST_SHARED_DIR
// before the first test, so a directory never outlives the build that made
// it; the first test process of a suite records into DIR/NAME, the others
// find DIR/NAME/done and reuse it. Run by hand (no variable set), each
// process records into its own TempDir as before.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>

#include "unit/test_util.h"

namespace gpuobs::testing {

class SharedRecordings {
 public:
  // make(dir) records into dir; it succeeded when it returns true (a
  // failure is recorded again by the next test process, and fails it too).
  SharedRecordings(const std::string& name, const std::function<bool(const std::string& dir)>& make) {
    const char* shared = std::getenv("GPUOBS_TEST_SHARED_DIR");
    if (!shared || !*shared) {
      own_ = std::make_unique<TempDir>();
      path_ = own_->path();
      ok_ = make(path_);
      return;
    }
    std::filesystem::create_directories(shared);
    path_ = std::string(shared) + "/" + name;
    // One process records; a second one started meanwhile (ctest -j) waits.
    int lock = ::open((path_ + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock >= 0) ::flock(lock, LOCK_EX);
    if (std::filesystem::exists(path_ + "/done")) {
      ok_ = true;
    } else {
      std::filesystem::remove_all(path_);
      std::filesystem::create_directories(path_);
      ok_ = make(path_);
      if (ok_) std::ofstream(path_ + "/done") << "recorded\n";
    }
    if (lock >= 0) ::close(lock);
  }
  bool ok() const { return ok_; }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::unique_ptr<TempDir> own_;
  std::string path_;
  bool ok_ = false;
};

}  // namespace gpuobs::testing
