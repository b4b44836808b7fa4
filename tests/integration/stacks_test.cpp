// Call stacks with real BPF: known call chains (tests/workloads/
// stack_workload.c) recorded through the fake libcuda, and the stored stacks
// compared function by function, with file:line of the call sites. Covers the
// entry probe (kernel-added caller and caller read from [sp]), the return
// probe, the ioctl syscall, a shared library in the middle, a second thread,
// a forked child, MiniDebugInfo, code without frame pointers, a process that
// exits 10 ms after its last call, and a reused pid.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "run_util.h"
#include "store/schema.h"
#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::testing;

namespace {

constexpr int kCalls = 20;

// Line of the first line of `source` containing `marker`.
int line_of(const std::string& source, const std::string& marker) {
  std::ifstream in(source);
  std::string l;
  for (int n = 1; std::getline(in, l); ++n)
    if (l.find(marker) != std::string::npos) return n;
  return -1;
}

// The stored functions of a stack, innermost first ("?" where unknown).
std::vector<std::string> functions(Db& db, int64_t stack_id) {
  Stmt st(db.get(), "SELECT coalesce(symbol, '?') FROM stack_symbols WHERE stack_id = ? ORDER BY position");
  st.bind(1, stack_id);
  std::vector<std::string> out;
  while (st.step() == SQLITE_ROW) out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 0)));
  return out;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (auto& f : v) s += (s.empty() ? "" : " <- ") + f;
  return s;
}

std::string record(const TempDir& dir, const std::string& args, const std::string& extra = "") {
  std::string out = dir.file("cap.gpuobs");
  std::string cmd = std::string(GPUOBS_BIN) + " record -o " + out + " --libcuda " + FAKE_LIBCUDA +
                    " --no-gpu-devices " + extra + " -- " + args;
  EXPECT_EQ(run(cmd), 0) << cmd;
  return out;
}

// Every row of `table` matching `where`: one stack id, returned.
int64_t only_stack(Db& db, const std::string& table, const std::string& where, int64_t rows) {
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM " + table + " WHERE " + where), rows) << table << " " << where;
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM " + table + " WHERE " + where + " AND stack_id IS NULL"), 0);
  EXPECT_EQ(scalar(db, "SELECT count(DISTINCT stack_id) FROM " + table + " WHERE " + where), 1)
      << table << " " << where;
  return scalar(db, "SELECT stack_id FROM " + table + " WHERE " + where + " LIMIT 1");
}

void expect_site(Db& db, int64_t stack, const std::string& file, int line) {
  std::string pos = "stack_id = " + std::to_string(stack) + " AND position = 0";
  EXPECT_EQ(text(db, "SELECT file FROM stack_symbols WHERE " + pos), file);
  EXPECT_EQ(scalar(db, "SELECT line FROM stack_symbols WHERE " + pos), line);
}

const std::vector<std::string> kMainChain = {"level_three", "level_two", "level_one", "main", "__libc_start_call_main"};

std::string workload(const char* bin, const std::string& mode, int n = kCalls) {
  return std::string(bin) + " " + FAKE_LIBCUDA + " " + mode + " " + std::to_string(n);
}

}  // namespace

TEST(Stacks, EveryProbeKindGivesTheWholeChainWithCallSites) {
  TempDir dir;
  std::string cap = record(dir, workload(STACK_WORKLOAD, "chain"), "--watch-dev /dev/null");
  auto db = open_capture_readonly(cap);
  ASSERT_TRUE(db.ok()) << db.error().message;
  const std::string src = STACK_WORKLOAD_SOURCE;

  // Entry probe on a function starting with push %rbp: the kernel adds the caller.
  int64_t launch = only_stack(*db, "kernel_launches", "api = 'cuLaunchKernel'", kCalls);
  EXPECT_EQ(functions(*db, launch), kMainChain) << joined(functions(*db, launch));
  expect_site(*db, launch, src, line_of(src, "SITE_LAUNCH"));
  // Entry probe on a frameless function: the caller comes from [sp].
  int64_t graph = only_stack(*db, "stream_ops", "api = 'cuGraphLaunch'", kCalls);
  EXPECT_EQ(functions(*db, graph), kMainChain) << joined(functions(*db, graph));
  expect_site(*db, graph, src, line_of(src, "SITE_GRAPH"));
  // Return probe: the walk starts at the call site itself.
  int64_t sync = only_stack(*db, "syncs", "api = 'cuStreamSynchronize'", kCalls);
  EXPECT_EQ(functions(*db, sync), kMainChain) << joined(functions(*db, sync));
  expect_site(*db, sync, src, line_of(src, "SITE_SYNC"));
  // Syscall exit: frame 0 is libc's ioctl(). Debian 12's ioctl() is a C
  // function with a 0x58-byte frame, so its return address is not at [sp]
  // and the frame-pointer walk resumes at level_three's frame: level_three
  // itself is out of reach without call-frame information (counted).
  int64_t io = only_stack(*db, "ioctls", "dev_major = 1 AND dev_minor = 3", kCalls);
  std::vector<std::string> want_io = {"ioctl", "level_two", "level_one", "main", "__libc_start_call_main"};
  EXPECT_EQ(functions(*db, io), want_io) << joined(functions(*db, io));
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'stack_sp_frames_dropped'"), kCalls);

  for (int64_t s : {launch, graph, sync, io})
    EXPECT_EQ(text(*db, "SELECT end_reason FROM stacks WHERE id = " + std::to_string(s)), "root");
  EXPECT_EQ(text(*db, "SELECT m.symbols FROM modules m WHERE m.path = '" + std::string(STACK_WORKLOAD) + "'"),
            "symtab");
  EXPECT_EQ(scalar(*db, "SELECT debug_info FROM modules WHERE path = '" + std::string(STACK_WORKLOAD) + "'"), 1);
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'stack_events'"), 4 * kCalls);
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'stack_unreadable'"), 0);
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'stack_maps_unreadable'"), 0);
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'decode_bad_stacks'"), 0);
}

TEST(Stacks, SecondThreadEndsAtItsStartRoutine) {
  TempDir dir;
  auto db = open_capture_readonly(record(dir, workload(STACK_WORKLOAD, "thread")));
  ASSERT_TRUE(db.ok());
  int64_t s = only_stack(*db, "kernel_launches", "1", kCalls);
  std::vector<std::string> want = {"level_three", "level_two", "level_one", "thread_main", "start_thread"};
  EXPECT_EQ(functions(*db, s), want) << joined(functions(*db, s));
  EXPECT_EQ(text(*db, "SELECT end_reason FROM stacks WHERE id = " + std::to_string(s)), "root");
  EXPECT_NE(scalar(*db, "SELECT tid FROM kernel_launches LIMIT 1"),
            scalar(*db, "SELECT tgid FROM kernel_launches LIMIT 1"));
}

TEST(Stacks, ThroughASharedLibrary) {
  TempDir dir;
  auto db = open_capture_readonly(record(dir, workload(STACK_WORKLOAD, "lib")));
  ASSERT_TRUE(db.ok());
  int64_t s = only_stack(*db, "kernel_launches", "1", kCalls);
  std::vector<std::string> want = {"lib_inner", "lib_outer", "main", "__libc_start_call_main"};
  EXPECT_EQ(functions(*db, s), want) << joined(functions(*db, s));
  EXPECT_EQ(text(*db, "SELECT module FROM stack_symbols WHERE position = 0 AND stack_id = " + std::to_string(s)),
            STACKCHAIN_LIB);
  expect_site(*db, s, STACKCHAIN_SOURCE, line_of(STACKCHAIN_SOURCE, "SITE_LIB"));
}

TEST(Stacks, ForkedChild) {
  TempDir dir;
  auto db = open_capture_readonly(record(dir, workload(STACK_WORKLOAD, "fork")));
  ASSERT_TRUE(db.ok());
  int64_t s = only_stack(*db, "kernel_launches", "1", kCalls);
  std::vector<std::string> want = {"child_work", "child_main", "main", "__libc_start_call_main"};
  EXPECT_EQ(functions(*db, s), want) << joined(functions(*db, s));
  EXPECT_EQ(text(*db, "SELECT p.source FROM kernel_launches k JOIN processes p ON p.id = k.process_id LIMIT 1"),
            "fork");
}

TEST(Stacks, StrippedBinaryWithMiniDebugInfo) {
  TempDir dir;
  auto db = open_capture_readonly(record(dir, workload(STACK_WORKLOAD_MINI, "chain")));
  ASSERT_TRUE(db.ok());
  int64_t s = only_stack(*db, "kernel_launches", "1", kCalls);
  EXPECT_EQ(functions(*db, s), kMainChain) << joined(functions(*db, s));
  EXPECT_EQ(text(*db, "SELECT symbols FROM modules WHERE path = '" + std::string(STACK_WORKLOAD_MINI) + "'"),
            "minidebuginfo");
  // No DWARF left: names, but no file:line.
  EXPECT_EQ(text(*db, "SELECT file FROM stack_symbols WHERE position = 0 AND stack_id = " + std::to_string(s)),
            "<null>");
}

TEST(Stacks, WithoutFramePointersTheCallerIsStillFound) {
  TempDir dir;
  auto db = open_capture_readonly(record(dir, workload(STACK_WORKLOAD_NOFP, "chain")));
  ASSERT_TRUE(db.ok());
  int64_t s = only_stack(*db, "kernel_launches", "1", kCalls);
  auto f = functions(*db, s);
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0], "level_three");  // the return address at [sp]
  // The walk cannot get further: no frame pointer in level_three.
  EXPECT_EQ(std::count(f.begin(), f.end(), "level_two"), 0) << joined(f);
  EXPECT_NE(text(*db, "SELECT end_reason FROM stacks WHERE id = " + std::to_string(s)), "root");
}

TEST(Stacks, ProcessExitingTenMillisecondsAfterItsLastCall) {
  TempDir dir;
  auto db = open_capture_readonly(record(dir, workload(STACK_WORKLOAD, "brief", 1)));
  ASSERT_TRUE(db.ok());
  int64_t s = only_stack(*db, "kernel_launches", "1", 1);
  EXPECT_EQ(functions(*db, s), kMainChain) << joined(functions(*db, s));
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'stack_maps_unreadable'"), 0);
}

TEST(Stacks, ReusedPidIsANewProcessWithItsOwnMappings) {
  TempDir dir;
  std::string cap = dir.file("cap.gpuobs"), pid_file = dir.file("pid");
  std::string cmd = std::string(GPUOBS_BIN) + " record -o " + cap + " --libcuda " + FAKE_LIBCUDA +
                    " --no-gpu-devices -- " + workload(STACK_WORKLOAD, "reuse", 1) + " " + STACK_WORKLOAD_MINI + " > " +
                    pid_file;
  ASSERT_EQ(run(cmd), 0) << cmd;
  std::ifstream in(pid_file);
  int64_t pid = 0;
  ASSERT_TRUE(in >> pid);
  auto db = open_capture_readonly(cap);
  ASSERT_TRUE(db.ok());
  std::string of_pid = "tgid = " + std::to_string(pid);
  ASSERT_EQ(scalar(*db, "SELECT count(DISTINCT process_id) FROM kernel_launches WHERE " + of_pid), 2);
  // Each process's launch is attributed to its own executable, fully symbolized.
  Stmt st(db->get(),
          "SELECT k.stack_id, s.module FROM kernel_launches k JOIN stack_symbols s ON s.stack_id = k.stack_id"
          " AND s.position = 0 WHERE k." +
              of_pid + " ORDER BY k.ts_mono_ns");
  std::vector<std::string> modules;
  std::vector<int64_t> stacks;
  while (st.step() == SQLITE_ROW) {
    stacks.push_back(sqlite3_column_int64(st.get(), 0));
    modules.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 1)));
  }
  ASSERT_EQ(modules.size(), 2u);
  EXPECT_EQ(modules[0], STACK_WORKLOAD);
  EXPECT_EQ(modules[1], STACK_WORKLOAD_MINI);
  for (int64_t s : stacks) EXPECT_EQ(functions(*db, s), kMainChain) << joined(functions(*db, s));
}

TEST(Stacks, StacksCommandAndFoldedExportWeighTheChain) {
  TempDir dir;
  std::string cap = record(dir, workload(STACK_WORKLOAD, "chain"), "--watch-dev /dev/null");
  std::string json = dir.file("stacks.json"), folded = dir.file("out.folded");
  ASSERT_EQ(run(std::string(GPUOBS_BIN) + " stacks " + cap + " --by calls --format json > " + json), 0);
  auto top = nlohmann::json::parse(read_file(json));
  // One stack per call site: launch, graph launch, sync (ioctls are not API calls).
  ASSERT_EQ(top.size(), 3u) << top.dump();
  for (auto& s : top) {
    EXPECT_EQ(s["weight"], kCalls);
    EXPECT_EQ(s["unit"], "calls");
    EXPECT_EQ(s["end_reason"], "root");
    ASSERT_EQ(s["frames"].size(), kMainChain.size());
    for (size_t i = 0; i < kMainChain.size(); ++i) EXPECT_EQ(s["frames"][i]["symbol"], kMainChain[i]);
    EXPECT_EQ(s["frames"][0]["file"], STACK_WORKLOAD_SOURCE);
  }
  // --format csv: the same stacks, a row per frame (it printed JSON; issue 20).
  std::string csv = dir.file("stacks.csv");
  ASSERT_EQ(run(std::string(GPUOBS_BIN) + " stacks " + cap + " --by calls --format csv > " + csv), 0);
  std::istringstream lines(read_file(csv));
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line,
            "rank,stack_id,weight,unit,share,end_reason,frame,module,symbol,symbol_offset,file,line,offset,kind,"
            "python_thread");
  size_t rows = 0;
  while (std::getline(lines, line)) {
    std::vector<std::string> cells;
    std::istringstream cols(line);
    for (std::string c; std::getline(cols, c, ',');) cells.push_back(c);
    ASSERT_GE(cells.size(), 9u) << line;
    EXPECT_EQ(cells[2], std::to_string(kCalls)) << line;
    EXPECT_EQ(cells[3], "calls") << line;
    size_t frame = std::stoul(cells[6]);
    ASSERT_LT(frame, kMainChain.size()) << line;
    EXPECT_EQ(cells[8], kMainChain[frame]) << line;
    ++rows;
  }
  EXPECT_EQ(rows, 3 * kMainChain.size());
  std::set<std::string> leaves;
  for (auto& s : top) leaves.insert(s["leaves"][0]["name"].get<std::string>());
  EXPECT_EQ(leaves, (std::set<std::string>{"cuLaunchKernel", "cuGraphLaunch", "cuStreamSynchronize"}));

  ASSERT_EQ(run(std::string(GPUOBS_BIN) + " export folded " + cap + " --by ioctls -o " + folded), 0);
  EXPECT_EQ(read_file(folded), "__libc_start_call_main;main;level_one;level_two;ioctl;[ioctl 1:3 0x5401] " +
                                   std::to_string(kCalls) + "\n");
  // Filters: a pid with nothing, an unknown measure.
  ASSERT_EQ(run(std::string(GPUOBS_BIN) + " export folded " + cap + " --pid 1 -f -o " + folded), 0);
  EXPECT_EQ(read_file(folded), "");
  EXPECT_EQ(run(std::string(GPUOBS_BIN) + " stacks " + cap + " --by nothing 2>/dev/null"), 2);
}

// --unwind dwarf: the stack is copied and unwound with .eh_frame in user
// space, so code without frame pointers is walked through.
TEST(StacksDwarf, WithoutFramePointersTheWholeChainFromEveryProbeKind) {
  TempDir dir;
  std::string cap = record(dir, workload(STACK_WORKLOAD_NOFP, "chain"), "--unwind dwarf --watch-dev /dev/null");
  auto db = open_capture_readonly(cap);
  ASSERT_TRUE(db.ok());
  const std::string src = STACK_WORKLOAD_SOURCE;
  int64_t launch = only_stack(*db, "kernel_launches", "api = 'cuLaunchKernel'", kCalls);
  int64_t graph = only_stack(*db, "stream_ops", "api = 'cuGraphLaunch'", kCalls);
  int64_t sync = only_stack(*db, "syncs", "api = 'cuStreamSynchronize'", kCalls);
  for (int64_t s : {launch, graph, sync}) {
    EXPECT_EQ(functions(*db, s), kMainChain) << joined(functions(*db, s));
    EXPECT_EQ(text(*db, "SELECT end_reason FROM stacks WHERE id = " + std::to_string(s)), "root");
  }
  expect_site(*db, launch, src, line_of(src, "SITE_LAUNCH"));
  expect_site(*db, sync, src, line_of(src, "SITE_SYNC"));
  // Through libc's ioctl() frame too: its CFI says where its return address is.
  int64_t io = only_stack(*db, "ioctls", "dev_major = 1 AND dev_minor = 3", kCalls);
  std::vector<std::string> want_io = {"ioctl",     "level_three", "level_two",
                                      "level_one", "main",        "__libc_start_call_main"};
  EXPECT_EQ(functions(*db, io), want_io) << joined(functions(*db, io));
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'dwarf_unwound'"), 4 * kCalls);
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'dwarf_frames_without_cfi'"), 0);
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'dwarf_copy_end'"), 0);
}

TEST(StacksDwarf, ThreadAndStrippedBinary) {
  TempDir dir;
  auto db = open_capture_readonly(record(dir, workload(STACK_WORKLOAD_NOFP, "thread"), "--unwind dwarf"));
  ASSERT_TRUE(db.ok());
  int64_t s = only_stack(*db, "kernel_launches", "1", kCalls);
  std::vector<std::string> want = {"level_three", "level_two", "level_one", "thread_main", "start_thread"};
  EXPECT_EQ(functions(*db, s), want) << joined(functions(*db, s));

  TempDir dir2;
  auto mini = open_capture_readonly(record(dir2, workload(STACK_WORKLOAD_MINI, "chain"), "--unwind dwarf"));
  ASSERT_TRUE(mini.ok());
  int64_t m = only_stack(*mini, "kernel_launches", "1", kCalls);
  EXPECT_EQ(functions(*mini, m), kMainChain) << joined(functions(*mini, m));
}

TEST(StacksDwarf, ACopyTooSmallEndsTheStackWithReasonCopy) {
  TempDir dir;
  auto db =
      open_capture_readonly(record(dir, workload(STACK_WORKLOAD_NOFP, "chain"), "--unwind dwarf --stack-copy 64"));
  ASSERT_TRUE(db.ok());
  int64_t s = only_stack(*db, "kernel_launches", "1", kCalls);
  auto f = functions(*db, s);
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0], "level_three");
  EXPECT_LT(f.size(), kMainChain.size());
  EXPECT_EQ(text(*db, "SELECT end_reason FROM stacks WHERE id = " + std::to_string(s)), "copy");
  EXPECT_GE(scalar(*db, "SELECT value FROM counters WHERE name = 'dwarf_copy_end'"), kCalls);
  // Bad sizes are refused before anything is captured.
  EXPECT_EQ(run(std::string(GPUOBS_BIN) + " record -o " + dir.file("x.gpuobs") +
                " --unwind dwarf --stack-copy 100 -- true 2>/dev/null"),
            2);
  EXPECT_EQ(run(std::string(GPUOBS_BIN) + " record -o " + dir.file("y.gpuobs") + " --unwind lbr -- true 2>/dev/null"),
            2);
  EXPECT_FALSE(std::filesystem::exists(dir.file("x.gpuobs")));
  EXPECT_FALSE(std::filesystem::exists(dir.file("y.gpuobs")));
}

// A process in its own mount namespace runs a binary from a path that does
// not exist outside it: the file is read through /proc/PID/map_files.
TEST(Stacks, BinaryVisibleOnlyInsideAMountNamespace) {
  TempDir dir;
  std::string inner = dir.file("ns-only");  // the tmpfs mounted here exists only inside the namespace
  std::string script = "mkdir -p " + inner + " && mount -t tmpfs tmpfs " + inner + " && cp " + STACK_WORKLOAD + " " +
                       inner + "/app && " + inner + "/app " + FAKE_LIBCUDA + " brief 3";
  auto db = open_capture_readonly(record(dir, "unshare -m --propagation private sh -c '" + script + "'"));
  ASSERT_TRUE(db.ok());
  ASSERT_FALSE(std::filesystem::exists(inner + "/app"));
  int64_t s = only_stack(*db, "kernel_launches", "1", 3);
  EXPECT_EQ(functions(*db, s), kMainChain) << joined(functions(*db, s));
  EXPECT_EQ(text(*db, "SELECT module FROM stack_symbols WHERE position = 0 AND stack_id = " + std::to_string(s)),
            inner + "/app");
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'stack_files_unopened'"), 0);
}

// --unwind bpf: the unwinding runs in BPF from tables built from .eh_frame.
// A process's tables are loaded when it is first seen, so its first calls
// (until then) have frame-pointer stacks; every later one the whole chain.
TEST(StacksBpf, WithoutFramePointersTheWholeChainOnceTablesAreLoaded) {
  TempDir dir;
  const int calls = 400;  // ~100 ms of calls: the tables load within the first few
  std::string cap = record(dir, workload(STACK_WORKLOAD_NOFP, "chain", calls), "--unwind bpf --watch-dev /dev/null");
  auto db = open_capture_readonly(cap);
  ASSERT_TRUE(db.ok());
  std::vector<std::string> fp_cut = {"level_three"};
  std::vector<std::string> want_io = {"ioctl",     "level_three", "level_two",
                                      "level_one", "main",        "__libc_start_call_main"};
  for (const char* table : {"kernel_launches", "stream_ops", "syncs", "ioctls"}) {
    Stmt st(db->get(), std::string("SELECT stack_id, count(*) FROM ") + table + " GROUP BY 1");
    int64_t full = 0;
    while (st.step() == SQLITE_ROW) {
      int64_t id = sqlite3_column_int64(st.get(), 0), n = sqlite3_column_int64(st.get(), 1);
      auto f = functions(*db, id);
      bool is_io = std::string(table) == "ioctls";
      if (f == (is_io ? want_io : kMainChain)) full += n;
      else EXPECT_TRUE(is_io ? f.size() <= 2 && f[0] == "ioctl" : f == fp_cut) << table << ": " << joined(f);
    }
    EXPECT_GE(full, calls / 2) << table;
    // The last call of each kind was unwound in BPF.
    int64_t last = scalar(*db, std::string("SELECT stack_id FROM ") + table + " ORDER BY ts_mono_ns DESC LIMIT 1");
    EXPECT_EQ(functions(*db, last), std::string(table) == "ioctls" ? want_io : kMainChain) << table;
  }
  EXPECT_GE(scalar(*db, "SELECT value FROM counters WHERE name = 'bpf_unwound'"), 2 * calls);
  EXPECT_GE(scalar(*db, "SELECT value FROM counters WHERE name = 'unwind_table_files'"), 2);  // the workload, libc
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'unwind_table_failed'"), 0);
}
