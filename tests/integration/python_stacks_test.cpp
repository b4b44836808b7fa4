// CPython frames (issue 18) with real BPF: tests/workloads/python_launches.py
// calls the fake libcuda's cuLaunchKernel through ctypes from known
// functions at known lines (nested calls, a recursion, a generator, a
// method and a classmethod, a thread, a lambda, a function made by exec, a
// callback from C), under every CPython found here: Debian's python3.11
// (libpython linked into a non-PIE executable) always, and the pyenv
// builds of 3.10, 3.11, 3.12 and 3.13 (libpython3.X.so) this machine kind
// carries. Every launch's Python frames must be exactly the expected
// (qualified name, file, line), innermost first. Root.
#include <fcntl.h>
#include <gelf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "run_util.h"
#include "store/schema.h"
#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::testing;

namespace {

const std::string kScript = std::string(GPUOBS_SOURCE_DIR) + "/tests/workloads/python_launches.py";

// "# launch:NAME" markers of the workload: NAME -> line.
std::map<std::string, int> markers() {
  std::map<std::string, int> m;
  std::ifstream in(kScript);
  std::string line;
  std::regex re("# launch:(\\S+)");
  for (int n = 1; std::getline(in, line); ++n)
    if (std::smatch s; std::regex_search(line, s, re)) m[s[1]] = n;
  return m;
}

struct Interpreter {
  std::string path;
  int minor;
};

// Debian's python3.11 first (required), then the pyenv builds present.
std::vector<Interpreter> interpreters() {
  std::vector<Interpreter> out{{"/usr/bin/python3.11", 11}};
  for (int minor : {10, 11, 12, 13}) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/root/.pyenv/versions", ec)) {
      std::string v = e.path().filename().string();
      if (v.rfind("3." + std::to_string(minor) + ".", 0) != 0) continue;
      std::string exe = e.path().string() + "/bin/python3." + std::to_string(minor);
      if (std::filesystem::exists(exe)) {
        out.push_back({exe, minor});
        break;
      }
    }
  }
  return out;
}

// The Python frames of each launch, in launch order: "name@file:line".
std::vector<std::vector<std::string>> python_frames(Db& db) {
  std::vector<std::vector<std::string>> out;
  auto ids = column(db, "SELECT coalesce(stack_id, 0) FROM kernel_launches ORDER BY ts_mono_ns, id");
  for (const std::string& id : ids) {
    auto frames = column(db,
                         "SELECT symbol || '@' || file || ':' || coalesce(line, -1) FROM stack_symbols WHERE kind = "
                         "'python' AND stack_id = " +
                             id + " ORDER BY position");
    out.push_back(frames);
  }
  return out;
}

// What each launch's Python frames must be, innermost first, for minor.
std::vector<std::vector<std::string>> expected(int minor) {
  auto m = markers();
  const std::string f = kScript;
  auto at = [&](const std::string& name, const std::string& marker) {
    return name + "@" + f + ":" + std::to_string(m.at(marker));
  };
  // 3.10 names frames by co_name; 3.11+ by co_qualname.
  auto q = [&](const std::string& qual, const std::string& plain) { return minor >= 11 ? qual : plain; };
  std::string launch = at("launch", "launch"), module = at("<module>", "module");
  std::vector<std::vector<std::string>> e;
  e.push_back({launch, at("nested_inner", "nested_inner"), at("nested_outer", "nested_outer"),
               at("main", "main_nested"), module});
  e.push_back({launch, at("recurse", "recurse_base"), at("recurse", "recurse_step"), at("recurse", "recurse_step"),
               at("recurse", "recurse_step"), at("main", "main_recurse"), module});
  for (int i = 0; i < 2; ++i) e.push_back({launch, at("generator", "generator"), at("main", "main_generator"), module});
  e.push_back({launch, at(q("Model.forward", "forward"), "Model.forward"), at("main", "main_forward"), module});
  e.push_back({launch, at(q("Model.build", "build"), "Model.build"), at("main", "main_build"), module});
  e.push_back({launch, at("from_thread", "from_thread")});  // then threading.py's frames (checked apart)
  e.push_back({launch, at(q("main.<locals>.<lambda>", "<lambda>"), "lambda"), at("main", "lambda"), module});
  e.push_back({launch, "made_by_exec@<string>:2", at("main", "main_exec"), module});
  e.push_back({launch, at("sorted_key", "sorted_key"), at("main", "main_sorted"), module});
  return e;
}

int record(const TempDir& dir, const std::string& python, const std::string& opts, double linger) {
  std::string cmd = std::string(GPUOBS_BIN) + " record --libcuda " + FAKE_LIBCUDA + " " + opts + " -o " +
                    dir.file("c.gpuobs") + " -- " + python + " " + kScript + " " + FAKE_LIBCUDA + " " +
                    std::to_string(linger) + " > " + dir.file("out") + " 2> " + dir.file("log");
  return run(cmd);
}

void check_capture(Db& db, int minor, const std::string& what) {
  auto got = python_frames(db);
  auto want = expected(minor);
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    if (i == 6) {  // the thread: from_thread, then threading's bootstrap frames
      ASSERT_GE(got[i].size(), 4u) << what;
      EXPECT_EQ(std::vector<std::string>(got[i].begin(), got[i].begin() + 2), want[i]) << what;
      std::string outer = got[i].back();
      EXPECT_NE(outer.find("_bootstrap@"), std::string::npos) << what << ": " << outer;
      EXPECT_NE(outer.find("/threading.py:"), std::string::npos) << what << ": " << outer;
      continue;
    }
    EXPECT_EQ(got[i], want[i]) << what << ", launch " << i;
  }
  // Every stack's Python walk reached the thread's first frame, and the
  // native frame above the Python ones (ctypes' libffi call) is still there.
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM stacks WHERE python_end IS NOT 'root'"), 0) << what;
  EXPECT_EQ(scalar(db,
                   "SELECT count(*) FROM kernel_launches k JOIN stack_symbols ss ON ss.stack_id = k.stack_id"
                   " AND ss.position = 0 WHERE ss.kind <> 'native'"),
            0)
      << what;
  EXPECT_EQ(scalar(db, "SELECT value FROM counters WHERE name = 'python_interpreters'"), 1) << what;
  EXPECT_EQ(scalar(db, "SELECT value FROM counters WHERE name = 'python_stacks'"), 10) << what;  // every launch
  EXPECT_EQ(scalar(db, "SELECT python_stacks FROM capture"), 1) << what;
}

}  // namespace

TEST(PythonStacks, EveryLaunchNamesItsExactPythonFramesUnderEachCPython) {
  auto pys = interpreters();
  std::string ran;
  for (const auto& py : pys) {
    SCOPED_TRACE(py.path);
    TempDir dir;
    ASSERT_EQ(record(dir, py.path, "", 0.3), 0) << read_file(dir.file("log"));
    auto db = open_capture_readonly(dir.file("c.gpuobs"));
    ASSERT_TRUE(db.ok()) << db.error().message;
    check_capture(*db, py.minor, py.path);
    EXPECT_EQ(text(*db, "SELECT path FROM modules WHERE symbols = 'python' AND path LIKE '%python_launches.py'"),
              kScript);
    ran += " 3." + std::to_string(py.minor);
  }
  std::printf("CPython versions checked:%s\n", ran.c_str());
  EXPECT_GE(pys.size(), 1u);
}

// With the native walk through the interpreter (DWARF unwinding in user
// space), the Python frames take the place of _PyEval_EvalFrameDefault and
// the interpreter's native frames below them stay: Py_RunMain, main.
TEST(PythonStacks, UnwoundThroughTheInterpreterPythonFramesReplaceTheEvalLoop) {
  TempDir dir;
  ASSERT_EQ(record(dir, "/usr/bin/python3.11", "--unwind dwarf", 2.0), 0) << read_file(dir.file("log"));
  auto db = open_capture_readonly(dir.file("c.gpuobs"));
  ASSERT_TRUE(db.ok()) << db.error().message;
  check_capture(*db, 11, "--unwind dwarf");
  // No eval-loop frame is left, and below the outermost Python frame the
  // interpreter's native callers are there.
  EXPECT_EQ(scalar(*db,
                   "SELECT count(*) FROM kernel_launches k JOIN stack_symbols ss ON ss.stack_id = k.stack_id"
                   " WHERE ss.symbol = '_PyEval_EvalFrameDefault'"),
            0);
  EXPECT_EQ(scalar(*db,
                   "SELECT count(*) FROM kernel_launches k WHERE NOT EXISTS (SELECT 1 FROM stack_symbols n"
                   " WHERE n.stack_id = k.stack_id AND n.symbol = 'Py_RunMain' AND n.position >"
                   " (SELECT max(position) FROM stack_symbols p WHERE p.stack_id = k.stack_id AND p.kind = 'python'))"
                   " AND k.tid = k.tgid"),
            0);
}

// --python-stacks off: native frames only, and the capture says so.
TEST(PythonStacks, OffKeepsNativeFramesOnly) {
  TempDir dir;
  ASSERT_EQ(record(dir, "/usr/bin/python3.11", "--python-stacks off", 0.3), 0) << read_file(dir.file("log"));
  auto db = open_capture_readonly(dir.file("c.gpuobs"));
  ASSERT_TRUE(db.ok()) << db.error().message;
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM kernel_launches"), 10);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM frames WHERE kind = 'python'"), 0);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM stacks WHERE python_end IS NOT NULL"), 0);
  EXPECT_EQ(scalar(*db, "SELECT python_stacks FROM capture"), 0);
}

// A CPython gpuobs has no layout for: counted and named (the version) in
// the capture's counters, never guessed; the stacks keep their native
// frames. The interpreter is Debian's python3.11 with Py_Version patched to
// 3.14 (only informational to Python itself).
TEST(PythonStacks, AnUnknownVersionIsCountedAndNamedNeverGuessed) {
  TempDir dir;
  std::string py = dir.file("python3.11");
  std::filesystem::copy_file("/usr/bin/python3.11", py);
  // Py_Version's file offset: its address through the PT_LOAD holding it.
  int fd = ::open(py.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  elf_version(EV_CURRENT);
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  ASSERT_NE(elf, nullptr);
  uint64_t vaddr = 0;
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn));) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    for (size_t i = 0; data && i < sh.sh_size / sh.sh_entsize; ++i) {
      GElf_Sym sym;
      if (gelf_getsym(data, static_cast<int>(i), &sym) &&
          std::string(elf_strptr(elf, sh.sh_link, sym.st_name)) == "Py_Version")
        vaddr = sym.st_value;
    }
  }
  int64_t off = -1;
  size_t n = 0;
  elf_getphdrnum(elf, &n);
  for (size_t i = 0; i < n; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf, static_cast<int>(i), &ph) && ph.p_type == PT_LOAD && vaddr >= ph.p_vaddr &&
        vaddr < ph.p_vaddr + ph.p_filesz)
      off = static_cast<int64_t>(vaddr - ph.p_vaddr + ph.p_offset);
  }
  elf_end(elf);
  ASSERT_GT(off, 0);
  uint32_t v314 = 0x030e00f0;
  ASSERT_EQ(::pwrite(fd, &v314, 4, off), 4);
  ::close(fd);
  ::chmod(py.c_str(), 0755);

  ASSERT_EQ(record(dir, py, "", 0.3), 0) << read_file(dir.file("log"));
  auto db = open_capture_readonly(dir.file("c.gpuobs"));
  ASSERT_TRUE(db.ok()) << db.error().message;
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM kernel_launches"), 10);
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'python_unknown_version'"), 1);
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'python_unknown_version_3.14'"), 1);
  EXPECT_EQ(scalar(*db, "SELECT coalesce(sum(value), 0) FROM counters WHERE name = 'python_interpreters'"), 0);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM frames WHERE kind = 'python'"), 0);
  // Native frames stay: every launch has its stack.
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM kernel_launches WHERE stack_id IS NULL"), 0);
  auto [rc, report] = run_output(std::string(GPUOBS_BIN) + " report capture " + dir.file("c.gpuobs"));
  EXPECT_EQ(rc, 0);
  EXPECT_NE(report.find("python_unknown_version_3.14"), std::string::npos) << report;
}

namespace {

const std::string kThreadScript = std::string(GPUOBS_SOURCE_DIR) + "/tests/workloads/python_native_threads.py";

// "# wait:NAME" markers of python_native_threads.py: NAME -> "name@file:line".
std::map<std::string, std::string> wait_frames() {
  std::map<std::string, std::string> m;
  std::ifstream in(kThreadScript);
  std::string line;
  std::string fn = "<module>";
  for (int n = 1; std::getline(in, line); ++n) {
    std::smatch s;
    if (std::regex_search(line, s, std::regex("^def (\\w+)"))) fn = s[1];
    else if (!line.empty() && line[0] != ' ' && line[0] != '#') fn = "<module>";
    if (std::regex_search(line, s, std::regex("# wait:(\\S+)")))
      m[s[1]] = fn + "@" + kThreadScript + ":" + std::to_string(n);
  }
  return m;
}

int record_threads(const TempDir& dir, const std::string& opts, const std::string& python = "/usr/bin/python3.11") {
  std::string cmd = std::string(GPUOBS_BIN) + " record --libcuda " + FAKE_LIBCUDA + " " + opts + " -o " +
                    dir.file("c.gpuobs") + " -- " + python + " " + kThreadScript + " " + FAKE_LIBCUDA + " " +
                    NATIVE_THREAD_LAUNCHER + " 0.3 > " + dir.file("out") + " 2> " + dir.file("log");
  return run(cmd);
}

// Per launch in order: "grid_x main|other python_thread python_end" and
// its Python frames.
struct ThreadLaunch {
  std::string what;
  std::vector<std::string> python;
  int64_t native = 0;  // native frames before the first Python one
};
std::vector<ThreadLaunch> thread_launches(Db& db) {
  std::vector<ThreadLaunch> out;
  auto rows = column(db,
                     "SELECT k.stack_id || ' ' || k.grid_x || ' ' || CASE WHEN k.tid = k.tgid THEN 'main' ELSE"
                     " 'other' END || ' ' || coalesce(s.python_thread, '-') || ' ' || coalesce(s.python_end, '-')"
                     " FROM kernel_launches k JOIN stacks s ON s.id = k.stack_id ORDER BY k.ts_mono_ns, k.id");
  for (const std::string& r : rows) {
    std::string id = r.substr(0, r.find(' '));
    ThreadLaunch l;
    l.what = r.substr(r.find(' ') + 1);
    l.python = column(db,
                      "SELECT symbol || '@' || file || ':' || coalesce(line, -1) FROM stack_symbols WHERE"
                      " kind = 'python' AND stack_id = " +
                          id + " ORDER BY position");
    l.native = scalar(db,
                      "SELECT coalesce((SELECT min(position) FROM stack_symbols WHERE kind = 'python' AND"
                      " stack_id = " +
                          id + "), (SELECT count(*) FROM stack_symbols WHERE stack_id = " + id + "))");
    out.push_back(l);
  }
  return out;
}

// A thread that runs no Python (no interpreter state, or PyTorch's kind: one
// with no frame) carries the main thread's Python frames after its own
// native ones: the line where the main thread waits on it. The main
// thread's own launch keeps its own frames.
void check_main_thread_frames(const std::string& python) {
  TempDir dir;
  ASSERT_EQ(record_threads(dir, "", python), 0) << read_file(dir.file("log"));
  EXPECT_EQ(read_file(dir.file("out")), "own 1 plain 3 idle 2 spin 2\n");
  auto db = open_capture_readonly(dir.file("c.gpuobs"));
  ASSERT_TRUE(db.ok()) << db.error().message;
  auto w = wait_frames();
  auto got = thread_launches(*db);
  ASSERT_EQ(got.size(), 8u);
  EXPECT_EQ(got[0].what, "1 main calling root");
  EXPECT_EQ(got[0].python, (std::vector<std::string>{w.at("own_launch"), w.at("step_own"), w.at("module")}));
  for (size_t i = 1; i < 6; ++i) {
    SCOPED_TRACE(i);
    bool plain = i < 4;
    EXPECT_EQ(got[i].what, std::to_string(20 + (plain ? i - 1 : i - 4)) + " other main root");
    EXPECT_EQ(got[i].python, (std::vector<std::string>{w.at(plain ? "wait_plain" : "wait_idle"),
                                                       w.at(plain ? "step_plain" : "step_idle"), w.at("module")}));
    // The launching thread's own native frames come first: the launcher's
    // loop and its thread function.
    EXPECT_GE(got[i].native, 2);
  }
  // While the main thread ran Python (a busy loop), it was not waiting on
  // the launching thread: no frames taken, counted.
  for (size_t i = 6; i < 8; ++i) {
    EXPECT_EQ(got[i].what, std::to_string(30 + i - 6) + " other calling no_thread") << i;
    EXPECT_TRUE(got[i].python.empty()) << i;
  }
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'python_main_thread_running'"), 2);
  EXPECT_EQ(scalar(*db, "SELECT python_main_thread FROM capture"), 1);
  // The main thread's frames come after the thread's own, entry function
  // included: no native frame follows a Python one, <module> is last.
  EXPECT_EQ(scalar(*db,
                   "SELECT count(*) FROM stack_symbols n JOIN stacks s ON s.id = n.stack_id WHERE"
                   " s.python_thread = 'main' AND n.kind = 'native' AND n.position > (SELECT min(position) FROM"
                   " stack_symbols p WHERE p.stack_id = n.stack_id AND p.kind = 'python')"),
            0);
  EXPECT_EQ(scalar(*db,
                   "SELECT count(*) FROM stacks s WHERE s.python_thread = 'main' AND (SELECT symbol FROM stack_symbols"
                   " o WHERE o.stack_id = s.id ORDER BY position DESC LIMIT 1) IS NOT '<module>'"),
            0);
  for (const char* fn : {"launch_n", "run"})
    EXPECT_EQ(scalar(*db,
                     "SELECT count(DISTINCT k.id) FROM kernel_launches k JOIN stack_symbols ss ON ss.stack_id ="
                     " k.stack_id WHERE k.tid <> k.tgid AND ss.kind = 'native' AND ss.symbol = '" +
                         std::string(fn) + "'"),
              7)  // the 5 above and the 2 launched while the main thread ran
        << fn;
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'python_main_thread_stacks'"), 5);
  // Shown as the main thread's: gpuobs stacks marks where they start, and
  // the text of a stack (the exports' stack argument) too.
  auto [rc, stacks] = run_output(std::string(GPUOBS_BIN) + " stacks " + dir.file("c.gpuobs") + " --top 5");
  EXPECT_EQ(rc, 0);
  EXPECT_NE(stacks.find("-- the main thread's Python (this thread ran none) --"), std::string::npos) << stacks;
  auto [frc, folded] = run_output(std::string(GPUOBS_BIN) + " export folded " + dir.file("c.gpuobs"));
  EXPECT_EQ(frc, 0);
  EXPECT_NE(folded.find("wait_plain;[other thread];"), std::string::npos) << folded;
  // pprof: the same marker location between the two threads' frames.
  ASSERT_EQ(run(std::string(GPUOBS_BIN) + " export pprof -o " + dir.file("p.pb.gz") + " " + dir.file("c.gpuobs")), 0);
  auto [prc, marks] = run_output("gzip -dc " + dir.file("p.pb.gz") + " | grep -c -a 'other thread'");
  EXPECT_EQ(prc, 0);
  EXPECT_EQ(marks, "1\n");
  // The exports' stack text (Chrome JSON's `stack` arg) and the HTML flame
  // graph mark them too.
  ASSERT_EQ(run(std::string(GPUOBS_BIN) + " export chrome -o " + dir.file("t.json") + " " + dir.file("c.gpuobs")), 0);
  EXPECT_NE(read_file(dir.file("t.json")).find("[main thread] <- wait_plain ("), std::string::npos);
  ASSERT_EQ(run(std::string(GPUOBS_BIN) + " export html -o " + dir.file("t.html") + " " + dir.file("c.gpuobs")), 0);
  EXPECT_NE(read_file(dir.file("t.html")).find("[other thread]"), std::string::npos);
}

}  // namespace

// Under every CPython found (3.10's frame objects, 3.11/3.12's cframe,
// 3.13's current_frame: each version finds the main thread's frame apart).
TEST(PythonStacks, ThreadsThatRunNoPythonCarryTheMainThreadsFrames) {
  for (const auto& py : interpreters()) {
    SCOPED_TRACE(py.path);
    check_main_thread_frames(py.path);
  }
}

// --python-main-thread off: such threads keep their own (no) Python frames.
TEST(PythonStacks, MainThreadFramesOffLeavesOtherThreadsWithoutPython) {
  TempDir dir;
  ASSERT_EQ(record_threads(dir, "--python-main-thread off"), 0) << read_file(dir.file("log"));
  auto db = open_capture_readonly(dir.file("c.gpuobs"));
  ASSERT_TRUE(db.ok()) << db.error().message;
  auto got = thread_launches(*db);
  ASSERT_EQ(got.size(), 8u);
  EXPECT_EQ(got[0].python.size(), 3u);
  for (size_t i = 1; i < 8; ++i) {
    SCOPED_TRACE(i);
    // No interpreter state: no_thread; an idle one: its walk ends at once.
    EXPECT_EQ(got[i].what.substr(got[i].what.find(' ') + 1),
              i < 4 || i >= 6 ? "other calling no_thread" : "other calling root");
    EXPECT_TRUE(got[i].python.empty());
  }
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'python_main_thread_stacks'"), 0);
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'python_thread_without_state'"), 5);
  EXPECT_EQ(scalar(*db, "SELECT python_main_thread FROM capture"), 0);
}

// Issue 24's straggler with its Python call site, as DDP makes it: each of
// 3 ranks runs the all-reduce on a thread that runs no Python while its main
// thread waits at a known line; rank 2 sleeps 60 ms before every step.
// nccl_ranks names rank 2 the straggler, its native call site (the thread
// function that called NCCL) and its Python one (the main thread's line).
TEST(PythonStacks, NcclStragglerNamedWithItsPythonCallSite) {
  TempDir dir;
  const std::string script = std::string(GPUOBS_SOURCE_DIR) + "/tests/workloads/python_nccl_ranks.py";
  std::string sh;
  for (int r = 0; r < 3; ++r)
    sh += "/usr/bin/python3.11 " + script + " " + FAKE_LIBNCCL + " " + NATIVE_THREAD_LAUNCHER + " " +
          std::to_string(r) + " 3 " + dir.file("id") + " 5 60 > " + dir.file("out." + std::to_string(r)) + " & ";
  sh += "wait";
  std::string lib = FAKE_LIBNCCL;
  std::string cmd = "LD_LIBRARY_PATH=" + lib.substr(0, lib.rfind('/')) + " " + GPUOBS_BIN + " record --libcuda " +
                    FAKE_LIBCUDA + " -o " + dir.file("c.gpuobs") + " -- sh -c '" + sh + "' 2> " + dir.file("log");
  ASSERT_EQ(run(cmd), 0) << read_file(dir.file("log"));
  for (int r = 0; r < 3; ++r) ASSERT_EQ(read_json(dir.file("out." + std::to_string(r)))["steps"], 5) << r;
  auto db = open_capture_readonly(dir.file("c.gpuobs"));
  ASSERT_TRUE(db.ok()) << db.error().message;
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM nccl_calls WHERE op = 'all_reduce' AND tid <> tgid"), 15);
  EXPECT_EQ(scalar(*db,
                   "SELECT count(*) FROM nccl_calls n JOIN stacks s ON s.id = n.stack_id WHERE n.op = 'all_reduce'"
                   " AND s.python_thread = 'main' AND s.python_end = 'root'"),
            15);
  // The script's lines, from its markers.
  std::map<std::string, int> site;
  {
    std::ifstream in(script);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n)
      if (std::smatch s; std::regex_search(line, s, std::regex("# site:(\\S+)"))) site[s[1]] = n;
  }
  auto [rc, out] = run_output(std::string(GPUOBS_BIN) + " report nccl_ranks --format json " + dir.file("c.gpuobs"));
  ASSERT_EQ(rc, 0) << out;
  auto rows = nlohmann::json::parse(out);
  ASSERT_EQ(rows.size(), 3u) << out;
  EXPECT_EQ(rows[0]["rank"], 2) << out;
  EXPECT_EQ(rows[0]["late"], 5) << out;
  EXPECT_EQ(rows[0]["call_site"], "run_allreduce") << out;
  EXPECT_EQ(rows[0]["python_site"],
            "reduce_grads (python_nccl_ranks.py:" + std::to_string(site.at("reduce_grads")) + ")")
      << out;
  // The stack's Python frames below it: train_step, main, <module>.
  EXPECT_EQ(scalar(*db,
                   "SELECT count(DISTINCT n.id) FROM nccl_calls n JOIN stack_symbols ss ON ss.stack_id = n.stack_id"
                   " WHERE n.op = 'all_reduce' AND ss.kind = 'python' AND ss.symbol = 'train_step' AND ss.line = " +
                       std::to_string(site.at("train_step"))),
            15);
}

// Level Zero from Python (ctypes over the real loader, the fake driver):
// every launch carries its Python call site, launch() at its marked line
// inside main() at its, and the loader's launch as its own, not CUDA's.
TEST(PythonStacks, LevelZeroLaunchesNameTheirPythonCallSite) {
  const std::string script = std::string(GPUOBS_SOURCE_DIR) + "/tests/workloads/python_level_zero.py";
  int launch_line = 0, call_line = 0;
  {
    std::ifstream in(script);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      if (line.find("# launch") != std::string::npos) launch_line = n;
      if (line.find("# call") != std::string::npos) call_line = n;
    }
  }
  ASSERT_GT(launch_line, 0);
  ASSERT_GT(call_line, 0);
  TempDir dir;
  ASSERT_EQ(run(std::string(GPUOBS_BIN) + " record -o " + dir.file("z.gpuobs") + " -- env ZE_ENABLE_ALT_DRIVERS=" +
                FAKE_LEVEL_ZERO + " /usr/bin/python3.11 " + script + " 25 2> " + dir.file("log")),
            0)
      << read_file(dir.file("log"));
  auto db = open_capture_readonly(dir.file("z.gpuobs"));
  ASSERT_TRUE(db.ok()) << db.error().message;
  EXPECT_EQ(scalar(*db,
                   "SELECT count(*) FROM kernel_launches WHERE vendor = 'level_zero' AND kernel_name = 'vector_add'"
                   " AND block_x = 128"),
            25);
  auto frames = python_frames(*db);
  ASSERT_EQ(frames.size(), 25u);
  const std::vector<std::string> want = {"launch@" + script + ":" + std::to_string(launch_line),
                                         "main@" + script + ":" + std::to_string(call_line),
                                         "<module>@" + script + ":" + std::to_string(call_line + 3)};
  for (size_t i = 0; i < frames.size(); ++i) EXPECT_EQ(frames[i], want) << "launch " << i;
}
