// Captures as files a user reads after things went wrong (issue 15): how a
// capture ended and what it lost, written with every batch; damaged pages
// reported by every reader and by `gpuobs check`; captures of a newer gpuobs
// read with a warning and never written into.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "events.h"
#include "report/query.h"
#include "store/schema.h"
#include "store/writer.h"
#include "test_util.h"

using namespace gpuobs;
using gpuobs::testing::file_bytes;
using gpuobs::testing::scalar;
using gpuobs::testing::TempDir;
using gpuobs::testing::text;

namespace {

// Runs the gpuobs binary; returns (exit status, stdout + stderr).
std::pair<int, std::string> gpuobs_cli(const std::string& args) {
  return gpuobs::testing::run_output(std::string(GPUOBS_BIN) + " " + args);
}

size_t count_of(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
  return n;
}

gpuobs_launch launch(uint32_t tgid, uint64_t ts, uint64_t fn) {
  gpuobs_launch l{};
  l.hdr = {GPUOBS_EV_LAUNCH, sizeof l, ts, tgid, tgid};
  l.function = fn;
  l.grid_x = l.grid_y = l.grid_z = 1;
  l.block_x = l.block_y = l.block_z = 1;
  l.stream = 0x7000;
  l.api = GPUOBS_API_CU_LAUNCH_KERNEL;
  return l;
}

std::unique_ptr<CaptureWriter> new_writer(const std::string& path) {
  auto w = CaptureWriter::create(path, false, nullptr);
  EXPECT_TRUE(w.ok()) << (w.ok() ? "" : w.error().message);
  EXPECT_TRUE(
      (*w)->write_meta(CaptureMeta{"test", CaptureMode::record, "cmd", "host", "kernel", "", 1000, 5, 4096}).ok());
  return std::move(w.value());
}

// A finished capture of n launches (functions 1..97, so rows differ).
void write_capture(const std::string& path, int n) {
  auto w = new_writer(path);
  w->start();
  for (int i = 0; i < n; ++i) w->push(launch(42, 2000 + i, 1 + i % 97));
  ASSERT_TRUE(w->write_end(5000000, 0, {{"dropped_launch_ringbuf_full", {3, "bpf"}}}).ok());
}

// Polls until the file says what we wait for (the writer commits every 100 ms).
bool wait_for(const std::string& path, const std::string& sql, int64_t want) {
  for (int i = 0; i < 100; ++i) {
    if (auto db = Db::open(path, SQLITE_OPEN_READONLY); db && scalar(*db, sql) == want) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace

// The state and the counters are in the file while it is written, not only
// at its end; 'complete' only once the end is written.
TEST(CaptureState, CountersAndStateAreWrittenWithEveryBatch) {
  TempDir dir;
  std::string path = dir.file("live.gpuobs");
  auto w = new_writer(path);
  w->start();
  w->set_counters({{"dropped_launch_ringbuf_full", {7, "bpf"}}, {"decode_short_records", {2, "userspace"}}});
  for (int i = 0; i < 300; ++i) w->push(launch(42, 2000 + i, 1));
  ASSERT_TRUE(wait_for(path, "SELECT value FROM counters WHERE name = 'stored_launch'", 300));
  {
    auto db = Db::open(path, SQLITE_OPEN_READONLY);
    ASSERT_TRUE(db.ok());
    EXPECT_EQ(text(*db, "SELECT state FROM capture"), kStateUnfinished);
    EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'dropped_launch_ringbuf_full'"), 7);
    EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'decode_short_records'"), 2);
    EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'store_failed_rows'"), 0);
    EXPECT_GT(scalar(*db, "SELECT committed_mono_ns FROM capture"), 0);
    EXPECT_EQ(text(*db, "SELECT end_mono_ns FROM capture"), "<null>");
  }
  // Losses counted while no event arrives are stored too.
  w->set_counters({{"dropped_launch_ringbuf_full", {9, "bpf"}}});
  ASSERT_TRUE(wait_for(path, "SELECT value FROM counters WHERE name = 'dropped_launch_ringbuf_full'", 9));
  ASSERT_TRUE(w->write_end(9000, 0, {{"dropped_launch_ringbuf_full", {11, "bpf"}}}).ok());
  auto db = open_capture_readonly(path);
  ASSERT_TRUE(db.ok()) << db.error().message;
  EXPECT_EQ(text(*db, "SELECT state FROM capture"), "complete");
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'dropped_launch_ringbuf_full'"), 11);
}

// A writer held up (here by another connection's write lock) past its
// backlog limit (age and count) drops the oldest launches and counts them,
// instead of queueing without bound; what arrives once it runs again is
// stored. A short queue, however old, is kept.
TEST(CaptureState, AWriterTooFarBehindDropsAndCountsTheOldest) {
  TempDir dir;
  std::string path = dir.file("behind.gpuobs");
  auto w = new_writer(path);
  w->set_max_backlog(std::chrono::milliseconds(200), 50);
  auto lock = Db::open(path, SQLITE_OPEN_READWRITE);
  ASSERT_TRUE(lock.ok());
  ASSERT_TRUE(lock->exec("BEGIN EXCLUSIVE").ok());
  w->start();
  w->push(launch(42, 2000, 1));  // taken at once; its insert waits for the lock
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  for (int i = 0; i < 100; ++i) w->push(launch(42, 3000 + i, 2));  // queued behind it
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  ASSERT_TRUE(lock->exec("COMMIT").ok());  // the writer goes on, 1.2 s behind
  { Db closed = std::move(*lock); }        // (write_end needs the file to itself)
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (int i = 0; i < 10; ++i) w->push(launch(42, 4000 + i, 3));
  w->stop();
  WriterStats st = w->stats();
  EXPECT_EQ(st.launches, 11u);
  EXPECT_EQ(st.backlog_dropped, 100u);
  EXPECT_EQ(st.failed_rows, 0u);
  ASSERT_TRUE(w->write_end(9000, 0, {}).ok());
  auto db = open_capture_readonly(path);
  ASSERT_TRUE(db.ok()) << db.error().message;
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM kernel_launches WHERE function = 2"), 0);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM kernel_launches"), 11);
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'dropped_store_backlog'"), 100);
}

// A writer killed with -9 leaves a capture that says so, with the counters of
// its last commit, and `report capture` prints them.
TEST(CaptureState, KilledWriterLeavesAnIncompleteCaptureWithItsCounters) {
  TempDir dir;
  std::string path = dir.file("killed.gpuobs");
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto w = new_writer(path);
    w->start();
    w->set_counters({{"dropped_launch_ringbuf_full", {5, "bpf"}}});
    for (int i = 0; i < 1000; ++i) w->push(launch(42, 2000 + i, 1));
    std::this_thread::sleep_for(std::chrono::milliseconds(400));  // a few batches committed
    ::kill(::getpid(), SIGKILL);
  }
  int st = 0;
  ASSERT_EQ(::waitpid(pid, &st, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(st));
  auto [rc, out] = gpuobs_cli("report capture --format csv " + path);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find(kStateUnfinished), std::string::npos) << out;
  EXPECT_NE(out.find("counter.dropped_launch_ringbuf_full,5"), std::string::npos) << out;
  EXPECT_NE(out.find("counter.stored_launch,1000"), std::string::npos) << out;
  EXPECT_NE(out.find("kernel_launches,1000"), std::string::npos) << out;
  auto [crc, cout_] = gpuobs_cli("check " + path);
  EXPECT_EQ(crc, 0) << cout_;
  EXPECT_NE(cout_.find("ok (integrity_check), capture incomplete"), std::string::npos) << cout_;
}

// A capture's state is its file's text: `gpuobs check` prints it escaped, so
// a capture from elsewhere cannot clear or rewrite the terminal (the
// issue-15 audit found it printed raw).
TEST(CaptureIntegrity, CheckPrintsAHostileStateEscaped) {
  TempDir dir;
  std::string path = dir.file("hostile.gpuobs");
  write_capture(path, 10);
  {
    auto db = Db::open(path, SQLITE_OPEN_READWRITE);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->exec("UPDATE capture SET state = 'complete' || char(27) || '[2J' || char(13) || 'forged'").ok());
  }
  auto [rc, out] = gpuobs_cli("check " + path);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out.find('\x1b'), std::string::npos) << out;
  EXPECT_EQ(out.find('\r'), std::string::npos) << out;
  EXPECT_NE(out.find("capture complete\\e[2J\\rforged"), std::string::npos) << out;
}

// Random bytes over b-tree pages (seeded, several pages): every reader says
// the capture is corrupt and exits non-zero; check lists the damage.
TEST(CaptureIntegrity, DamagedPagesAreReportedByEveryReader) {
  TempDir dir;
  std::string clean = dir.file("clean.gpuobs");
  write_capture(clean, 60000);
  auto [okrc, okout] = gpuobs_cli("check " + clean);
  EXPECT_EQ(okrc, 0) << okout;
  EXPECT_NE(okout.find(clean + ": ok (integrity_check), capture complete"), std::string::npos) << okout;

  // The pages of the launch table and its indexes, and the page size.
  std::vector<int64_t> pages;
  int64_t page_size;
  {
    auto db = Db::open(clean, SQLITE_OPEN_READONLY);
    ASSERT_TRUE(db.ok());
    page_size = scalar(*db, "PRAGMA page_size");
    Stmt st(db->get(), "SELECT pageno FROM dbstat WHERE name LIKE '%launch%' ORDER BY pageno");
    ASSERT_TRUE(st.valid()) << db->errmsg();
    while (st.step() == SQLITE_ROW) pages.push_back(sqlite3_column_int64(st.get(), 0));
  }
  ASSERT_GT(pages.size(), 20u);
  const std::string original = file_bytes(clean);
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    std::string bytes = original;
    // 20 random bytes over the header of each of 3 pages.
    for (int k = 0; k < 3; ++k) {
      int64_t page = pages[rng() % pages.size()];
      size_t at = static_cast<size_t>((page - 1) * page_size);
      for (int i = 0; i < 20; ++i) bytes[at + i] = static_cast<char>(rng() & 0xff);
    }
    std::string bad = dir.file("bad" + std::to_string(seed) + ".gpuobs");
    std::ofstream(bad, std::ios::binary) << bytes;
    for (const std::string& cmd :
         {"report launches " + bad, "report capture " + bad, "sql 'SELECT count(*) FROM kernel_launches' " + bad}) {
      auto [rc, out] = gpuobs_cli(cmd);
      EXPECT_NE(rc, 0) << cmd << "\n" << out;
      EXPECT_NE(out.find("capture is corrupt"), std::string::npos) << cmd << "\n" << out;
      EXPECT_NE(out.find("gpuobs check " + bad), std::string::npos) << cmd << "\n" << out;
    }
    auto [rc, out] = gpuobs_cli("check " + bad);
    EXPECT_EQ(rc, 1) << out;
    EXPECT_NE(out.find(bad + ": corrupt"), std::string::npos) << out;
    EXPECT_NE(out.find("capture is corrupt"), std::string::npos) << out;
  }
}

// A file too large for the quick check at open: a query that meets a damaged
// page says the capture is corrupt instead of printing a short result.
TEST(CaptureIntegrity, QueryMeetingCorruptionSaysSo) {
  TempDir dir;
  std::string path = dir.file("q.gpuobs");
  write_capture(path, 20000);
  int64_t page;
  int64_t page_size;
  {
    auto db = Db::open(path, SQLITE_OPEN_READONLY);
    page_size = scalar(*db, "PRAGMA page_size");
    page = scalar(*db,
                  "SELECT pageno FROM dbstat WHERE name = 'launch_runs' AND pagetype = 'leaf' "  // the launch runs
                  "ORDER BY pageno LIMIT 1 OFFSET 10");
  }
  ASSERT_GT(page, 1);
  std::string bytes = file_bytes(path);
  std::mt19937 rng(7);
  for (int i = 0; i < 20; ++i) bytes[static_cast<size_t>((page - 1) * page_size) + i] = static_cast<char>(rng());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  auto db = open_capture_readonly(path, OpenCheck::none);
  ASSERT_TRUE(db.ok()) << db.error().message;
  auto r = run_query(*db, "SELECT count(*), sum(grid_x) FROM kernel_launches", {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.rfind("capture is corrupt: " + path, 0), 0u) << r.error().message;
  EXPECT_NE(r.error().hint.find("gpuobs check " + path), std::string::npos);
  EXPECT_EQ(r.error().exit_code, 2);
}

// Newer than this build, by a schema_migrations row or by capture.abi_version:
// read with one warning; replay and record --force refuse to write, and leave
// the file as it was.
TEST(CaptureVersion, NewerCapturesAreReadWithAWarningAndNeverWritten) {
  TempDir dir;
  struct Case {
    const char* name;
    std::string sql;
  } cases[] = {
      {"migration", "INSERT INTO schema_migrations VALUES (" + std::to_string(schema_version() + 1) +
                        ", '999_future', '2030-01-01T00:00:00Z')"},
      {"abi", "UPDATE capture SET abi_version = " + std::to_string(GPUOBS_ABI_VERSION + 1)},
      {"user_version", "PRAGMA user_version = " + std::to_string(schema_version() + 1)},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::string path = dir.file(std::string(c.name) + ".gpuobs");
    write_capture(path, 100);
    {
      auto db = Db::open(path, SQLITE_OPEN_READWRITE);
      ASSERT_TRUE(db->exec(c.sql).ok());
    }
    const std::string before = file_bytes(path);

    auto [rc, out] = gpuobs_cli("report capture " + path + " " + path);  // the same file twice: one warning
    EXPECT_EQ(rc, 0) << out;
    EXPECT_EQ(count_of(out, "was written by a newer gpuobs"), 1u) << out;
    EXPECT_NE(out.find("kernel_launches"), std::string::npos) << out;
    auto [src, sout] = gpuobs_cli("sql 'SELECT count(*) AS n FROM kernel_launches' --format csv " + path);
    EXPECT_EQ(src, 0) << sout;
    EXPECT_NE(sout.find("n\n100\n"), std::string::npos) << sout;
    EXPECT_NE(sout.find("was written by a newer gpuobs"), std::string::npos) << sout;

    auto [rrc, rout] = gpuobs_cli("replay " + path);
    EXPECT_EQ(rrc, 2) << rout;
    EXPECT_NE(rout.find("refusing to write into " + path), std::string::npos) << rout;
    auto [frc, fout] = gpuobs_cli("record -f -o " + path + " -- true");
    EXPECT_EQ(frc, 2) << fout;
    EXPECT_NE(fout.find("refusing to replace " + path), std::string::npos) << fout;
    EXPECT_TRUE(file_bytes(path) == before) << "the newer capture was changed";
    EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
  }
}
