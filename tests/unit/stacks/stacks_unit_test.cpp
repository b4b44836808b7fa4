// The user-space half of call stacks without BPF: /proc/PID/maps parsing, the
// stack trailer of a record, and the resolver's rules (which frame 0, the
// word at [sp], where a broken walk ends, deduplication across processes)
// against a fake /proc whose mappings are known.
#include <gtest/gtest.h>
#include <sys/sysmacros.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "decode/decoder.h"
#include "loader/elf_symbols.h"
#include "stacks/proc_maps.h"
#include "stacks/stack_resolver.h"
#include "stacks/unwind_table.h"
#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::testing;

TEST(ProcMaps, ParsesFileAnonymousVdsoAndDeletedLines) {
  auto f = parse_maps_line(
      "7f1c2a400000-7f1c2a5b5000 r-xp 00028000 fd:01 332835                     /usr/lib/x86_64-linux-gnu/libc.so.6");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->start, 0x7f1c2a400000u);
  EXPECT_EQ(f->end, 0x7f1c2a5b5000u);
  EXPECT_EQ(f->offset, 0x28000u);
  EXPECT_TRUE(f->exec);
  EXPECT_EQ(f->dev, makedev(0xfd, 1));
  EXPECT_EQ(f->inode, 332835u);
  EXPECT_EQ(f->path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
  auto anon = parse_maps_line("7ffd1c5e1000-7ffd1c602000 rw-p 00000000 00:00 0                          [stack]");
  ASSERT_TRUE(anon);
  EXPECT_FALSE(anon->exec);
  EXPECT_EQ(anon->inode, 0u);
  EXPECT_EQ(anon->dev, 0u);
  auto del = parse_maps_line("55d0a0000000-55d0a0001000 r-xp 00001000 08:02 77 /tmp/a b (deleted)");
  ASSERT_TRUE(del);
  EXPECT_TRUE(del->deleted);
  EXPECT_EQ(del->path, "/tmp/a b");
  EXPECT_FALSE(parse_maps_line("garbage"));
  EXPECT_FALSE(parse_maps_line("1000-2000 r-xp zz 08:02 77 /x"));
}

namespace {

// A launch record with a stack trailer of capacity cap.
std::vector<char> launch_record(uint16_t cap, std::vector<uint64_t> ips, uint32_t flags, uint64_t sp_word) {
  size_t size = sizeof(gpuobs_launch) + cap * 8 + sizeof(gpuobs_stack_trailer);
  std::vector<char> rec(size, 0);
  gpuobs_launch l{};
  l.hdr = {GPUOBS_EV_LAUNCH, static_cast<uint32_t>(size), 1, 7, 7};
  std::memcpy(rec.data(), &l, sizeof l);
  std::memcpy(rec.data() + sizeof l, ips.data(), ips.size() * 8);
  gpuobs_stack_trailer t{sp_word, static_cast<uint16_t>(ips.size()), cap, flags};
  std::memcpy(rec.data() + size - sizeof t, &t, sizeof t);
  return rec;
}

}  // namespace

TEST(StackTrailer, DecodedWithTheRecord) {
  Decoder d;
  RawStack raw;
  auto rec = launch_record(4, {0x1111, 0x2222}, GPUOBS_STACK_F_AT_ENTRY, 0x3333);
  Event ev = d.decode(rec.data(), rec.size(), &raw);
  ASSERT_TRUE(std::holds_alternative<gpuobs_launch>(ev));
  EXPECT_TRUE(raw.present);
  EXPECT_EQ(raw.ips, (std::vector<uint64_t>{0x1111, 0x2222}));
  EXPECT_EQ(raw.flags, GPUOBS_STACK_F_AT_ENTRY);
  EXPECT_EQ(raw.sp_word, 0x3333u);
  EXPECT_EQ(d.stats().bad_stacks, 0u);

  // Stacks off: an empty trailer, no stack.
  auto off = launch_record(0, {}, GPUOBS_STACK_F_AT_ENTRY, 0);
  d.decode(off.data(), off.size(), &raw);
  EXPECT_FALSE(raw.present);

  // More frames than capacity: the record stays, its stack does not.
  auto bad = launch_record(1, {1}, 0, 0);
  reinterpret_cast<gpuobs_stack_trailer*>(bad.data() + bad.size() - sizeof(gpuobs_stack_trailer))->nr = 5;
  ev = d.decode(bad.data(), bad.size(), &raw);
  EXPECT_TRUE(std::holds_alternative<gpuobs_launch>(ev));
  EXPECT_FALSE(raw.present);
  EXPECT_EQ(d.stats().bad_stacks, 1u);
}

namespace {

// A fake /proc: PID/maps with two code mappings of one library file (dev
// 8:1, inode 500) and the executable (inode 600), at per-pid bases.
struct FakeProc {
  TempDir dir;
  void add(uint32_t pid, uint64_t lib_base, uint64_t exe_base) {
    std::filesystem::create_directories(dir.file(std::to_string(pid)));
    std::ofstream m(dir.file(std::to_string(pid) + "/maps"));
    char line[256];
    std::snprintf(line, sizeof line, "%lx-%lx r-xp 00001000 08:01 600 /bin/app\n", (unsigned long)exe_base,
                  (unsigned long)(exe_base + 0x1000));
    m << line;
    std::snprintf(line, sizeof line, "%lx-%lx r-xp 00010000 08:01 500 /lib/libx.so\n", (unsigned long)lib_base,
                  (unsigned long)(lib_base + 0x10000));
    m << line;
  }
};

struct Recorded {
  std::vector<ModuleDef> modules;
  std::vector<FrameDef> frames;
  std::vector<StackDef> stacks;
  StackResolver::Sink sink() {
    return {[this](const ModuleDef& m) { modules.push_back(m); }, [this](const FrameDef& f) { frames.push_back(f); },
            [this](const StackDef& s) { stacks.push_back(s); }};
  }
  // (module path, offset) of each frame of a stack
  std::vector<std::pair<std::string, uint64_t>> frames_of(int64_t id) const {
    std::vector<std::pair<std::string, uint64_t>> out;
    for (int64_t f : stacks.at(id - 1).frames) {
      const FrameDef& fd = frames.at(f - 1);
      out.emplace_back(modules.at(fd.module_id - 1).path, fd.offset);
    }
    return out;
  }
};

RawStack raw(std::vector<uint64_t> ips, uint32_t flags, uint64_t sp_word = 0) {
  RawStack r;
  r.ips = std::move(ips);
  r.flags = flags;
  r.sp_word = sp_word;
  r.present = true;
  return r;
}

using Frames = std::vector<std::pair<std::string, uint64_t>>;

}  // namespace

TEST(StackResolver, AppliesTheFrameRulesOfEachProbeSite) {
  FakeProc proc;
  proc.add(10, 0x7f0000000000, 0x400000);
  Recorded rec;
  StackResolver r(rec.sink(), proc.dir.path());
  const uint64_t lib = 0x7f0000000000, exe = 0x400000;
  // Return probe: frames as walked. File offset = address - start + 0x1000/0x10000.
  int64_t a = r.resolve(10, raw({lib + 0x20, exe + 0x30}, GPUOBS_STACK_F_AT_RETURN), 1);
  EXPECT_EQ(rec.frames_of(a), (Frames{{"/lib/libx.so", 0x10020}, {"/bin/app", 0x1030}}));
  // Entry, kernel added the caller (sp_word == ips[1]): frame 0 dropped.
  int64_t b = r.resolve(10, raw({lib + 0x5, lib + 0x20, exe + 0x30}, GPUOBS_STACK_F_AT_ENTRY, lib + 0x20), 2);
  EXPECT_EQ(b, a);
  // Entry, the walk skipped the caller: it comes from [sp].
  int64_t c = r.resolve(10, raw({lib + 0x5, exe + 0x30}, GPUOBS_STACK_F_AT_ENTRY, lib + 0x20), 3);
  EXPECT_EQ(c, a);
  // Syscall: the wrapper stays as frame 0; [sp] is data here, so it is dropped (counted).
  int64_t d = r.resolve(10, raw({lib + 0x40, exe + 0x30}, GPUOBS_STACK_F_AT_SYSCALL, 0x58), 4);
  EXPECT_EQ(rec.frames_of(d), (Frames{{"/lib/libx.so", 0x10040}, {"/bin/app", 0x1030}}));
  EXPECT_EQ(r.stats().sp_frames_dropped, 1u);
  // A broken walk: the stack ends at the first address that is not code.
  int64_t e = r.resolve(10, raw({lib + 0x20, 0x1234, exe + 0x30}, GPUOBS_STACK_F_AT_RETURN), 5);
  EXPECT_EQ(rec.frames_of(e), (Frames{{"/lib/libx.so", 0x10020}}));
  EXPECT_EQ(r.stats().walks_broken, 1u);
  // Identical records are resolved once (cache) and counted each time.
  r.resolve(10, raw({lib + 0x40, exe + 0x30}, GPUOBS_STACK_F_AT_SYSCALL, 0x58), 6);
  EXPECT_EQ(r.stats().sp_frames_dropped, 2u);
  EXPECT_EQ(r.stats().with_stack, 6u);
  EXPECT_EQ(r.stats().stacks, 3u);
  // Stacks off: no id.
  EXPECT_EQ(r.resolve(10, RawStack{}, 7), 0);
}

TEST(StackResolver, SameCodeInTwoProcessesIsOneStack) {
  FakeProc proc;
  proc.add(10, 0x7f0000000000, 0x400000);
  proc.add(11, 0x7f5500000000, 0x500000);  // the same files, elsewhere (ASLR)
  Recorded rec;
  StackResolver r(rec.sink(), proc.dir.path());
  int64_t a = r.resolve(10, raw({0x7f0000000020, 0x400030}, GPUOBS_STACK_F_AT_RETURN), 1);
  int64_t b = r.resolve(11, raw({0x7f5500000020, 0x500030}, GPUOBS_STACK_F_AT_RETURN), 1);
  EXPECT_EQ(a, b);
  EXPECT_EQ(rec.stacks.size(), 1u);
  EXPECT_EQ(rec.modules.size(), 2u);  // one per (dev, inode), not per process
  // A process whose maps cannot be read (exited) gives an empty stack, counted.
  int64_t gone = r.resolve(99, raw({0x7f0000000020}, GPUOBS_STACK_F_AT_RETURN), 1);
  EXPECT_TRUE(rec.stacks.at(gone - 1).frames.empty());
  EXPECT_EQ(r.stats().maps_unreadable, 1u);
  EXPECT_EQ(r.stats().empty, 1u);
}

// A process maps its GPU library and exits before its records are resolved:
// the snapshot taken when it mapped the library still names every frame.
TEST(StackResolver, TheSnapshotTakenAtMappingNamesTheFramesOfAProcessGoneSince) {
  FakeProc proc;
  proc.add(10, 0x7f0000000000, 0x400000);
  Recorded rec;
  uint64_t now = 1'000'000'000;
  StackResolver r(rec.sink(), proc.dir.path(), [&] { return now; });
  r.on_mapped(10);
  std::filesystem::remove_all(proc.dir.file("10"));
  now += 1'000'000'000;
  int64_t a = r.resolve(10, raw({0x7f0000000020, 0x400030}, GPUOBS_STACK_F_AT_RETURN), now - 5);
  EXPECT_EQ(rec.frames_of(a), (Frames{{"/lib/libx.so", 0x10020}, {"/bin/app", 0x1030}}));
  EXPECT_EQ(r.stats().maps_reads, 1u);
  EXPECT_EQ(r.stats().maps_unreadable, 0u);
}

// The flaky depth-1 test of issue 17: a stack resolved from a snapshot older
// than the record, while a re-read was held back by the rate limit, was
// cached, and every later launch of that call site got its truncated stack.
// And a library mapped after the snapshot is found by the first record that
// needs it: a re-read that finds its address lets the next come at once.
TEST(StackResolver, AStackResolvedFromAStaleSnapshotIsNotCachedAndIsResolvedAgain) {
  FakeProc proc;
  proc.add(10, 0x7f0000000000, 0x400000);
  Recorded rec;
  uint64_t now = 1'000'000'000;
  StackResolver r(rec.sink(), proc.dir.path(), [&] { return now; });
  const uint64_t lib = 0x7f0000000000, exe = 0x400000, late = 0x7f1000000000, later = 0x7f2000000000;
  r.on_mapped(10);  // the library of interest; others come after
  auto map_more = [&](uint64_t at, const char* name) {
    std::ofstream m(proc.dir.file("10/maps"), std::ios::app);
    char line[256];
    std::snprintf(line, sizeof line, "%lx-%lx r-xp 00000000 08:01 %d %s\n", (unsigned long)at,
                  (unsigned long)(at + 0x1000), static_cast<int>(at >> 36), name);
    m << line;
  };
  map_more(late, "/lib/liblate.so");
  // Found by a re-read at once, though the snapshot is only 10 us old.
  now += 10'000;
  int64_t a = r.resolve(10, raw({late + 0x10, lib + 0x20, exe + 0x30}, GPUOBS_STACK_F_AT_RETURN), now - 1);
  EXPECT_EQ(rec.frames_of(a), (Frames{{"/lib/liblate.so", 0x10}, {"/lib/libx.so", 0x10020}, {"/bin/app", 0x1030}}));
  EXPECT_EQ(r.stats().maps_reads, 2u);
  // A data word at [sp] of a syscall record: the re-read finds nothing, and
  // the next one waits 1 ms.
  now += 10'000;
  r.resolve(10, raw({lib + 0x40, exe + 0x30}, GPUOBS_STACK_F_AT_SYSCALL, 0x58), now - 1);
  EXPECT_EQ(r.stats().maps_reads, 3u);
  map_more(later, "/lib/liblater.so");
  RawStack rs = raw({later + 0x10, lib + 0x20, exe + 0x30}, GPUOBS_STACK_F_AT_RETURN);
  now += 500'000;
  int64_t cut = r.resolve(10, rs, now - 1);
  EXPECT_TRUE(rec.stacks.at(cut - 1).frames.empty());
  EXPECT_EQ(r.stats().maps_reads, 3u);
  // Past the wait the same call site is resolved again (it was not cached).
  now += 1'000'000;
  int64_t full = r.resolve(10, rs, now - 1);
  EXPECT_EQ(rec.frames_of(full), (Frames{{"/lib/liblater.so", 0x10}, {"/lib/libx.so", 0x10020}, {"/bin/app", 0x1030}}));
  EXPECT_EQ(r.stats().maps_reads, 4u);
  // An address that is not code, in a record older than the snapshot: the
  // snapshot is the truth, no re-read, and the cut stack is cached.
  RawStack broken = raw({lib + 0x20, 0x1234, exe + 0x30}, GPUOBS_STACK_F_AT_RETURN);
  int64_t b1 = r.resolve(10, broken, now - 60'000'000);
  now += 100'000'000;
  int64_t b2 = r.resolve(10, broken, now - 1);
  EXPECT_EQ(b1, b2);
  EXPECT_EQ(rec.frames_of(b1), (Frames{{"/lib/libx.so", 0x10020}}));
  EXPECT_EQ(r.stats().maps_reads, 4u);
  EXPECT_EQ(r.stats().walks_broken, 2u);  // the stale cut and b1; b2 hit the cache
}

// Call sites whose walks break (not code, in records newer than the
// snapshot) are cached between re-reads: each re-read clears the cache, and
// uncached, every record of the other sites was walked again (the review of
// issue 17's resolver: half of 100,000 records, 26 reads in a second).
TEST(StackResolver, BrokenWalksOfSeveralCallSitesStayCachedBetweenReReads) {
  FakeProc proc;
  proc.add(10, 0x7f0000000000, 0x400000);
  Recorded rec;
  uint64_t now = 1'000'000'000;
  StackResolver r(rec.sink(), proc.dir.path(), [&] { return now; });
  const uint64_t lib = 0x7f0000000000, exe = 0x400000;
  r.on_mapped(10);
  RawStack a = raw({lib + 0x20, 0x1234, exe + 0x30}, GPUOBS_STACK_F_AT_RETURN);
  RawStack b = raw({lib + 0x40, 0x5678, exe + 0x30}, GPUOBS_STACK_F_AT_RETURN);
  for (int i = 0; i < 20000; ++i) {  // 200 ms, a record every 10 us, alternating sites
    now += 10'000;
    r.resolve(10, i % 2 ? a : b, now - 1);
  }
  EXPECT_EQ(r.stats().with_stack, 20000u);
  EXPECT_LE(r.stats().maps_reads, 12u);    // 1 ms doubling to 50 ms: about 9 in 200 ms
  EXPECT_LE(r.stats().walks_broken, 40u);  // a walk per site per re-read, not per record
}

// The BPF unwinder's tables, built from a real binary without frame pointers.
TEST(UnwindTable, RowsAreSortedAndSayWhereTheReturnAddressIsAtEveryFunctionEntry) {
  int fd = ::open(STACK_WORKLOAD_NOFP, O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  auto t = build_unwind_table(fd);
  ::close(fd);
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_GT(t->fdes, 5u);
  ASSERT_FALSE(t->rows.empty());
  for (size_t i = 1; i < t->rows.size(); ++i)
    ASSERT_LT(static_cast<uint32_t>(t->rows[i - 1]), static_cast<uint32_t>(t->rows[i])) << "row " << i;
  auto syms = read_function_symbols(STACK_WORKLOAD_NOFP);
  ASSERT_TRUE(syms.ok());
  // ELF address of a function from its file offset, through PT_LOAD.
  auto vaddr_of = [&](uint64_t off) -> uint64_t {
    for (auto& l : t->loads)
      if (off >= l.offset && off < l.offset + l.filesz) return off - l.offset + l.vaddr;
    return 0;
  };
  for (const char* fn : {"level_one", "level_two", "level_three", "main"}) {
    ASSERT_TRUE(syms->count(fn)) << fn;
    uint64_t entry = vaddr_of(syms->at(fn).file_offset);
    ASSERT_NE(entry, 0u);
    // The last row at or before the entry: CFA = rsp + 8 (only the return address is on the stack).
    auto it = std::upper_bound(t->rows.begin(), t->rows.end(), entry,
                               [](uint64_t v, uint64_t row) { return v < static_cast<uint32_t>(row); });
    ASSERT_NE(it, t->rows.begin()) << fn;
    uint64_t row = *(it - 1);
    EXPECT_EQ((row >> 48) & 0xff, static_cast<uint64_t>(GPUOBS_UNWIND_RSP)) << fn;
    EXPECT_EQ(static_cast<int16_t>(row >> 32), 8) << fn;
  }
  // Not an ELF file: a clear error, no table.
  int null_fd = ::open("/dev/null", O_RDONLY);
  EXPECT_FALSE(build_unwind_table(null_fd).ok());
  ::close(null_fd);
}
