// The GPU time file (userspace/gpu_time/activity_format.h) read back by
// activity_file.cpp: every field, the clock conversion, names in chunks, and
// damaged or foreign files (bad magic, newer version, cut short, garbage).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <random>

#include "gpu_time/activity_file.h"
#include "gt_builder.h"

namespace gpuobs::gpu_time {
namespace {

using testing::FileBuilder;
using testing::gt_record;

Result<ActivityFile> parse(const FileBuilder& b) { return parse_activity_file(b.bytes, "test.gt"); }

TEST(GpuTimeFormat, LayoutIsPinned) {
  EXPECT_EQ(offsetof(GtFileHeader, magic), 0u);
  EXPECT_EQ(offsetof(GtFileHeader, version), 8u);
  EXPECT_EQ(offsetof(GtFileHeader, slot_size), 12u);
  EXPECT_EQ(offsetof(GtFileHeader, pid), 16u);
  EXPECT_EQ(offsetof(GtFileHeader, clock_kind), 20u);
  EXPECT_EQ(offsetof(GtFileHeader, tid_kind), 24u);
  EXPECT_EQ(offsetof(GtFileHeader, cupti_version), 28u);
  EXPECT_EQ(offsetof(GtFileHeader, clock_mono_ns), 32u);
  EXPECT_EQ(offsetof(GtFileHeader, clock_cupti_ns), 40u);
  EXPECT_EQ(offsetof(GtFileHeader, realtime_ns), 48u);
  EXPECT_EQ(offsetof(GtFileHeader, flags), 56u);
  EXPECT_EQ(offsetof(GtFileHeader, pad0), 60u);
  EXPECT_EQ(offsetof(GtFileHeader, reserved), 64u);
  EXPECT_EQ(offsetof(GtRecord, type), 0u);
  EXPECT_EQ(offsetof(GtRecord, pid), 4u);
  EXPECT_EQ(offsetof(GtRecord, start_ns), 8u);
  EXPECT_EQ(offsetof(GtRecord, end_ns), 16u);
  EXPECT_EQ(offsetof(GtRecord, bytes), 24u);
  EXPECT_EQ(offsetof(GtRecord, name_hash), 32u);
  EXPECT_EQ(offsetof(GtRecord, device_id), 40u);
  EXPECT_EQ(offsetof(GtRecord, context_id), 44u);
  EXPECT_EQ(offsetof(GtRecord, stream_id), 48u);
  EXPECT_EQ(offsetof(GtRecord, correlation_id), 52u);
  EXPECT_EQ(offsetof(GtRecord, tid), 56u);
  EXPECT_EQ(offsetof(GtRecord, cbid), 60u);
  EXPECT_EQ(offsetof(GtRecord, grid_x), 64u);
  EXPECT_EQ(offsetof(GtRecord, grid_y), 68u);
  EXPECT_EQ(offsetof(GtRecord, grid_z), 72u);
  EXPECT_EQ(offsetof(GtRecord, block_x), 76u);
  EXPECT_EQ(offsetof(GtRecord, block_y), 80u);
  EXPECT_EQ(offsetof(GtRecord, block_z), 84u);
  EXPECT_EQ(offsetof(GtRecord, copy_kind), 88u);
  EXPECT_EQ(offsetof(GtRecord, src_kind), 89u);
  EXPECT_EQ(offsetof(GtRecord, dst_kind), 90u);
  EXPECT_EQ(offsetof(GtRecord, pad0), 91u);
  EXPECT_EQ(offsetof(GtRecord, result), 92u);
  EXPECT_EQ(offsetof(GtNameChunk, name_hash), 8u);
  EXPECT_EQ(offsetof(GtNameChunk, name_len), 16u);
  EXPECT_EQ(offsetof(GtNameChunk, offset), 20u);
  EXPECT_EQ(offsetof(GtNameChunk, text), 24u);
  EXPECT_EQ(offsetof(GtStats, cupti_dropped), 8u);
  EXPECT_EQ(offsetof(GtStats, records_written), 16u);
  EXPECT_EQ(offsetof(GtStats, write_errors), 24u);
  EXPECT_EQ(offsetof(GtStats, buffer_failures), 32u);
  EXPECT_EQ(offsetof(GtStats, unknown_kinds), 40u);
  EXPECT_EQ(offsetof(GtStats, final), 48u);
  EXPECT_EQ(offsetof(GtStats, reserved), 56u);
  // The magic is the bytes "GPUOBSGT" at the start of the file.
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(&kGtMagic), 8), "GPUOBSGT");
}

TEST(GpuTimeFile, EveryFieldOfEveryKind) {
  const std::string name(150, 'k');  // three chunks: 72 + 72 + 6
  GtRecord k = gt_record(kGtKernel, 42, 11, 1'000, 1'500);
  k.device_id = 1, k.context_id = 2, k.stream_id = 13;
  k.grid_x = 4, k.grid_y = 5, k.grid_z = 6, k.block_x = 128, k.block_y = 2, k.block_z = 1;
  k.name_hash = gt_name_hash(name.data(), name.size());
  GtRecord m = gt_record(kGtMemcpy, 42, 12, 2'000, 2'900);
  m.bytes = 1 << 20, m.copy_kind = 1, m.src_kind = 2, m.dst_kind = 3, m.stream_id = 14, m.device_id = 1;
  GtRecord s = gt_record(kGtMemset, 42, 13, 3'000, 3'100);
  s.bytes = 4096, s.stream_id = 14;
  GtRecord d = gt_record(kGtDriverApi, 42, 11, 900, 950);
  d.tid = 43, d.cbid = 307, d.result = 0;
  FileBuilder b;
  b.header(42).name(42, name).record(k).record(m).record(s).record(d).stats(42, 3, 4, true);
  auto f = parse(b);
  ASSERT_TRUE(f.ok()) << f.error().message;
  ASSERT_EQ(f->processes.size(), 1u);
  const ActivityProcess& p = f->processes[0];
  EXPECT_EQ(p.pid, 42u);
  EXPECT_EQ(p.clock_kind, kGtClockMonotonic);
  EXPECT_EQ(p.tid_kind, kGtTidSystem);
  EXPECT_EQ(p.cupti_version, 130001u);
  EXPECT_EQ(p.to_monotonic_ns, 0);
  EXPECT_TRUE(p.stats_seen && p.stats_final);
  EXPECT_EQ(p.cupti_dropped, 3u);
  EXPECT_EQ(p.records_written, 4u);
  ASSERT_EQ(f->activities.size(), 4u);
  const Activity& ka = f->activities[0];
  EXPECT_EQ(ka.kind, ActivityKind::kernel);
  EXPECT_EQ(ka.pid, 42u);
  EXPECT_EQ(ka.start_ns, 1'000u);
  EXPECT_EQ(ka.end_ns, 1'500u);
  EXPECT_EQ(ka.device_id, 1u);
  EXPECT_EQ(ka.context_id, 2u);
  EXPECT_EQ(ka.stream_id, 13u);
  EXPECT_EQ(ka.correlation_id, 11u);
  EXPECT_EQ(ka.grid[0], 4u);
  EXPECT_EQ(ka.grid[1], 5u);
  EXPECT_EQ(ka.grid[2], 6u);
  EXPECT_EQ(ka.block[0], 128u);
  EXPECT_EQ(ka.block[1], 2u);
  EXPECT_EQ(ka.block[2], 1u);
  ASSERT_NE(f->name_of(ka.name_hash), nullptr);
  EXPECT_EQ(*f->name_of(ka.name_hash), name);
  const Activity& ma = f->activities[1];
  EXPECT_EQ(ma.kind, ActivityKind::memcpy);
  EXPECT_EQ(ma.bytes, 1u << 20);
  EXPECT_EQ(ma.copy_kind, 1);
  EXPECT_EQ(ma.src_kind, 2);
  EXPECT_EQ(ma.dst_kind, 3);
  EXPECT_EQ(ma.stream_id, 14u);
  EXPECT_EQ(ma.correlation_id, 12u);
  const Activity& sa = f->activities[2];
  EXPECT_EQ(sa.kind, ActivityKind::memset);
  EXPECT_EQ(sa.bytes, 4096u);
  EXPECT_EQ(sa.start_ns, 3'000u);
  EXPECT_EQ(sa.end_ns, 3'100u);
  const Activity& da = f->activities[3];
  EXPECT_EQ(da.kind, ActivityKind::driver_api);
  EXPECT_EQ(da.tid, 43u);
  EXPECT_EQ(da.cbid, 307u);
  EXPECT_EQ(da.correlation_id, 11u);
  EXPECT_EQ(da.start_ns, 900u);
  const ReadCounts& c = f->counts;
  EXPECT_EQ(c.slots, 9u);  // header, 3 name chunks, 4 records, stats
  EXPECT_EQ(c.headers, 1u);
  EXPECT_EQ(c.activities, 4u);
  EXPECT_EQ(c.truncated_tail_bytes + c.unknown_type + c.without_header + c.bad_times + c.bad_names, 0u);
}

TEST(GpuTimeFile, CuptiClockIsMovedOntoMonotonic) {
  // At init CLOCK_MONOTONIC read 5,000 when CUPTI's clock read 1e12.
  FileBuilder b;
  b.header(7, kGtClockCuptiPair, 5'000, 1'000'000'000'000)
      .record(gt_record(kGtKernel, 7, 1, 1'000'000'000'100, 1'000'000'000'400))
      .record(gt_record(kGtKernel, 7, 2, 100, 200));  // before the clock's zero: impossible
  auto f = parse(b);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->processes[0].to_monotonic_ns, 5'000 - 1'000'000'000'000);
  ASSERT_EQ(f->activities.size(), 1u);
  EXPECT_EQ(f->activities[0].start_ns, 5'100u);
  EXPECT_EQ(f->activities[0].end_ns, 5'400u);
  EXPECT_EQ(f->counts.bad_times, 1u);
}

TEST(GpuTimeFile, PthreadIdsAreNotKernelTids) {
  GtRecord d = gt_record(kGtDriverApi, 9, 1, 10, 20);
  d.tid = 0x7f001234;
  FileBuilder b;
  b.header(9, kGtClockMonotonic, 0, 0, kGtFormatVersion, kGtTidPthread).record(d);
  auto f = parse(b);
  ASSERT_TRUE(f.ok());
  ASSERT_EQ(f->activities.size(), 1u);
  EXPECT_EQ(f->activities[0].tid, 0u);
}

// A header whose clock pair is far apart (a hostile file): the times it
// would convert are refused and counted, never overflowed (fuzz_activity_file
// found the signed overflow; its input is a seed).
TEST(GpuTimeFile, AHostileClockPairIsRefusedNotOverflowed) {
  FileBuilder b;
  b.header(5, kGtClockCuptiPair, 0x7fffffffffffffffull, 1)
      .record(gt_record(kGtKernel, 5, 1, 1ull << 62, (1ull << 62) + 10));
  b.header(6, kGtClockCuptiPair, 1, 0xffffffffffffffffull).record(gt_record(kGtKernel, 6, 1, 10, 20));
  auto f = parse(b);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_TRUE(f->activities.empty());
  EXPECT_EQ(f->counts.bad_times, 2u);
}

// Version 1 (no runtime records) is still read.
TEST(GpuTimeFile, AVersion1FileIsRead) {
  FileBuilder b;
  b.header(3, kGtClockMonotonic, 0, 0, 1).record(gt_record(kGtKernel, 3, 1, 10, 20));
  auto f = parse(b);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->activities.size(), 1u);
}

// A runtime API record (cudaLaunchKernel: type 5) reads back as one, with its thread.
TEST(GpuTimeFile, RuntimeApiRecordsKeepTheirKindAndThread) {
  GtRecord r = gt_record(kGtRuntimeApi, 9, 5, 100, 180);
  r.tid = 77, r.cbid = 211;
  FileBuilder b;
  b.header(9).record(r);
  auto f = parse(b);
  ASSERT_TRUE(f.ok());
  ASSERT_EQ(f->activities.size(), 1u);
  EXPECT_EQ(f->activities[0].kind, ActivityKind::runtime_api);
  EXPECT_EQ(f->activities[0].tid, 77u);
  EXPECT_EQ(f->activities[0].cbid, 211u);
  EXPECT_EQ(f->activities[0].start_ns, 100u);
  EXPECT_EQ(f->counts.unknown_type, 0u);
}

TEST(GpuTimeFile, BadMagicIsAnError) {
  FileBuilder b;
  b.header(1).record(gt_record(kGtKernel, 1, 1, 10, 20));
  b.bytes[0] = 'X';
  auto f = parse(b);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().message, "test.gt: not a gpuobs GPU time file (bad magic)");
}

TEST(GpuTimeFile, NewerVersionIsAnErrorWithAHint) {
  FileBuilder b;
  b.header(1, kGtClockMonotonic, 0, 0, kGtFormatVersion + 1).record(gt_record(kGtKernel, 1, 1, 10, 20));
  auto f = parse(b);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().message,
            "test.gt: header at byte 0 (pid 1): format version 3 is newer than this gpuobs reads (2)");
  EXPECT_EQ(f.error().hint, "read it with the gpuobs that recorded it, or a newer one");
}

TEST(GpuTimeFile, NewerVersionOfASecondProcessIsAnError) {
  FileBuilder b;
  b.header(1).record(gt_record(kGtKernel, 1, 1, 10, 20)).header(2, kGtClockMonotonic, 0, 0, 9);
  auto f = parse(b);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().message,
            "test.gt: header at byte 192 (pid 2): format version 9 is newer than this gpuobs reads (2)");
}

TEST(GpuTimeFile, EmptyAndShortFilesAreErrors) {
  auto empty = parse_activity_file({}, "e.gt");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().message, "e.gt: empty: no header");
  FileBuilder b;
  b.header(1);
  b.bytes.resize(50);
  auto cut = parse(b);
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.error().message, "test.gt: 50 bytes: shorter than its header (96)");
  auto missing = read_activity_file("/nonexistent/gpu-time.gt");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, "cannot open /nonexistent/gpu-time.gt: No such file or directory");
}

TEST(GpuTimeFile, TruncatedTailIsCountedAndTheRestRead) {
  FileBuilder b;
  b.header(1).record(gt_record(kGtKernel, 1, 1, 10, 20)).record(gt_record(kGtKernel, 1, 2, 30, 40));
  b.bytes.resize(b.bytes.size() - 56);  // the last record cut after 40 bytes
  auto f = parse(b);
  ASSERT_TRUE(f.ok()) << f.error().message;
  ASSERT_EQ(f->activities.size(), 1u);
  EXPECT_EQ(f->activities[0].correlation_id, 1u);
  EXPECT_EQ(f->counts.truncated_tail_bytes, 40u);
  EXPECT_EQ(f->counts.slots, 2u);
}

TEST(GpuTimeFile, DamagedSlotsAreCounted) {
  GtRecord unknown = gt_record(99, 1, 1, 10, 20);
  FileBuilder b;
  b.header(1)
      .record(unknown)
      .record(gt_record(kGtKernel, 77, 1, 10, 20))  // pid 77 wrote no header
      .record(gt_record(kGtMemcpy, 1, 2, 50, 40))   // ends before it starts
      .record(gt_record(kGtMemset, 1, 3, 0, 40))    // no start
      .record(gt_record(kGtKernel, 1, 4, 60, 70));
  auto f = parse(b);
  ASSERT_TRUE(f.ok());
  ASSERT_EQ(f->activities.size(), 1u);
  EXPECT_EQ(f->activities[0].correlation_id, 4u);
  EXPECT_EQ(f->counts.unknown_type, 1u);
  EXPECT_EQ(f->counts.without_header, 1u);
  EXPECT_EQ(f->counts.bad_times, 2u);
}

TEST(GpuTimeFile, BrokenNamesAreCountedNotGuessed) {
  const std::string whole(100, 'a'), partial(200, 'b'), liar(10, 'c');
  uint64_t partial_hash = gt_name_hash(partial.data(), partial.size());
  FileBuilder b;
  b.header(1).name(1, whole);
  b.chunk(1, partial_hash, partial, 0).chunk(1, partial_hash, partial, 144);  // chunk at 72 missing
  b.chunk(1, 12345, liar, 0);                                                 // the text does not hash to its key
  b.chunk(1, 999, std::string(10, 'd'), 0);
  GtNameChunk bad{};
  bad.type = kGtName, bad.pid = 1, bad.name_hash = 5, bad.name_len = 10, bad.offset = 72;  // past its end
  b.slot(bad);
  b.name(1, whole);  // written again (the writer's table was full): same text, fine
  auto f = parse(b);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->names.size(), 1u);
  ASSERT_NE(f->name_of(gt_name_hash(whole.data(), whole.size())), nullptr);
  EXPECT_EQ(f->name_of(partial_hash), nullptr);
  EXPECT_EQ(f->counts.bad_names, 4u);  // partial, liar, the 'd' chunk (not its hash), the chunk past its end
}

TEST(GpuTimeFile, TwoProcessesAppendingToOneFile) {
  FileBuilder b;
  b.header(1).record(gt_record(kGtKernel, 1, 1, 10, 20));
  b.header(2, kGtClockCuptiPair, 1'000, 2'000).record(gt_record(kGtKernel, 2, 1, 2'500, 2'600));
  b.record(gt_record(kGtKernel, 1, 2, 30, 40));
  auto f = parse(b);
  ASSERT_TRUE(f.ok());
  ASSERT_EQ(f->processes.size(), 2u);
  ASSERT_EQ(f->activities.size(), 3u);
  EXPECT_EQ(f->activities[1].pid, 2u);
  EXPECT_EQ(f->activities[1].start_ns, 1'500u);
  EXPECT_EQ(f->activities[2].pid, 1u);
  EXPECT_EQ(f->activities[2].start_ns, 30u);
}

TEST(GpuTimeFile, GarbageAfterAHeaderNeverCrashes) {
  std::mt19937_64 rng(19);
  for (int round = 0; round < 200; ++round) {
    FileBuilder b;
    b.header(1);
    std::vector<uint8_t> junk(rng() % 4000);
    for (auto& x : junk) x = static_cast<uint8_t>(rng() % 7 == 0 ? rng() % 20 : rng());
    // Some slots look like ours (a known type and pid 1) with random fields.
    for (size_t off = 0; off + 8 <= junk.size(); off += kGtSlotSize)
      if (rng() % 2) {
        uint32_t type = static_cast<uint32_t>(rng() % 18), pid = 1;
        std::memcpy(&junk[off], &type, 4);
        std::memcpy(&junk[off + 4], &pid, 4);
      }
    b.raw(junk);
    auto f = parse(b);
    ASSERT_TRUE(f.ok());
    const ReadCounts& c = f->counts;
    EXPECT_EQ(c.truncated_tail_bytes, junk.size() % kGtSlotSize);
    EXPECT_EQ(c.slots, 1 + junk.size() / kGtSlotSize);
  }
}

TEST(GpuTimeFile, ReadsAFile) {
  FileBuilder b;
  b.header(3).record(gt_record(kGtKernel, 3, 1, 10, 20));
  char path[] = "/tmp/gpuobs-gt-XXXXXX";
  int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, b.bytes.data(), b.bytes.size()), static_cast<ssize_t>(b.bytes.size()));
  ::close(fd);
  auto f = read_activity_file(path);
  ::unlink(path);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->activities.size(), 1u);
}

}  // namespace
}  // namespace gpuobs::gpu_time
