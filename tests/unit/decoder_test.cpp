#include "decode/decoder.h"

#include "catalogue/api_spec.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

using namespace gpuobs;

namespace {

gpuobs_launch sample_launch() {
  gpuobs_launch l{};
  l.hdr = {GPUOBS_EV_LAUNCH, sizeof(gpuobs_launch), 123456789, 42, 43};
  l.function = 0xdeadbeef;
  l.grid_x = 7;
  l.block_z = 0x80000000u;
  l.stream = 2;
  l.api = GPUOBS_API_CU_LAUNCH_KERNEL_PTSZ;
  return l;
}

}  // namespace

TEST(Decoder, DecodesALaunchFieldForField) {
  Decoder d;
  auto l = sample_launch();
  Event ev = d.decode(&l, sizeof l);
  auto* got = std::get_if<gpuobs_launch>(&ev);
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(got->hdr.tgid, 42u);
  EXPECT_EQ(got->hdr.tid, 43u);
  EXPECT_EQ(got->hdr.ts_ns, 123456789u);
  EXPECT_EQ(got->function, 0xdeadbeefu);
  EXPECT_EQ(got->grid_x, 7u);
  EXPECT_EQ(got->block_z, 0x80000000u);
  EXPECT_EQ(got->stream, 2u);
  EXPECT_EQ(api_name(got->api), "cuLaunchKernel_ptsz");
  EXPECT_EQ(d.stats().decoded, 1u);
}

TEST(Decoder, AcceptsRingPaddingAfterTheRecord) {
  Decoder d;
  std::vector<unsigned char> buf(sizeof(gpuobs_launch) + 8, 0xff);
  auto l = sample_launch();
  std::memcpy(buf.data(), &l, sizeof l);
  EXPECT_TRUE(std::holds_alternative<gpuobs_launch>(d.decode(buf.data(), buf.size())));
}

TEST(Decoder, RejectsAndCountsShortRecords) {
  Decoder d;
  auto l = sample_launch();
  EXPECT_TRUE(std::holds_alternative<std::monostate>(d.decode(&l, 10)));  // shorter than a header
  l.hdr.size = 40;                                                         // header claims a short launch
  EXPECT_TRUE(std::holds_alternative<std::monostate>(d.decode(&l, 40)));
  EXPECT_EQ(d.stats().short_records, 2u);
  EXPECT_EQ(d.stats().decoded, 0u);
}

TEST(Decoder, RejectsAndCountsUnknownTypesAndSizeMismatch) {
  Decoder d;
  auto l = sample_launch();
  l.hdr.type = 999;
  EXPECT_TRUE(std::holds_alternative<std::monostate>(d.decode(&l, sizeof l)));
  EXPECT_EQ(d.stats().unknown_types, 1u);
  l = sample_launch();
  l.hdr.size = sizeof l + 64;  // claims more than the ring delivered
  EXPECT_TRUE(std::holds_alternative<std::monostate>(d.decode(&l, sizeof l)));
  EXPECT_EQ(d.stats().size_mismatch, 1u);
}

TEST(Decoder, ProcStringsAreBoundedEvenWithoutTerminator) {
  Decoder d;
  gpuobs_proc p{};
  p.hdr = {GPUOBS_EV_PROC_EXEC, sizeof p, 1, 10, 10};
  std::memset(p.comm, 'a', sizeof p.comm);  // no NUL at all
  std::memcpy(p.filename, "/usr/bin/python3", 17);
  p.ppid = 9;
  Event ev = d.decode(&p, sizeof p);
  auto* got = std::get_if<ProcEvent>(&ev);
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(got->comm, std::string(16, 'a'));
  EXPECT_EQ(got->filename, "/usr/bin/python3");
  EXPECT_EQ(got->ppid, 9u);
  EXPECT_EQ(got->type, static_cast<uint32_t>(GPUOBS_EV_PROC_EXEC));
}
