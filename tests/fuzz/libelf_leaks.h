// Debian 12's libelf (elfutils 0.188) leaks a few dozen bytes, allocated in
// elf_strptr and elf_getdata, on some malformed section tables even when
// every handle is released (elf_end, dwarf_cfi_end): reproduced with a C
// program that calls nothing but libelf/libdw (tests/fuzz/README.md). Those
// allocations are not reported. Our own handles are checked another way:
// each target asserts that the descriptor the reader dup()s is closed again,
// which is released together with its Elf (unwind_table.cpp's Closer,
// cfi_unwinder.cpp's Module).
#pragma once

#include <unistd.h>

#include <cstdlib>

extern "C" const char* __lsan_default_suppressions() { return "leak:libelf.so.1\n"; }

namespace gpuobs::fuzz {

// The lowest free descriptor number: the same before and after a call that
// released everything it opened.
inline int lowest_free_fd() {
  int fd = ::dup(0);
  if (fd < 0) std::abort();
  ::close(fd);
  return fd;
}

}  // namespace gpuobs::fuzz
