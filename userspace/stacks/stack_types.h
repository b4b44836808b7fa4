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
};

// One code file (or pseudo-module: "[vdso]", "[anon]" for JIT code).
struct ModuleDef {
  int64_t id = 0;
  std::string path;
  uint64_t dev = 0, inode = 0;       // 0: not a file
  std::shared_ptr<FileHandle> file;  // null: nothing to read symbols from
};

// A return address as (module, file offset); for pseudo-modules the offset
// is the virtual address.
struct FrameDef {
  int64_t id = 0;
  int64_t module_id = 0;
  uint64_t offset = 0;
};

struct StackDef {
  int64_t id = 0;
  uint32_t flags = 0;           // GPUOBS_STACK_F_* of the first record with it
  std::vector<int64_t> frames;  // frame ids, innermost first
};

}  // namespace gpuobs
