// gpuobs record --gpu-time, after the command exits: the CUPTI activity file
// the injected library wrote (gpu_time/activity_file.h) is read, joined to
// the launches, copies and graph launches the capture holds (gpu_time/activity_join.h) and
// stored as gpu_time_rows, with every record that could not be joined or
// trusted counted (counters gpu_time_*). docs/gpu_time.md.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"
#include "gpu_time/activity_join.h"

namespace gpuobs {

struct GpuTimeImport {
  uint64_t gpu_activities = 0;  // kernel, memcpy and memset records in the file
  uint64_t calls = 0;           // launches and copies in the capture
  uint64_t rows = 0;            // calls given a GPU time
  gpu_time::JoinCounts join;
  gpu_time::ReadCounts read;
  uint64_t processes = 0;      // processes that wrote records
  uint64_t cupti_dropped = 0;  // records CUPTI itself dropped (its buffers full)
  // Processes whose CUPTI refused the CLOCK_MONOTONIC timestamp callback
  // (times converted by the pair read at start) / gave no kernel thread ids.
  uint64_t processes_clock_pair = 0, processes_without_tids = 0;
  // How far CUPTI's driver API entries lay from the captured calls they
  // joined (by correlation): the median and the largest, ns (entry - call).
  int64_t entry_lag_median_ns = 0, entry_lag_max_ns = 0;
};

// Joins and stores into the finished capture (opened read-write).
Result<GpuTimeImport> import_gpu_times(const std::string& capture, const std::string& activity_file);

// Where --gpu-time finds its pieces; each error says what is missing and how
// to point gpuobs at it.
struct GpuTimeSetup {
  std::string inject_library;  // gpuobs_cupti_inject
  std::string cupti;           // libcupti.so.*
};
// exe: gpuobs's own path; command: the command's argv[0] as it will be run
// (a Python in a virtual environment points at PyTorch's wheel copy of CUPTI).
Result<GpuTimeSetup> find_gpu_time_setup(const std::string& exe, const std::string& command);

}  // namespace gpuobs
