// gpuobs record killed with -9 while its command launches as fast as it can
// (issue 15): the capture holds every launch issued more than the documented
// bound before the kill (docs/operations.md, "Crash"), says it is incomplete,
// and carries the counters of its last commit. Root and real BPF.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <sstream>
#include <thread>

#include "common/thread_priority.h"
#include "run_util.h"
#include "store/schema.h"
#include "store/writer.h"
#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::testing;

namespace {

int64_t mono_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// The progress file: "MONO_NS COUNT" lines, every 50 ms.
std::vector<std::pair<int64_t, int64_t>> progress_of(const std::string& path) {
  std::vector<std::pair<int64_t, int64_t>> out;
  std::istringstream lines(read_file(path));
  for (int64_t t, n; lines >> t >> n;) out.emplace_back(t, n);
  return out;
}

// A lower bound on the launches returned by time t: the last progress line at
// or before it (a line's count is read before its time).
int64_t issued_by(const std::vector<std::pair<int64_t, int64_t>>& progress, int64_t t) {
  int64_t n = 0;
  for (auto [pt, pn] : progress)
    if (pt <= t) n = pn;
  return n;
}

// An upper bound on the launches returned by time t: the count of the line
// after the first line stamped at or after t (that count was read after t).
// The workload writes a line every 50 ms, so up to 5,000 launches at 100,000/s
// separate the two bounds; -1 when the file has no such line.
int64_t issued_at_most_by(const std::vector<std::pair<int64_t, int64_t>>& progress, int64_t t) {
  for (size_t i = 0; i + 1 < progress.size(); ++i)
    if (progress[i].first >= t) return progress[i + 1].second;
  return -1;
}

// The process whose command line holds `word` (the test's own temporary path).
pid_t process_with_arg(const std::string& word) {
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = read_file("/proc/" + name + "/cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.rfind(LAUNCH_WORKLOAD, 0) == 0 && cmdline.find(word) != std::string::npos) return std::stoi(name);
  }
  return 0;
}

}  // namespace

// Documented bound (docs/operations.md): 400 ms. Asserted with a margin, so
// this is no timing test: every launch issued more than 1 s before the kill
// is in the capture, stored or counted as dropped. The workload is paced
// (2 x 50,000 launches/s) below what the writer stores on a 2-core machine.
// Ordinary load on the machine no longer starves the writer past the bound
// (its threads run at nice -10: the test below; docs/operations.md, "kill -9").
TEST(RecordKill, KillNineAtFullRateLosesOnlyTheLastMoments) {
  TempDir dir;
  std::string cap = dir.file("k.gpuobs"), progress = dir.file("progress");
  pid_t rec = ::fork();
  ASSERT_GE(rec, 0);
  if (rec == 0) {
    std::vector<std::string> args{
        GPUOBS_BIN, "record",           "-o",         cap,     "--libcuda",  FAKE_LIBCUDA, "--",     LAUNCH_WORKLOAD,
        "--lib",    FAKE_LIBCUDA,       "--threads",  "2",     "--launches", "1000000000", "--rate", "50000",
        "--truth",  dir.file("t.json"), "--progress", progress};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(GPUOBS_BIN, argv.data());
    ::_exit(127);
  }
  // Launching for 2.5 s at full rate.
  pid_t workload = 0;
  struct Reaper {  // no process outlives a failed assertion (ctest would wait on its output)
    pid_t& rec;
    pid_t& workload;
    ~Reaper() {
      if (rec > 0 && ::kill(rec, SIGKILL) == 0) ::waitpid(rec, nullptr, 0);
      if (workload > 0) ::kill(workload, SIGKILL);
    }
  } reaper{rec, workload};
  for (int i = 0; i < 400 && (issued_by(progress_of(progress), INT64_MAX) == 0 || !workload); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    if (!workload) workload = process_with_arg(progress);
  }
  ASSERT_GT(workload, 0) << "the workload did not start";
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  int64_t t_kill = mono_ns();
  ::kill(rec, SIGKILL);
  ASSERT_EQ(::waitpid(rec, nullptr, 0), rec);
  rec = -1;
  // The workload runs on (its probes went with the recorder) until two more
  // progress lines are written, so the file bounds what it had issued by the kill.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ::kill(workload, SIGKILL);

  auto prog = progress_of(progress);
  int64_t by_kill = issued_by(prog, t_kill);
  int64_t at_most_by_kill = issued_at_most_by(prog, t_kill);
  ASSERT_GE(at_most_by_kill, by_kill) << "no progress line after the kill";
  int64_t by_margin = issued_by(prog, t_kill - 1000000000);
  int64_t by_bound = issued_by(prog, t_kill - 400000000);
  ASSERT_GT(by_margin, 10000) << "the workload did not run";

  auto db = open_capture_readonly(cap);
  ASSERT_TRUE(db.ok()) << db.error().message;
  EXPECT_EQ(text(*db, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(text(*db, "SELECT state FROM capture"), kStateUnfinished);
  int64_t stored = scalar(*db, "SELECT count(*) FROM kernel_launches WHERE tgid = " + std::to_string(workload));
  int64_t dropped = scalar(*db, "SELECT coalesce(sum(value), 0) FROM counters WHERE name LIKE 'dropped_%'");
  int64_t ring_dropped =
      scalar(*db, "SELECT coalesce(sum(value), 0) FROM counters WHERE name LIKE 'dropped_%ringbuf%'");
  // The counters of the last commit are there, and agree with the rows.
  EXPECT_GT(scalar(*db, "SELECT value FROM counters WHERE name = 'submitted_launch'"), by_margin);
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'stored_launch'"),
            scalar(*db, "SELECT count(*) FROM kernel_launches"));
  EXPECT_EQ(ring_dropped, 0) << "the ring overflowed: the launches asserted below may be missing for that reason";
  EXPECT_GE(stored + dropped, by_margin);
  // Nothing the workload had not issued by the kill (a launch is stored from
  // its entry probe, so each of the 2 threads may have one not yet returned).
  // The lower bound by_kill lags by up to one progress period (the CI failure
  // of 2026-11-25: 114 launches stored past it, all issued before the kill).
  EXPECT_LE(stored, at_most_by_kill + 2);
  // The measured loss window: the capture holds every launch issued up to
  // this long before the kill.
  int64_t window_ms = -1;
  for (auto it = prog.rbegin(); it != prog.rend(); ++it)
    if (it->first <= t_kill && it->second <= stored) {
      window_ms = (t_kill - it->first) / 1000000;
      break;
    }
  std::printf(
      "kill -9 at full rate: %lld launches issued by the kill, %lld by kill - 400 ms, %lld by kill - 1 s, "
      "%lld stored, %lld dropped; nothing issued more than %lld ms before the kill is missing\n",
      static_cast<long long>(by_kill), static_cast<long long>(by_bound), static_cast<long long>(by_margin),
      static_cast<long long>(stored), static_cast<long long>(dropped), static_cast<long long>(window_ms));
}

// A clean end says so, in the record summary and in the file.
TEST(RecordKill, CleanEndIsMarkedComplete) {
  TempDir dir;
  std::string cap = dir.file("c.gpuobs"), out = dir.file("out");
  ASSERT_EQ(
      run(std::string(GPUOBS_BIN) + " record -o " + cap + " --libcuda " + FAKE_LIBCUDA + " -- " + LAUNCH_WORKLOAD +
          " --lib " + FAKE_LIBCUDA + " --threads 1 --launches 1000 --truth " + dir.file("t.json") + " 2> " + out),
      0)
      << read_file(out);
  EXPECT_NE(read_file(out).find("1000 kernel launches"), std::string::npos) << read_file(out);
  EXPECT_NE(read_file(out).find("capture written to " + cap + " (complete)\n"), std::string::npos) << read_file(out);
  auto db = open_capture_readonly(cap);
  ASSERT_TRUE(db.ok()) << db.error().message;
  EXPECT_EQ(text(*db, "SELECT state FROM capture"), "complete");
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'stored_launch'"), 1000);
}

namespace {

// Nice value of each thread of pid (field 19 of /proc/PID/task/TID/stat).
std::vector<int> thread_nice(pid_t pid) {
  std::vector<int> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::string stat = read_file(e.path().string() + "/stat");
    auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(stat.substr(close + 2));
    std::string f;
    for (int i = 3; i <= 19 && fields >> f; ++i)
      if (i == 19) out.push_back(std::stoi(f));
  }
  return out;
}

}  // namespace

// The ring consumer and the writer run at nice -10 (common/thread_priority.h):
// on a host loaded by ordinary work they were starved past the kill -9 bound
// (641 ms on the 2-core VM under two busy loops; 39-135 ms at -10). The
// command gpuobs record starts keeps its own priority.
TEST(RecordKill, CaptureThreadsRunAheadOfOrdinaryWorkAndTheCommandDoesNot) {
  TempDir dir;
  std::string cap = dir.file("n.gpuobs"), progress = dir.file("progress");
  pid_t rec = ::fork();
  ASSERT_GE(rec, 0);
  if (rec == 0) {
    std::vector<std::string> args{
        GPUOBS_BIN, "record",           "-o",         cap,     "--libcuda",  FAKE_LIBCUDA, "--",     LAUNCH_WORKLOAD,
        "--lib",    FAKE_LIBCUDA,       "--threads",  "1",     "--launches", "30000",      "--rate", "10000",
        "--truth",  dir.file("t.json"), "--progress", progress};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(GPUOBS_BIN, argv.data());
    ::_exit(127);
  }
  pid_t workload = 0;
  for (int i = 0; i < 200 && !workload; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    workload = process_with_arg(progress);
  }
  ASSERT_GT(workload, 0) << "the workload did not start";
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // recording: the consumer has polled
  std::vector<int> rec_nice = thread_nice(rec), cmd_nice = thread_nice(workload);
  int status = 0;
  ASSERT_EQ(::waitpid(rec, &status, 0), rec);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  // The consumer (the polling thread) and the writer at least.
  EXPECT_GE(std::count(rec_nice.begin(), rec_nice.end(), kCaptureNice), 2) << ::testing::PrintToString(rec_nice);
  ASSERT_FALSE(cmd_nice.empty());
  for (int n : cmd_nice) EXPECT_EQ(n, 0) << "the command's threads keep the priority they were started with";
}
