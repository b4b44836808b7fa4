// The command line the API workloads share (api_workload, hip_workload):
// --lib PATH --threads T --iterations N --truth FILE, and the runtime opened
// from --lib (the workloads call it through dlsym, as an application's own
// loader would, so the probes see calls into the real file).
#pragma once

#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace gpuobs::testing {

struct WorkloadArgs {
  std::string lib, truth_path;
  uint32_t threads = 1, iterations = 1;
};

inline WorkloadArgs parse_workload_args(int argc, char** argv, uint32_t threads, uint32_t iterations) {
  WorkloadArgs a;
  a.threads = threads, a.iterations = iterations;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--lib") a.lib = argv[i + 1];
    else if (k == "--threads") a.threads = std::stoul(argv[i + 1]);
    else if (k == "--iterations") a.iterations = std::stoul(argv[i + 1]);
    else if (k == "--truth") a.truth_path = argv[i + 1];
  }
  return a;
}

// The runtime named by --lib, or nullptr (said on stderr, prefixed by who).
inline void* open_runtime(const WorkloadArgs& a, const char* who) {
  void* lib = dlopen(a.lib.c_str(), RTLD_NOW);
  if (!lib) std::fprintf(stderr, "%s: %s\n", who, dlerror());
  return lib;
}

}  // namespace gpuobs::testing
