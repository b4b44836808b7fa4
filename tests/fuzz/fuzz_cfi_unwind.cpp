// The DWARF unwinder for --unwind dwarf (userspace/stacks/cfi_unwinder.cpp
// and cfi_rule.cpp): a copied user stack walked with the CFI (.eh_frame,
// .debug_frame) of one code file. Input (tests/fuzz/README.md):
//   u64 ip, u64 sp, u64 bp, u16 copy_len, copy_len bytes of stack copy,
//   then the code file's bytes.
// Every address maps into that file at offset (address % (file size + 1)).
// Besides ASan/UBSan, checks the walk's bounds: at most max_frames frames,
// frame 0 is ip.
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "libelf_leaks.h"
#include "memfd.h"
#include "stacks/cfi_unwinder.h"
#include "stacks/stack_resolver.h"

namespace {

// One walk with a fresh unwinder (it caches each module's ELF and rules).
void unwind_once(const gpuobs::RawStack& raw, const uint8_t* file, size_t file_size) {
  gpuobs::ModuleDef module;
  module.id = 1;
  module.path = "fuzz.so";
  module.file = std::make_shared<gpuobs::FileHandle>(gpuobs::fuzz::memfd_with(file, file_size));
  gpuobs::CfiUnwinder unwinder;
  auto locate = [&](uint64_t addr) -> std::optional<gpuobs::CfiUnwinder::Location> {
    return gpuobs::CfiUnwinder::Location{&module, addr % (file_size + 1)};
  };
  constexpr size_t kMaxFrames = 64;
  bool copy_end = false;
  auto frames = unwinder.unwind(raw, locate, kMaxFrames, copy_end);
  if (frames.empty() || frames.size() > kMaxFrames || frames[0] != raw.ip) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr size_t kPrefix = 26;
  if (size < kPrefix) return -1;
  gpuobs::RawStack raw;
  raw.present = raw.has_copy = true;
  std::memcpy(&raw.ip, data, 8);
  std::memcpy(&raw.sp, data + 8, 8);
  std::memcpy(&raw.bp, data + 16, 8);
  uint16_t copy_len;
  std::memcpy(&copy_len, data + 24, 2);
  size_t n = std::min<size_t>(copy_len, size - kPrefix);
  raw.copy.assign(reinterpret_cast<const char*>(data) + kPrefix, n);

  int free_fd = gpuobs::fuzz::lowest_free_fd();
  unwind_once(raw, data + kPrefix + n, size - kPrefix - n);
  // The unwinder and its module gone, every descriptor (and Elf) is released.
  if (gpuobs::fuzz::lowest_free_fd() != free_fd) std::abort();
  return 0;
}
