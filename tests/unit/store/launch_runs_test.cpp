// Launch runs (schema 16): the C++ codec round-trips every key and shape
// step, refuses malformed bytes without touching its output, and the
// launches view (SQL) unpacks exactly what the C++ decoder does, for runs the
// writer made (late launches and one nanosecond's fifth launch included) and
// for crafted runs with large and negative steps.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "events.h"
#include "store/db.h"
#include "store/launch_runs.h"
#include "store/schema.h"
#include "store/writer.h"
#include "test_util.h"
#include "writer_fixtures.h"

using namespace gpuobs;
using gpuobs::testing::fork_of;
using gpuobs::testing::kT0;
using gpuobs::testing::new_writer;
using gpuobs::testing::scalar;
using gpuobs::testing::TempDir;

namespace {

std::span<const uint8_t> bytes_of(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::vector<RunLaunch> decode(int64_t first, const std::string& bytes, bool* ok = nullptr) {
  std::vector<RunLaunch> out;
  bool good = decode_launch_run(first, bytes_of(bytes), out);
  if (ok) *ok = good;
  return out;
}

std::string encode(const std::vector<RunLaunch>& launches) {
  LaunchRunEncoder e;
  e.start(launches.front().key);
  for (const auto& l : launches) e.add(l.key, l.shape);
  return e.bytes();
}

// (id, shape_id) of every launch, by id: through the view, or by decoding
// launch_runs in C++ and adding launch_rows.
std::vector<RunLaunch> through_view(Db& db) {
  std::vector<RunLaunch> v;
  Stmt st(db.get(), "SELECT id, shape_id FROM launches ORDER BY id");
  while (st.step() == SQLITE_ROW) v.push_back({sqlite3_column_int64(st.get(), 0), sqlite3_column_int64(st.get(), 1)});
  return v;
}

std::vector<RunLaunch> through_codec(Db& db) {
  std::vector<RunLaunch> v;
  Stmt runs(db.get(), "SELECT id, launches FROM launch_runs");
  while (runs.step() == SQLITE_ROW) {
    const auto* p = static_cast<const uint8_t*>(sqlite3_column_blob(runs.get(), 1));
    EXPECT_TRUE(decode_launch_run(sqlite3_column_int64(runs.get(), 0),
                                  {p, static_cast<size_t>(sqlite3_column_bytes(runs.get(), 1))}, v));
  }
  Stmt rows(db.get(), "SELECT id, shape_id FROM launch_rows");
  while (rows.step() == SQLITE_ROW)
    v.push_back({sqlite3_column_int64(rows.get(), 0), sqlite3_column_int64(rows.get(), 1)});
  std::sort(v.begin(), v.end(), [](const RunLaunch& a, const RunLaunch& b) { return a.key < b.key; });
  return v;
}

gpuobs_launch launch(uint32_t tid, uint64_t ts, uint64_t fn) {
  gpuobs_launch l{};
  l.hdr = {GPUOBS_EV_LAUNCH, sizeof l, ts, 600, tid};
  l.function = fn;
  l.grid_x = l.grid_y = l.grid_z = 1;
  l.block_x = l.block_y = l.block_z = 32;
  l.api = 1;
  return l;
}

}  // namespace

TEST(LaunchRuns, EveryStepRoundTrips) {
  const std::vector<RunLaunch> launches = {
      {-8, 1},                            // before the capture's start
      {0, 1},                             // a key step of 8 and a shape step of 0
      {1, 300},                           // one nanosecond's second launch; a shape step up
      {1000000, 2},                       // a shape step down
      {8'001'000'000, int64_t{1} << 40},  // a key step of 8e9 (1 s, the most a run spans); a shape step of 40 bits
      {8'001'000'127, 1},                 // a varint's edges: 127, then 128 below
      {8'001'000'255, 129},
  };
  std::string bytes = encode(launches);
  bool ok = false;
  EXPECT_EQ(decode(launches.front().key, bytes, &ok), launches);
  EXPECT_TRUE(ok);
  // One launch: a step of 0 and its shape.
  EXPECT_EQ(encode({{5000, 3}}), std::string("\x00\x06", 2));
}

TEST(LaunchRuns, MalformedBytesAreRefusedAndWhatDecodesBeforeTheDamageIsKept) {
  // After a good first launch (step 0, shape 1: 00 02), each damage.
  const std::string good("\x00\x02", 2);
  const std::vector<std::string> bad = {
      std::string("\x05", 1),                                // a key step without its shape
      std::string("\x05\x80", 2),                            // a varint cut short
      std::string(11, '\xff') + std::string("\x01\x02", 2),  // a varint longer than 10 bytes
      std::string("\x00\x02", 2),                            // a second launch with the same key
      std::string("\x05\x01", 2),                            // shape 1 - 1: below 1
      std::string("\x88\xa0\xd9\xe6\x1d\x02", 6),            // a key step of 8e9 + 8: past the 1 s span
  };
  for (const std::string& b : bad) {
    std::vector<RunLaunch> out = {{7, 7}};
    EXPECT_FALSE(decode_launch_run(100, bytes_of(good + b), out)) << ::testing::PrintToString(b);
    EXPECT_EQ(out, (std::vector<RunLaunch>{{7, 7}, {100, 1}})) << ::testing::PrintToString(b);
  }
}

// The writer's runs, through the SQL view and through the codec: the same
// launches. 5,000 launches of 3 threads over 2 transactions, with 6 of one
// nanosecond (a run takes 4, launch_rows the rest) and 3 that arrive after
// later ones were stored (launch_rows).
TEST(LaunchRuns, TheViewUnpacksWhatTheWriterStored) {
  TempDir dir;
  auto path = dir.file("r.gpuobs");
  auto w = new_writer(path);
  w->start();
  w->push(fork_of(600, kT0 + 1));
  std::mt19937 rng(3);
  uint64_t ts = kT0 + 1000;
  for (int i = 0; i < 4000; ++i) {
    ts += 1 + rng() % 5000;
    w->push(launch(600 + i % 3, ts, 0x100 + rng() % 20));
  }
  for (int i = 0; i < 6; ++i) w->push(launch(600, ts + 10, 0x100));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));                        // committed
  for (int i = 0; i < 3; ++i) w->push(launch(601, kT0 + 5000 + uint64_t(i), 0x101));  // late
  for (int i = 0; i < 991; ++i) w->push(launch(602, ts + 100 + uint64_t(i) * 3, 0x102));
  w->stop();
  ASSERT_TRUE(w->write_end(ts + 1'000'000, 0, {}).ok());
  auto db = Db::open(path, SQLITE_OPEN_READONLY);
  ASSERT_TRUE(db.ok());
  auto view = through_view(*db);
  EXPECT_EQ(view.size(), 5000u);
  EXPECT_TRUE(view == through_codec(*db));
  // The fifth and sixth launch of one nanosecond and the 3 late ones: rows, with n = 4..7.
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM launch_rows"), 5);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM launch_rows WHERE (id & 7) < 4"), 0);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM launches WHERE id >> 3 = " + std::to_string(ts + 10 - kT0)), 6);
  EXPECT_EQ(scalar(*db, "SELECT max(length(launches)) <= 64 * 20 FROM launch_runs"), 1);
  EXPECT_EQ(scalar(*db, "SELECT sum(launches) FROM launch_agg"), 5000);

  // kernel_launches_between (store/launch_table.h): every column as the view
  // has it, for the whole capture and for a window, in id order.
  auto rows = [&](const std::string& from) {
    std::string all;
    Stmt st(db->get(), "SELECT * FROM " + from);
    EXPECT_TRUE(st.valid()) << db->errmsg();
    while (st.step() == SQLITE_ROW) {
      for (int c = 0; c < sqlite3_column_count(st.get()); ++c) {
        const unsigned char* t = sqlite3_column_text(st.get(), c);
        all += t ? reinterpret_cast<const char*>(t) : "NULL";
        all += ',';
      }
      all += '\n';
    }
    return all;
  };
  const std::string whole = rows("kernel_launches ORDER BY id");
  EXPECT_EQ(std::count(whole.begin(), whole.end(), '\n'), 5000);
  EXPECT_EQ(rows("kernel_launches_between(NULL, NULL)"), whole);
  EXPECT_EQ(rows("kernel_launches_between()"), whole);
  const std::string lo = std::to_string(kT0 + 5000), hi = std::to_string(ts + 10);
  const std::string window = rows("kernel_launches WHERE ts_mono_ns BETWEEN " + lo + " AND " + hi + " ORDER BY id");
  EXPECT_GT(std::count(window.begin(), window.end(), '\n'), 1000);
  EXPECT_LT(window.size(), whole.size());
  EXPECT_EQ(rows("kernel_launches_between(" + lo + ", " + hi + ")"), window);
  EXPECT_EQ(rows("kernel_launches_between(" + hi + ", " + lo + ")"), "");
}

// Crafted runs with the steps the writer rarely makes: the view agrees.
TEST(LaunchRuns, TheViewDecodesLargeAndNegativeStepsAsTheCodecDoes) {
  TempDir dir;
  auto db = Db::open(dir.file("c.gpuobs"), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(migrate(*db).ok());
  std::mt19937_64 rng(11);
  int64_t key = -64;
  for (int r = 0; r < 50; ++r) {
    std::vector<RunLaunch> run;
    for (int i = 0; i < 1 + r % 64; ++i) {
      key += 1 + static_cast<int64_t>(rng() % (uint64_t{1} << (1 + rng() % 32)));  // steps within a run's 1 s
      run.push_back({key, 1 + static_cast<int64_t>(rng() % (uint64_t{1} << (rng() % 40)))});
    }
    std::string bytes = encode(run);
    Stmt ins(db->get(), "INSERT INTO launch_runs (id, launches) VALUES (?, ?)");
    ins.bind(1, run.front().key);
    sqlite3_bind_blob(ins.get(), 2, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
    ASSERT_EQ(ins.exec(), SQLITE_DONE);
  }
  auto view = through_view(*db);
  EXPECT_EQ(view.size(), size_t(50 * 51 / 2 + 50 * 0));  // 1 + 2 + ... + 50 launches
  EXPECT_TRUE(view == through_codec(*db));
}

// A capture still being written gains shapes: a connection that read
// launches before reads the new ones with their columns, not NULLs.
TEST(LaunchRuns, TheFunctionReadsShapesAddedSinceItsLastQuery) {
  TempDir dir;
  auto path = dir.file("live.gpuobs");
  auto w = new_writer(path);
  w->start();
  w->push(fork_of(600, kT0 + 1));
  for (int i = 0; i < 100; ++i) w->push(launch(600, kT0 + 1000 + uint64_t(i) * 10, 0x100));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // committed
  auto db = Db::open(path, SQLITE_OPEN_READONLY);
  ASSERT_TRUE(db.ok()) << db.error().message;
  EXPECT_EQ(scalar(*db, "SELECT count(api) FROM kernel_launches_between()"), 100);
  for (int i = 0; i < 50; ++i) w->push(launch(600, kT0 + 100000 + uint64_t(i) * 10, 0x200 + uint64_t(i)));
  w->stop();  // committed (no write_end: it folds the WAL in, which an open reader holds back)
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM kernel_launches_between()"), 150);
  EXPECT_EQ(scalar(*db, "SELECT count(api) FROM kernel_launches_between()"), 150);
  EXPECT_EQ(scalar(*db, "SELECT count(DISTINCT function) FROM kernel_launches_between()"), 51);
}
