// gpuobsd under failing and hostile conditions (issue 15), the real binary:
// a full state directory (tmpfs mounts of a few MiB) at start, at rotation
// and across restarts; the metrics endpoint flooded with connections and the
// process's fd limit lowered under it (prlimit), where it must neither spin
// nor stop rotating segments.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <set>
#include <thread>

#include "daemon_state/segments.h"
#include "daemon_util.h"
#include "run_util.h"
#include "store/schema.h"
#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::testing;

namespace {

// A tmpfs of size at path, unmounted when the test ends (declare it before
// the Daemon, so that the daemon is killed first).
struct Tmpfs {
  std::string path;
  bool ok = false;
  Tmpfs(const std::string& p, const std::string& size) : path(p) {
    std::filesystem::create_directories(p);
    ok = run("mount -t tmpfs -o size=" + size + " gpuobs-test-limits " + p) == 0;
  }
  ~Tmpfs() {
    if (ok) run("umount " + path + " 2>/dev/null || umount -l " + path);
  }
};

// Fills the file system of dir to the last block with one file that is not a segment.
void fill(const std::string& dir) { run("head -c 4G /dev/zero > " + dir + "/ballast 2>/dev/null"); }

uint64_t free_bytes(const std::string& dir) {
  struct statvfs v {};
  return ::statvfs(dir.c_str(), &v) == 0 ? static_cast<uint64_t>(v.f_bavail) * v.f_frsize : 0;
}

// A fake finished segment of bytes zero bytes (its content does not matter to retention).
std::string old_segment(const std::string& dir, int64_t seq, size_t bytes) {
  std::string p = dir + "/" + segments::segment_name(seq, 1577836800 + seq);
  run("head -c " + std::to_string(bytes) + " /dev/zero > " + p);
  return p;
}

// Every file in dir whose name starts with capture- (segments and their -wal/-shm/-journal).
std::set<std::string> capture_files(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().rfind("capture-", 0) == 0) out.insert(e.path().filename().string());
  return out;
}

int64_t counter(const std::string& capture, const std::string& name) {
  auto db = open_capture_readonly(capture);
  if (!db.ok()) return -1;
  return scalar(*db, "SELECT coalesce(sum(value), 0) FROM counters WHERE name = '" + name + "'");
}

// The exit status of a gpuobsd that must stop by itself (-1: still running after 60 s; killed).
int wait_exit(Daemon& d) {
  for (int i = 0; i < 600; ++i) {
    int st = 0;
    if (::waitpid(d.pid, &st, WNOHANG) == d.pid) {
      d.pid = -1;
      return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return -1;
}

// --- the metrics endpoint ---

int connect_to(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// What the server sent on fd until it closed it, or what came in ms.
std::string read_reply(int fd, int ms) {
  std::string out;
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now()).count();
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(left, 0))) <= 0) return out;
    char buf[65536];
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

std::string http_get(uint16_t port) {
  int fd = connect_to(port);
  if (fd < 0) return "";
  std::string req = "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
  if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) req.clear();
  std::string r = req.empty() ? "" : read_reply(fd, 3000);
  ::close(fd);
  return r;
}

// A /metrics answer (200) containing want, tried for up to 5 s.
bool metrics_show(uint16_t port, const std::string& want, std::string* last) {
  for (int i = 0; i < 50; ++i) {
    *last = http_get(port);
    if (last->rfind("HTTP/1.1 200", 0) == 0 && last->find(want) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

// utime + stime of every thread of pid, in seconds.
double cpu_seconds(pid_t pid) {
  std::string s = read_file("/proc/" + std::to_string(pid) + "/stat");
  std::istringstream in(s.substr(s.rfind(')') + 2));
  std::string f;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && in >> f; ++i) {  // fields 3.. after "pid (comm)"
    if (i == 14) utime = std::stoull(f);
    if (i == 15) stime = std::stoull(f);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

std::set<int> open_fds(pid_t pid) {
  std::set<int> fds;
  for (const auto& e : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd"))
    fds.insert(std::stoi(e.path().filename().string()));
  return fds;
}

// The soft limit only: raising a hard limit again takes CAP_SYS_RESOURCE,
// which a test in a container may not have.
bool set_nofile(pid_t pid, rlim_t n) {
  rlimit rl{};
  if (::prlimit(pid, RLIMIT_NOFILE, nullptr, &rl) != 0) return false;
  rl.rlim_cur = n;
  return ::prlimit(pid, RLIMIT_NOFILE, &rl, nullptr) == 0;
}

size_t occurrences(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

}  // namespace

// (b) 60 old segments (1 MB each) and a ballast file fill a 64 MiB state
// directory to the last block. gpuobsd deletes the oldest segments until
// 16 MiB are free (a quarter of a smaller file system): 17 of the 60. It
// starts, and stores a workload exactly; the deletions are counted in the
// status file and in the capture.
TEST(DaemonLimits, StartsOnAFullDiskByDeletingTheOldestSegments) {
  TempDir dir;
  std::string state = dir.file("state"), log = dir.file("log"), status = dir.file("status.json");
  Tmpfs fs(state, "64M");
  ASSERT_TRUE(fs.ok);
  std::vector<std::string> old;
  for (int64_t seq = 1; seq <= 60; ++seq) old.push_back(old_segment(state, seq, 1000000));
  fill(state);
  ASSERT_LT(free_bytes(state), 64u << 10);
  auto args = base_args(dir.file("gpuobsd.conf"), state, status);
  for (std::string a : {"--keep-segments", "100"}) args.push_back(a);  // retention alone deletes none
  Daemon d(args, log);
  ASSERT_TRUE(d.wait_log(log, "capturing to")) << read_file(log);
  for (int i = 0; i < 60; ++i) EXPECT_EQ(std::filesystem::exists(old[i]), i >= 17) << old[i];
  EXPECT_EQ(occurrences(read_file(log), "deleted (emergency"), 17u) << read_file(log);

  std::string truth = dir.file("t.json");
  ASSERT_EQ(
      run(std::string(LAUNCH_WORKLOAD) + " --lib " + FAKE_LIBCUDA + " --threads 1 --launches 3000 --truth " + truth),
      0);
  int64_t tgid = read_json(truth)["pid"];
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  auto j = nlohmann::json::parse(output_of(std::string(GPUOBS_BIN) + " status --format json --status-file " + status),
                                 nullptr, false);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["emergency_deletions"], 17) << j.dump();
  EXPECT_EQ(j["store_failed"], 0) << j.dump();
  int st = 0;
  d.stop(st);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << read_file(log);
  auto segs = segments::list(state);
  ASSERT_EQ(segs.size(), 44u) << read_file(log);
  EXPECT_EQ(segs.back().seq, 61);
  for (const auto& s : segs) EXPECT_GT(s.bytes, 0u) << s.path;
  EXPECT_EQ(launches_of(segs.back().path, tgid), 3000);
  EXPECT_EQ(counter(segs.back().path, "segments_deleted_emergency"), 17);
}

// (c) A full state directory with no segment to delete (a 0-byte one left by
// an older gpuobsd, and a ballast file): each start fails with a message
// saying so, and leaves no segment file behind (it used to leave one empty
// file per start, a restart loop under Restart=on-failure filling the directory).
TEST(DaemonLimits, RestartsOnAFullDiskLeaveNoEmptySegment) {
  TempDir dir;
  std::string state = dir.file("state"), log = dir.file("log");
  Tmpfs fs(state, "2M");
  ASSERT_TRUE(fs.ok);
  old_segment(state, 3, 0);
  fill(state);
  auto args = base_args(dir.file("gpuobsd.conf"), state, dir.file("status.json"));
  for (int i = 0; i < 3; ++i) {
    std::string l = log + std::to_string(i);
    Daemon d(args, l);
    EXPECT_EQ(wait_exit(d), 1) << read_file(l);
    EXPECT_NE(read_file(l).find("no segment is left to delete"), std::string::npos) << read_file(l);
    EXPECT_TRUE(capture_files(state).empty()) << "start " << i << ": " << *capture_files(state).begin();
  }
  // Room again: it starts.
  ASSERT_EQ(::unlink((state + "/ballast").c_str()), 0);
  Daemon d(args, log);
  EXPECT_TRUE(d.wait_log(log, "capturing to")) << read_file(log);
  EXPECT_EQ(segments::list(state).size(), 1u);
}

// (a) 32 old segments (1 MB each) and then a ballast file fill a 48 MiB
// state directory while gpuobsd runs (segments of 300 KB): the batches that
// fail make it delete the oldest segments, rotation goes on into segments
// that work, and every launch is stored or counted as not stored. None of
// the daemon's own segments needs to go.
TEST(DaemonLimits, RotationOnAFullDiskEndsInWorkingSegments) {
  TempDir dir;
  std::string state = dir.file("state"), log = dir.file("log"), status = dir.file("status.json");
  Tmpfs fs(state, "48M");
  ASSERT_TRUE(fs.ok);
  std::vector<std::string> old;
  for (int64_t seq = 1; seq <= 32; ++seq) old.push_back(old_segment(state, seq, 1000000));
  auto args = base_args(dir.file("gpuobsd.conf"), state, status);
  for (std::string a : {"--segment-max-bytes", "300KB"}) args.push_back(a);
  Daemon d(args, log);
  ASSERT_TRUE(d.wait_log(log, "capturing to")) << read_file(log);
  ASSERT_EQ(segments::list(state).size(), 33u) << read_file(log);  // nothing deleted at start: 12 MiB were free
  fill(state);

  // Eight programs 300 ms apart (5000 launches each, 2 threads): the first
  // batches fail on the full disk, the later ones land after the deletion.
  // (One burst would fit in one or two batches, lost whole together.)
  constexpr int kRounds = 8;
  constexpr int64_t kLaunches = kRounds * 2 * 2500;
  std::string tgids;
  for (int r = 0; r < kRounds; ++r) {
    std::string truth = dir.file("t" + std::to_string(r) + ".json");
    ASSERT_EQ(
        run(std::string(LAUNCH_WORKLOAD) + " --lib " + FAKE_LIBCUDA + " --threads 2 --launches 2500 --truth " + truth),
        0);
    tgids += (r ? "," : "") + std::to_string(read_json(truth)["pid"].get<int64_t>());
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  auto j = read_json(status);
  int st = 0;
  d.stop(st);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << read_file(log);

  int64_t deleted = 0;
  for (const auto& p : old) deleted += !std::filesystem::exists(p);
  EXPECT_GT(deleted, 0) << read_file(log);
  // The status is the daemon's last one before the stop; the commit at the
  // stop can fail on the full disk and delete one more (seen on the dev VM,
  // 2026-12-08: 17 in the status, 18 gone).
  EXPECT_GE(deleted, j["emergency_deletions"].get<int64_t>()) << j.dump();
  EXPECT_LE(deleted, j["emergency_deletions"].get<int64_t>() + 1) << j.dump();
  auto segs = segments::list(state);
  ASSERT_FALSE(segs.empty());
  // The daemon's segments are all there (11, 12, ...), each a capture with data.
  int64_t stored = 0, lost_rows = 0, lost_batches = 0, seq = 32, in_rotated = 0;
  for (const auto& s : segs) {
    if (s.seq <= 32) continue;
    EXPECT_EQ(s.seq, ++seq) << read_file(log);
    EXPECT_GT(s.bytes, 0u) << s.path;
    auto db = open_capture_readonly(s.path);
    ASSERT_TRUE(db.ok()) << s.path << ": " << db.error().message;
    EXPECT_EQ(text(*db, "PRAGMA integrity_check"), "ok") << s.path;
    int64_t n = scalar(*db, "SELECT count(*) FROM kernel_launches WHERE tgid IN (" + tgids + ")");
    stored += n;
    if (s.seq >= 34) in_rotated += n;
    lost_rows += counter(s.path, "store_failed_rows");
    lost_batches += counter(s.path, "store_failed_batches");
  }
  // The segments rotated into on the full disk work.
  EXPECT_GE(seq, 34) << "no rotation on the full disk\n" << read_file(log);
  EXPECT_GT(in_rotated, 0) << read_file(log);
  // Every launch stored or counted; the losses are the batches before the
  // first deletion (it used to be every batch after the disk filled).
  EXPECT_LE(stored, kLaunches);
  EXPECT_GE(stored + lost_rows, kLaunches) << "stored " << stored << ", lost rows " << lost_rows;
  EXPECT_GE(stored, kLaunches / 2) << read_file(log);
  EXPECT_EQ(lost_batches, j["store_failed_batches"].get<int64_t>()) << j.dump();
  EXPECT_EQ(counter(segs.back().path, "segments_deleted_emergency"), deleted);
  std::printf(
      "full disk at rotation: %lld of %lld launches stored, %lld rows in %lld batches lost, %lld old "
      "segments deleted, %zu segments\n",
      static_cast<long long>(stored), static_cast<long long>(kLaunches), static_cast<long long>(lost_rows),
      static_cast<long long>(lost_batches), static_cast<long long>(deleted), segs.size());
}

// The metrics endpoint: 40 connections at once get 16 served and 24 answered
// 503 and closed; /metrics answers again once they close. With the fd limit
// lowered (prlimit) to 40 above the fds open, every connection is refused
// (fewer than 64 would stay free) and segments keep rotating; with no fd
// free at all, accept() fails with EMFILE and gpuobsd waits between tries
// instead of spinning: well under a core (it used to take a whole one).
TEST(DaemonLimits, MetricsEndpointCapsConnectionsAndBacksOffWithoutFds) {
  TempDir dir;
  std::string state = dir.file("state"), log = dir.file("log"), status = dir.file("status.json");
  auto args = base_args(dir.file("gpuobsd.conf"), state, status);
  for (std::string a : {"--segment-max-bytes", "200KB", "--metrics-listen", "127.0.0.1:0"}) args.push_back(a);
  Daemon d(args, log);
  ASSERT_TRUE(d.wait_log(log, "capturing to")) << read_file(log);
  std::smatch m;
  std::string l = read_file(log);
  ASSERT_TRUE(std::regex_search(l, m, std::regex("metrics on http://127\\.0\\.0\\.1:([0-9]+)/metrics"))) << l;
  uint16_t port = static_cast<uint16_t>(std::stoi(m[1]));

  // 40 at once: the first 16 are served (idle, they wait for a request), the rest refused.
  std::vector<int> clients;
  for (int i = 0; i < 40; ++i) clients.push_back(connect_to(port));
  for (int fd : clients) ASSERT_GE(fd, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  int refused = 0;
  for (size_t i = 0; i < clients.size(); ++i) {
    std::string r = read_reply(clients[i], 0);
    if (i < 16) EXPECT_EQ(r, "") << "client " << i;
    else EXPECT_EQ(r.rfind("HTTP/1.1 503 Service Unavailable", 0), 0u) << "client " << i << ": " << r;
    refused += r.rfind("HTTP/1.1 503", 0) == 0;
  }
  EXPECT_EQ(refused, 24);
  EXPECT_EQ(http_get(port).rfind("HTTP/1.1 503", 0), 0u);  // the 25th refusal
  for (int fd : clients) ::close(fd);
  std::string body;
  // Until the daemon has seen the 16 close, a scrape may itself be refused:
  // each such 503 counts too.
  int late = 0;
  bool shown = false;
  for (int i = 0; i < 50 && !shown; ++i) {
    body = http_get(port);
    if (body.rfind("HTTP/1.1 503", 0) == 0) ++late;
    else
      shown = body.find("gpuobs_metrics_connections_refused_total " + std::to_string(25 + late) + "\n") !=
              std::string::npos;
    if (!shown) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(shown) << late << " late refusals\n" << body;

  // Few fds: 40 free. Every connection refused at once; rotation goes on.
  rlimit orig{};
  ASSERT_EQ(::prlimit(d.pid, RLIMIT_NOFILE, nullptr, &orig), 0);
  ASSERT_TRUE(set_nofile(d.pid, open_fds(d.pid).size() + 40));
  clients.clear();
  for (int i = 0; i < 20; ++i) clients.push_back(connect_to(port));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  for (int fd : clients) EXPECT_EQ(read_reply(fd, 0).rfind("HTTP/1.1 503", 0), 0u);
  for (int fd : clients) ::close(fd);
  // A few launches first, committed: a rotated segment's size baseline is
  // taken at its first batch, and on a quiet machine that batch would be the
  // big run below, which then never counts against the limit (the daemon's
  // behaviour noted in the stop note of 2026-12-08; CI's busier machine had
  // other events in between).
  ASSERT_EQ(run(std::string(LAUNCH_WORKLOAD) + " --lib " + FAKE_LIBCUDA + " --threads 1 --launches 10 --truth " +
                dir.file("prime.json")),
            0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  size_t segs_before = segments::list(state).size();
  std::string truth = dir.file("t.json");
  ASSERT_EQ(
      run(std::string(LAUNCH_WORKLOAD) + " --lib " + FAKE_LIBCUDA + " --threads 2 --launches 30000 --truth " + truth),
      0);
  int64_t tgid = read_json(truth)["pid"];
  for (int i = 0; i < 30 && segments::list(state).size() < segs_before + 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_GE(segments::list(state).size(), segs_before + 1) << read_file(log);
  EXPECT_EQ(read_file(log).find("cannot start segment"), std::string::npos) << read_file(log);

  // No fd free: a soft limit of 0, so no new descriptor can be had at all.
  // (A limit at the lowest free descriptor was not enough: the daemon closed
  // a descriptor it had open only for a moment, below that limit, and
  // accepted the queued connections with it — CI, stop 32.)
  ASSERT_TRUE(set_nofile(d.pid, 0));
  clients.clear();
  for (int i = 0; i < 5; ++i) clients.push_back(connect_to(port));
  double c0 = cpu_seconds(d.pid);
  auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(3));
  double cpu = cpu_seconds(d.pid) - c0;
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(cpu / wall, 0.2) << cpu << " s of CPU in " << wall << " s";
  EXPECT_EQ(::kill(d.pid, 0), 0);

  // The limit back: the queued connections are served, /metrics answers and
  // counts the failed accepts; the warning was logged once.
  ASSERT_EQ(::prlimit(d.pid, RLIMIT_NOFILE, &orig, nullptr), 0);
  for (int fd : clients) ::close(fd);
  // The metrics are the health snapshot of the last second: a first scrape
  // can predate the count (seen once in a loaded full run), so ask again.
  for (int i = 0; i < 30; ++i) {
    EXPECT_TRUE(metrics_show(port, "gpuobs_metrics_accept_backoffs_total ", &body)) << body;
    if (body.find("gpuobs_metrics_accept_backoffs_total 0\n") == std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(body.find("gpuobs_metrics_accept_backoffs_total 0\n"), std::string::npos) << body;
  EXPECT_EQ(occurrences(read_file(log), "cannot accept a connection"), 1u) << read_file(log);
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  auto j = nlohmann::json::parse(output_of(std::string(GPUOBS_BIN) + " status --format json --status-file " + status),
                                 nullptr, false);
  ASSERT_TRUE(j.is_object());
  // 25 + 20, and any of the 5 accepted while the limit was being set.
  int64_t refused_total = j["metrics_connections_refused"].get<int64_t>();
  EXPECT_GE(refused_total, 45) << j.dump();
  EXPECT_GE(j["metrics_accept_backoffs"].get<int64_t>(), 1) << j.dump();
  int st = 0;
  d.stop(st);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << read_file(log);
  // Nothing lost to the short fds: the workload is all stored, and the last
  // segment carries the endpoint's counters.
  int64_t total = 0;
  auto segs = segments::list(state);
  for (const auto& s : segs) total += launches_of(s.path, tgid);
  EXPECT_EQ(total, 2 * 30000);  // --launches is per thread
  EXPECT_EQ(counter(segs.back().path, "metrics_connections_refused"), refused_total);
  EXPECT_GE(counter(segs.back().path, "metrics_accept_backoffs"), 1);
}
