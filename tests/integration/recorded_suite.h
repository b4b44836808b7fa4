// A test suite over one capture recorded once: `gpuobs record -o CAPTURE
// ARGS` run before the suite's first test, its workload's truth file read,
// the capture opened for each test. Suite (the derived fixture) names the
// capture file (kCapture) and what follows `-o CAPTURE` (record_args, given
// the truth file's path). Used by the API, HIP and driver-ioctl suites.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "run_util.h"
#include "store/schema.h"
#include "unit/test_util.h"

namespace gpuobs::testing {

template <class Suite>
class RecordedSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    out_ = dir_->file(Suite::kCapture);
    std::string truth = dir_->file("truth.json");
    status_ = run(std::string(GPUOBS_BIN) + " record -o " + out_ + " " + Suite::record_args(truth) + " 2>" +
                  dir_->file("err"));
    truth_ = new nlohmann::json(read_json(truth));
  }
  static void TearDownTestSuite() {
    delete truth_;
    delete dir_;
  }
  void SetUp() override {
    ASSERT_EQ(status_, 0) << read_file(dir_->file("err"));
    auto db = open_capture_readonly(out_);
    ASSERT_TRUE(db.ok()) << db.error().message;
    db_ = std::move(db.value());
  }
  int64_t q(const std::string& sql) { return scalar(db_, sql); }
  std::string text(const std::string& sql) { return gpuobs::testing::text(db_, sql); }

  static inline TempDir* dir_;
  static inline std::string out_;
  static inline int status_;
  static inline nlohmann::json* truth_;
  Db db_;
};

}  // namespace gpuobs::testing
