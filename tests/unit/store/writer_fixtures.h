// What the writer-level store tests share: a capture start, a writer on a new
// file with its metadata written, a process's fork event, and the gpuobs CLI
// run on a capture (compact_capture_test.cpp, interned_calls_test.cpp).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "events.h"
#include "store/writer.h"
#include "test_util.h"

namespace gpuobs::testing {

inline constexpr uint64_t kT0 = 5'000'000'000;  // capture start (monotonic ns)

inline std::pair<int, std::string> gpuobs_cli(const std::string& args) {
  return run_output(std::string(GPUOBS_BIN) + " " + args + " 2>&1");
}

inline ProcEvent fork_of(uint32_t tgid, uint64_t ts) {
  return ProcEvent{GPUOBS_EV_PROC_FORK,
                   gpuobs_hdr{GPUOBS_EV_PROC_FORK, sizeof(gpuobs_proc), ts, tgid, tgid},
                   1,
                   1,
                   0,
                   "trainer",
                   ""};
}

// A writer on a new file, its capture starting at kT0.
inline std::unique_ptr<CaptureWriter> new_writer(const std::string& path) {
  auto w = CaptureWriter::create(path, false, nullptr);
  EXPECT_TRUE(w.ok()) << (w.ok() ? "" : w.error().message);
  if (!w.ok()) return nullptr;
  EXPECT_TRUE(
      (*w)->write_meta(CaptureMeta{"test", CaptureMode::record, "cmd", "host", "kernel", "", int64_t(kT0), 0, 4096})
          .ok());
  return std::move(w.value());
}

}  // namespace gpuobs::testing
