// gpuobsd system-wide: a workload started after the daemon (not under gpuobs
// record) is captured exactly; SIGTERM drains, commits and exits within 2 s.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "run_util.h"
#include "store/schema.h"
#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::testing;

TEST(Daemon, CapturesEveryProcessAndStopsCleanlyOnSigterm) {
  TempDir dir;
  std::string db_path = dir.file("daemon.gpuobs"), log = dir.file("log");
  pid_t d = ::fork();
  ASSERT_GE(d, 0);
  if (d == 0) {
    FILE* f = std::freopen(log.c_str(), "w", stderr);
    (void)f;
    ::execl(GPUOBSD_BIN, GPUOBSD_BIN, "--db", db_path.c_str(), "--libcuda", FAKE_LIBCUDA, "--no-gpu-devices",
            "--watch-dev", "/dev/ptmx", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Whatever assertion fails below, the daemon must not outlive the test.
  struct Reaper {
    pid_t pid;
    ~Reaper() {
      if (pid > 0 && ::kill(pid, SIGKILL) == 0) ::waitpid(pid, nullptr, 0);
    }
  } reaper{d};
  // Ready when it logs that it is capturing.
  for (int i = 0; i < 200 && read_file(log).find("capturing to") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_NE(read_file(log).find("capturing to"), std::string::npos) << read_file(log);

  std::string t1 = dir.file("t1.json"), t2 = dir.file("t2.json");
  ASSERT_EQ(run(std::string(LAUNCH_WORKLOAD) + " --lib " + FAKE_LIBCUDA +
                " --threads 2 --launches 3000 --child-launches 700 --truth " + t1),
            0);
  ASSERT_EQ(run(std::string(IOCTL_WORKLOAD) + " --repeat 4 --truth " + t2), 0);

  auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(d, SIGTERM), 0);
  int st = 0;
  ASSERT_EQ(::waitpid(d, &st, 0), d);
  reaper.pid = 0;
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << read_file(log);
  EXPECT_LT(secs, 2.0);

  auto db = open_capture_readonly(db_path);
  ASSERT_TRUE(db.ok()) << db.error().message;
  auto j1 = read_json(t1);
  int64_t pid = j1["pid"], child = j1["child"]["pid"];
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM kernel_launches WHERE tgid = " + std::to_string(pid)), 6000);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM kernel_launches WHERE tgid = " + std::to_string(child)), 700);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM ioctls WHERE cmd = 0x80045430"), 4);  // TIOCGPTN on /dev/ptmx
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM capture WHERE mode = 'daemon' AND end_mono_ns IS NOT NULL"), 1);
  EXPECT_EQ(scalar(*db, "SELECT sum(value) FROM counters WHERE name LIKE 'dropped_%'"), 0);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM pragma_integrity_check WHERE integrity_check = 'ok'"), 1);
}
