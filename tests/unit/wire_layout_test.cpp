// The wire format is an ABI between BPF and C++: every offset is pinned here.
#include <gtest/gtest.h>

#include <cstddef>

#include "events.h"

TEST(WireLayout, Header) {
  EXPECT_EQ(sizeof(gpuobs_hdr), 24u);
  EXPECT_EQ(offsetof(gpuobs_hdr, type), 0u);
  EXPECT_EQ(offsetof(gpuobs_hdr, size), 4u);
  EXPECT_EQ(offsetof(gpuobs_hdr, ts_ns), 8u);
  EXPECT_EQ(offsetof(gpuobs_hdr, tgid), 16u);
  EXPECT_EQ(offsetof(gpuobs_hdr, tid), 20u);
}

TEST(WireLayout, Launch) {
  EXPECT_EQ(sizeof(gpuobs_launch), 96u);
  EXPECT_EQ(offsetof(gpuobs_launch, hdr), 0u);
  EXPECT_EQ(offsetof(gpuobs_launch, function), 24u);
  EXPECT_EQ(offsetof(gpuobs_launch, stream), 32u);
  EXPECT_EQ(offsetof(gpuobs_launch, kernel_params), 40u);
  EXPECT_EQ(offsetof(gpuobs_launch, extra), 48u);
  EXPECT_EQ(offsetof(gpuobs_launch, grid_x), 56u);
  EXPECT_EQ(offsetof(gpuobs_launch, grid_y), 60u);
  EXPECT_EQ(offsetof(gpuobs_launch, grid_z), 64u);
  EXPECT_EQ(offsetof(gpuobs_launch, block_x), 68u);
  EXPECT_EQ(offsetof(gpuobs_launch, block_y), 72u);
  EXPECT_EQ(offsetof(gpuobs_launch, block_z), 76u);
  EXPECT_EQ(offsetof(gpuobs_launch, shared_mem_bytes), 80u);
  EXPECT_EQ(offsetof(gpuobs_launch, api), 84u);
  EXPECT_EQ(offsetof(gpuobs_launch, flags), 88u);
  EXPECT_EQ(offsetof(gpuobs_launch, pad0), 92u);
}

TEST(WireLayout, Ioctl) {
  EXPECT_EQ(sizeof(gpuobs_ioctl), 592u);
  EXPECT_EQ(offsetof(gpuobs_ioctl, latency_ns), 24u);
  EXPECT_EQ(offsetof(gpuobs_ioctl, arg), 32u);
  EXPECT_EQ(offsetof(gpuobs_ioctl, ret), 40u);
  EXPECT_EQ(offsetof(gpuobs_ioctl, cmd), 48u);
  EXPECT_EQ(offsetof(gpuobs_ioctl, dev_major), 52u);
  EXPECT_EQ(offsetof(gpuobs_ioctl, dev_minor), 56u);
  EXPECT_EQ(offsetof(gpuobs_ioctl, fd), 60u);
  EXPECT_EQ(offsetof(gpuobs_ioctl, driver), 64u);
  EXPECT_EQ(offsetof(gpuobs_ioctl, head_len), 68u);
  EXPECT_EQ(offsetof(gpuobs_ioctl, aux_len), 70u);
  EXPECT_EQ(offsetof(gpuobs_ioctl, flags), 72u);
  EXPECT_EQ(offsetof(gpuobs_ioctl, head), 80u);
  EXPECT_EQ(offsetof(gpuobs_ioctl, aux), 336u);
  EXPECT_EQ(sizeof(gpuobs_ioctl_rule_key), 8u);
  EXPECT_EQ(sizeof(gpuobs_ioctl_rule), 8u);
  EXPECT_EQ(offsetof(gpuobs_ioctl_rule, aux_mode), 6u);
  EXPECT_EQ(offsetof(gpuobs_ioctl_rule, aux_len_field), 7u);
}

TEST(WireLayout, Proc) {
  EXPECT_EQ(sizeof(gpuobs_proc), 312u);
  EXPECT_EQ(offsetof(gpuobs_proc, start_boottime_ns), 24u);
  EXPECT_EQ(offsetof(gpuobs_proc, ppid), 32u);
  EXPECT_EQ(offsetof(gpuobs_proc, exit_code), 36u);
  EXPECT_EQ(offsetof(gpuobs_proc, comm), 40u);
  EXPECT_EQ(offsetof(gpuobs_proc, filename), 56u);
}

TEST(WireLayout, EveryRecordIsEightByteAligned) {
  // The BPF ring buffer rounds to 8 bytes; a record that is not a multiple
  // would leave an unnamed tail.
  EXPECT_EQ(sizeof(gpuobs_launch) % 8, 0u);
  EXPECT_EQ(sizeof(gpuobs_ioctl) % 8, 0u);
  EXPECT_EQ(sizeof(gpuobs_proc) % 8, 0u);
}

TEST(WireLayout, StackTrailer) {
  // The last 16 bytes of every event record; ips[cap] end where it starts.
  EXPECT_EQ(sizeof(gpuobs_stack_trailer), 16u);
  EXPECT_EQ(offsetof(gpuobs_stack_trailer, sp_word), 0u);
  EXPECT_EQ(offsetof(gpuobs_stack_trailer, nr), 8u);
  EXPECT_EQ(offsetof(gpuobs_stack_trailer, cap), 10u);
  EXPECT_EQ(offsetof(gpuobs_stack_trailer, flags), 12u);
  EXPECT_EQ(GPUOBS_ABI_VERSION, 5);
}
