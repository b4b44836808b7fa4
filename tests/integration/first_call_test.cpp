// Every GPU process from its first call (issue 37), with real BPF: gpuobsd
// with no system libcuda (its search paths are empty directories), and
// programs whose library it cannot know before they map it: a copy made
// after the daemon started, reached through LD_LIBRARY_PATH; a Python
// program's ctypes.CDLL(path); the two ranks of an NCCL job (the fake
// libnccl.so.2, which loads the fake libcuda itself). Each lives well under
// 100 ms once started and makes its first call right after loading, so a
// library attached after the mapping would miss calls: each is held at the
// mapping instead, and every launch and call must be stored, in 20 of 20
// consecutive runs. And the honest side: a refused attach makes the capture
// "incomplete" with the reason, in the file and in `gpuobs status`.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "integration/run_util.h"
#include "store/schema.h"
#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::testing;
namespace fs = std::filesystem;

namespace {

constexpr int kRuns = 20;

bool wait_for_log(const std::string& file, const std::string& what, int ms) {
  for (int t = 0; t < ms; t += 10) {
    if (read_file(file).find(what) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// gpuobsd with no system libcuda or HIP runtime (nothing is known before a
// process maps it), one capture file, rescans only every 60 s.
struct HoldingDaemon {
  pid_t pid = -1;
  std::string log, status;
  HoldingDaemon(const TempDir& dir, const std::string& db, const std::vector<std::string>& extra = {}) {
    fs::create_directories(dir.file("empty"));
    log = dir.file("daemon.log");
    status = dir.file("status.json");
    pid = ::fork();
    if (pid == 0) {
      if (!std::freopen(log.c_str(), "w", stderr)) ::_exit(126);
      ::setenv("GPUOBS_LIBCUDA_SEARCH_PATH", dir.file("empty").c_str(), 1);
      ::setenv("GPUOBS_LIBHIP_SEARCH_PATH", dir.file("empty").c_str(), 1);
      ::setenv("GPUOBS_LIBZE_SEARCH_PATH", dir.file("empty").c_str(), 1);
      ::setenv("GPUOBS_LIBRARY_RESCAN_MS", "60000", 1);
      std::vector<std::string> argv = {GPUOBSD_BIN, "--db", db, "--no-gpu-devices", "--status-file", status};
      argv.insert(argv.end(), extra.begin(), extra.end());
      std::vector<char*> args;
      for (auto& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
  }
  int stop() {
    int st = 0;
    if (pid <= 0 || ::kill(pid, SIGTERM) != 0 || ::waitpid(pid, &st, 0) != pid) return -1;
    pid = -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }
  ~HoldingDaemon() {
    if (pid > 0 && ::kill(pid, SIGKILL) == 0) ::waitpid(pid, nullptr, 0);
  }
};

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// A copy of the fake libcuda in a directory made now (after the daemon
// started): no index could have known it.
std::string fresh_copy(const TempDir& dir, const std::string& sub) {
  fs::create_directories(dir.file(sub));
  std::string to = dir.file(sub + "/libcuda.so.1");
  fs::copy_file(FAKE_LIBCUDA, to, fs::copy_options::overwrite_existing);
  return to;
}

// The mappings of one process: none may say a call could have been missed.
void expect_seen_from_first_call(Db& db, int64_t pid) {
  std::string where = " FROM library_maps WHERE tgid = " + std::to_string(pid);
  EXPECT_GE(scalar(db, "SELECT count(*)" + where), 1) << "pid " << pid;
  EXPECT_EQ(scalar(db, "SELECT count(*)" + where + " AND calls_before_attach <> 0"), 0)
      << "pid " << pid << ": " << text(db, "SELECT group_concat(hold || ': ' || coalesce(reason, ''), '; ')" + where);
}

void print_holds(Db& db, const char* what) {
  std::printf("%s: %lld mappings held, median hold %.2f ms, max %.2f ms; %lld attached before\n", what,
              static_cast<long long>(scalar(db, "SELECT count(*) FROM library_maps WHERE hold = 'held'")),
              static_cast<double>(scalar(db,
                                         "SELECT held_ns FROM library_maps WHERE hold = 'held' ORDER BY held_ns "
                                         "LIMIT 1 OFFSET (SELECT count(*) / 2 FROM library_maps WHERE hold = "
                                         "'held')")) /
                  1e6,
              static_cast<double>(scalar(db, "SELECT coalesce(max(held_ns), 0) FROM library_maps")) / 1e6,
              static_cast<long long>(scalar(db, "SELECT count(*) FROM library_maps WHERE hold = 'attached before'")));
}

}  // namespace

// 20 short CUDA programs (4 threads and a forked child, 1,000 launches in
// all) whose libcuda.so.1 only LD_LIBRARY_PATH finds, in a directory made
// after the daemon started: every launch of every run, with its stream.
TEST(FirstCall, DaemonStoresEveryLaunchOfShortProgramsTwentyRunsInARow) {
  TempDir dir;
  const std::string db_path = dir.file("d.gpuobs");
  HoldingDaemon d(dir, db_path);
  ASSERT_TRUE(wait_for_log(d.log, "capturing to", 20000)) << read_file(d.log);
  fresh_copy(dir, "new");  // created after the daemon started

  std::vector<nlohmann::json> truths;
  double longest_ms = 0;
  for (int i = 0; i < kRuns; ++i) {
    const std::string truth = dir.file("t" + std::to_string(i) + ".json");
    auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(run("LD_LIBRARY_PATH=" + dir.file("new") + " " + LAUNCH_WORKLOAD +
                  " --lib libcuda.so.1 --threads 4 --launches 200 --child-launches 200 --truth " + truth),
              0);
    longest_ms = std::max(longest_ms, ms_since(t0));
    truths.push_back(read_json(truth));
  }
  ASSERT_EQ(d.stop(), 0) << read_file(d.log);

  auto db = open_capture_readonly(db_path);
  ASSERT_TRUE(db.ok()) << db.error().message;
  auto q = [&](const std::string& sql) { return scalar(*db, sql); };
  for (const auto& t : truths) {
    const int64_t pid = t["pid"], child = t["child"]["pid"];
    EXPECT_EQ(q("SELECT count(*) FROM kernel_launches WHERE tgid = " + std::to_string(pid)), 800) << "pid " << pid;
    EXPECT_EQ(q("SELECT count(*) FROM kernel_launches WHERE tgid = " + std::to_string(child)), 200);
    // One stream per worker (launch_truth.h: 0x5000 + worker).
    EXPECT_EQ(q("SELECT count(DISTINCT stream) FROM kernel_launches WHERE tgid = " + std::to_string(pid)), 4);
    for (const auto& w : t["workers"])
      EXPECT_EQ(q("SELECT count(*) FROM kernel_launches WHERE tid = " + std::to_string(w["tid"].get<int64_t>())),
                w["launches"].get<int64_t>());
    expect_seen_from_first_call(*db, pid);
  }
  EXPECT_EQ(text(*db, "SELECT state FROM capture"), "complete");
  EXPECT_EQ(q("SELECT count(*) FROM library_maps WHERE calls_before_attach <> 0"), 0);
  std::printf("longest run %.0f ms (4 threads + a child, 1,000 launches)\n", longest_ms);
  print_holds(*db, "short CUDA programs");
}

// 20 Python programs that ctypes.CDLL() a path: 300 launches each.
TEST(FirstCall, DaemonStoresEveryLaunchOfCtypesPrograms) {
  TempDir dir;
  const std::string db_path = dir.file("d.gpuobs");
  HoldingDaemon d(dir, db_path);
  ASSERT_TRUE(wait_for_log(d.log, "capturing to", 20000)) << read_file(d.log);
  const std::string lib = fresh_copy(dir, "wheel/site-packages/nvidia/cuda/lib");
  const std::string script = std::string(GPUOBS_SOURCE_DIR) + "/tests/workloads/ctypes_launches.py";
  std::vector<int64_t> pids;
  for (int i = 0; i < kRuns; ++i) {
    const std::string out = dir.file("py" + std::to_string(i));
    ASSERT_EQ(run("python3 " + script + " " + lib + " > " + out), 0);
    std::istringstream in(read_file(out));
    std::string word;
    int64_t pid = 0;
    in >> word >> pid;
    ASSERT_EQ(word, "done");
    pids.push_back(pid);
  }
  ASSERT_EQ(d.stop(), 0) << read_file(d.log);
  auto db = open_capture_readonly(db_path);
  ASSERT_TRUE(db.ok()) << db.error().message;
  for (int64_t pid : pids) {
    EXPECT_EQ(scalar(*db, "SELECT count(*) FROM kernel_launches WHERE tgid = " + std::to_string(pid)), 300)
        << "pid " << pid;
    // The grid of launch i is i + 1: all 300 distinct, nothing doubled.
    EXPECT_EQ(scalar(*db, "SELECT count(DISTINCT grid_x) FROM kernel_launches WHERE tgid = " + std::to_string(pid)),
              300);
    expect_seen_from_first_call(*db, pid);
  }
  EXPECT_EQ(text(*db, "SELECT state FROM capture"), "complete");
  print_holds(*db, "ctypes programs");
}

// 20 runs of a 2-rank NCCL job (one process per rank, started together):
// both ranks' communicators from ncclCommInitRank on, with their rank, size
// and shared identity, and every collective.
TEST(FirstCall, DaemonStoresBothNcclRanksFromCommInit) {
  TempDir dir;
  const std::string db_path = dir.file("d.gpuobs");
  HoldingDaemon d(dir, db_path);
  ASSERT_TRUE(wait_for_log(d.log, "capturing to", 20000)) << read_file(d.log);
  const std::string cuda = fresh_copy(dir, "cuda");
  std::vector<nlohmann::json> truths;
  for (int i = 0; i < kRuns; ++i) {
    std::string script;
    const std::string id = dir.file("id" + std::to_string(i));
    for (int r = 0; r < 2; ++r)
      script += "FAKE_NCCL_LIBCUDA=" + cuda + " " + NCCL_WORKLOAD + " --rank " + std::to_string(r) +
                " --nranks 2 --id-file " + id + " --iters 2 > " +
                dir.file("n" + std::to_string(i) + "." + std::to_string(r)) + " & ";
    ASSERT_EQ(run("sh -c '" + script + "wait'"), 0);
    for (int r = 0; r < 2; ++r)
      truths.push_back(read_json(dir.file("n" + std::to_string(i) + "." + std::to_string(r))));
  }
  ASSERT_EQ(d.stop(), 0) << read_file(d.log);
  auto db = open_capture_readonly(db_path);
  ASSERT_TRUE(db.ok()) << db.error().message;
  for (size_t k = 0; k < truths.size(); k += 2) {
    std::string hashes;
    for (int r = 0; r < 2; ++r) {
      const auto& t = truths[k + r];
      const std::string pid = std::to_string(t["pid"].get<int64_t>());
      EXPECT_EQ(scalar(*db, "SELECT count(*) FROM nccl_comms WHERE nranks = 2 AND rank = " + std::to_string(r) +
                                " AND tgid = " + pid),
                1)
          << "run " << k / 2 << " rank " << r;
      int64_t calls = 0;
      // Every call the workload made but the two gpuobs does not probe
      // (ncclGetVersion, ncclGetUniqueId: before any communicator).
      for (const auto& [fn, n] : t["calls"].items())
        if (fn != "ncclGetVersion" && fn != "ncclGetUniqueId") calls += n.get<int64_t>();
      EXPECT_EQ(scalar(*db, "SELECT count(*) FROM nccl_calls WHERE tgid = " + pid), calls) << "rank " << r;
      EXPECT_EQ(scalar(*db,
                       "SELECT count(*) FROM nccl_calls WHERE comm_hash IS NULL AND op NOT IN "
                       "('group_start', 'group_end') AND tgid = " +
                           pid),
                0);
      hashes += text(*db, "SELECT printf('%x', comm_hash) FROM nccl_comms WHERE tgid = " + pid) + " ";
      expect_seen_from_first_call(*db, t["pid"].get<int64_t>());
    }
    // One communicator identity shared by both ranks of a run.
    std::istringstream in(hashes);
    std::string a, b;
    in >> a >> b;
    EXPECT_EQ(a, b);
  }
  EXPECT_EQ(text(*db, "SELECT state FROM capture"), "complete");
  print_holds(*db, "NCCL ranks");
}

// The HIP runtime (Debian's real libamdhip64), copied to a new directory and
// dlopen()ed by path: every call of every thread, 5 runs (the runtime takes
// ~100 ms to load here).
TEST(FirstCall, DaemonStoresEveryHipCallOfACopyOfTheRuntime) {
  TempDir dir;
  const std::string db_path = dir.file("d.gpuobs");
  HoldingDaemon d(dir, db_path);
  ASSERT_TRUE(wait_for_log(d.log, "capturing to", 20000)) << read_file(d.log);
  fs::create_directories(dir.file("rocm/lib"));
  const std::string lib = dir.file("rocm/lib/libamdhip64.so.5");
  fs::copy_file(fs::canonical(HIP_RUNTIME), lib);
  std::vector<nlohmann::json> truths;
  for (int i = 0; i < 5; ++i) {
    const std::string truth = dir.file("h" + std::to_string(i) + ".json");
    ASSERT_EQ(run(std::string(HIP_WORKLOAD) + " --lib " + lib + " --threads 2 --iterations 3 --truth " + truth +
                  " 2>/dev/null"),
              0);
    truths.push_back(read_json(truth));
  }
  ASSERT_EQ(d.stop(), 0) << read_file(d.log);
  auto db = open_capture_readonly(db_path);
  ASSERT_TRUE(db.ok()) << db.error().message;
  for (const auto& t : truths) {
    for (const auto& th : t["threads"]) {
      const std::string tid = std::to_string(th["tid"].get<int64_t>());
      int64_t want = 0;
      for (const auto& [k, v] : th["counts"].items()) want += v.get<int64_t>();
      EXPECT_EQ(scalar(*db, "SELECT count(*) FROM api_calls WHERE vendor = 'hip' AND tid = " + tid), want)
          << "thread " << tid;
    }
    expect_seen_from_first_call(*db, t["pid"].get<int64_t>());
  }
  EXPECT_EQ(text(*db, "SELECT state FROM capture"), "complete");
  print_holds(*db, "HIP runtime copies");
}

// Two Level Zero programs started together, under a daemon that knows no
// Level Zero loader (its search path is empty): each maps the system's
// libze_loader.so.1 at start-up (DT_NEEDED) and calls zeInit at once. Both
// processes' calls, from zeInit on, are stored, in 10 runs of 2.
TEST(FirstCall, DaemonStoresBothLevelZeroProcessesFromTheirFirstCall) {
  TempDir dir;
  const std::string db_path = dir.file("d.gpuobs");
  HoldingDaemon d(dir, db_path);
  ASSERT_TRUE(wait_for_log(d.log, "capturing to", 20000)) << read_file(d.log);
  std::vector<std::string> truths;
  for (int i = 0; i < 10; ++i) {
    std::string script;
    for (int p = 0; p < 2; ++p) {
      truths.push_back(dir.file("z" + std::to_string(i) + "-" + std::to_string(p) + ".json"));
      script += std::string("ZE_ENABLE_ALT_DRIVERS=") + FAKE_LEVEL_ZERO + " " + LEVEL_ZERO_WORKLOAD +
                " --threads 2 --iterations 3 --truth " + truths.back() + " & ";
    }
    ASSERT_EQ(run("sh -c '" + script + "wait' 2>/dev/null"), 0);
  }
  ASSERT_EQ(d.stop(), 0) << read_file(d.log);
  auto db = open_capture_readonly(db_path);
  ASSERT_TRUE(db.ok()) << db.error().message;
  for (const auto& path : truths) {
    auto t = read_json(path);
    std::vector<nlohmann::json> threads = t["threads"];
    threads.push_back(t["main"]);
    for (const auto& th : threads) {
      const std::string tid = std::to_string(th["handles"]["tid"].get<int64_t>());
      int64_t want = 0;
      for (const auto& [k, v] : th["counts"].items()) want += v.get<int64_t>();
      EXPECT_EQ(scalar(*db, "SELECT count(*) FROM api_calls WHERE vendor = 'level_zero' AND tid = " + tid), want)
          << "thread " << tid << " of " << path;
    }
    EXPECT_EQ(scalar(*db, "SELECT count(*) FROM api_calls WHERE api = 'zeInit' AND tgid = " +
                              std::to_string(t["pid"].get<int64_t>())),
              1);
    expect_seen_from_first_call(*db, t["pid"].get<int64_t>());
  }
  EXPECT_EQ(text(*db, "SELECT state FROM capture"), "complete");
  print_holds(*db, "Level Zero processes");
}

// An attach that cannot happen (no room under library_max_files_per_user):
// the process is resumed at once, and the capture and `gpuobs status` say
// "incomplete" with the reason.
TEST(FirstCall, RefusedAttachMakesTheCaptureIncompleteWithTheReason) {
  TempDir dir;
  const std::string db_path = dir.file("d.gpuobs");
  HoldingDaemon d(dir, db_path, {"--library-max-files-per-user", "0"});
  ASSERT_TRUE(wait_for_log(d.log, "capturing to", 20000)) << read_file(d.log);
  fresh_copy(dir, "user");
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(run("LD_LIBRARY_PATH=" + dir.file("user") + " " + LIB_NEEDED_WORKLOAD + " 10 0 > " + dir.file("o")), 0);
  std::printf("a refused library: the process ran in %.0f ms\n", ms_since(t0));
  // The journal (stderr) names the process and why.
  ASSERT_TRUE(wait_for_log(d.log, "capture incomplete", 5000)) << read_file(d.log);
  EXPECT_NE(read_file(d.log).find("library_max_files_per_user"), std::string::npos) << read_file(d.log);
  // gpuobs status, from the status file the daemon writes once a second.
  std::string st;
  for (int i = 0; i < 50; ++i) {
    auto [rc, out] = run_output(std::string(GPUOBS_BIN) + " status --status-file " + d.status + " 2>&1");
    st = out;
    if (st.find("incomplete") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(st.find("incomplete"), std::string::npos) << st;
  EXPECT_NE(st.find("library_max_files_per_user"), std::string::npos) << st;
  ASSERT_EQ(d.stop(), 0) << read_file(d.log);

  auto db = open_capture_readonly(db_path);
  ASSERT_TRUE(db.ok()) << db.error().message;
  const std::string state = text(*db, "SELECT state FROM capture");
  EXPECT_EQ(state.rfind("incomplete (1 library mapping could call a GPU library before its probes were live", 0), 0u)
      << state;
  EXPECT_NE(state.find("library_max_files_per_user"), std::string::npos) << state;
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM library_maps WHERE calls_before_attach = 1 AND hold = 'held'"), 1);
  // `report coverage` lists it.
  auto [rc, rep] = run_output(std::string(GPUOBS_BIN) + " report coverage " + db_path + " --format csv 2>&1");
  EXPECT_EQ(rc, 0) << rep;
  EXPECT_NE(rep.find("lib_needed_work"), std::string::npos) << rep;
  EXPECT_NE(rep.find("library_max_files_per_user"), std::string::npos) << rep;
}

// `gpuobs record` of a ctypes program, with no libcuda on the system and no
// --libcuda: 300 of 300 launches, each with its Python file:line.
TEST(FirstCall, RecordSeesACtypesDlopenFromItsFirstCallWithoutFlags) {
  TempDir dir;
  fs::create_directories(dir.file("empty"));
  const std::string lib = fresh_copy(dir, "jax/lib");
  const std::string script = std::string(GPUOBS_SOURCE_DIR) + "/tests/workloads/ctypes_launches.py";
  const std::string out = dir.file("r.gpuobs");
  ASSERT_EQ(run("GPUOBS_LIBCUDA_SEARCH_PATH=" + dir.file("empty") + " GPUOBS_LIBHIP_SEARCH_PATH=" + dir.file("empty") +
                " " + GPUOBS_BIN + " record -o " + out + " -- python3 " + script + " " + lib + " > " + dir.file("o") +
                " 2> " + dir.file("e")),
            0)
      << read_file(dir.file("e"));
  auto db = open_capture_readonly(out);
  ASSERT_TRUE(db.ok()) << db.error().message;
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM kernel_launches"), 300);
  EXPECT_EQ(scalar(*db,
                   "SELECT count(*) FROM kernel_launches k WHERE EXISTS (SELECT 1 FROM stack_symbols s WHERE "
                   "s.stack_id = k.stack_id AND s.kind = 'python' AND s.file LIKE '%ctypes_launches.py' AND "
                   "s.line = 18)"),
            300);
  EXPECT_EQ(text(*db, "SELECT hold FROM library_maps WHERE library = 'libcuda.so.1'"), "held");
  EXPECT_EQ(text(*db, "SELECT state FROM capture"), "complete");
}
