// gpuobsd as a service (issue 8): the real binary, run directly (no systemd):
// segments rotated by size, each self-contained, launches summing exactly to
// the workloads'; SIGHUP applies a new keep_segments; sd_notify messages on a
// real AF_UNIX datagram socket; SIGTERM exits within 2 s; kill -9 under load,
// SIGTERM right after a workload, and a full disk (a tmpfs this test mounts).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "capture/procfs.h"
#include "daemon_state/segments.h"
#include "daemon_util.h"
#include "run_util.h"
#include "store/schema.h"
#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::testing;

TEST(DaemonService, RotatesBySizeEachSegmentSelfContainedAndSighupAppliesRetention) {
  TempDir dir;
  std::string state = dir.file("state"), log = dir.file("log"), conf = dir.file("gpuobsd.conf");
  { std::ofstream(conf) << "keep_segments = 100\n"; }
  auto args = base_args(conf, state, dir.file("status.json"));
  for (std::string a : {"--segment-max-bytes", "1MB"}) args.push_back(a);
  Daemon d(args, log);
  ASSERT_TRUE(d.wait_log(log, "capturing to")) << read_file(log);

  // Three workloads, one after the other, each past the size limit: every one
  // but the first is a new process in a rotated segment (its cgroup comes from
  // the origin lookup the new writer got).
  std::string tgids;
  for (int i = 0; i < 3; ++i) {
    std::string truth = dir.file("t" + std::to_string(i) + ".json");
    ASSERT_EQ(
        run(std::string(LAUNCH_WORKLOAD) + " --lib " + FAKE_LIBCUDA + " --threads 2 --launches 10000 --truth " + truth),
        0);
    tgids += (tgids.empty() ? "" : ",") + std::to_string(read_json(truth)["pid"].get<int64_t>());
    // Let the writer commit and the size check (every 250 ms) see the segment grow.
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
  }
  std::string my_cgroup = cgroup_path_from_file(read_file("/proc/self/cgroup"));
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
    int64_t n = scalar(*db, "SELECT count(*) FROM kernel_launches WHERE tgid IN (" + tgids + ")");
    // The workloads' process rows carry their cgroup in every segment.
    if (n > 0) {  // braces: EXPECT_EQ is an if/else inside
      EXPECT_EQ(text(*db, "SELECT group_concat(DISTINCT coalesce(cgroup, 'NULL')) FROM processes WHERE tgid IN (" +
                              tgids + ")"),
                my_cgroup)
          << s.path;
    }
    // Every launch points at a process row of this file.
    EXPECT_EQ(scalar(*db,
                     "SELECT count(*) FROM kernel_launches k LEFT JOIN processes p ON p.id = k.process_id"
                     " WHERE p.id IS NULL"),
              0)
        << s.path;
    total += n;
  }
  EXPECT_EQ(total, 60000) << read_file(log);
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
  // --format csv: the health document as key,value rows (issue 20).
  std::string csv = output_of(std::string(GPUOBS_BIN) + " status --format csv --status-file " + status);
  EXPECT_EQ(csv.rfind("key,value\n", 0), 0u) << csv;
  EXPECT_NE(csv.find("\nup,1\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\npid,"), std::string::npos) << csv;
  EXPECT_EQ(run(std::string(GPUOBS_BIN) + " status --format xml --status-file " + status + " 2>/dev/null"), 2);
  EXPECT_EQ(
      std::filesystem::status(status).permissions() & std::filesystem::perms::all,
      std::filesystem::perms::owner_read | std::filesystem::perms::owner_write | std::filesystem::perms::group_read);

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

// kill -9 while 2 threads launch 40000 times a second: what was committed is
// intact, and nothing older than a writer batch (100 ms, userspace/store/
// writer.cpp) plus a consumer poll (100 ms) plus a margin is missing. The
// restarted daemon starts the next segment and records a new workload exactly.
TEST(DaemonService, KillNineUnderLoadKeepsAllButTheLastBatches) {
  TempDir dir;
  std::string state = dir.file("state"), log = dir.file("log"), progress = dir.file("progress");
  auto args = base_args(dir.file("gpuobsd.conf"), state, dir.file("status.json"));
  auto d = std::make_unique<Daemon>(args, log);
  ASSERT_TRUE(d->wait_log(log, "capturing to")) << read_file(log);
  auto crashed = segments::current(state);
  ASSERT_TRUE(crashed.ok());

  pid_t w = start_workload({"--threads", "2", "--launches", "100000000", "--rate", "20000", "--truth",
                            dir.file("t.json"), "--progress", progress});
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  int64_t t_kill = mono_ns();
  ::kill(d->pid, SIGKILL);
  ::waitpid(d->pid, nullptr, 0);
  d->pid = -1;
  // The workload runs on until two more progress lines are written, so the
  // file bounds what it had issued by the kill.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ::kill(w, SIGKILL);
  ::waitpid(w, nullptr, 0);

  // Launches the workload had issued by the cut-off, and at most by the kill:
  // the last line stamped before the kill lags it by up to one progress
  // period, so the upper bound is the line after the first one stamped at or
  // after the kill (as in record_kill_test.cpp: a faster daemon stored 382
  // launches past the lagging count, all issued before the kill).
  constexpr int64_t kBatchMs = 100, kPollMs = 100, kMarginMs = 200;
  int64_t cutoff = t_kill - (kBatchMs + kPollMs + kMarginMs) * 1000000;
  int64_t by_cutoff = 0, by_kill = 0, at_most_by_kill = -1;
  std::vector<std::pair<int64_t, int64_t>> prog;
  std::istringstream lines(read_file(progress));
  for (int64_t t, n; lines >> t >> n;) {
    if (t <= cutoff) by_cutoff = n;
    if (t <= t_kill) by_kill = n;
    prog.emplace_back(t, n);
  }
  for (size_t i = 0; i + 1 < prog.size(); ++i)
    if (prog[i].first >= t_kill) {
      at_most_by_kill = prog[i + 1].second;
      break;
    }
  ASSERT_GT(by_cutoff, 20000) << "the workload did not run";
  ASSERT_GE(at_most_by_kill, by_kill) << "no progress line after the kill";

  auto db = open_capture_readonly(*crashed);
  ASSERT_TRUE(db.ok()) << db.error().message;
  EXPECT_EQ(text(*db, "PRAGMA integrity_check"), "ok");
  // It says it was cut short, and holds the counters of its last commit.
  EXPECT_EQ(text(*db, "SELECT substr(state, 1, 10) FROM capture"), "incomplete");
  EXPECT_GE(scalar(*db, "SELECT value FROM counters WHERE name = 'submitted_launch'"), by_cutoff);
  int64_t stored = scalar(*db, "SELECT count(*) FROM kernel_launches WHERE tgid = " + std::to_string(w));
  EXPECT_GE(stored, by_cutoff);
  // The workload went on for a moment after the kill; none of that is here.
  EXPECT_LE(stored, at_most_by_kill + 2);
  std::printf("kill -9: %lld launches issued by the kill, %lld by kill - %lld ms, %lld stored\n",
              static_cast<long long>(by_kill), static_cast<long long>(by_cutoff),
              static_cast<long long>(kBatchMs) + kPollMs + kMarginMs, static_cast<long long>(stored));

  // Restart: a new segment (the next number), never the crashed one.
  int64_t crashed_seq = segments::list(state).back().seq;
  d = std::make_unique<Daemon>(args, log + "2");
  ASSERT_TRUE(d->wait_log(log + "2", "capturing to")) << read_file(log + "2");
  auto segs = segments::list(state);
  ASSERT_EQ(segs.size(), 2u);
  EXPECT_EQ(segs.back().seq, crashed_seq + 1);
  EXPECT_NE(segs.back().path, *crashed);
  EXPECT_EQ(*segments::current(state), segs.back().path);
  std::string truth = dir.file("t2.json");
  ASSERT_EQ(
      run(std::string(LAUNCH_WORKLOAD) + " --lib " + FAKE_LIBCUDA + " --threads 1 --launches 5000 --truth " + truth),
      0);
  int64_t tgid = read_json(truth)["pid"];
  int st = 0;
  d->stop(st);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << read_file(log + "2");
  EXPECT_EQ(launches_of(segs.back().path, tgid), 5000);
  EXPECT_EQ(launches_of(*crashed, tgid), 0);
}

// After a workload has finished (nothing more arrives), SIGTERM drains the
// ring and the writer: every launch is stored, and gpuobsd exits 0 in < 2 s.
TEST(DaemonService, SigtermAfterAWorkloadStoresEveryLaunch) {
  TempDir dir;
  std::string state = dir.file("state"), log = dir.file("log"), truth = dir.file("t.json");
  Daemon d(base_args(dir.file("gpuobsd.conf"), state, dir.file("status.json")), log);
  ASSERT_TRUE(d.wait_log(log, "capturing to")) << read_file(log);
  ASSERT_EQ(
      run(std::string(LAUNCH_WORKLOAD) + " --lib " + FAKE_LIBCUDA + " --threads 2 --launches 50000 --truth " + truth),
      0);
  int64_t tgid = read_json(truth)["pid"];
  int st = 0;
  double secs = d.stop(st);  // at once: the last launches are still in the ring or the writer's queue
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << read_file(log);
  EXPECT_LT(secs, 2.0);
  auto cur = segments::current(state);
  ASSERT_TRUE(cur.ok());
  EXPECT_EQ(launches_of(*cur, tgid), 100000) << read_file(log);
  std::printf("SIGTERM after 100000 launches: exited in %.3f s\n", secs);
}

// state_dir on a 3 MiB tmpfs, segments of 300 KiB: the disk fills, rotation
// fails (and is retried), gpuobsd keeps running and counts the rows it could
// not store (status, then the counters table); no half-made segment is left;
// once the file system has room again, a new workload is stored exactly.
TEST(DaemonService, FullDiskCountsLostRowsKeepsRunningAndRecovers) {
  TempDir dir;
  std::string state = dir.file("state"), log = dir.file("log"), status = dir.file("status.json");
  std::filesystem::create_directories(state);
  ASSERT_EQ(run("mount -t tmpfs -o size=3M gpuobs-test-full " + state), 0);
  struct Unmount {
    std::string path;
    ~Unmount() { run("umount " + path + " 2>/dev/null || umount -l " + path); }
  } unmount{state};  // after the daemon below has been killed (reverse order)
  auto args = base_args(dir.file("gpuobsd.conf"), state, status);
  for (std::string a : {"--segment-max-bytes", "300KB"}) args.push_back(a);
  Daemon d(args, log);
  ASSERT_TRUE(d.wait_log(log, "capturing to")) << read_file(log);

  // Far more launches than 3 MiB can hold.
  pid_t w = start_workload({"--threads", "2", "--launches", "150000", "--truth", dir.file("t.json")});
  std::string status_cmd = std::string(GPUOBS_BIN) + " status --format json --status-file " + status;
  uint64_t failed = 0;
  std::string full_segment;
  for (int i = 0; i < 100 && failed == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto j = nlohmann::json::parse(output_of(status_cmd), nullptr, false);
    if (j.is_object() && j.contains("store_failed")) {
      failed = j["store_failed"].get<uint64_t>();
      full_segment = j["segment_path"].get<std::string>();
    }
  }
  ::waitpid(w, nullptr, 0);
  EXPECT_GT(failed, 0u) << read_file(log);
  // Still up: the process, and a status file sampled after the disk filled.
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  EXPECT_EQ(::kill(d.pid, 0), 0);
  auto j = nlohmann::json::parse(output_of(status_cmd), nullptr, false);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["up"], true) << j.dump();
  EXPECT_TRUE(std::filesystem::exists(full_segment));

  // The segment was past its size limit: rotation was tried and failed, or
  // succeeded once the oldest segment was deleted (the test below).
  std::string l = read_file(log);
  EXPECT_TRUE(l.find("cannot start segment") != std::string::npos || l.find("(emergency") != std::string::npos) << l;

  ASSERT_EQ(run("mount -o remount,size=64M " + state), 0);
  // Rotation is retried 5 s after a failure, and now succeeds.
  for (int i = 0; i < 70 && segments::list(state).size() < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_GE(segments::list(state).size(), 2u) << read_file(log);
  std::string truth = dir.file("t2.json");
  ASSERT_EQ(
      run(std::string(LAUNCH_WORKLOAD) + " --lib " + FAKE_LIBCUDA + " --threads 1 --launches 3000 --truth " + truth),
      0);
  int64_t tgid = read_json(truth)["pid"];
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  int st = 0;
  double secs = d.stop(st);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << read_file(log);
  EXPECT_LT(secs, 2.0);
  // Every segment file is a capture (no empty file from a failed rotation);
  // the new workload is all there, in whichever segments it went to.
  int64_t total = 0;
  auto segs = segments::list(state);
  for (const auto& s : segs) {
    auto db = open_capture_readonly(s.path);
    ASSERT_TRUE(db.ok()) << db.error().message;
    EXPECT_EQ(text(*db, "PRAGMA integrity_check"), "ok") << s.path;
    total += scalar(*db, "SELECT count(*) FROM kernel_launches WHERE tgid = " + std::to_string(tgid));
  }
  EXPECT_EQ(total, 3000) << read_file(log);
  auto db = open_capture_readonly(full_segment);
  ASSERT_TRUE(db.ok()) << db.error().message;
  EXPECT_GE(scalar(*db, "SELECT value FROM counters WHERE name = 'store_failed_rows'"), static_cast<int64_t>(failed));
  std::printf("full disk: %llu rows not stored by the first status that showed it; %zu segments\n",
              static_cast<unsigned long long>(failed), segs.size());
}

// An old segment (5.8 MB, sequence 1) fills most of an 8 MiB state_dir (an
// empty segment alone is about 1.2 MiB): when the disk fills, gpuobsd
// deletes that oldest segment itself (logged as an emergency deletion) and
// goes on in a new segment.
TEST(DaemonService, FullDiskDeletesTheOldestSegmentByItself) {
  TempDir dir;
  std::string state = dir.file("state"), log = dir.file("log"), status = dir.file("status.json");
  std::filesystem::create_directories(state);
  ASSERT_EQ(run("mount -t tmpfs -o size=8M gpuobs-test-full2 " + state), 0);
  struct Unmount {
    std::string path;
    ~Unmount() { run("umount " + path + " 2>/dev/null || umount -l " + path); }
  } unmount{state};
  std::string old = state + "/" + segments::segment_name(1, 1577836800);
  ASSERT_EQ(run("head -c 5800000 /dev/zero > " + old), 0);
  auto args = base_args(dir.file("gpuobsd.conf"), state, status);
  for (std::string a : {"--segment-max-bytes", "200KB"}) args.push_back(a);
  Daemon d(args, log);
  ASSERT_TRUE(d.wait_log(log, "capturing to")) << read_file(log);
  pid_t w = start_workload({"--threads", "1", "--launches", "60000", "--truth", dir.file("t.json")});
  ::waitpid(w, nullptr, 0);
  for (int i = 0; i < 80 && std::filesystem::exists(old); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(std::filesystem::exists(old)) << read_file(log);
  EXPECT_NE(read_file(log).find("deleted (emergency"), std::string::npos) << read_file(log);
  EXPECT_EQ(::kill(d.pid, 0), 0);
  // It went on in a rotated segment (the one it started in may have been
  // deleted too since issue 15, when its batches failed on the full disk).
  auto segs = segments::list(state);
  ASSERT_FALSE(segs.empty()) << read_file(log);
  EXPECT_GE(segs.back().seq, 3) << read_file(log);
  for (const auto& s : segs) EXPECT_GT(s.seq, 1) << s.path;
  // The new segments may fill the disk again before SIGTERM (60000 launches,
  // no byte limit below the disk's): then the end row cannot be written and
  // gpuobsd says so and exits 1. Either way it exits by itself, not by a signal.
  int st = 0;
  d.stop(st);
  ASSERT_TRUE(WIFEXITED(st)) << read_file(log);
  if (WEXITSTATUS(st) != 0) {
    EXPECT_EQ(WEXITSTATUS(st), 1);
    EXPECT_NE(read_file(log).find("disk is full"), std::string::npos) << read_file(log);
  }
}
