// What /proc says about a process: used for processes that were running before
// the capture, for the command `gpuobs record` starts, for each process's
// cgroup and container, and for the GPU libraries it has mapped.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/process_info.h"

namespace gpuobs {

std::optional<ProcessInfo> read_proc_info(uint32_t tgid, const std::string& proc_root = "/proc");

// The cgroup v2 path ("0::PATH" line of /proc/PID/cgroup); on a v1-only host
// the name=systemd hierarchy's path. Empty: unreadable (the process is gone).
std::string cgroup_path_from_file(std::string_view cgroup_file);
// The container id in a cgroup path: the innermost component that is a
// 64-hex id, bare (cgroupfs driver: /docker/ID, /kubepods/burstable/podUID/ID)
// or in a systemd scope (docker-ID.scope, cri-containerd-ID.scope,
// crio-ID.scope, libpod-ID.scope). Empty: not in a container.
std::string container_id_from_cgroup(std::string_view path);
std::optional<ProcessOrigin> read_process_origin(uint32_t tgid, const std::string& proc_root = "/proc");

// One mapping of a GPU runtime library (libcuda.so*, libamdhip64.so*) in
// /proc/PID/maps: its address range (names /proc/PID/map_files/START-END),
// the device and inode the kernel reports, and the path in the process's
// own mount namespace.
struct MappedLibrary {
  std::string range;  // "7f12a0000000-7f12a0200000", as in maps
  uint64_t dev_major = 0, dev_minor = 0, inode = 0;
  std::string path;
  bool deleted = false;  // maps says "(deleted)": the path no longer names it
  // Some mapping of it is executable: a process runs its code. A tool that
  // only reads the file (a symbolizer, another gpuobs) maps it read-only.
  bool executable = false;
};
// True for the file names gpuobs probes: libcuda.so, libcuda.so.1,
// libcuda.so.580.65.06, libamdhip64.so.6, libnccl.so.2, librccl.so.1 ...
bool is_gpu_runtime_name(std::string_view path);
// Every distinct (dev, inode) of a GPU runtime library in a maps text; the
// first mapping of each.
std::vector<MappedLibrary> gpu_libraries_in_maps(std::string_view maps);

}  // namespace gpuobs
