// Threads killed inside a probed call never reach its return probe: their
// per-thread in-flight entries must still go away (else, on a busy host, the
// map fills and every call with a return probe is lost).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "loader/engine.h"

using namespace gpuobs;

TEST(InflightCleanup, ThreadsDyingInsideACallLeaveNoEntries) {
  EngineOptions o;
  o.only_tracked = true;
  auto engine = Engine::create(o);
  ASSERT_TRUE(engine.ok()) << engine.error().message;
  auto lib = library_file(FAKE_LIBCUDA);
  ASSERT_TRUE(lib.ok());
  for (auto& r : (*engine)->attach_libcuda(*lib)) ASSERT_EQ(r.status, "attached") << r.symbol;
  ASSERT_TRUE((*engine)->start([](const void*, size_t) {}).ok());

  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  pid_t child = ::fork();
  if (child == 0) {
    char c;
    if (::read(go[0], &c, 1) != 1) ::_exit(2);
    ::setenv("FAKE_CUDA_SYNC_US", "5000000", 1);  // every sync blocks 5 s: exit() finds them all inside
    ::execl(LAUNCH_WORKLOAD, LAUNCH_WORKLOAD, "--lib", FAKE_LIBCUDA, "--die-in-sync", "6",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ASSERT_TRUE((*engine)->track(static_cast<uint32_t>(child)).ok());
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  int st = 0;
  ASSERT_EQ(::waitpid(child, &st, 0), child);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  while ((*engine)->poll(0) > 0) {
  }
  Counters c = (*engine)->counters();
  EXPECT_EQ(c[GPUOBS_CNT_SUBMIT_API], 0u) << "no call returned";
  EXPECT_EQ((*engine)->inflight_calls(), 0u) << "entries of dead threads left behind";
}
