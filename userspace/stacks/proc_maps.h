// /proc/PID/maps, parsed: the address ranges a process has mapped and the
// files behind them. The stack resolver turns return addresses into
// (file, file offset) with it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace gpuobs {

struct Mapping {
  uint64_t start = 0, end = 0;  // [start, end)
  uint64_t offset = 0;          // file offset of start
  bool exec = false;
  uint64_t dev = 0;  // makedev(major, minor) of the file; 0: anonymous
  uint64_t inode = 0;
  std::string path;      // file path (in the process's mount namespace), "[vdso]", or empty
  bool deleted = false;  // the path ended in " (deleted)"
};

// One line of /proc/PID/maps; nullopt when it does not parse.
std::optional<Mapping> parse_maps_line(std::string_view line);
// Every mapping, sorted by start. An error when the process is gone.
Result<std::vector<Mapping>> read_proc_maps(uint32_t pid, const std::string& proc_root = "/proc");

// A descriptor of the very file behind a mapping of process pid (-1: none):
// /proc/PID/map_files reaches it even deleted or in another mount
// namespace; the path through the process's root is the fallback, and only
// if it is still that file (dev, inode).
int open_mapped_file(uint32_t pid, const Mapping& m, const std::string& proc_root = "/proc");

}  // namespace gpuobs
