// gpuobsd finds GPU libraries wherever processes load them from. The daemon
// is told nothing about the workloads' libcuda (system discovery finds only
// an unused copy); /dev/null stands in for an NVIDIA device (a workload's
// first "GPU" ioctl is a trigger too), but each library is found when its
// process maps it. Four processes, four ways:
//   P1 started before the daemon, library at path A (startup scan);
//   P2 started after, the same file A (already attached: no second attach;
//      P1 stays until P2 is done, so A is mapped throughout);
//   P3 a copy at path C, another inode (found at its mmap), deleted after use
//      (detached once its process exits);
//   P4 in a new mount namespace, a fresh copy bind-mounted over a path that
//      names another file outside it, the copy unlinked from every host path
//      (only /proc/PID/root reaches it).
// And P5 maps a file named libcuda.so.1 that is not a library: an attach
// failure, counted and reported.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "capture/procfs.h"
#include "integration/run_util.h"
#include "store/schema.h"
#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::testing;
namespace fs = std::filesystem;

namespace {

struct Proc {
  pid_t pid = -1;  // the forked child (the workload itself, after execs)
  std::string out;
  ~Proc() {
    if (pid > 0 && ::kill(pid, SIGKILL) == 0) ::waitpid(pid, nullptr, 0);
  }
  int wait() {
    int st = 0;
    pid_t p = pid;
    pid = -1;
    if (::waitpid(p, &st, 0) != p) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }
};

// argv run with stdout (and stderr) to out; env added.
void spawn(Proc& p, const std::vector<std::string>& argv, const std::string& out,
           const std::vector<std::string>& env = {}) {
  p.out = out;
  p.pid = ::fork();
  if (p.pid == 0) {
    if (!std::freopen(out.c_str(), "w", stdout) || !std::freopen((out + ".err").c_str(), "w", stderr)) ::_exit(126);
    for (const auto& e : env) ::putenv(::strdup(e.c_str()));
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
}

bool wait_for_text(const std::string& file, const std::string& text, int ms) {
  for (int t = 0; t < ms; t += 10) {
    if (read_file(file).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// "ready PID" from a workload's output.
int64_t ready_pid(const std::string& out) {
  std::string s = read_file(out);
  auto at = s.find("ready ");
  return at == std::string::npos ? -1 : std::stoll(s.substr(at + 6));
}

uint64_t inode_of(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

void copy(const std::string& from, const std::string& to) {
  fs::create_directories(fs::path(to).parent_path());
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
}

}  // namespace

TEST(LibraryAttach, EveryProcessWhereverItsLibraryIs) {
  TempDir dir;
  const std::string a = dir.file("a/libcuda.so.1"), c = dir.file("c/libcuda.so.1"), sys = dir.file("sys/libcuda.so.1"),
                    ns_path = dir.file("ns/libcuda.so.1"), fresh = dir.file("fresh/libcuda.so.1"),
                    junk = dir.file("junk/libcuda.so.1");
  for (const auto& p : {a, c, sys, ns_path, fresh}) copy(FAKE_LIBCUDA, p);
  fs::create_directories(dir.file("junk"));
  std::ofstream(junk) << std::string(8192, 'x');
  fs::create_directories(dir.file("nohip"));
  const uint64_t ino_a = inode_of(a), ino_c = inode_of(c), ino_sys = inode_of(sys), ino_fresh = inode_of(fresh),
                 ino_junk = inode_of(junk);
  ASSERT_TRUE(ino_a && ino_c && ino_sys && ino_fresh && ino_junk);

  // P1 maps A before the daemon starts, then waits for go1.
  Proc p1;
  spawn(p1, {ATTACH_WORKLOAD, a, "/dev/null", "111", dir.file("go1"), dir.file("hold1")}, dir.file("p1.out"));
  ASSERT_TRUE(wait_for_text(dir.file("p1.out"), "ready", 5000)) << read_file(dir.file("p1.out.err"));

  std::string db_path = dir.file("d.gpuobs"), log = dir.file("daemon.log"), status = dir.file("status.json");
  Proc d;
  // Periodic rescans stay out of the way (60 s): detaching is driven by the
  // exits of processes that mapped a library.
  spawn(d,
        {GPUOBSD_BIN, "--db", db_path, "--no-gpu-devices", "--watch-dev", "nvidia=/dev/null", "--status-file", status},
        log,
        {"GPUOBS_LIBCUDA_SEARCH_PATH=" + dir.file("sys"), "GPUOBS_LIBHIP_SEARCH_PATH=" + dir.file("nohip"),
         "GPUOBS_LIBRARY_RESCAN_MS=60000"});
  ASSERT_TRUE(wait_for_text(log + ".err", "capturing to", 20000)) << read_file(log + ".err");
  std::ofstream(dir.file("go1")) << "go";

  Proc p2, p3, p4, p5;
  spawn(p2, {ATTACH_WORKLOAD, a, "/dev/null", "222", "-"}, dir.file("p2.out"));
  spawn(p3, {ATTACH_WORKLOAD, c, "/dev/null", "333", "-", dir.file("hold3")}, dir.file("p3.out"));
  // The fresh copy is bind-mounted over ns_path in a private mount namespace,
  // then unlinked: outside, ns_path names the other copy, and no path names
  // the fresh one.
  spawn(p4,
        {"/usr/bin/unshare", "-m", "--propagation", "private", "/bin/sh", "-c",
         "mount --bind " + fresh + " " + ns_path + " && rm " + fresh + " && exec " + ATTACH_WORKLOAD + " " + ns_path +
             " /dev/null 444 -"},
        dir.file("p4.out"));
  spawn(p5, {ATTACH_WORKLOAD, "mmap:" + junk, "/dev/null", "0", "-"}, dir.file("p5.out"));
  {
    std::string out = p2.out;
    EXPECT_EQ(p2.wait(), 0) << read_file(out) << read_file(out + ".err");
  }
  std::ofstream(dir.file("hold1")) << "go";
  for (auto* p : {&p1, &p4, &p5}) {
    std::string out = p->out;
    EXPECT_EQ(p->wait(), 0) << read_file(out) << read_file(out + ".err");
  }
  // P3's copy goes away while P3 still maps it; then P3 exits.
  ASSERT_TRUE(wait_for_text(dir.file("p3.out"), "ready", 5000));
  std::this_thread::sleep_for(std::chrono::milliseconds(700));  // its launches are done (300 ms wait + 333 calls)
  // `gpuobs status` lists C, attached at run time, with its probes (the
  // status file is rewritten every second).
  nlohmann::json lib_c;
  for (int i = 0; i < 30 && lib_c.is_null(); ++i) {
    std::string out;
    if (FILE* f = ::popen((std::string(GPUOBS_BIN) + " status --format json --status-file " + status).c_str(), "r")) {
      char buf[4096];
      for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
      ::pclose(f);
    }
    auto j = nlohmann::json::parse(out, nullptr, false);
    if (j.is_object() && j.contains("libraries"))
      for (const auto& l : j["libraries"])
        if (l.value("inode", uint64_t{0}) == ino_c) lib_c = l;
    if (lib_c.is_null()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_FALSE(lib_c.is_null()) << "gpuobs status does not list " << c << "\n" << read_file(status);
  EXPECT_GT(lib_c["probes_attached"].get<int>(), 0) << lib_c.dump();
  EXPECT_EQ(lib_c["probes_failed"].get<int>(), 0) << lib_c.dump();
  fs::remove(c);
  std::ofstream(dir.file("hold3")) << "go";
  EXPECT_EQ(p3.wait(), 0) << read_file(dir.file("p3.out.err"));

  // The exits trigger a rescan: C (deleted), the namespace's copy and A (a
  // copy in /tmp: not trusted, it goes with its last process) are detached.
  bool detached = false;
  for (int i = 0; i < 300 && !detached; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (auto db = open_capture_readonly(db_path); db.ok())
      detached = scalar(*db,
                        "SELECT count(*) FROM probes WHERE symbol = 'cuLaunchKernel' AND detached_mono_ns IS NOT "
                        "NULL AND inode IN (" +
                            std::to_string(ino_c) + "," + std::to_string(ino_fresh) + ")") == 2;
  }
  EXPECT_TRUE(detached) << read_file(log + ".err");

  ASSERT_EQ(::kill(d.pid, SIGTERM), 0);
  EXPECT_EQ(d.wait(), 0) << read_file(log + ".err");

  auto db = open_capture_readonly(db_path);
  ASSERT_TRUE(db.ok()) << db.error().message;
  int64_t pid1 = ready_pid(p1.out), pid2 = ready_pid(p2.out), pid3 = ready_pid(p3.out), pid4 = ready_pid(p4.out),
          pid5 = ready_pid(p5.out);
  ASSERT_GT(pid1, 0);
  ASSERT_GT(pid4, 0);
  auto q = [&](const std::string& sql) { return scalar(*db, sql); };
  auto probe = [&](uint64_t ino, const std::string& col) {
    return text(*db,
                "SELECT " + col + " FROM probes WHERE symbol = 'cuLaunchKernel' AND inode = " + std::to_string(ino));
  };

  // Each library file attached once, for the reason that found it.
  for (uint64_t ino : {ino_a, ino_c, ino_sys, ino_fresh})
    EXPECT_EQ(q("SELECT count(*) FROM probes WHERE symbol = 'cuLaunchKernel' AND status = 'attached' AND inode = " +
                std::to_string(ino)),
              1)
        << "inode " << ino;
  EXPECT_EQ(probe(ino_sys, "reason"), "startup");
  EXPECT_EQ(probe(ino_sys, "trigger_tgid"), "<null>");
  EXPECT_EQ(probe(ino_a, "reason"), "startup");
  EXPECT_EQ(probe(ino_a, "trigger_tgid"), std::to_string(pid1));
  EXPECT_EQ(probe(ino_a, "library"), a);
  EXPECT_EQ(probe(ino_c, "reason"), "mmap");
  EXPECT_EQ(probe(ino_c, "trigger_tgid"), std::to_string(pid3));
  EXPECT_EQ(probe(ino_fresh, "reason"), "mmap");
  EXPECT_EQ(probe(ino_fresh, "trigger_tgid"), std::to_string(pid4));
  // The path as P4 named it; outside its namespace that path is another file.
  EXPECT_EQ(probe(ino_fresh, "library"), ns_path);
  EXPECT_NE(inode_of(ns_path), ino_fresh);

  // Attach latency: from the mmap that mapped the library (before its first
  // ioctl) to attach done.
  for (auto [ino, pid] : {std::pair{ino_c, pid3}, std::pair{ino_fresh, pid4}}) {
    int64_t first_ioctl = q("SELECT min(ts_mono_ns) FROM ioctls WHERE tgid = " + std::to_string(pid));
    int64_t trig =
        q("SELECT trigger_mono_ns FROM probes WHERE symbol = 'cuLaunchKernel' AND inode = " + std::to_string(ino));
    int64_t done =
        q("SELECT attached_mono_ns FROM probes WHERE symbol = 'cuLaunchKernel' AND inode = " + std::to_string(ino));
    EXPECT_LT(trig, first_ioctl) << "pid " << pid;
    EXPECT_GT(done, trig);
    std::printf("attach latency pid %lld: %.2f ms\n", static_cast<long long>(pid), (done - trig) / 1e6);
  }

  // Every launch captured, per process, exactly.
  for (auto [pid, n] : {std::pair{pid1, 111}, std::pair{pid2, 222}, std::pair{pid3, 333}, std::pair{pid4, 444}})
    EXPECT_EQ(q("SELECT count(*) FROM kernel_launches WHERE tgid = " + std::to_string(pid)), n) << "pid " << pid;

  // Detached: the deleted copy, the namespace's copy and A; the system copy
  // (trusted: from the plan) stays.
  EXPECT_EQ(probe(ino_c, "detached_mono_ns") != "<null>", true);
  EXPECT_EQ(probe(ino_fresh, "detached_mono_ns") != "<null>", true);
  EXPECT_EQ(probe(ino_a, "detached_mono_ns") != "<null>", true);
  EXPECT_EQ(probe(ino_sys, "detached_mono_ns"), "<null>");

  // The impostor: every probe on it failed, with the error, and counted.
  EXPECT_EQ(q("SELECT count(*) FROM probes WHERE inode = " + std::to_string(ino_junk) + " AND status <> 'failed'"), 0);
  EXPECT_GT(q("SELECT count(*) FROM probes WHERE inode = " + std::to_string(ino_junk) +
              " AND status = 'failed' AND error <> '' AND trigger_tgid = " + std::to_string(pid5)),
            0);
  // The counters agree with the rows (other processes on the host may map
  // GPU libraries too: the counts are of everything found in maps).
  int64_t found = q("SELECT count(DISTINCT inode) FROM probes WHERE trigger_tgid IS NOT NULL");
  EXPECT_GE(found, 4);  // A, C, fresh, junk
  EXPECT_EQ(q("SELECT value FROM counters WHERE name = 'library_attached_runtime'"), found);
  EXPECT_EQ(q("SELECT value FROM counters WHERE name = 'library_attach_failed'"),
            q("SELECT count(DISTINCT inode) FROM probes p WHERE trigger_tgid IS NOT NULL AND NOT EXISTS (SELECT 1 FROM "
              "probes q WHERE q.inode = p.inode AND q.dev = p.dev AND q.status = 'attached')"));
  // The impostor (a user's file in /tmp) is detached too once nothing maps it.
  EXPECT_EQ(q("SELECT value FROM counters WHERE name = 'library_detached'"),
            q("SELECT count(DISTINCT inode) FROM probes WHERE detached_mono_ns IS NOT NULL"));

  // Origin: cgroup as /proc says for this test (its children inherit it);
  // GPUs from the ioctls on the stand-in NVIDIA node (1:3).
  std::string my_cgroup = cgroup_path_from_file(read_file("/proc/self/cgroup"));
  for (int64_t pid : {pid1, pid2, pid3, pid4})
    EXPECT_EQ(text(*db, "SELECT cgroup FROM processes WHERE tgid = " + std::to_string(pid)), my_cgroup) << pid;
  for (int64_t pid : {pid2, pid3, pid4}) {
    EXPECT_EQ(q("SELECT count(*) FROM process_gpus WHERE driver = 'nvidia' AND dev_major = 1 AND dev_minor = 3 AND "
                "ioctls = 1 AND tgid = " +
                std::to_string(pid)),
              1)
        << pid;
  }
}
