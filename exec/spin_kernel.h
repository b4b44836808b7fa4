// The executor's synthetic GPU work: one thread that spins on the SM's cycle
// counter (%clock64) for a given number of cycles. %clock64 counts at the
// SM clock with no coarse update step (%globaltimer moves in 1 µs steps on
// some GPUs, too coarse for kernels of a few µs); the executor turns ns into
// cycles with a rate and a fixed cost it measures at start (calibration.cpp).
// PTX ISA 7.0 for sm_52, like the bundled example: the driver JITs it for
// whatever GPU is present.
#pragma once

namespace gpuobs::exec {

inline constexpr char kSpinKernelName[] = "gpuobs_spin";

inline constexpr char kSpinPtx[] = R"(
.version 7.0
.target sm_52
.address_size 64
.visible .entry gpuobs_spin(.param .u64 cycles)
{
  .reg .pred %p<2>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [cycles];
  mov.u64 %rd2, %clock64;
SPIN:
  mov.u64 %rd3, %clock64;
  sub.s64 %rd4, %rd3, %rd2;
  setp.lt.u64 %p1, %rd4, %rd1;
  @%p1 bra SPIN;
  ret;
}
)";

}  // namespace gpuobs::exec
