// Threads killed inside a probed call never reach its return probe: their
// per-thread in-flight entries must still go away (else, on a busy host, the
// map fills and every call with a return probe is lost).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "loader/engine.h"
#include "run_util.h"

using namespace gpuobs;

namespace {

std::unique_ptr<Engine> probed_engine() {
  EngineOptions o;
  o.only_tracked = true;
  auto engine = Engine::create(o);
  EXPECT_TRUE(engine.ok()) << engine.error().message;
  if (!engine) return nullptr;
  auto lib = library_file(FAKE_LIBCUDA);
  EXPECT_TRUE(lib.ok());
  if (!lib) return nullptr;
  for (auto& r : (*engine)->attach_api(*lib, cuda_api_table())) EXPECT_EQ(r.status, ProbeStatus::attached) << r.symbol;
  EXPECT_TRUE((*engine)->start([](const void*, size_t) {}).ok());
  return std::move(engine.value());
}

}  // namespace

TEST(InflightCleanup, ThreadsDyingInsideACallLeaveNoEntries) {
  auto engine = probed_engine();
  ASSERT_TRUE(engine);
  // Every sync blocks 5 s: exit() finds all 6 workers inside cuStreamSynchronize.
  gpuobs::testing::HeldChild child({LAUNCH_WORKLOAD, "--lib", FAKE_LIBCUDA, "--die-in-sync", "6"},
                                   {"FAKE_CUDA_SYNC_US=5000000"});
  ASSERT_GT(child.pid(), 0);
  ASSERT_TRUE(engine->track(static_cast<uint32_t>(child.pid())).ok());
  ASSERT_TRUE(child.release());
  ASSERT_EQ(child.wait(), 0);
  while (engine->poll(0) > 0) {}
  Counters c = engine->counters();
  EXPECT_EQ(c[GPUOBS_CNT_SUBMIT_API], 0u) << "no call returned";
  EXPECT_EQ(engine->inflight_calls(), 0u) << "entries of dead threads left behind";
}

// The control for the test above: inflight_calls() does see the entries of
// threads inside a call. Counted while the 6 workers are still blocked, then
// gone once the process has exited.
TEST(InflightCleanup, EntriesOfThreadsInsideACallAreCounted) {
  auto engine = probed_engine();
  ASSERT_TRUE(engine);
  gpuobs::testing::HeldChild child({LAUNCH_WORKLOAD, "--lib", FAKE_LIBCUDA, "--die-in-sync", "6", "--hold-ms", "3000"},
                                   {"FAKE_CUDA_SYNC_US=5000000"});
  ASSERT_GT(child.pid(), 0);
  ASSERT_TRUE(engine->track(static_cast<uint32_t>(child.pid())).ok());
  ASSERT_TRUE(child.release());
  // The workers enter the call within the first milliseconds of the 3 s hold.
  size_t inside = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(2500);
  while ((inside = engine->inflight_calls()) < 6 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(inside, 6u) << "entries of the blocked workers";
  ASSERT_EQ(child.wait(), 0);
  EXPECT_EQ(engine->inflight_calls(), 0u);
}
