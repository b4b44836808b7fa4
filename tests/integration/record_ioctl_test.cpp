// The ioctl layer with real BPF on stand-in character devices: /dev/null
// (1:3, every request fails with ENOTTY) and /dev/ptmx (5:2, TIOCGPTN succeeds).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <map>
#include <tuple>

#include "run_util.h"
#include "store/schema.h"
#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::testing;

TEST(RecordIoctls, DeviceCommandAndReturnOfEveryCall) {
  TempDir dir;
  std::string out = dir.file("io.gpuobs"), truth = dir.file("truth.json");
  std::string cmd = std::string(GPUOBS_BIN) + " record -o " + out +
                    " --no-gpu-devices --watch-dev /dev/null --watch-dev /dev/ptmx -- " + IOCTL_WORKLOAD +
                    " --repeat 25 --truth " + truth;
  ASSERT_EQ(run(cmd), 0) << cmd;
  auto t = read_json(truth);
  ASSERT_EQ(t.size(), 100u);
  auto db = open_capture_readonly(out);
  ASSERT_TRUE(db.ok());

  struct stat null_st {
  }, ptmx_st{};
  ASSERT_EQ(::stat("/dev/null", &null_st), 0);
  ASSERT_EQ(::stat("/dev/ptmx", &ptmx_st), 0);
  auto dev_of = [&](const std::string& d) {
    const struct stat& s = d == "/dev/null" ? null_st : ptmx_st;
    return std::make_pair<int64_t, int64_t>(major(s.st_rdev), minor(s.st_rdev));
  };
  // (major, minor, fd, cmd, ret) -> count, from the truth and from the capture.
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>, int> want, got;
  for (const auto& c : t) {
    auto [maj, min] = dev_of(c["device"]);
    ++want[{maj, min, c["fd"].get<int64_t>(), c["cmd"].get<int64_t>(), c["ret"].get<int64_t>()}];
  }
  Stmt st(db->get(), "SELECT dev_major, dev_minor, fd, cmd, ret, latency_ns, tgid FROM ioctls");
  int64_t tgid = -1;
  while (st.step() == SQLITE_ROW) {
    auto col = [&](int i) { return sqlite3_column_int64(st.get(), i); };
    ++got[{col(0), col(1), col(2), col(3), col(4)}];
    EXPECT_GT(col(5), 0) << "latency";
    tgid = col(6);
  }
  EXPECT_EQ(got, want);
  // Both return paths are exercised: success and -ENOTTY.
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM ioctls WHERE ret = 0"), 25);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM ioctls WHERE ret = -25"), 75);
  EXPECT_EQ(
      scalar(*db, "SELECT count(*) FROM processes WHERE exe LIKE '%ioctl_workload' AND tgid = " + std::to_string(tgid)),
      1);
  EXPECT_EQ(scalar(*db, "SELECT sum(value) FROM counters WHERE name LIKE 'dropped_%'"), 0);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM watched_devices"), 2);
}

TEST(RecordIoctls, UnwatchedDevicesAreNotRecorded) {
  TempDir dir;
  std::string out = dir.file("io2.gpuobs");
  std::string cmd = std::string(GPUOBS_BIN) + " record -o " + out + " --no-gpu-devices --watch-dev /dev/ptmx -- " +
                    IOCTL_WORKLOAD + " --repeat 5 --truth " + dir.file("t.json");
  ASSERT_EQ(run(cmd), 0);
  auto db = open_capture_readonly(out);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM ioctls"), 10);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM ioctls WHERE dev_major = 1"), 0);
}
