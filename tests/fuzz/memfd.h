// The fuzz input as a file: the unwind readers take a descriptor (they read
// ELF files that processes map), so each input goes into a memfd.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>

namespace gpuobs::fuzz {

inline int memfd_with(const uint8_t* data, size_t size) {
  int fd = ::memfd_create("fuzz-elf", MFD_CLOEXEC);
  if (fd < 0) std::abort();
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) std::abort();
    done += static_cast<size_t>(n);
  }
  return fd;
}

}  // namespace gpuobs::fuzz
