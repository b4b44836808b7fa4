// What is known of a process from /proc: filled by capture/procfs.cpp,
// stored by store/writer.cpp. Below both rooms so that capture/ does not
// include the writer for a struct (docs/design.md, layering).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace gpuobs {

// What is known of a running process that appears without a fork/exec event.
struct ProcessInfo {
  uint32_t ppid = 0;
  uint64_t start_boottime_ns = 0;
  std::string comm;
  std::string exe;
  std::string cgroup;  // empty: ask the origin lookup when the row is inserted
  std::string container_id;
};
// A process's cgroup and container, read when the writer first inserts it.
struct ProcessOrigin {
  std::string cgroup, container_id;
};
// How the writer asks for them (capture/procfs.h: read_proc_info, read_process_origin).
using OriginLookup = std::function<std::optional<ProcessOrigin>(uint32_t tgid)>;
using ProcessLookup = std::function<std::optional<ProcessInfo>(uint32_t tgid)>;

}  // namespace gpuobs
