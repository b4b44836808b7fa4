// The store through the real writer: schema creation, synthetic events with
// known totals, process identity under pid reuse, and every kind of bad file.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "store/embedded_sql.h"
#include "store/schema.h"
#include "store/writer.h"
#include "test_util.h"

using namespace gpuobs;
using gpuobs::testing::scalar;
using gpuobs::testing::TempDir;

namespace {

gpuobs_launch launch(uint32_t tgid, uint32_t tid, uint64_t ts, uint64_t fn) {
  gpuobs_launch l{};
  l.hdr = {GPUOBS_EV_LAUNCH, sizeof l, ts, tgid, tid};
  l.function = fn;
  l.grid_x = 2;
  l.grid_y = 3;
  l.grid_z = 4;
  l.block_x = 128;
  l.block_y = 1;
  l.block_z = 1;
  l.shared_mem_bytes = 1024;
  l.stream = 0x7000;
  l.api = GPUOBS_API_CU_LAUNCH_KERNEL;
  return l;
}

ProcEvent proc(uint32_t type, uint32_t tgid, uint64_t ts, uint64_t start, const char* comm) {
  return ProcEvent{type, gpuobs_hdr{type, sizeof(gpuobs_proc), ts, tgid, tgid}, start, 1, 0, comm, ""};
}

std::unique_ptr<CaptureWriter> new_writer(const std::string& path) {
  auto w = CaptureWriter::create(path, false, nullptr);
  EXPECT_TRUE(w.ok()) << (w.ok() ? "" : w.error().message);
  CaptureMeta m{"test", CaptureMode::record, "cmd", "host", "kernel", "", 1000, 5, 4096};
  EXPECT_TRUE((*w)->write_meta(m).ok());
  return std::move(w.value());
}

}  // namespace

TEST(Schema, MigratesToTheNewestVersionAndRecordsIt) {
  TempDir dir;
  auto w = new_writer(dir.file("a.gpuobs"));
  w->stop();
  auto db = open_capture_readonly(dir.file("a.gpuobs"));
  ASSERT_TRUE(db.ok()) << db.error().message;
  EXPECT_EQ(scalar(*db, "PRAGMA user_version"), schema_version());
  EXPECT_EQ(scalar(*db, "PRAGMA application_id"), kApplicationId);
  // Every embedded migration recorded once, numbered without a gap.
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM schema_migrations"), static_cast<int64_t>(sql::migrations().size()));
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM schema_migrations"), schema_version());
  EXPECT_EQ(scalar(*db, "SELECT version FROM schema_migrations ORDER BY version DESC LIMIT 1"), schema_version());
}

TEST(Writer, StoresSyntheticEventsWithExactTotals) {
  TempDir dir;
  auto path = dir.file("b.gpuobs");
  auto w = new_writer(path);
  w->start();
  w->push(proc(GPUOBS_EV_PROC_FORK, 100, 10, 5000, "trainer"));
  for (int i = 0; i < 20000; ++i) w->push(launch(100, 100 + i % 4, 20 + i, 0xa0 + i % 3));
  IoctlEvent io{};
  io.hdr = {GPUOBS_EV_IOCTL, sizeof io, 30, 100, 101};
  io.cmd = 0xC030462B;
  io.ret = -25;
  io.latency_ns = 777;
  io.dev_major = 195;
  io.dev_minor = 255;
  w->push(io);
  w->push(proc(GPUOBS_EV_PROC_EXIT, 100, 99999, 5000, "trainer"));
  w->stop();
  ASSERT_TRUE(w->write_end(100000, 0, {{"x", {7, "bpf"}}}).ok());
  EXPECT_EQ(w->stats().launches, 20000u);
  EXPECT_EQ(w->stats().failed_rows, 0u);

  auto db = open_capture_readonly(path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM kernel_launches"), 20000);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM kernel_launches WHERE function = 160"), 6667);  // 0xa0
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM threads"), 4);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM processes"), 1);
  EXPECT_EQ(scalar(*db, "SELECT exit_mono_ns FROM processes WHERE tgid = 100"), 99999);
  EXPECT_EQ(scalar(*db, "SELECT cmd FROM ioctls"), 0xC030462Bll);
  EXPECT_EQ(scalar(*db, "SELECT ret FROM ioctls"), -25);
  EXPECT_EQ(scalar(*db, "SELECT latency_ns FROM ioctls"), 777);
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'x'"), 7);
  EXPECT_EQ(scalar(*db, "SELECT end_mono_ns FROM capture"), 100000);
}

// The ring consumer's hand-over: events pushed in batches (stack definitions
// first, in the same batch as the launches that use them) are all stored, in
// order, and each batch vector comes back empty for reuse.
TEST(Writer, PushManyStoresEveryEventWithItsStack) {
  TempDir dir;
  auto path = dir.file("many.gpuobs");
  auto w = new_writer(path);
  w->start();
  std::vector<CaptureWriter::Queued> batch;
  batch.push_back({proc(GPUOBS_EV_PROC_FORK, 500, 900, 77, "many"), 0});
  batch.push_back({ModuleDef{1, "[anon]", 0, 0, nullptr}, 0});
  batch.push_back({FrameDef{1, 1, 16}, 0});
  batch.push_back({FrameDef{2, 1, 32}, 0});
  batch.push_back({StackDef{1, 0, {1, 2}}, 0});
  for (int i = 0; i < 3000; ++i) batch.push_back({launch(500, 501, 1000 + i, 0x10), 1});
  w->push_many(batch);
  EXPECT_TRUE(batch.empty());
  batch.push_back({StackDef{2, 0, {2}}, 0});
  for (int i = 0; i < 2000; ++i) batch.push_back({launch(500, 502, 5000 + i, 0x20), 2});
  w->push_many(batch);
  EXPECT_TRUE(batch.empty());
  w->push_many(batch);  // an empty batch is nothing
  w->stop();
  EXPECT_EQ(w->stats().launches, 5000u);
  auto db = open_capture_readonly(path);
  ASSERT_TRUE(db.ok()) << db.error().message;
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM kernel_launches WHERE stack_id = 1 AND tid = 501"), 3000);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM kernel_launches WHERE stack_id = 2 AND tid = 502"), 2000);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM stacks"), 2);
  // In the order pushed: launch i of each batch has the i-th timestamp.
  EXPECT_EQ(scalar(*db,
                   "SELECT count(*) FROM kernel_launches a JOIN kernel_launches b ON b.id = a.id + 1 "
                   "WHERE b.ts_mono_ns < a.ts_mono_ns"),
            0);
}

TEST(Writer, AReusedPidIsANewProcess) {
  TempDir dir;
  auto path = dir.file("c.gpuobs");
  auto w = new_writer(path);
  w->start();
  w->push(proc(GPUOBS_EV_PROC_FORK, 200, 1, 111, "first"));
  w->push(launch(200, 200, 2, 1));
  w->push(proc(GPUOBS_EV_PROC_EXIT, 200, 3, 111, "first"));
  w->push(proc(GPUOBS_EV_PROC_FORK, 200, 4, 222, "second"));
  w->push(launch(200, 200, 5, 2));
  w->push(launch(200, 200, 6, 2));
  w->stop();
  auto db = open_capture_readonly(path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM processes WHERE tgid = 200"), 2);
  EXPECT_EQ(scalar(*db,
                   "SELECT count(*) FROM kernel_launches l JOIN processes p ON p.id = l.process_id "
                   "WHERE p.start_boottime_ns = 111"),
            1);
  EXPECT_EQ(scalar(*db,
                   "SELECT count(*) FROM kernel_launches l JOIN processes p ON p.id = l.process_id "
                   "WHERE p.start_boottime_ns = 222"),
            2);
}

// A full disk (simulated with max_page_count): the lost batches are counted,
// the writer goes on and recovers, and no two processes ever share an id.
TEST(Writer, FullDiskLosesCountedBatchesAndRecovers) {
  TempDir dir;
  auto path = dir.file("full.gpuobs");
  auto w = new_writer(path);
  auto pages = Db::open(path, SQLITE_OPEN_READONLY)->scalar("PRAGMA page_count");
  ASSERT_TRUE(pages.ok());
  ASSERT_TRUE(w->limit_pages(*pages + 8).ok());
  w->start();
  const int first = 50000;
  for (int i = 0; i < first; ++i) w->push(launch(300 + i % 7, 300 + i % 7, 10 + i, 1));
  // Wait until the writer has dealt with all of it.
  for (int tries = 0; tries < 200; ++tries) {
    auto st = w->stats();
    if (st.launches + st.failed_rows >= static_cast<uint64_t>(first)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  auto mid = w->stats();
  EXPECT_GT(mid.failed_rows, 0u);
  EXPECT_EQ(mid.launches + mid.failed_rows, static_cast<uint64_t>(first));
  ASSERT_TRUE(w->limit_pages(0).ok());  // space is back
  for (int i = 0; i < 100; ++i) w->push(launch(400, 400, 1000000 + i, 2));
  w->stop();
  EXPECT_EQ(w->stats().launches, mid.launches + 100);
  auto db = open_capture_readonly(path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM kernel_launches"), static_cast<int64_t>(mid.launches + 100));
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM kernel_launches WHERE tgid = 400"), 100);
  // Every launch points at a process row of its own pid.
  EXPECT_EQ(scalar(*db,
                   "SELECT count(*) FROM kernel_launches l LEFT JOIN processes p ON p.id = l.process_id"
                   " WHERE p.tgid IS NULL OR p.tgid != l.tgid"),
            0);
}

TEST(Writer, RefusesAnExistingFileUnlessForced) {
  TempDir dir;
  auto path = dir.file("d.gpuobs");
  std::ofstream(path) << "precious";
  auto w = CaptureWriter::create(path, false, nullptr);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().exit_code, 2);
  std::ifstream in(path);
  std::string content;
  in >> content;
  EXPECT_EQ(content, "precious");
  // --force replaces only captures (and empty files): this one is neither.
  EXPECT_FALSE(CaptureWriter::create(path, true, nullptr).ok());
  auto cap = dir.file("c.gpuobs");
  ASSERT_TRUE(CaptureWriter::create(cap, false, nullptr).ok());
  EXPECT_FALSE(CaptureWriter::create(cap, false, nullptr).ok());
  EXPECT_TRUE(CaptureWriter::create(cap, true, nullptr).ok());
}

TEST(Reader, RejectsMissingForeignNewerAndTruncatedFiles) {
  TempDir dir;
  auto missing = open_capture_readonly(dir.file("none.gpuobs"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().exit_code, 2);

  std::ofstream(dir.file("text.gpuobs")) << "this is not a database at all, just some text padding it out";
  auto text = open_capture_readonly(dir.file("text.gpuobs"));
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.error().exit_code, 2);

  {
    auto db = Db::open(dir.file("foreign.db"), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    ASSERT_TRUE(db->exec("CREATE TABLE t (x); INSERT INTO t VALUES (1);").ok());
  }
  auto foreign = open_capture_readonly(dir.file("foreign.db"));
  ASSERT_FALSE(foreign.ok());
  EXPECT_NE(foreign.error().message.find("not a gpuobs capture"), std::string::npos);

  auto newer_path = dir.file("newer.gpuobs");
  new_writer(newer_path)->stop();
  {
    auto db = Db::open(newer_path, SQLITE_OPEN_READWRITE);
    ASSERT_TRUE(db->exec("PRAGMA user_version = 999").ok());
  }
  // A newer capture is read (with a warning: tests/unit/store/capture_file_test.cpp)
  // and never written into.
  auto newer = open_capture_readonly(newer_path);
  ASSERT_TRUE(newer.ok()) << newer.error().message;
  EXPECT_NE(newer_than_build(*newer).find("schema version 999"), std::string::npos);
  auto newer_rw = Db::open(newer_path, SQLITE_OPEN_READWRITE);
  ASSERT_TRUE(newer_rw.ok());
  auto refused = migrate(*newer_rw);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("newer"), std::string::npos);

  auto trunc_path = dir.file("trunc.gpuobs");
  {
    auto w = new_writer(trunc_path);
    w->start();
    for (int i = 0; i < 5000; ++i) w->push(launch(1, 1, i, 1));
    w->stop();
    ASSERT_TRUE(w->write_end(1, 0, {}).ok());
  }
  ::truncate(trunc_path.c_str(), 8192);
  auto trunc = open_capture_readonly(trunc_path);
  ASSERT_FALSE(trunc.ok());
  EXPECT_EQ(trunc.error().exit_code, 2);
}

TEST(Reader, ALockedCaptureIsAClearErrorNotAHang) {
  TempDir dir;
  auto path = dir.file("locked.gpuobs");
  {
    auto w = new_writer(path);
    w->stop();
    ASSERT_TRUE(w->write_end(1, 0, {}).ok());  // journal_mode = DELETE: a writer's lock blocks readers
  }
  auto holder = Db::open(path, SQLITE_OPEN_READWRITE);
  ASSERT_TRUE(holder.ok());
  ASSERT_TRUE(holder->exec("BEGIN EXCLUSIVE").ok());
  auto t = std::chrono::steady_clock::now();
  auto db = open_capture_readonly(path);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.error().exit_code, 2);
  EXPECT_NE(db.error().message.find("locked"), std::string::npos) << db.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - t, std::chrono::seconds(5));
  ASSERT_TRUE(holder->exec("ROLLBACK").ok());
  EXPECT_TRUE(open_capture_readonly(path).ok());
}

TEST(Reader, IsReadOnlyByConstruction) {
  TempDir dir;
  auto path = dir.file("ro.gpuobs");
  new_writer(path)->stop();
  auto db = open_capture_readonly(path);
  ASSERT_TRUE(db.ok());
  EXPECT_FALSE(db->exec("DELETE FROM capture").ok());
  EXPECT_FALSE(db->exec("CREATE TABLE evil (x)").ok());
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM capture"), 1);
}
