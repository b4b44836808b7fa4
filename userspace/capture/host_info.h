// Facts about the host stored in the capture row.
#pragma once

#include <cstdint>
#include <string>

namespace gpuobs {

struct HostInfo {
  std::string host;
  std::string kernel;
  std::string nvidia_driver;  // first line of /proc/driver/nvidia/version, or empty
};

HostInfo read_host_info();
int64_t mono_now_ns();
// CLOCK_REALTIME - CLOCK_MONOTONIC, sampled tightly (the smallest of a few tries).
int64_t realtime_offset_ns();

}  // namespace gpuobs
