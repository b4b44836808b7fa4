// GPU library files to probe. Uprobes attach by file, so a library is keyed by
// (device, inode): two paths to one file are one attachment.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace gpuobs {

struct LibraryFile {
  std::string path;      // as given / found
  std::string realpath;  // symlinks resolved (carries the driver version: libcuda.so.580.x)
  uint64_t dev = 0;
  uint64_t ino = 0;
};

Result<LibraryFile> library_file(const std::string& path);
// The system's libcuda.so.1: the dynamic linker cache first, then the usual
// driver directories. Deduplicated by (dev, inode).
std::vector<LibraryFile> discover_libcuda();
// The HIP runtime (libamdhip64.so.N): the linker cache, then ROCm's
// directories. GPUOBS_LIBHIP_SEARCH_PATH replaces both.
std::vector<LibraryFile> discover_libhip();
// The Level Zero loader (libze_loader.so.1): the linker cache, then the
// distribution's directories. GPUOBS_LIBZE_SEARCH_PATH replaces both.
std::vector<LibraryFile> discover_libze();
// The GPU runtimes (libcuda.so.1, libamdhip64.so[.N], libnccl.so.2, librccl.so.1, libze_loader.so.1) the dynamic loader
// would take from a colon-separated LD_LIBRARY_PATH value: per name, the
// first directory that has it. RPATH, set-uid programs and dlopen() of a
// full path are not predicted (the library watch finds those when mapped).
std::vector<LibraryFile> gpu_libraries_on_search_path(const std::string& dirs);
// dev_t as BPF reads it from a superblock (MKDEV: major << 20 | minor) and as
// stat(2) gives it (glibc's makedev): the library watch keys BPF's lib_known
// map by the first, its own tables by the second.
uint32_t kernel_dev(uint64_t st_dev);
uint64_t user_dev(uint32_t kdev);
// Appends f unless a file with the same (dev, inode) is already there.
void add_unique(std::vector<LibraryFile>& files, LibraryFile f);

}  // namespace gpuobs
