// CPython frames (issue 18) without an interpreter: line tables the
// interpreters made (python_lines_data.inc, from make_python_lines_data.py),
// the layout table, and the resolver's merge over code objects laid out in
// this process's own memory as CPython 3.11 lays them out.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "decode/decoder.h"
#include "stacks/python_layout.h"
#include "stacks/python_lines.h"
#include "stacks/python_process.h"
#include "stacks/stack_resolver.h"
#include "test_util.h"

using namespace gpuobs;
using namespace gpuobs::testing;
using namespace std::literals;

namespace {

struct LineCase {
  const char* name;
  PyLineTable format;
  int firstlineno;
  std::string_view table;
  std::vector<std::pair<uint32_t, int>> expect;  // (code unit, line; -1: none)
};

const LineCase kLineCases[] = {
#include "python_lines_data.inc"
};

}  // namespace

// Every instruction of every code object the interpreters compiled gets the
// line co_lines() gives it (3.10's table and the 3.11-3.13 location table).
TEST(PythonLines, EveryInstructionGetsTheLineTheInterpreterGivesIt) {
  size_t checked = 0;
  for (const LineCase& c : kLineCases) {
    for (auto [unit, line] : c.expect) {
      EXPECT_EQ(python_line(c.format, c.table, c.firstlineno, unit), line) << c.name << " unit " << unit;
      ++checked;
    }
    // Past the table: no line.
    EXPECT_EQ(python_line(c.format, c.table, c.firstlineno, 100000), -1) << c.name;
  }
  EXPECT_GT(checked, 400u);
  EXPECT_EQ(std::size(kLineCases), 10u);  // 3 code objects in 3.10, 3.11; 2 in 3.12, 3.13 (comprehensions inlined)
}

TEST(PythonLines, ATruncatedOrGarbageTableGivesNoLineAndNeverReadsPastIt) {
  const LineCase& c = kLineCases[3];  // 3.11 sample
  ASSERT_EQ(c.format, PyLineTable::pep657);
  for (size_t cut = 0; cut < c.table.size(); ++cut) {
    std::string part(c.table.substr(0, cut));
    for (auto [unit, line] : c.expect) {
      int got = python_line(c.format, part, c.firstlineno, unit);
      EXPECT_TRUE(got == -1 || got == line) << "cut " << cut << " unit " << unit;
    }
  }
  EXPECT_EQ(python_line(PyLineTable::pep657, "\x01\x02\x03"sv, 10, 0), -1);  // no entry start bit
  EXPECT_EQ(python_line(PyLineTable::pep657, "\xf0\x7f"sv, 10, 0), -1);      // long form cut in its varint
  EXPECT_EQ(python_line(PyLineTable::pep626, "\x04"sv, 10, 0), -1);          // half a pair
  // Sums past int (fuzz_python_lines found this one: signed overflow): no line.
  EXPECT_EQ(python_line(PyLineTable::pep626, "\x06\x7f"sv, INT32_MAX, 0), -1);
  EXPECT_EQ(python_line(PyLineTable::pep626, "\x06\xe5"sv, INT32_MIN, 0), -1);
  EXPECT_EQ(python_line(PyLineTable::pep657, "\xe8\x02"sv, INT32_MAX, 0), -1);  // code 13, +1
}

TEST(PythonLayout, KnownVersionsOnlyAndEveryFrameFieldInsideTheBytesRead) {
  for (uint32_t v : {0x030au, 0x030bu, 0x030cu, 0x030du}) {
    auto l = python_layout(v);
    ASSERT_TRUE(l) << std::hex << v;
    const gpuobs_py_proc& b = l->bpf;
    EXPECT_LE(b.frame_read, GPUOBS_PY_READ_MAX);
    EXPECT_LE(b.tstate_len, GPUOBS_PY_READ_MAX);
    for (uint16_t off : {b.tstate_frame, b.tstate_thread_id}) {
      EXPECT_GE(off, b.tstate_lo);
      EXPECT_LE(off + 8u, b.tstate_lo + b.tstate_len);
    }
    for (uint16_t off : {b.frame_code, b.frame_previous, b.frame_instr}) EXPECT_LE(off + 8u, b.frame_read);
    for (uint16_t off : {b.frame_owner, b.frame_is_entry}) {
      if (off != GPUOBS_PY_NONE) { EXPECT_LT(off, b.frame_read); }
    }
    EXPECT_EQ(b.frame_code % 8, 0);
    EXPECT_EQ(b.frame_previous % 8, 0);
    EXPECT_LE(l->code_read, 256);
    EXPECT_EQ(l->lines, v == 0x030a ? PyLineTable::pep626 : PyLineTable::pep657);
  }
  // Measured (scripts/python-layout-probe.py): a few that differ by version.
  EXPECT_EQ(python_layout(0x030b)->bpf.tstate_thread_id, 152);
  EXPECT_EQ(python_layout(0x030c)->bpf.tstate_thread_id, 136);
  EXPECT_EQ(python_layout(0x030d)->bpf.interp_threads, 7344);
  EXPECT_EQ(python_layout(0x030c)->bpf.owner_cstack, 3);
  // Never guessed: versions without a measured layout.
  for (uint32_t v : {0x0309u, 0x030eu, 0x0400u, 0u}) EXPECT_FALSE(python_layout(v)) << std::hex << v;
}

// A launch record with Python frames: [body][ips][py frames][py trailer][trailer].
TEST(PythonStacks, TheDecoderReadsThePythonSectionAndRefusesAnInconsistentOne) {
  auto make = [](uint16_t py_n, uint16_t claimed_n) {
    std::vector<uint8_t> rec(sizeof(gpuobs_launch));
    auto put = [&](const void* p, size_t n) {
      const auto* b = static_cast<const uint8_t*>(p);
      rec.insert(rec.end(), b, b + n);
    };
    uint64_t ip = 0x401000;
    put(&ip, 8);
    for (uint16_t i = 0; i < py_n; ++i) {
      gpuobs_py_frame f{0x7f0000300000u + i * 0x100u, 200u + i, i == py_n - 1 ? GPUOBS_PY_F_ENTRY : 0u};
      put(&f, sizeof f);
    }
    gpuobs_py_trailer pt{claimed_n, GPUOBS_PY_S_DONE, 0};
    put(&pt, sizeof pt);
    gpuobs_stack_trailer t{0, 1, 1, GPUOBS_STACK_F_AT_ENTRY | GPUOBS_STACK_F_ASKED | GPUOBS_STACK_F_PYTHON};
    put(&t, sizeof t);
    gpuobs_hdr h{GPUOBS_EV_LAUNCH, static_cast<uint32_t>(rec.size()), 1, 10, 10};
    std::memcpy(rec.data(), &h, sizeof h);
    return rec;
  };
  Decoder d;
  RawStack raw;
  auto rec = make(3, 3);
  d.decode(rec.data(), rec.size(), &raw);
  ASSERT_TRUE(raw.present);
  EXPECT_EQ(raw.ips, (std::vector<uint64_t>{0x401000}));
  ASSERT_EQ(raw.py.size(), 3u);
  EXPECT_EQ(raw.py[2].code, 0x7f0000300200u);
  EXPECT_EQ(raw.py[1].instr, 201u);
  EXPECT_EQ(raw.py[2].flags, GPUOBS_PY_F_ENTRY);
  EXPECT_EQ(raw.py_status, GPUOBS_PY_S_DONE);
  EXPECT_EQ(d.stats().bad_stacks, 0u);
  // A count the record cannot hold: the stack is refused, the record kept.
  auto bad = make(1, 40);
  Event ev = d.decode(bad.data(), bad.size(), &raw);
  EXPECT_TRUE(std::holds_alternative<gpuobs_launch>(ev));
  EXPECT_FALSE(raw.present);
  EXPECT_EQ(d.stats().bad_stacks, 1u);
}

namespace {

// Objects laid out as CPython 3.11 lays them out, in this process's memory:
// PythonProcess reads them with process_vm_readv from getpid().
struct FakeInterpreter {
  PyLayout layout = *python_layout(0x030b);
  uint64_t code_type = 0x5150;  // stands for &PyCode_Type: only compared
  std::vector<std::vector<uint8_t>> objects;

  uint64_t add(std::vector<uint8_t> bytes) {
    objects.push_back(std::move(bytes));
    return reinterpret_cast<uint64_t>(objects.back().data());
  }
  // A compact ASCII str (PyASCIIObject is 48 bytes in 3.11).
  uint64_t str(const std::string& s) {
    std::vector<uint8_t> o(layout.str_ascii_size + s.size() + 1, 0);
    int64_t len = static_cast<int64_t>(s.size());
    std::memcpy(o.data() + 16, &len, 8);
    uint32_t state = (1u << 2) | (1u << 5) | (1u << 6);  // kind 1, compact, ascii
    std::memcpy(o.data() + 32, &state, 4);
    std::memcpy(o.data() + layout.str_ascii_size, s.data(), s.size());
    return add(std::move(o));
  }
  uint64_t bytes(std::string_view b) {
    std::vector<uint8_t> o(32 + b.size() + 1, 0);
    int64_t len = static_cast<int64_t>(b.size());
    std::memcpy(o.data() + 16, &len, 8);
    std::memcpy(o.data() + 32, b.data(), b.size());
    return add(std::move(o));
  }
  // A code object whose every instruction is on line first + unit / 4 (a
  // location table of one-line entries of 4 units each, no columns: code 13).
  uint64_t code(const std::string& name, const std::string& file, int first) {
    std::string table;
    for (int i = 0; i < 8; ++i) {
      table += static_cast<char>(0x80 | (13 << 3) | 3);
      table += static_cast<char>(i == 0 ? 0 : 2);  // signed varint: +1 line
    }
    std::vector<uint8_t> o(layout.code_adaptive + 64, 0);
    uint64_t fn = str(file), qn = str(name), lt = bytes(table);
    std::memcpy(o.data() + 8, &code_type, 8);
    std::memcpy(o.data() + layout.code_filename, &fn, 8);
    std::memcpy(o.data() + layout.code_name, &qn, 8);
    std::memcpy(o.data() + layout.code_linetable, &lt, 8);
    std::memcpy(o.data() + layout.code_firstlineno, &first, 4);
    return add(std::move(o));
  }
  // The raw instruction field for a code unit (3.11: pointer - code).
  uint32_t at_unit(uint32_t unit) const { return layout.code_adaptive + 2 * unit; }

  std::shared_ptr<PythonProcess> process(uint64_t eval_start, uint64_t eval_end) {
    auto p = std::make_shared<PythonProcess>(static_cast<uint32_t>(::getpid()), layout, "/usr/bin/python3.11");
    p->code_type = code_type;
    p->eval_start_ = eval_start;
    p->eval_end_ = eval_end;
    return p;
  }
};

struct Names {
  std::vector<ModuleDef> modules;
  std::vector<FrameDef> frames;
  std::vector<StackDef> stacks;
  StackResolver::Sink sink() {
    return {[this](const ModuleDef& m) { modules.push_back(m); }, [this](const FrameDef& f) { frames.push_back(f); },
            [this](const StackDef& s) { stacks.push_back(s); }};
  }
  // "name@file:line" for Python frames, "native@offset" for the others.
  std::vector<std::string> of(int64_t id) const {
    std::vector<std::string> out;
    for (int64_t f : stacks.at(id - 1).frames) {
      const FrameDef& fd = frames.at(f - 1);
      if (fd.python)
        out.push_back(fd.py_name + "@" + modules.at(fd.module_id - 1).path + ":" + std::to_string(fd.py_line));
      else out.push_back("native@" + std::to_string(fd.offset));
    }
    return out;
  }
};

// /proc/PID/maps of the fake process: the interpreter's code at 0x400000.
std::string fake_proc(TempDir& dir, uint32_t pid) {
  std::filesystem::create_directories(dir.file(std::to_string(pid)));
  std::ofstream(dir.file(std::to_string(pid) + "/maps"))
      << "00400000-00500000 r-xp 00000000 08:01 700 /usr/bin/python3.11\n"
      << "7f0000000000-7f0000010000 r-xp 00000000 08:01 701 /lib/libcuda.so.1\n";
  return dir.path();
}

gpuobs_py_frame pyf(uint64_t code, uint32_t instr, bool entry) {
  return gpuobs_py_frame{code, instr, entry ? GPUOBS_PY_F_ENTRY : 0u};
}

}  // namespace

// Each interpreter call's Python frames take the place of the native frame
// of _PyEval_EvalFrameDefault that ran them; native frames stay around them.
TEST(PythonStacks, EachInterpreterCallReplacesItsEvalFrameNativeFramesStay) {
  TempDir dir;
  uint32_t pid = static_cast<uint32_t>(::getpid());
  Names rec;
  StackResolver r(rec.sink(), fake_proc(dir, pid));
  FakeInterpreter fi;
  // _PyEval_EvalFrameDefault at [0x401000, 0x402000).
  r.set_python(pid, fi.process(0x401000, 0x402000));
  uint64_t launch = fi.code("launch", "train.py", 10), forward = fi.code("Model.forward", "model.py", 40),
           key = fi.code("key", "train.py", 20), main = fi.code("main", "train.py", 30);
  RawStack raw;
  raw.present = true;
  raw.flags = GPUOBS_STACK_F_AT_RETURN | GPUOBS_STACK_F_PYTHON;
  // libcuda <- eval (runs launch, forward) <- C (sorted) <- eval (runs key, main) <- main()
  raw.ips = {0x7f0000000100, 0x401010, 0x403000, 0x401020, 0x404000};
  raw.py = {pyf(launch, fi.at_unit(5), false), pyf(forward, fi.at_unit(0), true), pyf(key, fi.at_unit(9), false),
            pyf(main, fi.at_unit(12), true)};
  raw.py_status = GPUOBS_PY_S_DONE;
  int64_t id = r.resolve(pid, raw, 1);
  EXPECT_EQ(rec.of(id),
            (std::vector<std::string>{"native@256", "launch@train.py:11", "Model.forward@model.py:40", "native@12288",
                                      "key@train.py:22", "main@train.py:33", "native@16384"}));
  EXPECT_EQ(rec.stacks.at(id - 1).py_status, GPUOBS_PY_S_DONE);
  EXPECT_EQ(r.stats().py_placed_outer, 0u);

  // The native walk broke before the interpreter (a library without frame
  // pointers): the Python frames follow what it found, in order.
  raw.ips = {0x7f0000000100};
  int64_t cut = r.resolve(pid, raw, 2);
  EXPECT_EQ(rec.of(cut), (std::vector<std::string>{"native@256", "launch@train.py:11", "Model.forward@model.py:40",
                                                   "key@train.py:22", "main@train.py:33"}));
  EXPECT_EQ(r.stats().py_placed_outer, 1u);
  // Frames are shared: one row per (file, name, line).
  EXPECT_EQ(r.stats().py_frames, 4u);
}

// A frame whose "code object" is not one (a torn frame, a stale pointer):
// the stack keeps the frames before it, is marked, and names nothing wrong.
TEST(PythonStacks, AFrameWithoutACodeObjectEndsTheStackMarkedNeverWrong) {
  TempDir dir;
  uint32_t pid = static_cast<uint32_t>(::getpid());
  Names rec;
  StackResolver r(rec.sink(), fake_proc(dir, pid));
  FakeInterpreter fi;
  r.set_python(pid, fi.process(0x401000, 0x402000));
  uint64_t launch = fi.code("launch", "train.py", 10), main = fi.code("main", "train.py", 30);
  uint64_t not_code = fi.str("a string, not code");
  RawStack raw;
  raw.present = true;
  raw.flags = GPUOBS_STACK_F_AT_RETURN | GPUOBS_STACK_F_PYTHON;
  raw.ips = {0x7f0000000100};
  raw.py = {pyf(launch, fi.at_unit(0), false), pyf(not_code, fi.at_unit(0), false), pyf(main, fi.at_unit(0), true)};
  int64_t id = r.resolve(pid, raw, 1);
  EXPECT_EQ(rec.of(id), (std::vector<std::string>{"native@256", "launch@train.py:10"}));
  EXPECT_EQ(rec.stacks.at(id - 1).py_status, kPyStatusTorn);
  EXPECT_EQ(r.stats().py_torn, 1u);
  // Unmapped memory: the same.
  raw.py = {pyf(launch, fi.at_unit(4), false), pyf(0x10, 0, true)};
  int64_t id2 = r.resolve(pid, raw, 2);
  EXPECT_EQ(rec.of(id2), (std::vector<std::string>{"native@256", "launch@train.py:11"}));
  EXPECT_EQ(rec.stacks.at(id2 - 1).py_status, kPyStatusTorn);
  // The walk's own end is kept: a thread without interpreter state.
  raw.py.clear();
  raw.py_status = GPUOBS_PY_S_NO_THREAD;
  int64_t id3 = r.resolve(pid, raw, 3);
  EXPECT_EQ(rec.of(id3), (std::vector<std::string>{"native@256"}));
  EXPECT_EQ(rec.stacks.at(id3 - 1).py_status, GPUOBS_PY_S_NO_THREAD);
}

// Review of issue 18: the interpreter's own shim frame (3.13's
// _Py_InitCleanup, file and name "__init__") is not a frame of the program;
// and a native walk cut short stays "cut" however many Python frames follow
// it (the depth flag is about the native frames).
TEST(PythonStacks, ShimFramesAreSkippedAndTheNativeWalksLimitsStayItsOwn) {
  TempDir dir;
  uint32_t pid = static_cast<uint32_t>(::getpid());
  Names rec;
  StackResolver r(rec.sink(), fake_proc(dir, pid));
  FakeInterpreter fi;
  r.set_python(pid, fi.process(0x401000, 0x402000));
  uint64_t init = fi.code("Model.__init__", "model.py", 5), shim = fi.code("__init__", "__init__", 0),
           main = fi.code("main", "train.py", 30);
  RawStack raw;
  raw.present = true;
  // The walk filled its depth, but its second address is not code: cut.
  raw.flags = GPUOBS_STACK_F_AT_RETURN | GPUOBS_STACK_F_PYTHON | GPUOBS_STACK_F_FULL;
  raw.ips = {0x7f0000000100, 0x1234};
  raw.py = {pyf(init, fi.at_unit(0), false), pyf(shim, fi.at_unit(0), false), pyf(main, fi.at_unit(0), true)};
  int64_t id = r.resolve(pid, raw, 1);
  EXPECT_EQ(rec.of(id), (std::vector<std::string>{"native@256", "Model.__init__@model.py:5", "main@train.py:30"}));
  EXPECT_EQ(rec.stacks.at(id - 1).flags & GPUOBS_STACK_F_FULL, 0u);
}
