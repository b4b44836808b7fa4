// The wire format is an ABI between BPF and C++: every offset is pinned here.
// bpf/events.h asserts the same numbers at compile time (on both sides);
// these tests say which record and field moved when one of them fails.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>

#include "events.h"

TEST(WireLayout, Header) {
  EXPECT_EQ(sizeof(gpuobs_hdr), 24u);
  EXPECT_EQ(offsetof(gpuobs_hdr, type), 0u);
  EXPECT_EQ(offsetof(gpuobs_hdr, size), 4u);
  EXPECT_EQ(offsetof(gpuobs_hdr, ts_ns), 8u);
  EXPECT_EQ(offsetof(gpuobs_hdr, tgid), 16u);
  EXPECT_EQ(offsetof(gpuobs_hdr, tid), 20u);
}

TEST(WireLayout, Launch) {
  EXPECT_EQ(sizeof(gpuobs_launch), 96u);
  EXPECT_EQ(offsetof(gpuobs_launch, hdr), 0u);
  EXPECT_EQ(offsetof(gpuobs_launch, function), 24u);
  EXPECT_EQ(offsetof(gpuobs_launch, stream), 32u);
  EXPECT_EQ(offsetof(gpuobs_launch, kernel_params), 40u);
  EXPECT_EQ(offsetof(gpuobs_launch, extra), 48u);
  EXPECT_EQ(offsetof(gpuobs_launch, grid_x), 56u);
  EXPECT_EQ(offsetof(gpuobs_launch, grid_y), 60u);
  EXPECT_EQ(offsetof(gpuobs_launch, grid_z), 64u);
  EXPECT_EQ(offsetof(gpuobs_launch, block_x), 68u);
  EXPECT_EQ(offsetof(gpuobs_launch, block_y), 72u);
  EXPECT_EQ(offsetof(gpuobs_launch, block_z), 76u);
  EXPECT_EQ(offsetof(gpuobs_launch, shared_mem_bytes), 80u);
  EXPECT_EQ(offsetof(gpuobs_launch, api), 84u);
  EXPECT_EQ(offsetof(gpuobs_launch, flags), 88u);
  EXPECT_EQ(offsetof(gpuobs_launch, pad0), 92u);
}

TEST(WireLayout, Ioctl) {
  EXPECT_EQ(sizeof(gpuobs_ioctl), 592u);
  EXPECT_EQ(offsetof(gpuobs_ioctl, latency_ns), 24u);
  EXPECT_EQ(offsetof(gpuobs_ioctl, arg), 32u);
  EXPECT_EQ(offsetof(gpuobs_ioctl, ret), 40u);
  EXPECT_EQ(offsetof(gpuobs_ioctl, cmd), 48u);
  EXPECT_EQ(offsetof(gpuobs_ioctl, dev_major), 52u);
  EXPECT_EQ(offsetof(gpuobs_ioctl, dev_minor), 56u);
  EXPECT_EQ(offsetof(gpuobs_ioctl, fd), 60u);
  EXPECT_EQ(offsetof(gpuobs_ioctl, driver), 64u);
  EXPECT_EQ(offsetof(gpuobs_ioctl, head_len), 68u);
  EXPECT_EQ(offsetof(gpuobs_ioctl, aux_len), 70u);
  EXPECT_EQ(offsetof(gpuobs_ioctl, flags), 72u);
  EXPECT_EQ(offsetof(gpuobs_ioctl, head), 80u);
  EXPECT_EQ(offsetof(gpuobs_ioctl, aux), 336u);
  EXPECT_EQ(sizeof(gpuobs_ioctl_rule_key), 8u);
  EXPECT_EQ(sizeof(gpuobs_ioctl_rule), 8u);
  EXPECT_EQ(offsetof(gpuobs_ioctl_rule, aux_mode), 6u);
  EXPECT_EQ(offsetof(gpuobs_ioctl_rule, aux_len_field), 7u);
}

// ABI 9: what an AMDGPU_CS call's aux holds (bpf/drm.bpf.h walks the chunks).
TEST(WireLayout, AmdgpuCsAux) {
  EXPECT_EQ(sizeof(gpuobs_amdgpu_cs_chunk), 40u);
  EXPECT_EQ(offsetof(gpuobs_amdgpu_cs_chunk, chunk_id), 0u);
  EXPECT_EQ(offsetof(gpuobs_amdgpu_cs_chunk, length_dw), 4u);
  EXPECT_EQ(offsetof(gpuobs_amdgpu_cs_chunk, data), 8u);
  EXPECT_EQ(sizeof(gpuobs_amdgpu_cs_aux), 256u);
  EXPECT_EQ(offsetof(gpuobs_amdgpu_cs_aux, in0), 0u);
  EXPECT_EQ(offsetof(gpuobs_amdgpu_cs_aux, chunks_read), 8u);
  EXPECT_EQ(offsetof(gpuobs_amdgpu_cs_aux, data_read), 12u);
  EXPECT_EQ(offsetof(gpuobs_amdgpu_cs_aux, chunk), 16u);
  EXPECT_LE(sizeof(gpuobs_amdgpu_cs_aux), size_t{GPUOBS_IOCTL_AUX_MAX});
}

TEST(WireLayout, Proc) {
  EXPECT_EQ(sizeof(gpuobs_proc), 312u);
  EXPECT_EQ(offsetof(gpuobs_proc, start_boottime_ns), 24u);
  EXPECT_EQ(offsetof(gpuobs_proc, ppid), 32u);
  EXPECT_EQ(offsetof(gpuobs_proc, exit_code), 36u);
  EXPECT_EQ(offsetof(gpuobs_proc, comm), 40u);
  EXPECT_EQ(offsetof(gpuobs_proc, filename), 56u);
  // ABI 8: a library mapping's record keeps the process head of gpuobs_proc.
  EXPECT_EQ(sizeof(gpuobs_lib_map), 120u);
  EXPECT_EQ(offsetof(gpuobs_lib_map, start_boottime_ns), offsetof(gpuobs_proc, start_boottime_ns));
  EXPECT_EQ(offsetof(gpuobs_lib_map, ppid), offsetof(gpuobs_proc, ppid));
  EXPECT_EQ(offsetof(gpuobs_lib_map, hold), 36u);
  EXPECT_EQ(offsetof(gpuobs_lib_map, comm), offsetof(gpuobs_proc, comm));
  EXPECT_EQ(offsetof(gpuobs_lib_map, ino), 56u);
  EXPECT_EQ(offsetof(gpuobs_lib_map, kdev), 64u);
  EXPECT_EQ(offsetof(gpuobs_lib_map, filename), 72u);
  EXPECT_EQ(sizeof(gpuobs_lib_key), 16u);
}

TEST(WireLayout, EveryRecordIsEightByteAligned) {
  // The BPF ring buffer rounds to 8 bytes; a record that is not a multiple
  // would leave an unnamed tail.
  EXPECT_EQ(sizeof(gpuobs_launch) % 8, 0u);
  EXPECT_EQ(sizeof(gpuobs_ioctl) % 8, 0u);
  EXPECT_EQ(sizeof(gpuobs_proc) % 8, 0u);
  EXPECT_EQ(sizeof(gpuobs_api_call) % 8, 0u);
}

TEST(WireLayout, StackTrailer) {
  // The last 16 bytes of every event record; ips[cap] end where it starts.
  EXPECT_EQ(sizeof(gpuobs_stack_trailer), 16u);
  EXPECT_EQ(offsetof(gpuobs_stack_trailer, sp_word), 0u);
  EXPECT_EQ(offsetof(gpuobs_stack_trailer, nr), 8u);
  EXPECT_EQ(offsetof(gpuobs_stack_trailer, cap), 10u);
  EXPECT_EQ(offsetof(gpuobs_stack_trailer, flags), 12u);
}

// CPython frames (ABI 7): between ips and the trailer, read back from the end.
TEST(WireLayout, PythonFrames) {
  EXPECT_EQ(sizeof(gpuobs_py_frame), 16u);
  EXPECT_EQ(offsetof(gpuobs_py_frame, code), 0u);
  EXPECT_EQ(offsetof(gpuobs_py_frame, instr), 8u);
  EXPECT_EQ(offsetof(gpuobs_py_frame, flags), 12u);
  EXPECT_EQ(sizeof(gpuobs_py_trailer), 8u);
  EXPECT_EQ(offsetof(gpuobs_py_trailer, n), 0u);
  EXPECT_EQ(offsetof(gpuobs_py_trailer, status), 2u);
  // The map value user space writes for each Python process.
  EXPECT_EQ(sizeof(gpuobs_py_proc), 48u);
  EXPECT_EQ(offsetof(gpuobs_py_proc, runtime), 0u);
  EXPECT_EQ(offsetof(gpuobs_py_proc, version), 8u);
  EXPECT_EQ(offsetof(gpuobs_py_proc, frame_read), 14u);
  EXPECT_EQ(offsetof(gpuobs_py_proc, tstate_lo), 38u);
  EXPECT_EQ(offsetof(gpuobs_py_proc, tstate_len), 40u);
  EXPECT_EQ(GPUOBS_STACK_F_PYTHON, 256u);
  EXPECT_EQ(GPUOBS_ABI_VERSION, 9);
}

TEST(WireLayout, ApiCall) {
  // The decoder reads offsetof(blob) fixed bytes, then blob_len blob bytes,
  // then the stack area; the BPF entry-only programs reserve exactly the
  // fixed part (bpf/api.bpf.h).
  EXPECT_EQ(offsetof(gpuobs_api_call, hdr), 0u);
  EXPECT_EQ(offsetof(gpuobs_api_call, args), 24u);
  EXPECT_EQ(sizeof(gpuobs_api_call::args), 64u);
  EXPECT_EQ(offsetof(gpuobs_api_call, ret), 88u);
  EXPECT_EQ(offsetof(gpuobs_api_call, duration_ns), 96u);
  EXPECT_EQ(offsetof(gpuobs_api_call, out_value), 104u);
  EXPECT_EQ(offsetof(gpuobs_api_call, api), 112u);
  EXPECT_EQ(offsetof(gpuobs_api_call, flags), 116u);
  EXPECT_EQ(offsetof(gpuobs_api_call, blob_len), 120u);
  EXPECT_EQ(offsetof(gpuobs_api_call, blob_kind), 124u);
  EXPECT_EQ(offsetof(gpuobs_api_call, blob), 128u);
  EXPECT_EQ(sizeof(gpuobs_api_call), 128u + GPUOBS_BLOB_MAX);
  // The fixed part keeps the stack area that follows it 8-byte aligned.
  EXPECT_EQ(offsetof(gpuobs_api_call, blob) % 8, 0u);
}

TEST(WireLayout, StackCopy) {
  // --unwind dwarf: [regs][copy][copy_hdr][ips][trailer], read from the end.
  EXPECT_EQ(sizeof(gpuobs_stack_regs), 32u);
  EXPECT_EQ(offsetof(gpuobs_stack_regs, ip), 0u);
  EXPECT_EQ(offsetof(gpuobs_stack_regs, sp), 8u);
  EXPECT_EQ(offsetof(gpuobs_stack_regs, bp), 16u);
  EXPECT_EQ(offsetof(gpuobs_stack_regs, reserved), 24u);
  EXPECT_EQ(sizeof(gpuobs_stack_copy_hdr), 8u);
  EXPECT_EQ(offsetof(gpuobs_stack_copy_hdr, len), 0u);
  EXPECT_EQ(offsetof(gpuobs_stack_copy_hdr, cap), 4u);
  // A copy size is a multiple of 8 (the loader checks), so ips stay aligned.
  EXPECT_EQ(GPUOBS_STACK_COPY_MAX % 8, 0);
}

TEST(WireLayout, UnwindTables) {
  // User space writes whole gpuobs_unwind_proc values into unwind_procs.
  EXPECT_EQ(sizeof(gpuobs_unwind_mapping), 32u);
  EXPECT_EQ(offsetof(gpuobs_unwind_mapping, start), 0u);
  EXPECT_EQ(offsetof(gpuobs_unwind_mapping, end), 8u);
  EXPECT_EQ(offsetof(gpuobs_unwind_mapping, bias), 16u);
  EXPECT_EQ(offsetof(gpuobs_unwind_mapping, row_start), 24u);
  EXPECT_EQ(offsetof(gpuobs_unwind_mapping, row_count), 28u);
  EXPECT_EQ(offsetof(gpuobs_unwind_proc, n), 0u);
  EXPECT_EQ(offsetof(gpuobs_unwind_proc, pad), 4u);
  EXPECT_EQ(offsetof(gpuobs_unwind_proc, m), 8u);
  EXPECT_EQ(sizeof(gpuobs_unwind_proc), 8u + 32u * GPUOBS_UNWIND_MAPS_MAX);
  // A row: pc in bits 0..31, CFA offset 32..47 (signed), type 48..55, rbp slot 56..63.
  uint64_t row = GPUOBS_UNWIND_ROW(0x1234, GPUOBS_UNWIND_RBP, -16, -2);
  EXPECT_EQ(row & 0xffffffffu, 0x1234u);
  EXPECT_EQ(static_cast<int16_t>(row >> 32), -16);
  EXPECT_EQ((row >> 48) & 0xff, static_cast<uint64_t>(GPUOBS_UNWIND_RBP));
  EXPECT_EQ(static_cast<int8_t>(row >> 56), -2);
}

TEST(WireLayout, GpuTrace) {
  EXPECT_EQ(sizeof(gpuobs_gpu_trace), 224u);
  EXPECT_EQ(offsetof(gpuobs_gpu_trace, hdr), 0u);
  EXPECT_EQ(offsetof(gpuobs_gpu_trace, event), 24u);
  EXPECT_EQ(offsetof(gpuobs_gpu_trace, raw_len), 28u);
  EXPECT_EQ(offsetof(gpuobs_gpu_trace, name_gen), 30u);
  EXPECT_EQ(offsetof(gpuobs_gpu_trace, raw), 32u);
  EXPECT_EQ(GPUOBS_GPU_TRACE_RAW_MAX, 192);
  EXPECT_EQ(GPUOBS_EV_GPU_JOB, 9);
  EXPECT_EQ(GPUOBS_EV_FENCE_SIGNAL, 10);
}
