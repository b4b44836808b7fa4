// The stack types other rooms share, without the resolver's machinery:
// the raw stack the decoder reads off a record (decode/ includes only this
// header), and what the stack resolver (capture thread) tells the writer:
// definitions of modules, frames and stacks, each once, before the first
// event that uses them. Ids are the resolver's, so the capture thread never
// waits on SQLite.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "events.h"

namespace gpuobs {

// An open descriptor of a mapped file, kept so that the file can be read
// after the process that mapped it has exited (or the file was deleted).
class FileHandle {
 public:
  explicit FileHandle(int fd) : fd_(fd) {}
  ~FileHandle() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileHandle(const FileHandle&) = delete;
  FileHandle& operator=(const FileHandle&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

// StackDef.py_status beside GPUOBS_PY_S_*: the walk found a frame whose
// code object could not be read or was not one; the frames before it stand.
constexpr int kPyStatusTorn = 100;
// ... the process was gone before a code object of the walk could be read.
constexpr int kPyStatusGone = 101;

// A record's stack as it came off the ring (bpf/events.h): filled by
// decode/decoder.cpp read_stack(), resolved by StackResolver::resolve().
struct RawStack {
  std::vector<uint64_t> ips;  // innermost first
  uint32_t flags = 0;         // GPUOBS_STACK_F_*
  uint64_t sp_word = 0;       // the word at the stack pointer (entry and syscall sites)
  bool present = false;       // false: stacks are off (depth 0)
  // --unwind dwarf: registers where the probe fired and the stack from sp up.
  bool has_copy = false;
  uint64_t ip = 0, sp = 0, bp = 0;
  std::string copy;
  // GPUOBS_STACK_F_PYTHON: the thread's CPython frames, innermost first,
  // and how their walk ended (GPUOBS_PY_S_*).
  std::vector<gpuobs_py_frame> py;
  uint16_t py_status = 0;
  uint32_t py_thread = GPUOBS_PY_T_CALLING;  // whose frames py holds (GPUOBS_PY_T_*)
};

// One code file (or pseudo-module: "[vdso]", "[anon]" for JIT code).
struct ModuleDef {
  int64_t id = 0;
  std::string path;                  // for a Python source: its co_filename
  uint64_t dev = 0, inode = 0;       // 0: not a file
  std::shared_ptr<FileHandle> file;  // null: nothing to read symbols from
  bool python = false;               // a Python source file: its frames come named
};

// A return address as (module, file offset); for pseudo-modules the offset
// is the virtual address.
// A Python frame (module: its source file) comes named: offset is then a
// key, (line << 32) | a 32-bit hash of the name, unique within the file.
struct FrameDef {
  int64_t id = 0;
  int64_t module_id = 0;
  uint64_t offset = 0;
  bool python = false;
  std::string py_name{};  // qualified name
  int py_line = -1;       // -1: the line table gave none
};

struct StackDef {
  int64_t id = 0;
  uint32_t flags = 0;           // GPUOBS_STACK_F_* of the first record with it
  std::vector<int64_t> frames;  // frame ids, innermost first
  // How its Python walk ended: GPUOBS_PY_S_*, kPyStatusTorn (a frame that
  // was not a readable code object ended it), or -1: no Python walk.
  int py_status = -1;
  // Whose Python frames it holds (GPUOBS_PY_T_*; with py_status -1: none).
  uint32_t py_thread = GPUOBS_PY_T_CALLING;
};

}  // namespace gpuobs
