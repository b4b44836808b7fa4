// Synthetic captures for the replay tests: API calls pushed through the real
// writer (store/writer.h), as the BPF side would deliver them, with one
// process and chosen threads, times and stacks.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "catalogue/api_spec.h"
#include "events.h"
#include "replay/replay.h"
#include "store/schema.h"
#include "store/writer.h"
#include "test_util.h"

namespace gpuobs::testing {

class ReplayCapture {
 public:
  static constexpr uint64_t kT0 = 1'000'000'000;  // capture start; call times below are kT0 + t
  static constexpr uint32_t kPid = 100;

  ReplayCapture() : path_(dir_.file("replay.gpuobs")) {
    auto w = CaptureWriter::create(path_, false, nullptr);
    EXPECT_TRUE(w.ok());
    w_ = std::move(*w);
    EXPECT_TRUE(w_->write_meta(CaptureMeta{"t", CaptureMode::record, "c", "h", "k", "", kT0, 0, 4096}).ok());
    w_->start();
    w_->push(ProcEvent{GPUOBS_EV_PROC_FORK, hdr(GPUOBS_EV_PROC_FORK, kPid, kPid, kT0), 1, 1, 0, "app", ""});
    // Stacks 1..9: one pseudo-module frame each (unsymbolized: '?').
    w_->push(ModuleDef{1, "[anon]", 0, 0, nullptr});
    for (int64_t i = 1; i <= 9; ++i) {
      w_->push(FrameDef{i, 1, static_cast<uint64_t>(0x100 * i)});
      w_->push(StackDef{i, 0, {i}});
    }
  }

  static gpuobs_hdr hdr(uint32_t type, uint32_t tgid, uint32_t tid, uint64_t ts) {
    return gpuobs_hdr{type, 0, ts, tgid, tid};
  }

  // A returned API call at kT0 + t: args, result, duration, out-value, stack.
  void call(uint64_t t, std::string_view api, std::vector<uint64_t> args, int64_t ret = 0, uint64_t dur = 0,
            uint64_t out = 0, int64_t stack = 0, uint32_t tid = kPid) {
    const ApiSpec* spec = nullptr;
    for (const ApiSpec& s : cuda_api_table())
      if (s.symbol == api) spec = &s;
    ASSERT_NE(spec, nullptr) << api;
    ApiCallEvent e{hdr(GPUOBS_EV_API_CALL, kPid, tid, kT0 + t),
                   {},
                   ret,
                   dur,
                   out,
                   spec->id,
                   GPUOBS_CALL_F_RETURNED | (out ? GPUOBS_CALL_F_OUT_READ : 0u),
                   0,
                   {}};
    for (size_t i = 0; i < args.size() && i < 8; ++i) e.args[i] = args[i];
    w_->push(e, stack);
  }

  // A call the entry probe saw and no return probe did (NULL result and duration).
  void entry_only(uint64_t t, std::string_view api, std::vector<uint64_t> args, int64_t stack = 0) {
    const ApiSpec* spec = nullptr;
    for (const ApiSpec& s : cuda_api_table())
      if (s.symbol == api) spec = &s;
    ASSERT_NE(spec, nullptr) << api;
    ApiCallEvent e{hdr(GPUOBS_EV_API_CALL, kPid, kPid, kT0 + t), {}, 0, 0, 0, spec->id, 0u, 0, {}};
    for (size_t i = 0; i < args.size() && i < 8; ++i) e.args[i] = args[i];
    w_->push(e, stack);
  }

  void launch(uint64_t t, uint64_t stream, int64_t stack = 0, uint32_t tid = kPid, bool ptsz = false) {
    gpuobs_launch l{};
    l.hdr = hdr(GPUOBS_EV_LAUNCH, kPid, tid, kT0 + t);
    l.function = 0xF1;
    l.grid_x = l.grid_y = l.grid_z = 1;
    l.block_x = l.block_y = l.block_z = 1;
    l.stream = stream;
    l.api = ptsz ? GPUOBS_API_CU_LAUNCH_KERNEL_PTSZ : GPUOBS_API_CU_LAUNCH_KERNEL;
    w_->push(l, stack);
  }

  // Common calls. cuStreamCreate(&s, flags) returns s; cuEventCreate(&e, flags) returns e.
  void stream_create(uint64_t t, uint64_t handle, uint64_t flags = 0) {
    call(t, "cuStreamCreate", {0x7000, flags}, 0, 1, handle);
  }
  void event_create(uint64_t t, uint64_t handle) { call(t, "cuEventCreate", {0x7008, 0}, 0, 1, handle); }
  void record(uint64_t t, uint64_t event, uint64_t stream) { call(t, "cuEventRecord", {event, stream}, 0, 1); }
  void wait(uint64_t t, uint64_t stream, uint64_t event) { call(t, "cuStreamWaitEvent", {stream, event, 0}, 0, 1); }

  // Stack `id` (10 and up): one Python frame named `name`, so that reports
  // print a name (stacks 1..9 are unsymbolized: '?').
  void named_stack(int64_t id, const std::string& name) {
    if (!py_module_) w_->push(ModuleDef{2, "app.py", 0, 0, nullptr, true});
    py_module_ = true;
    w_->push(FrameDef{id, 2, static_cast<uint64_t>(id), true, name, 1});
    w_->push(StackDef{id, 0, {id}});
  }

  // Ends the capture at kT0 + t and returns the file.
  const std::string& finish(uint64_t t) {
    w_->stop();
    EXPECT_TRUE(w_->write_end(kT0 + t, 0, {}).ok());
    w_.reset();
    return path_;
  }
  const std::string& path() const { return path_; }

 private:
  TempDir dir_;
  std::string path_;
  std::unique_ptr<CaptureWriter> w_;
  bool py_module_ = false;
};

// The replay of a capture file, failing the test when it cannot run.
inline replay::Result replay_file(const std::string& path) {
  auto db = open_capture_readonly(path);
  EXPECT_TRUE(db.ok());
  auto r = replay::run(*db);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? std::move(*r) : replay::Result{};
}

}  // namespace gpuobs::testing
