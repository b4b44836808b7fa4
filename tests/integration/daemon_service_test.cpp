// gpuobsd as a service (issue 8): the real binary, run directly (no systemd):
// segments rotated by size, each self-contained, launches summing exactly to
// the workload's; SIGHUP applies a new keep_segments; sd_notify messages on a
// real AF_UNIX datagram socket; SIGTERM exits within 2 s.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "daemon/segments.h"
#include "run_util.h"
#include "store/schema.h"
#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::testing;

namespace {

// Runs gpuobsd with args (stderr to log, extra environment); killed if the test ends first.
struct Daemon {
  pid_t pid = -1;
  Daemon(const std::vector<std::string>& args, const std::string& log, std::vector<std::string> env = {}) {
    pid = ::fork();
    if (pid == 0) {
      if (!std::freopen(log.c_str(), "w", stderr)) ::_exit(126);
      for (auto& e : env) ::putenv(e.data());
      std::vector<char*> argv{const_cast<char*>(GPUOBSD_BIN)};
      for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(GPUOBSD_BIN, argv.data());
      ::_exit(127);
    }
  }
  ~Daemon() {
    if (pid > 0 && ::kill(pid, SIGKILL) == 0) ::waitpid(pid, nullptr, 0);
  }
  bool wait_log(const std::string& log, const std::string& text, int ms = 10000) {
    for (int i = 0; i < ms / 50; ++i) {
      if (read_file(log).find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  // SIGTERM; returns seconds to exit and sets status.
  double stop(int& status) {
    auto t0 = std::chrono::steady_clock::now();
    ::kill(pid, SIGTERM);
    ::waitpid(pid, &status, 0);
    pid = -1;
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
};

// conf: an existing file (an explicit --config that is missing is an error).
std::vector<std::string> base_args(const std::string& conf, const std::string& state, const std::string& status) {
  { std::ofstream touch(conf, std::ios::app); }
  return {"--config", conf, "--state-dir", state, "--status-file", status,
          "--libcuda", FAKE_LIBCUDA, "--no-gpu-devices", "--ring-mb", "64"};
}

}  // namespace

TEST(DaemonService, RotatesBySizeEachSegmentSelfContainedAndSighupAppliesRetention) {
  TempDir dir;
  std::string state = dir.file("state"), log = dir.file("log"), conf = dir.file("gpuobsd.conf");
  { std::ofstream(conf) << "keep_segments = 100\n"; }
  auto args = base_args(conf, state, dir.file("status.json"));
  for (std::string a : {"--segment-max-bytes", "1MB"}) args.push_back(a);
  Daemon d(args, log);
  ASSERT_TRUE(d.wait_log(log, "capturing to")) << read_file(log);

  std::string truth = dir.file("t.json");
  ASSERT_EQ(run(std::string(LAUNCH_WORKLOAD) + " --lib " + FAKE_LIBCUDA + " --threads 2 --launches 30000 --truth " +
                truth),
            0);
  int64_t tgid = read_json(truth)["pid"];
  // Let the writer commit and the size check see the last segment grow.
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  int st = 0;
  double secs = d.stop(st);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << read_file(log);
  EXPECT_LT(secs, 2.0);

  auto segs = segments::list(state);
  ASSERT_GE(segs.size(), 3u) << read_file(log);
  int64_t total = 0;
  for (const auto& s : segs) {
    auto db = open_capture_readonly(s.path);
    ASSERT_TRUE(db.ok()) << s.path << ": " << db.error().message;
    EXPECT_EQ(scalar(*db, "SELECT count(*) FROM pragma_integrity_check WHERE integrity_check = 'ok'"), 1) << s.path;
    EXPECT_EQ(scalar(*db, "SELECT segment FROM capture WHERE mode = 'daemon'"), s.seq) << s.path;
    EXPECT_GT(scalar(*db, "SELECT count(*) FROM probes WHERE status = 'attached'"), 0) << s.path;
    int64_t n = scalar(*db, "SELECT count(*) FROM kernel_launches WHERE tgid = " + std::to_string(tgid));
    // Every launch points at a process row of this file.
    EXPECT_EQ(scalar(*db, "SELECT count(*) FROM kernel_launches k LEFT JOIN processes p ON p.id = k.process_id"
                          " WHERE p.id IS NULL"),
              0)
        << s.path;
    total += n;
  }
  EXPECT_EQ(total, 60000);
  auto cur = segments::current(state);
  ASSERT_TRUE(cur.ok());
  EXPECT_EQ(*cur, segs.back().path);

  // A restart starts a new segment, then SIGHUP with keep_segments = 2 deletes the oldest.
  size_t before = segs.size();
  Daemon d2(args, log + "2");
  ASSERT_TRUE(d2.wait_log(log + "2", "capturing to")) << read_file(log + "2");
  EXPECT_EQ(segments::list(state).size(), before + 1);
  EXPECT_EQ(segments::list(state).back().seq, segs.back().seq + 1);
  { std::ofstream(conf) << "keep_segments = 2\n"; }
  ::kill(d2.pid, SIGHUP);
  ASSERT_TRUE(d2.wait_log(log + "2", "keep_segments changed, applied")) << read_file(log + "2");
  for (int i = 0; i < 40 && segments::list(state).size() != 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(segments::list(state).size(), 2u);
  EXPECT_EQ(segments::list(state).back().seq, segs.back().seq + 1);
}

TEST(DaemonService, NotifiesSystemdAndStopsWithinTwoSecondsUnderLoad) {
  TempDir dir;
  std::string sock_path = dir.file("notify.sock"), log = dir.file("log");
  int sock = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(sock, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock_path.c_str());
  ASSERT_EQ(::bind(sock, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  timeval tv{0, 200000};
  ::setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::vector<std::string> msgs;
  auto read_msgs = [&](int ms) {
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    char buf[4096];
    while (std::chrono::steady_clock::now() < end) {
      ssize_t n = ::recv(sock, buf, sizeof buf, 0);
      if (n > 0) msgs.emplace_back(buf, static_cast<size_t>(n));
    }
  };
  auto has = [&](const std::string& prefix) {
    for (auto& m : msgs)
      if (m.rfind(prefix, 0) == 0) return true;
    return false;
  };
  std::string status = dir.file("status.json");
  Daemon d(base_args(dir.file("gpuobsd.conf"), dir.file("state"), status), log, {"NOTIFY_SOCKET=" + sock_path});
  ASSERT_TRUE(d.wait_log(log, "capturing to")) << read_file(log);
  read_msgs(1500);
  EXPECT_TRUE(has("READY=1")) << read_file(log);
  EXPECT_TRUE(has("STATUS=")) << read_file(log);
  // gpuobs status agrees: up, exit status 0; the status file is mode 0640.
  EXPECT_EQ(run(std::string(GPUOBS_BIN) + " status --status-file " + status + " > /dev/null"), 0);
  EXPECT_EQ(std::filesystem::status(status).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
                std::filesystem::perms::group_read);

  // Load that is still running at SIGTERM.
  std::string truth = dir.file("t.json");
  pid_t w = ::fork();
  if (w == 0) {
    ::execl(LAUNCH_WORKLOAD, LAUNCH_WORKLOAD, "--lib", FAKE_LIBCUDA, "--threads", "2", "--launches", "2000000",
            "--truth", truth.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  int st = 0;
  double secs = d.stop(st);
  ::kill(w, SIGKILL);
  ::waitpid(w, nullptr, 0);
  read_msgs(300);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << read_file(log);
  EXPECT_LT(secs, 2.0) << read_file(log);
  EXPECT_TRUE(has("STOPPING=1"));
  std::printf("SIGTERM under load: exited in %.3f s\n%s", secs, read_file(log).c_str());
  // Not running any more: exit status 3.
  EXPECT_EQ(run(std::string(GPUOBS_BIN) + " status --status-file " + status + " > /dev/null"), 3);
  ::close(sock);
}
