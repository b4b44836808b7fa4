// Constants of tests/workloads/api_workload.cpp that the tests check against.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpuobs::testing {

constexpr const char* kSquareMangled = "_Z6squarePfi";  // square(float*, int)
constexpr const char* kAxpyMangled = "_Z4axpyfPKfPf";   // axpy(float, float const*, float*)
constexpr const char* kLazyMangled = "_Z9lazy_namev";   // lazy_name(), read from an untouched page
constexpr const char* kModulePath = "/opt/kernels/square.cubin";
constexpr const char* kLibraryPath = "/opt/kernels/axpy.fatbin";

// Bytes allocated in iteration i of thread t.
inline size_t loop_bytes(uint32_t t, uint32_t i) { return 4096 * (t + 1) + 256 * i; }

}  // namespace gpuobs::testing
