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
