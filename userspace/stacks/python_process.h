// A process's CPython interpreter, found from outside: the mapped file
// (python3.X executable or libpython3.X.so) whose dynamic symbols hold
// _PyRuntime, its version (Py_Version, or the file's name before 3.11), the
// address range of _PyEval_EvalFrameDefault (the native frames the Python
// frames replace) and PyCode_Type (what every code object read must point
// to). Then, per code object address, its qualified name, file and line
// table, read once from the process's memory and kept.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "stacks/python_layout.h"

namespace gpuobs {

struct PyCode {
  std::string name;  // qualified name (3.11+) or name (3.10)
  std::string file;
  int firstlineno = 0;
  std::string linetable;
  // The interpreter's own shim (3.13 _Py_InitCleanup, pushed between a
  // class call and its __init__: file and name "__init__"): not a frame of
  // the program, skipped.
  bool shim = false;
};

class PythonProcess {
 public:
  PythonProcess(uint32_t tgid, PyLayout layout, std::string path)
      : tgid_(tgid), layout_(layout), path_(std::move(path)) {}
  uint32_t tgid() const { return tgid_; }
  const PyLayout& layout() const { return layout_; }
  const std::string& path() const { return path_; }  // the file the interpreter is in
  // What BPF needs (layout with this process's _PyRuntime).
  gpuobs_py_proc bpf() const;
  // A return address inside _PyEval_EvalFrameDefault.
  bool in_eval(uint64_t return_address) const { return return_address > eval_start_ && return_address <= eval_end_; }
  // The code object at addr, read once; null when it is not one (its type
  // is not PyCode_Type) or cannot be read. A copy stays valid for the
  // process's life: code objects live as long as their functions.
  const PyCode* code(uint64_t addr);
  // The frame's source line (-1: none), from its raw instruction field.
  int line(const PyCode& c, uint32_t instr) const;
  uint64_t codes_unreadable() const { return unreadable_; }
  // The process has exited: code objects not read by then never will be.
  bool gone() const { return gone_; }

  // Set by find_python.
  uint64_t runtime = 0, code_type = 0;
  uint64_t eval_start_ = 0, eval_end_ = 0;

 private:
  bool read(uint64_t addr, void* out, size_t n) const;
  std::optional<std::string> read_str(uint64_t addr) const;
  std::optional<std::string> read_bytes(uint64_t addr, size_t max) const;

  uint32_t tgid_;
  PyLayout layout_;
  std::string path_;
  std::unordered_map<uint64_t, std::unique_ptr<PyCode>> codes_;  // null: not a code object
  uint64_t unreadable_ = 0;
  mutable bool gone_ = false;
};

enum class PythonFind : uint8_t {
  none,             // no CPython mapped
  found,            // a known version
  unknown_version,  // a CPython gpuobs has no layout for: counted, no Python frames
  unreadable,       // the process or its interpreter file could not be read
};

struct PythonFound {
  PythonFind status = PythonFind::none;
  std::shared_ptr<PythonProcess> proc;  // found only
  std::string file;                     // the interpreter's file (found, unknown_version)
  uint32_t version = 0;                 // PY_VERSION_HEX >> 16 when known
};

PythonFound find_python(uint32_t tgid, const std::string& proc_root = "/proc");

}  // namespace gpuobs
