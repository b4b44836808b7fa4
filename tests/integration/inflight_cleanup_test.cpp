// Threads killed inside a probed call never reach its return probe: their
// per-thread in-flight entries must still go away (else, on a busy host, the
// map fills and every call with a return probe is lost).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "loader/engine.h"
#include "run_util.h"

using namespace gpuobs;

TEST(InflightCleanup, ThreadsDyingInsideACallLeaveNoEntries) {
  EngineOptions o;
  o.only_tracked = true;
  auto engine = Engine::create(o);
  ASSERT_TRUE(engine.ok()) << engine.error().message;
  auto lib = library_file(FAKE_LIBCUDA);
  ASSERT_TRUE(lib.ok());
  for (auto& r : (*engine)->attach_api(*lib, cuda_api_table())) ASSERT_EQ(r.status, "attached") << r.symbol;
  ASSERT_TRUE((*engine)->start([](const void*, size_t) {}).ok());

  // Every sync blocks 5 s: exit() finds all 6 workers inside cuStreamSynchronize.
  gpuobs::testing::HeldChild child({LAUNCH_WORKLOAD, "--lib", FAKE_LIBCUDA, "--die-in-sync", "6"},
                                   {"FAKE_CUDA_SYNC_US=5000000"});
  ASSERT_GT(child.pid(), 0);
  ASSERT_TRUE((*engine)->track(static_cast<uint32_t>(child.pid())).ok());
  ASSERT_TRUE(child.release());
  ASSERT_EQ(child.wait(), 0);
  while ((*engine)->poll(0) > 0) {
  }
  Counters c = (*engine)->counters();
  EXPECT_EQ(c[GPUOBS_CNT_SUBMIT_API], 0u) << "no call returned";
  EXPECT_EQ((*engine)->inflight_calls(), 0u) << "entries of dead threads left behind";
}
