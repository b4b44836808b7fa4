// The add_one kernel as PTX, shared by the bundled example and the GPU
// verification program (tests/gpu/all_families.cpp).
#pragma once

namespace gpuobs::example {

// add_one(float* p, unsigned n): p[i] += 1 for i < n. PTX ISA 7.0, sm_52: the
// driver JITs it for whatever GPU is present.
inline constexpr char kAddOnePtx[] = R"(
.version 7.0
.target sm_52
.address_size 64
.visible .entry add_one(.param .u64 p, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .f32 %f<3>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [p];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p1, %r5, %r1;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.u32 %rd3, %r5, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.global.f32 %f1, [%rd4];
  add.f32 %f2, %f1, 0f3F800000;
  st.global.f32 [%rd4], %f2;
DONE:
  ret;
}
)";

}  // namespace gpuobs::example
