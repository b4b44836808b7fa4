// The unwind-table reader for --unwind bpf (userspace/stacks/unwind_table.cpp
// and cfi_rule.cpp): .eh_frame_hdr's sorted FDE table and every CFI row of a
// code file, on any file a process could map. Input: the file's bytes.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "libelf_leaks.h"
#include "memfd.h"
#include "stacks/unwind_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int fd = gpuobs::fuzz::memfd_with(data, size);
  int free_fd = gpuobs::fuzz::lowest_free_fd();
  auto t = gpuobs::build_unwind_table(fd);
  if (gpuobs::fuzz::lowest_free_fd() != free_fd) std::abort();  // the reader kept its descriptor (and Elf)
  // Rows are 8-byte packed words whose low 32 bits are the address.
  if (t && !t->rows.empty() && t->fdes == 0) std::abort();
  ::close(fd);
  return 0;
}
