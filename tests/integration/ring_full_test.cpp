// A full ring buffer: the application is never blocked, every lost record is
// counted, and produced == stored + dropped exactly. Uses the engine directly
// with the smallest ring (one page) and no reader while the workload runs.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "decode/decoder.h"
#include "loader/engine.h"
#include "run_util.h"

using namespace gpuobs;

TEST(RingFull, DropsAreCountedAndTheApplicationRunsOn) {
  EngineOptions o;
  o.only_tracked = true;
  o.ring_bytes = 4096;
  auto engine = Engine::create(o);
  ASSERT_TRUE(engine.ok()) << engine.error().message;
  auto lib = library_file(FAKE_LIBCUDA);
  ASSERT_TRUE(lib.ok());
  for (auto& r : (*engine)->attach_api(*lib, cuda_api_table()))
    ASSERT_EQ(r.status, ProbeStatus::attached) << r.symbol << r.error;

  Decoder dec;
  uint64_t consumed = 0;
  ASSERT_TRUE((*engine)
                  ->start([&](const void* d, size_t n) {
                    if (std::holds_alternative<gpuobs_launch>(dec.decode(d, n))) ++consumed;
                  })
                  .ok());

  const int launches = 20000;
  gpuobs::testing::HeldChild child({LAUNCH_WORKLOAD, "--lib", FAKE_LIBCUDA, "--threads", "1", "--launches",
                                    std::to_string(launches), "--truth", "/dev/null"});
  ASSERT_GT(child.pid(), 0);
  ASSERT_TRUE((*engine)->track(static_cast<uint32_t>(child.pid())).ok());
  ASSERT_TRUE(child.release());
  ASSERT_EQ(child.wait(), 0);  // no reader ran: the workload still finished

  while ((*engine)->poll(0) > 0) {}
  Counters c = (*engine)->counters();
  EXPECT_GT(c[GPUOBS_CNT_DROP_LAUNCH], 0u);
  EXPECT_EQ(c[GPUOBS_CNT_SUBMIT_LAUNCH] + c[GPUOBS_CNT_DROP_LAUNCH], static_cast<uint64_t>(launches));
  EXPECT_EQ(consumed, c[GPUOBS_CNT_SUBMIT_LAUNCH]);
  // One page holds at most 4096 / (96 + 8) launch records.
  EXPECT_LE(consumed, 4096u / 104u);
}
