// The compact launch capture (schema 12, issue 17): every documented column
// read back through the kernel_launches and launch_agg views equals what was
// launched; shapes and names are interned once per file, across batches and
// segment rotation; the size per launch stays under the target; a capture of
// schema 11 opens in every command and upgrades on request; a broken interned
// reference is reported by `gpuobs check`, not crashed on.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "catalogue/api_spec.h"
#include "events.h"
#include "store/intern_table.h"
#include "store/schema.h"
#include "store/writer.h"
#include "test_util.h"
#include "writer_fixtures.h"

using namespace gpuobs;
using gpuobs::testing::fork_of;
using gpuobs::testing::gpuobs_cli;
using gpuobs::testing::kT0;
using gpuobs::testing::new_writer;
using gpuobs::testing::scalar;
using gpuobs::testing::TempDir;
using gpuobs::testing::text;

namespace {

uint32_t api_id(std::string_view symbol) {
  const ApiSpec* s = api_by_symbol(symbol);
  if (!s) ADD_FAILURE() << "no API " << symbol;
  return s ? s->id : 0;
}

gpuobs_launch launch(uint32_t tgid, uint32_t tid, uint64_t ts, uint64_t fn, uint32_t grid, uint32_t api = 1) {
  gpuobs_launch l{};
  l.hdr = {GPUOBS_EV_LAUNCH, sizeof l, ts, tgid, tid};
  l.function = fn;
  l.grid_x = grid, l.grid_y = 2, l.grid_z = 1;
  l.block_x = 256, l.block_y = 1, l.block_z = 1;
  l.shared_mem_bytes = 4096;
  l.stream = 0x5000;
  l.kernel_params = 0x7ffc0000;
  l.extra = 0;
  l.api = api;
  return l;
}

// cuModuleGetFunction(&f, module, name) returning f = fn: names fn's launches.
ApiCallEvent get_function(uint32_t tgid, uint64_t ts, uint64_t fn, const std::string& mangled) {
  ApiCallEvent e{};
  e.hdr = {GPUOBS_EV_API_CALL, 0, ts, tgid, tgid};
  e.api = api_id("cuModuleGetFunction");
  e.args[0] = 0x1000, e.args[1] = 0x40d, e.args[2] = 0x2000;
  e.out_value = fn;
  e.duration_ns = 100;
  e.flags = GPUOBS_CALL_F_RETURNED | GPUOBS_CALL_F_OUT_READ;
  e.blob_kind = GPUOBS_BLOB_STRING;
  e.blob = mangled + '\0';
  return e;
}

// cuLaunchKernelEx with a CUlaunchConfig (grid 3x1x1, block 64x1x1, 128 B
// shared memory, stream 0x6000, 1 attribute) and a cluster attribute 2x1x1.
ApiCallEvent launch_ex(uint32_t tgid, uint32_t tid, uint64_t ts, uint64_t fn) {
  ApiCallEvent e{};
  e.hdr = {GPUOBS_EV_API_CALL, 0, ts, tgid, tid};
  e.api = api_id("cuLaunchKernelEx");
  e.args[0] = 0x3000, e.args[1] = fn, e.args[2] = 0x7ffd0000, e.args[3] = 0;
  std::string b(56 + 72, '\0');
  uint32_t cfg[] = {3, 1, 1, 64, 1, 1, 128};
  std::memcpy(b.data(), cfg, sizeof cfg);
  uint64_t stream = 0x6000;
  std::memcpy(b.data() + 32, &stream, 8);
  uint32_t nattr = 1, cluster_id = 4, cluster[] = {2, 1, 1};
  std::memcpy(b.data() + 48, &nattr, 4);
  std::memcpy(b.data() + 56, &cluster_id, 4);
  std::memcpy(b.data() + 64, cluster, sizeof cluster);
  e.blob_kind = GPUOBS_BLOB_STRUCT;
  e.blob = b;
  return e;
}

// One launch as the kernel_launches view shows it (all columns but id).
std::string row_of(Db& db, const std::string& where) {
  return text(db,
              "SELECT group_concat(r, ' | ') FROM (SELECT ts_mono_ns || ',' || tgid || ',' || tid || ',' || api || ','"
              " || printf('0x%x', function) || ',' || grid_x || 'x' || grid_y || 'x' || grid_z || ',' || block_x ||"
              " 'x' || block_y || 'x' || block_z || ',' || shared_mem_bytes || ',' || printf('0x%x', stream) || ','"
              " || printf('0x%x', kernel_params) || ',' || extra || ',' || args_complete || ',' ||"
              " coalesce(kernel_name, 'NULL') || ',' || cooperative || ',' || coalesce(cluster_x || 'x' || cluster_y"
              " || 'x' || cluster_z, 'NULL') || ',' || per_thread_stream || ',' || attributes || ',' ||"
              " coalesce(stack_id, 'NULL') || ',' || vendor AS r FROM kernel_launches WHERE " +
                  where + " ORDER BY ts_mono_ns, tid)");
}

}  // namespace

TEST(CompactCapture, EveryColumnRoundTripsThroughTheViews) {
  TempDir dir;
  auto path = dir.file("c.gpuobs");
  auto w = new_writer(path);
  w->start();
  w->push(fork_of(100, kT0 + 1));
  w->push(launch(100, 100, kT0 + 1000, 0xf1, 8), 7);  // before its name is known
  w->push(get_function(100, kT0 + 2000, 0xf1, "_Z3fooi"));
  w->push(launch(100, 101, kT0 + 3000, 0xf1, 8), 7);        // named now; another thread
  w->push(launch(100, 100, kT0 + 3000, 0xf1, 8));           // the same nanosecond, no stack
  w->push(launch(100, 102, kT0 + 3000, 0xf2, 16, 3));       // cooperative, same nanosecond
  w->push(launch_ex(100, 100, kT0 + 2'000'004'000, 0xf1));  // bucket 2
  w->stop();
  ASSERT_TRUE(w->write_end(kT0 + 3'000'000'000, 0, {}).ok());
  auto db = open_capture_readonly(path);
  ASSERT_TRUE(db.ok()) << db.error().message;
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM kernel_launches"), 5);
  EXPECT_EQ(
      row_of(*db, "1"),
      "5000001000,100,100,cuLaunchKernel,0xf1,8x2x1,256x1x1,4096,0x5000,0x7ffc0000,0,1,NULL,0,NULL,0,0,7,cuda | "
      "5000003000,100,100,cuLaunchKernel,0xf1,8x2x1,256x1x1,4096,0x5000,0x7ffc0000,0,1,foo(int),0,NULL,0,0,NULL,cuda | "
      "5000003000,100,101,cuLaunchKernel,0xf1,8x2x1,256x1x1,4096,0x5000,0x7ffc0000,0,1,foo(int),0,NULL,0,0,7,cuda | "
      "5000003000,100,102,cuLaunchCooperativeKernel,0xf2,16x2x1,256x1x1,4096,0x5000,0x7ffc0000,0,1,NULL,1,NULL,0,0,"
      "NULL,cuda | "
      "7000004000,100,100,cuLaunchKernelEx,0xf1,3x1x1,64x1x1,128,0x6000,0x7ffd0000,0,1,foo(int),0,2x1x1,0,1,NULL,cuda");
  // Ids are unique, in time order, and carry the time (relative to the start, times 8).
  EXPECT_EQ(scalar(*db, "SELECT count(DISTINCT id) FROM kernel_launches"), 5);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM kernel_launches WHERE id >> 3 != ts_mono_ns - 5000000000"), 0);
  EXPECT_EQ(scalar(*db,
                   "SELECT count(*) FROM processes p JOIN kernel_launches k ON k.process_id = p.id"
                   " WHERE p.tgid = 100"),
            5);
  // launch_agg equals the launches summed by its key.
  EXPECT_EQ(text(*db,
                 "SELECT group_concat(r, ' | ') FROM (SELECT api || ',' || kernel_name || ',' || stack_id || ','"
                 " || bucket_s || ',' || launches || ',' || grid_sum || ',' || grid_min || ',' || grid_max || ','"
                 " || block_sum || ',' || shmem_sum || ',' || cooperative || ',' || first_ns || ',' || last_ns AS r"
                 " FROM launch_agg ORDER BY first_ns, api, stack_id)"),
            "cuLaunchKernel,,7,0,1,16,16,16,256,4096,0,5000001000,5000001000 | "
            "cuLaunchCooperativeKernel,,0,0,1,32,32,32,256,4096,1,5000003000,5000003000 | "
            "cuLaunchKernel,foo(int),0,0,1,16,16,16,256,4096,0,5000003000,5000003000 | "
            "cuLaunchKernel,foo(int),7,0,1,16,16,16,256,4096,0,5000003000,5000003000 | "
            "cuLaunchKernelEx,foo(int),0,2,1,3,3,3,64,128,0,7000004000,7000004000");
  // Names once: the launch symbols, the vendor and the kernel name; since
  // schema 14 also the lookup's symbol, op, kind and mangled name.
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM strings"), 9);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM strings WHERE text = 'foo(int)'"), 1);
}

TEST(CompactCapture, AShapeIsStoredOnceAcrossBatchesAndEachSegmentIsSelfContained) {
  TempDir dir;
  auto first = dir.file("s1.gpuobs"), second = dir.file("s2.gpuobs");
  auto w1 = new_writer(first);
  w1->start();
  w1->push(fork_of(200, kT0 + 1));
  w1->push(get_function(200, kT0 + 2, 0xa1, "_Z3barv"));
  for (int i = 0; i < 1000; ++i) w1->push(launch(200, 200, kT0 + 1000 + i * 500, 0xa1, 4));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the writer commits those (100 ms batches)
  for (int i = 1000; i < 3000; ++i) w1->push(launch(200, 200, kT0 + 1000 + i * 500, 0xa1, 4));
  w1->stop();
  EXPECT_GE(w1->stats().batches, 2u);
  // Rotation: the next segment continues with the live process and its names.
  auto w2 = new_writer(second);
  ASSERT_TRUE(w2->continue_from(*w1).ok());
  ASSERT_TRUE(w1->write_end(kT0 + 10'000'000, std::nullopt, {}).ok());
  w2->start();
  for (int i = 0; i < 500; ++i) w2->push(launch(200, 200, kT0 + 20'000'000 + i * 500, 0xa1, 4));
  w2->stop();
  ASSERT_TRUE(w2->write_end(kT0 + 30'000'000, std::nullopt, {}).ok());

  auto d1 = open_capture_readonly(first);
  ASSERT_TRUE(d1.ok());
  EXPECT_EQ(scalar(*d1, "SELECT count(*) FROM launches"), 3000);
  EXPECT_EQ(scalar(*d1, "SELECT count(*) FROM launch_shapes"), 1);
  EXPECT_EQ(scalar(*d1, "SELECT sum(launches) FROM launch_counts"), 3000);
  EXPECT_EQ(scalar(*d1, "SELECT count(*) FROM kernel_launches WHERE kernel_name = 'bar()'"), 3000);
  auto d2 = open_capture_readonly(second);
  ASSERT_TRUE(d2.ok());
  EXPECT_EQ(scalar(*d2, "SELECT count(*) FROM launch_shapes"), 1);
  // Its own strings: nothing refers to the first file.
  EXPECT_EQ(text(*d2, "SELECT group_concat(text, ',') FROM (SELECT text FROM strings ORDER BY id)"),
            "cuLaunchKernel,cuda,bar()");
  EXPECT_EQ(scalar(*d2, "SELECT count(*) FROM kernel_launches WHERE kernel_name = 'bar()' AND tgid = 200"), 500);
  EXPECT_EQ(scalar(*d2, "SELECT min(ts_mono_ns) FROM kernel_launches"), int64_t(kT0 + 20'000'000));
}

TEST(CompactCapture, EightLaunchesOfOneNanosecondAreKeptAndANinthIsCounted) {
  TempDir dir;
  auto path = dir.file("n.gpuobs");
  auto w = new_writer(path);
  w->start();
  w->push(fork_of(300, kT0 + 1));
  for (uint32_t t = 0; t < 5; ++t) w->push(launch(300, 300 + t, kT0 + 777, 0xb1, 1));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // Later batches: the same nanosecond again (the ring does not order CPUs strictly).
  for (uint32_t t = 5; t < 9; ++t) w->push(launch(300, 300 + t, kT0 + 777, 0xb1, 1));
  w->stop();
  EXPECT_EQ(w->stats().failed_rows, 1u);
  ASSERT_TRUE(w->write_end(kT0 + 1'000'000, 0, {}).ok());
  auto db = open_capture_readonly(path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM kernel_launches WHERE ts_mono_ns = 5000000777"), 8);
  EXPECT_EQ(scalar(*db, "SELECT sum(launches) FROM launch_agg"), 8);
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'store_failed_rows'"), 1);
}

// Schema 13: counts are stored about once a second of capture time, with a
// mark; launch_agg counts the launches past the mark itself. Exact while the
// writer runs (and after a kill: here, a writer stopped without its end),
// for launches arriving after the mark moved past them too.
TEST(CompactCapture, LaunchAggIsExactWhileCountsWaitInMemory) {
  TempDir dir;
  auto path = dir.file("m.gpuobs");
  auto w = new_writer(path);
  w->start();
  w->push(fork_of(500, kT0 + 1));
  constexpr uint64_t kMs = 1'000'000;
  // Each group is handed over as one chunk, as the ring consumer does: the
  // writer must not take a group half pushed, or the mark lands inside it
  // (pushed one by one, a writer woken mid-loop on a loaded CI machine moved
  // the mark to the 734th launch of the second group).
  std::vector<gpuobs::CaptureWriter::Queued> chunk;
  for (int i = 0; i < 1000; ++i) chunk.push_back({launch(500, 500, kT0 + 10 * kMs + uint64_t(i) * 100'000, 0xd1, 1)});
  w->push_many(chunk);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // committed, counts waiting (0.11 s of capture)
  chunk.clear();
  for (int i = 0; i < 1000; ++i) chunk.push_back({launch(500, 500, kT0 + 1200 * kMs + uint64_t(i) * 100'000, 0xd2, 2)});
  w->push_many(chunk);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a second passed: counts and mark stored
  chunk.clear();
  for (int i = 0; i < 500; ++i) chunk.push_back({launch(500, 500, kT0 + 1400 * kMs + uint64_t(i) * 100'000, 0xd1, 1)});
  for (int i = 0; i < 10; ++i)
    chunk.push_back({launch(500, 501, kT0 + 20 * kMs + uint64_t(i), 0xd1, 1)});  // late, below the mark
  w->push_many(chunk);
  w->stop();
  const std::string by_kernel =
      "SELECT group_concat(r, ';') FROM (SELECT function || ':' || bucket_s || ':' || n AS r FROM (";
  const std::string from_agg = "SELECT function, bucket_s, sum(launches) AS n FROM launch_agg GROUP BY 1, 2";
  const std::string from_rows =
      "SELECT function, (ts_mono_ns - 5000000000) / 1000000000 AS bucket_s, count(*) AS n FROM kernel_launches GROUP "
      "BY 1, 2";
  {
    auto db = open_capture_readonly(path);
    ASSERT_TRUE(db.ok());
    // The mark is just past the second group's last launch; the 10 late ones were counted at once.
    EXPECT_EQ(scalar(*db, "SELECT counted_below FROM launch_counts_mark"),
              int64_t((1200 * kMs + 999 * 100'000) * 8 + 1));
    EXPECT_EQ(scalar(*db, "SELECT sum(launches) FROM launch_counts"), 2010);
    EXPECT_EQ(scalar(*db, "SELECT sum(launches) FROM launch_agg"), 2510);
    EXPECT_EQ(text(*db, by_kernel + from_agg + ") ORDER BY r)"), "209:0:1010;209:1:500;210:1:1000");
    EXPECT_EQ(text(*db, by_kernel + from_agg + ") ORDER BY r)"), text(*db, by_kernel + from_rows + ") ORDER BY r)"));
    EXPECT_EQ(scalar(*db, "SELECT min(first_ns) FROM launch_agg WHERE function = 209"), int64_t(kT0 + 10 * kMs));
    EXPECT_EQ(scalar(*db, "SELECT max(last_ns) FROM launch_agg WHERE function = 209"),
              int64_t(kT0 + 1400 * kMs + 499 * 100'000));
  }
  // The end stores the rest: launch_counts alone holds every launch.
  ASSERT_TRUE(w->write_end(kT0 + 2000 * kMs, 0, {}).ok());
  auto db = open_capture_readonly(path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(scalar(*db, "SELECT sum(launches) FROM launch_counts"), 2510);
  EXPECT_EQ(scalar(*db, "SELECT counted_below FROM launch_counts_mark"),
            scalar(*db, "SELECT max(id) + 1 FROM launches"));
  EXPECT_EQ(text(*db, by_kernel + from_agg + ") ORDER BY r)"), "209:0:1010;209:1:500;210:1:1000");
}

// The writer's shape table: every key finds its own id across growth (the
// table doubles at half full), keys differing in one byte are different
// shapes, and a cleared table (a rolled-back transaction) finds nothing.
TEST(InternTable, EveryKeyFindsItsIdAcrossGrowthAndOneByteMakesADifferentKey) {
  struct Key {
    uint64_t a;
    uint32_t b;
    uint8_t c, pad[3];
  };
  auto key = [](uint64_t i) {
    Key k;
    std::memset(&k, 0, sizeof k);
    k.a = i * 0x10001, k.b = uint32_t(i % 7), k.c = uint8_t(i % 3);
    return k;
  };
  InternTable<Key> t;
  constexpr uint64_t kKeys = 5000;  // grows 1024 -> 2048 -> ... -> 16384 slots
  for (uint64_t i = 0; i < kKeys; ++i) {
    Key k = key(i);
    ASSERT_EQ(t.find(k, InternTable<Key>::hash(k)), 0) << i;
    t.insert(k, InternTable<Key>::hash(k), int64_t(i) + 1);
  }
  EXPECT_EQ(t.size(), kKeys);
  for (uint64_t i = 0; i < kKeys; ++i) {
    Key k = key(i);
    EXPECT_EQ(t.find(k, InternTable<Key>::hash(k)), int64_t(i) + 1) << i;
  }
  Key other = key(42);
  other.c ^= 1;
  EXPECT_EQ(t.find(other, InternTable<Key>::hash(other)), 0);
  t.clear();
  EXPECT_EQ(t.find(key(42), InternTable<Key>::hash(key(42))), 0);
  EXPECT_EQ(t.size(), 0u);
}

// A backlog is committed in pieces (at most 8192 events or 100 ms each), so a
// kill -9 loses one piece, not the whole backlog: 30,000 launches waiting
// when the writer starts are four transactions (one before the cut).
TEST(CompactCapture, ABacklogIsCommittedInTransactionsOfAtMost8192Events) {
  TempDir dir;
  auto path = dir.file("t.gpuobs");
  auto w = new_writer(path);
  w->set_max_backlog(std::chrono::hours(1), SIZE_MAX);  // this test is about the cut, not the drop
  w->push(fork_of(600, kT0 + 1));
  constexpr int kLaunches = 30000;
  for (int i = 0; i < kLaunches; ++i) w->push(launch(600, 600, kT0 + 1000 + uint64_t(i) * 1000, 0xe1, 1));
  w->start();
  w->stop();
  EXPECT_EQ(w->stats().launches, uint64_t(kLaunches));
  EXPECT_GE(w->stats().batches, 4u);
  ASSERT_TRUE(w->write_end(kT0 + 1'000'000'000, 0, {}).ok());
  auto db = open_capture_readonly(path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM kernel_launches"), kLaunches);
}

// Size, not time: stable on any machine. The fake-library loop's shape: one
// process, a few threads and kernels, launches about 700 ns apart, ten
// minutes into the capture (launch ids then take 7 bytes, as in a long one).
// The target is 20 bytes; launch runs (schema 16) take 4.4 here: a
// capture that went back to a row per launch (13-14 bytes) fails.
TEST(CompactCapture, ALaunchTakesAtMost6BytesOnDisk) {
  TempDir dir;
  auto path = dir.file("b.gpuobs");
  auto w = new_writer(path);
  w->set_max_backlog(std::chrono::hours(1), SIZE_MAX);  // keep every launch however slow the test machine
  w->start();
  w->push(fork_of(400, kT0 + 1));
  constexpr int kLaunches = 300000;
  for (int i = 0; i < kLaunches; ++i)
    w->push(launch(400, 400 + i % 2, kT0 + 600'000'000'000 + uint64_t(i) * 700, 0xc0 + i % 4, 4 + i % 4), 1 + i % 2);
  w->stop();
  ASSERT_TRUE(w->write_end(kT0 + 601'000'000'000, 0, {}).ok());
  EXPECT_EQ(w->stats().launches, uint64_t(kLaunches));
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  double per_launch = double(st.st_size) / kLaunches;
  std::printf("bytes per launch: %.2f (%lld bytes, %d launches)\n", per_launch, (long long)st.st_size, kLaunches);
  EXPECT_LE(per_launch, 6.0);
  auto db = open_capture_readonly(path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM launch_shapes"), 4);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM kernel_launches"), kLaunches);
}

namespace {

// A capture as gpuobs wrote it before schema 12 (migrations 1..version and
// rows in their tables), with two launches and their aggregates.
void write_old_capture(const std::string& path, int version) {
  auto db = Db::open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(migrate(*db, version).ok());
  ASSERT_EQ(scalar(*db, "PRAGMA user_version"), version);
  ASSERT_TRUE(
      db->exec(
            "INSERT INTO capture (id, gpuobs_version, abi_version, mode, host, kernel, start_mono_ns, end_mono_ns,"
            " clock_offset_ns, ring_buffer_bytes) VALUES (1, 'old', 5, 'record', 'h', 'k', 1000, 3000000000, 0,"
            " 4096);"
            "INSERT INTO processes (id, tgid, comm, source) VALUES (1, 42, 'old', 'proc');"
            "INSERT INTO threads (id, process_id, tid, first_mono_ns) VALUES (1, 1, 42, 2000);"
            "INSERT INTO kernel_launches (ts_mono_ns, process_id, tgid, tid, api, function, grid_x, grid_y, grid_z,"
            " block_x, block_y, block_z, shared_mem_bytes, stream, kernel_params, extra, args_complete, kernel_name, "
            "vendor)"
            " VALUES (2000, 1, 42, 42, 'cuLaunchKernel', 16, 4, 1, 1, 32, 1, 1, 0, 0, 8, 0, 1, 'old_kernel', 'cuda'),"
            " (1000003000, 1, 42, 42, 'cuLaunchKernel', 16, 4, 1, 1, 32, 1, 1, 0, 0, 8, 0, 1, 'old_kernel', 'cuda');"
            "INSERT INTO launch_agg VALUES (1, 'cuLaunchKernel', 16, 'old_kernel', 0, 0, 0, 1, 4, 4, 4, 32, 32, 32, 0, "
            "0,"
            " 2000, 2000), (1, 'cuLaunchKernel', 16, 'old_kernel', 0, 0, 1, 1, 4, 4, 4, 32, 32, 32, 0, 0, 1000003000,"
            " 1000003000);")
          .ok())
      << db->errmsg();
}

}  // namespace

class OlderCapture : public ::testing::TestWithParam<int> {};

TEST_P(OlderCapture, OpensInEveryCommandAndUpgradesOnRequest) {
  const int version = GetParam();
  TempDir dir;
  auto path = dir.file("old.gpuobs");
  write_old_capture(path, version);
  auto [krc, kout] = gpuobs_cli("report kern_sum --format csv " + path);
  EXPECT_EQ(krc, 0) << kout;
  EXPECT_NE(kout.find("old_kernel"), std::string::npos) << kout;
  auto [crc, cout_] = gpuobs_cli("report capture --format csv " + path);
  EXPECT_EQ(crc, 0) << cout_;
  EXPECT_NE(cout_.find("kernel_launches,2"), std::string::npos) << cout_;
  EXPECT_NE(cout_.find("state,unknown (written before schema version 11)"), std::string::npos) << cout_;
  EXPECT_NE(cout_.find("stack_depth,unknown (written before schema version 15)"), std::string::npos) << cout_;
  EXPECT_NE(cout_.find("unwind,unknown (written before schema version 15)"), std::string::npos) << cout_;
  auto [src, sout] = gpuobs_cli("sql 'SELECT count(*) AS n FROM kernel_launches' --format csv " + path);
  EXPECT_EQ(src, 0);
  EXPECT_EQ(sout, "n\n2\n");
  auto [trc, tout] = gpuobs_cli("report kern_sum --since 1 --format csv " + path);  // reads the launch rows
  EXPECT_EQ(trc, 0) << tout;
  EXPECT_NE(tout.find("old_kernel"), std::string::npos) << tout;
  // No NCCL tables before schema 17: the reports over them answer with no rows.
  for (const char* r : {"nccl_sum", "nccl_ranks", "nccl_stalls"}) {
    auto [nrc, nout] = gpuobs_cli(std::string("report ") + r + " --format csv " + path);
    EXPECT_EQ(nrc, 0) << r << ": " << nout;
    EXPECT_EQ(nout.find('\n'), nout.rfind('\n')) << r << ": a header and no rows: " << nout;
  }
  EXPECT_EQ(gpuobs_cli("export perfetto -o " + dir.file("t.pftrace") + " " + path).first, 0);
  EXPECT_EQ(gpuobs_cli("replay --no-write " + path).first, 0);
  EXPECT_EQ(gpuobs_cli("check " + path).first, 0);
  {
    auto db = open_capture_readonly(path);
    ASSERT_TRUE(db.ok());
    EXPECT_EQ(scalar(*db, "PRAGMA user_version"), version);  // read as it is: never rewritten by a reader
  }
  std::string before;
  {
    auto db = open_capture_readonly(path);
    before = row_of(*db, "1");
  }
  auto [urc, uout] = gpuobs_cli("upgrade " + path);
  EXPECT_EQ(urc, 0) << uout;
  EXPECT_NE(uout.find("schema " + std::to_string(version) + " -> " + std::to_string(schema_version())),
            std::string::npos)
      << uout;
  auto db = open_capture_readonly(path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(scalar(*db, "PRAGMA user_version"), schema_version());
  EXPECT_EQ(row_of(*db, "1"), before);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM launch_shapes"), 1);
  EXPECT_EQ(text(*db, "SELECT group_concat(bucket_s || ':' || launches) FROM launch_agg"), "0:1,1:1");
  EXPECT_EQ(gpuobs_cli("upgrade " + path).second,
            path + ": already at schema " + std::to_string(schema_version()) + "\n");
}

// Schema 10: the last before the capture's end state; 11: the last before the compact launches.
INSTANTIATE_TEST_SUITE_P(Schema, OlderCapture, ::testing::Values(10, 11));

// Schema 17 (the last before Python frames): read as schema 18, every frame
// native, no stack with a Python walk; the exports read stack_symbols.kind
// (review of issue 18: a schema-17 capture got none of this and its export
// failed with "no such column: kind").
TEST(OlderCapture, Schema17ReadsAsIfEveryFrameWereNative) {
  TempDir dir;
  auto path = dir.file("v17.gpuobs");
  {
    auto db = Db::open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(migrate(*db, 17).ok());
    ASSERT_TRUE(db->exec("INSERT INTO capture (id, gpuobs_version, abi_version, mode, host, kernel, start_mono_ns,"
                         " end_mono_ns, clock_offset_ns, ring_buffer_bytes) VALUES (1, 'old', 6, 'record', 'h', 'k',"
                         " 1000, 3000000000, 0, 4096);"
                         "INSERT INTO modules (id, path, symbols, debug_info) VALUES (1, '/bin/app', 'none', 0);"
                         "INSERT INTO frames (id, module_id, offset) VALUES (1, 1, 4096);"
                         "INSERT INTO stacks (id, depth, end_reason) VALUES (1, 1, 'cut');"
                         "INSERT INTO stack_frames VALUES (1, 0, 1);")
                    .ok())
        << db->errmsg();
  }
  auto db = open_capture_readonly(path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(text(*db, "SELECT kind FROM stack_symbols WHERE stack_id = 1"), "native");
  EXPECT_EQ(text(*db, "SELECT kind FROM frames WHERE id = 1"), "native");
  EXPECT_EQ(text(*db, "SELECT python_end FROM stacks WHERE id = 1"), "<null>");
  EXPECT_EQ(text(*db, "SELECT python_stacks FROM capture"), "<null>");
  EXPECT_EQ(gpuobs_cli("export perfetto -o " + dir.file("t.pftrace") + " " + path).first, 0);
  EXPECT_EQ(gpuobs_cli("export chrome -o " + dir.file("t.json") + " " + path).first, 0);
  EXPECT_EQ(gpuobs_cli("stacks " + path).first, 0);
}

// A capture of an older schema (built by the migrations up to it) with its
// capture row and, after it, the rows `more` inserts.
void capture_at_schema(const std::string& path, int version, const char* more = "") {
  auto db = Db::open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(migrate(*db, version).ok());
  ASSERT_TRUE(db->exec(std::string("INSERT INTO capture (id, gpuobs_version, abi_version, mode, host, kernel,"
                                   " start_mono_ns, end_mono_ns, clock_offset_ns, ring_buffer_bytes) VALUES (1, 'old',"
                                   " 7, 'record', 'h', 'k', 1000, 3000000000, 0, 4096);") +
                       more)
                  .ok())
      << db->errmsg();
}

// Schema 18 (the last before GPU metrics): the GPU metric tables and views
// read as empty, so gpu_sum, gpu_procs and the exports answer with no rows
// instead of "no such table".
TEST(OlderCapture, Schema18HasEmptyGpuMetrics) {
  TempDir dir;
  auto path = dir.file("v18.gpuobs");
  ASSERT_NO_FATAL_FAILURE(capture_at_schema(path, 18));
  auto db = open_capture_readonly(path);
  ASSERT_TRUE(db.ok());
  for (const char* t : {"gpus", "gpu_metric_names", "gpu_throttle_reasons", "gpu_sources", "gpu_sample_rows",
                        "gpu_process_rows", "gpu_events", "gpu_metrics", "gpu_process_metrics"})
    EXPECT_EQ(scalar(*db, std::string("SELECT count(*) FROM ") + t), 0) << t;
  for (const char* r : {"gpu_sum", "gpu_procs"}) {
    auto [rc, out] = gpuobs_cli(std::string("report ") + r + " --format csv " + path);
    EXPECT_EQ(rc, 0) << r << ": " << out;
    EXPECT_EQ(out.find('\n'), out.rfind('\n')) << r << ": a header and no rows: " << out;
  }
  EXPECT_EQ(gpuobs_cli("export perfetto -o " + dir.file("t.pftrace") + " " + path).first, 0);
  EXPECT_EQ(gpuobs_cli("export chrome -o " + dir.file("t.json") + " " + path).first, 0);
}

// Schema 19 (the last before GPU times): every report and command that reads
// gpu_times or gpu_time_rows answers, with empty GPU columns.
TEST(OlderCapture, Schema19HasNoGpuTimes) {
  TempDir dir;
  auto path = dir.file("v19.gpuobs");
  ASSERT_NO_FATAL_FAILURE(capture_at_schema(path, 19));
  auto db = open_capture_readonly(path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM gpu_times"), 0);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM gpu_time_rows"), 0);
  for (const char* r : {"kern_sum", "copy_sum", "memset_sum", "gpu_sum", "gpu_procs"}) {
    auto [rc, out] = gpuobs_cli(std::string("report ") + r + " --format csv " + path);
    EXPECT_EQ(rc, 0) << r << ": " << out;
  }
  EXPECT_EQ(gpuobs_cli("export perfetto -o " + dir.file("t.pftrace") + " " + path).first, 0);
  EXPECT_EQ(gpuobs_cli("export chrome -o " + dir.file("t.json") + " " + path).first, 0);
  auto [rc, out] = gpuobs_cli("replay --check " + path);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("no GPU times in this capture"), std::string::npos) << out;
}

TEST(CompactCapture, ABrokenInternedReferenceIsReportedNotCrashedOn) {
  TempDir dir;
  auto path = dir.file("x.gpuobs");
  {
    auto w = new_writer(path);
    w->start();
    w->push(fork_of(500, kT0 + 1));
    for (int i = 0; i < 10; ++i) w->push(launch(500, 500, kT0 + 100 + i, 0xd1, 1));
    w->stop();
    ASSERT_TRUE(w->write_end(kT0 + 1000, 0, {}).ok());
  }
  {
    auto db = Db::open(path, SQLITE_OPEN_READWRITE);
    ASSERT_TRUE(db.ok());
    // One more launch, in a run of its own, of shape 999: key delta 0, zigzag(999) = 1998 = varint CE 0F.
    ASSERT_TRUE(
        db->exec("INSERT INTO launch_runs (id, launches) SELECT max(id) + 8000, x'00CE0F' FROM launch_runs").ok());
    // And a run cut short inside a varint: the check names it too.
    ASSERT_TRUE(
        db->exec("INSERT INTO launch_runs (id, launches) SELECT max(id) + 8000, x'0080' FROM launch_runs").ok());
  }
  auto [rc, out] = gpuobs_cli("check " + path);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("1 launches whose shape_id is not in launch_shapes"), std::string::npos) << out;
  EXPECT_NE(out.find("1 launch_runs rows whose bytes do not decode"), std::string::npos) << out;
  auto [krc, kout] =
      gpuobs_cli("sql 'SELECT count(*) AS n, count(api) AS named FROM kernel_launches' --format csv " + path);
  EXPECT_EQ(krc, 0) << kout;
  EXPECT_EQ(kout, "n,named\n11,10\n");
}

// A capture of schema 18 to 21 has Python walks but no stacks.python_thread
// (22): read as it is, a stack with a walk reads 'calling' (the only kind
// then), one without NULL, capture.python_main_thread NULL; gpuobs upgrade
// writes the same into the file.
TEST(OlderCapture, Schema21ReadsItsPythonStacksAsTheCallingThreads) {
  gpuobs::testing::TempDir dir;
  const std::string path = dir.file("v21.gpuobs");
  {
    auto db = Db::open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(migrate(*db, 21).ok());
    ASSERT_TRUE(db->exec("INSERT INTO capture (id, gpuobs_version, abi_version, mode, host, kernel, start_mono_ns,"
                         " end_mono_ns, clock_offset_ns, ring_buffer_bytes, python_stacks) VALUES (1, 'old', 7,"
                         " 'record', 'h', 'k', 1000, 3000000000, 0, 4096, 1);"
                         "INSERT INTO stacks (id, depth, end_reason, python_end) VALUES (1, 0, 'root', 'root'),"
                         " (2, 0, 'cut', NULL), (3, 0, 'root', 'no_thread');")
                    .ok())
        << db->errmsg();
  }
  auto check = [&](const char* what) {
    auto db = open_capture_readonly(path);
    ASSERT_TRUE(db.ok()) << what;
    EXPECT_EQ(gpuobs::testing::text(*db,
                                    "SELECT group_concat(coalesce(python_thread, '-'), ',') FROM"
                                    " (SELECT python_thread FROM stacks ORDER BY id)"),
              "calling,-,calling")
        << what;
    EXPECT_EQ(gpuobs::testing::scalar(*db, "SELECT python_main_thread IS NULL FROM capture"), 1) << what;
  };
  check("read as schema 21");
  auto [rc, out] = gpuobs_cli("upgrade " + path);
  ASSERT_EQ(rc, 0) << out;
  check("upgraded");
  auto db = open_capture_readonly(path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(gpuobs::testing::scalar(*db, "PRAGMA user_version"), schema_version());
}
