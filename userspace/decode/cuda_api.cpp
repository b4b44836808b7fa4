#include "decode/cuda_api.h"

#include <algorithm>
#include <array>

#include "events.h"

namespace gpuobs {
namespace {

// Ids are stored in nothing but this binary's records (the database keeps the
// symbol name), yet they stay fixed: never renumber, only append.
// One row per exported symbol; _ptsz/_ptds rows follow their base symbol.
constexpr ApiSpec kTable[] = {
    {.id = GPUOBS_API_CU_LAUNCH_KERNEL, .symbol = "cuLaunchKernel", .family = Family::launch, .op = "launch", .kind = "", .probe = ProbeKind::launch},
    {.id = GPUOBS_API_CU_LAUNCH_KERNEL_PTSZ, .symbol = "cuLaunchKernel_ptsz", .family = Family::launch, .op = "launch", .kind = "", .probe = ProbeKind::launch, .per_thread = true},
    {.id = 3, .symbol = "cuLaunchCooperativeKernel", .family = Family::launch, .op = "launch", .kind = "cooperative", .probe = ProbeKind::launch},
    {.id = 4, .symbol = "cuLaunchCooperativeKernel_ptsz", .family = Family::launch, .op = "launch", .kind = "cooperative", .probe = ProbeKind::launch, .per_thread = true},
    {.id = 5, .symbol = "cuLaunchKernelEx", .family = Family::launch, .op = "launch", .kind = "ex", .probe = ProbeKind::launch_ex},
    {.id = 6, .symbol = "cuLaunchKernelEx_ptsz", .family = Family::launch, .op = "launch", .kind = "ex", .probe = ProbeKind::launch_ex, .per_thread = true},
    {.id = 7, .symbol = "cuLaunchHostFunc", .family = Family::stream, .op = "host_func", .kind = "", .probe = ProbeKind::entry, .stream = 1, .handle = 2},
    {.id = 8, .symbol = "cuLaunchHostFunc_ptsz", .family = Family::stream, .op = "host_func", .kind = "", .probe = ProbeKind::entry, .stream = 1, .handle = 2, .per_thread = true},
    {.id = 9, .symbol = "cuGraphLaunch", .family = Family::stream, .op = "graph_launch", .kind = "", .probe = ProbeKind::entry, .stream = 2, .handle = 1},
    {.id = 10, .symbol = "cuGraphLaunch_ptsz", .family = Family::stream, .op = "graph_launch", .kind = "", .probe = ProbeKind::entry, .stream = 2, .handle = 1, .per_thread = true},
    {.id = 11, .symbol = "cuMemAlloc_v2", .family = Family::memory, .op = "alloc", .kind = "device", .probe = ProbeKind::entry_return, .out_arg = 1, .bytes = 2},
    {.id = 12, .symbol = "cuMemAllocPitch_v2", .family = Family::memory, .op = "alloc", .kind = "pitch", .probe = ProbeKind::entry_return, .out_arg = 1, .bytes = 3, .count = 4},
    {.id = 13, .symbol = "cuMemAllocManaged", .family = Family::memory, .op = "alloc", .kind = "managed", .probe = ProbeKind::entry_return, .out_arg = 1, .bytes = 2, .flags = 3},
    {.id = 14, .symbol = "cuMemAllocHost_v2", .family = Family::memory, .op = "alloc", .kind = "host", .probe = ProbeKind::entry_return, .out_arg = 1, .bytes = 2},
    {.id = 15, .symbol = "cuMemHostAlloc", .family = Family::memory, .op = "alloc", .kind = "host", .probe = ProbeKind::entry_return, .out_arg = 1, .bytes = 2, .flags = 3},
    {.id = 16, .symbol = "cuMemAllocAsync", .family = Family::memory, .op = "alloc", .kind = "async", .probe = ProbeKind::entry_return, .out_arg = 1, .bytes = 2, .stream = 3},
    {.id = 17, .symbol = "cuMemAllocAsync_ptsz", .family = Family::memory, .op = "alloc", .kind = "async", .probe = ProbeKind::entry_return, .out_arg = 1, .bytes = 2, .stream = 3, .per_thread = true},
    {.id = 18, .symbol = "cuMemAllocFromPoolAsync", .family = Family::memory, .op = "alloc", .kind = "pool", .probe = ProbeKind::entry_return, .out_arg = 1, .bytes = 2, .stream = 4, .handle = 3},
    {.id = 19, .symbol = "cuMemAllocFromPoolAsync_ptsz", .family = Family::memory, .op = "alloc", .kind = "pool", .probe = ProbeKind::entry_return, .out_arg = 1, .bytes = 2, .stream = 4, .handle = 3, .per_thread = true},
    {.id = 20, .symbol = "cuMemFree_v2", .family = Family::memory, .op = "free", .kind = "device", .probe = ProbeKind::entry_return, .dst = 1},
    {.id = 21, .symbol = "cuMemFreeAsync", .family = Family::memory, .op = "free", .kind = "async", .probe = ProbeKind::entry_return, .dst = 1, .stream = 2},
    {.id = 22, .symbol = "cuMemFreeAsync_ptsz", .family = Family::memory, .op = "free", .kind = "async", .probe = ProbeKind::entry_return, .dst = 1, .stream = 2, .per_thread = true},
    {.id = 23, .symbol = "cuMemFreeHost", .family = Family::memory, .op = "free", .kind = "host", .probe = ProbeKind::entry_return, .dst = 1},
    {.id = 24, .symbol = "cuMemCreate", .family = Family::memory, .op = "create", .kind = "physical", .probe = ProbeKind::entry_return, .out_arg = 1, .bytes = 2, .flags = 4},
    {.id = 25, .symbol = "cuMemRelease", .family = Family::memory, .op = "release", .kind = "physical", .probe = ProbeKind::entry_return, .handle = 1},
    {.id = 26, .symbol = "cuMemMap", .family = Family::memory, .op = "map", .kind = "virtual", .probe = ProbeKind::entry_return, .dst = 1, .bytes = 2, .handle = 4, .flags = 5},
    {.id = 27, .symbol = "cuMemUnmap", .family = Family::memory, .op = "unmap", .kind = "virtual", .probe = ProbeKind::entry_return, .dst = 1, .bytes = 2},
    {.id = 28, .symbol = "cuMemcpy", .family = Family::copy, .op = "copy", .kind = "default", .probe = ProbeKind::entry_return, .dst = 1, .src = 2, .bytes = 3},
    {.id = 29, .symbol = "cuMemcpy_ptds", .family = Family::copy, .op = "copy", .kind = "default", .probe = ProbeKind::entry_return, .dst = 1, .src = 2, .bytes = 3, .per_thread = true},
    {.id = 30, .symbol = "cuMemcpyAsync", .family = Family::copy, .op = "copy_async", .kind = "default", .probe = ProbeKind::entry_return, .dst = 1, .src = 2, .bytes = 3, .stream = 4},
    {.id = 31, .symbol = "cuMemcpyAsync_ptsz", .family = Family::copy, .op = "copy_async", .kind = "default", .probe = ProbeKind::entry_return, .dst = 1, .src = 2, .bytes = 3, .stream = 4, .per_thread = true},
    {.id = 32, .symbol = "cuMemcpyHtoD_v2", .family = Family::copy, .op = "copy", .kind = "HtoD", .probe = ProbeKind::entry_return, .dst = 1, .src = 2, .bytes = 3},
    {.id = 33, .symbol = "cuMemcpyHtoD_v2_ptds", .family = Family::copy, .op = "copy", .kind = "HtoD", .probe = ProbeKind::entry_return, .dst = 1, .src = 2, .bytes = 3, .per_thread = true},
    {.id = 34, .symbol = "cuMemcpyHtoDAsync_v2", .family = Family::copy, .op = "copy_async", .kind = "HtoD", .probe = ProbeKind::entry_return, .dst = 1, .src = 2, .bytes = 3, .stream = 4},
    {.id = 35, .symbol = "cuMemcpyHtoDAsync_v2_ptsz", .family = Family::copy, .op = "copy_async", .kind = "HtoD", .probe = ProbeKind::entry_return, .dst = 1, .src = 2, .bytes = 3, .stream = 4, .per_thread = true},
    {.id = 36, .symbol = "cuMemcpyDtoH_v2", .family = Family::copy, .op = "copy", .kind = "DtoH", .probe = ProbeKind::entry_return, .dst = 1, .src = 2, .bytes = 3},
    {.id = 37, .symbol = "cuMemcpyDtoH_v2_ptds", .family = Family::copy, .op = "copy", .kind = "DtoH", .probe = ProbeKind::entry_return, .dst = 1, .src = 2, .bytes = 3, .per_thread = true},
    {.id = 38, .symbol = "cuMemcpyDtoHAsync_v2", .family = Family::copy, .op = "copy_async", .kind = "DtoH", .probe = ProbeKind::entry_return, .dst = 1, .src = 2, .bytes = 3, .stream = 4},
    {.id = 39, .symbol = "cuMemcpyDtoHAsync_v2_ptsz", .family = Family::copy, .op = "copy_async", .kind = "DtoH", .probe = ProbeKind::entry_return, .dst = 1, .src = 2, .bytes = 3, .stream = 4, .per_thread = true},
    {.id = 40, .symbol = "cuMemcpyDtoD_v2", .family = Family::copy, .op = "copy", .kind = "DtoD", .probe = ProbeKind::entry_return, .dst = 1, .src = 2, .bytes = 3},
    {.id = 41, .symbol = "cuMemcpyDtoD_v2_ptds", .family = Family::copy, .op = "copy", .kind = "DtoD", .probe = ProbeKind::entry_return, .dst = 1, .src = 2, .bytes = 3, .per_thread = true},
    {.id = 42, .symbol = "cuMemcpyDtoDAsync_v2", .family = Family::copy, .op = "copy_async", .kind = "DtoD", .probe = ProbeKind::entry_return, .dst = 1, .src = 2, .bytes = 3, .stream = 4},
    {.id = 43, .symbol = "cuMemcpyDtoDAsync_v2_ptsz", .family = Family::copy, .op = "copy_async", .kind = "DtoD", .probe = ProbeKind::entry_return, .dst = 1, .src = 2, .bytes = 3, .stream = 4, .per_thread = true},
    {.id = 44, .symbol = "cuMemcpyPeer", .family = Family::copy, .op = "copy", .kind = "peer", .probe = ProbeKind::entry_return, .dst = 1, .src = 3, .bytes = 5, .handle = 2},
    {.id = 45, .symbol = "cuMemcpyPeer_ptds", .family = Family::copy, .op = "copy", .kind = "peer", .probe = ProbeKind::entry_return, .dst = 1, .src = 3, .bytes = 5, .handle = 2, .per_thread = true},
    {.id = 46, .symbol = "cuMemcpyPeerAsync", .family = Family::copy, .op = "copy_async", .kind = "peer", .probe = ProbeKind::entry_return, .dst = 1, .src = 3, .bytes = 5, .stream = 6, .handle = 2},
    {.id = 47, .symbol = "cuMemcpyPeerAsync_ptsz", .family = Family::copy, .op = "copy_async", .kind = "peer", .probe = ProbeKind::entry_return, .dst = 1, .src = 3, .bytes = 5, .stream = 6, .handle = 2, .per_thread = true},
    {.id = 48, .symbol = "cuMemcpy2D_v2", .family = Family::copy, .op = "copy", .kind = "2d", .probe = ProbeKind::entry_return, .blob_arg = 1, .blob_kind = 2, .blob_len = 128},
    {.id = 49, .symbol = "cuMemcpy2D_v2_ptds", .family = Family::copy, .op = "copy", .kind = "2d", .probe = ProbeKind::entry_return, .blob_arg = 1, .blob_kind = 2, .blob_len = 128, .per_thread = true},
    {.id = 50, .symbol = "cuMemcpy2DAsync_v2", .family = Family::copy, .op = "copy_async", .kind = "2d", .probe = ProbeKind::entry_return, .blob_arg = 1, .blob_kind = 2, .blob_len = 128, .stream = 2},
    {.id = 51, .symbol = "cuMemcpy2DAsync_v2_ptsz", .family = Family::copy, .op = "copy_async", .kind = "2d", .probe = ProbeKind::entry_return, .blob_arg = 1, .blob_kind = 2, .blob_len = 128, .stream = 2, .per_thread = true},
    {.id = 52, .symbol = "cuMemcpy3D_v2", .family = Family::copy, .op = "copy", .kind = "3d", .probe = ProbeKind::entry_return, .blob_arg = 1, .blob_kind = 2, .blob_len = 200},
    {.id = 53, .symbol = "cuMemcpy3D_v2_ptds", .family = Family::copy, .op = "copy", .kind = "3d", .probe = ProbeKind::entry_return, .blob_arg = 1, .blob_kind = 2, .blob_len = 200, .per_thread = true},
    {.id = 54, .symbol = "cuMemcpy3DAsync_v2", .family = Family::copy, .op = "copy_async", .kind = "3d", .probe = ProbeKind::entry_return, .blob_arg = 1, .blob_kind = 2, .blob_len = 200, .stream = 2},
    {.id = 55, .symbol = "cuMemcpy3DAsync_v2_ptsz", .family = Family::copy, .op = "copy_async", .kind = "3d", .probe = ProbeKind::entry_return, .blob_arg = 1, .blob_kind = 2, .blob_len = 200, .stream = 2, .per_thread = true},
    {.id = 56, .symbol = "cuMemcpyDtoA_v2", .family = Family::copy, .op = "copy", .kind = "DtoA", .probe = ProbeKind::entry_return, .dst = 1, .src = 3, .bytes = 4},
    {.id = 57, .symbol = "cuMemcpyDtoA_v2_ptds", .family = Family::copy, .op = "copy", .kind = "DtoA", .probe = ProbeKind::entry_return, .dst = 1, .src = 3, .bytes = 4, .per_thread = true},
    {.id = 58, .symbol = "cuMemcpyAtoD_v2", .family = Family::copy, .op = "copy", .kind = "AtoD", .probe = ProbeKind::entry_return, .dst = 1, .src = 2, .bytes = 4},
    {.id = 59, .symbol = "cuMemcpyAtoD_v2_ptds", .family = Family::copy, .op = "copy", .kind = "AtoD", .probe = ProbeKind::entry_return, .dst = 1, .src = 2, .bytes = 4, .per_thread = true},
    {.id = 60, .symbol = "cuMemcpyHtoA_v2", .family = Family::copy, .op = "copy", .kind = "HtoA", .probe = ProbeKind::entry_return, .dst = 1, .src = 3, .bytes = 4},
    {.id = 61, .symbol = "cuMemcpyHtoA_v2_ptds", .family = Family::copy, .op = "copy", .kind = "HtoA", .probe = ProbeKind::entry_return, .dst = 1, .src = 3, .bytes = 4, .per_thread = true},
    {.id = 62, .symbol = "cuMemcpyAtoH_v2", .family = Family::copy, .op = "copy", .kind = "AtoH", .probe = ProbeKind::entry_return, .dst = 1, .src = 2, .bytes = 4},
    {.id = 63, .symbol = "cuMemcpyAtoH_v2_ptds", .family = Family::copy, .op = "copy", .kind = "AtoH", .probe = ProbeKind::entry_return, .dst = 1, .src = 2, .bytes = 4, .per_thread = true},
    {.id = 64, .symbol = "cuMemsetD8_v2", .family = Family::memset, .op = "memset", .kind = "", .probe = ProbeKind::entry_return, .dst = 1, .bytes = 3, .value = 2, .elem = 1},
    {.id = 65, .symbol = "cuMemsetD8_v2_ptds", .family = Family::memset, .op = "memset", .kind = "", .probe = ProbeKind::entry_return, .dst = 1, .bytes = 3, .value = 2, .elem = 1, .per_thread = true},
    {.id = 66, .symbol = "cuMemsetD8Async", .family = Family::memset, .op = "memset_async", .kind = "", .probe = ProbeKind::entry_return, .dst = 1, .bytes = 3, .stream = 4, .value = 2, .elem = 1},
    {.id = 67, .symbol = "cuMemsetD8Async_ptsz", .family = Family::memset, .op = "memset_async", .kind = "", .probe = ProbeKind::entry_return, .dst = 1, .bytes = 3, .stream = 4, .value = 2, .elem = 1, .per_thread = true},
    {.id = 68, .symbol = "cuMemsetD2D8_v2", .family = Family::memset, .op = "memset", .kind = "2d", .probe = ProbeKind::entry_return, .dst = 1, .bytes = 4, .count = 5, .value = 3, .elem = 1},
    {.id = 69, .symbol = "cuMemsetD2D8_v2_ptds", .family = Family::memset, .op = "memset", .kind = "2d", .probe = ProbeKind::entry_return, .dst = 1, .bytes = 4, .count = 5, .value = 3, .elem = 1, .per_thread = true},
    {.id = 70, .symbol = "cuMemsetD2D8Async", .family = Family::memset, .op = "memset_async", .kind = "2d", .probe = ProbeKind::entry_return, .dst = 1, .bytes = 4, .count = 5, .stream = 6, .value = 3, .elem = 1},
    {.id = 71, .symbol = "cuMemsetD2D8Async_ptsz", .family = Family::memset, .op = "memset_async", .kind = "2d", .probe = ProbeKind::entry_return, .dst = 1, .bytes = 4, .count = 5, .stream = 6, .value = 3, .elem = 1, .per_thread = true},
    {.id = 72, .symbol = "cuMemsetD16_v2", .family = Family::memset, .op = "memset", .kind = "", .probe = ProbeKind::entry_return, .dst = 1, .bytes = 3, .value = 2, .elem = 2},
    {.id = 73, .symbol = "cuMemsetD16_v2_ptds", .family = Family::memset, .op = "memset", .kind = "", .probe = ProbeKind::entry_return, .dst = 1, .bytes = 3, .value = 2, .elem = 2, .per_thread = true},
    {.id = 74, .symbol = "cuMemsetD16Async", .family = Family::memset, .op = "memset_async", .kind = "", .probe = ProbeKind::entry_return, .dst = 1, .bytes = 3, .stream = 4, .value = 2, .elem = 2},
    {.id = 75, .symbol = "cuMemsetD16Async_ptsz", .family = Family::memset, .op = "memset_async", .kind = "", .probe = ProbeKind::entry_return, .dst = 1, .bytes = 3, .stream = 4, .value = 2, .elem = 2, .per_thread = true},
    {.id = 76, .symbol = "cuMemsetD2D16_v2", .family = Family::memset, .op = "memset", .kind = "2d", .probe = ProbeKind::entry_return, .dst = 1, .bytes = 4, .count = 5, .value = 3, .elem = 2},
    {.id = 77, .symbol = "cuMemsetD2D16_v2_ptds", .family = Family::memset, .op = "memset", .kind = "2d", .probe = ProbeKind::entry_return, .dst = 1, .bytes = 4, .count = 5, .value = 3, .elem = 2, .per_thread = true},
    {.id = 78, .symbol = "cuMemsetD2D16Async", .family = Family::memset, .op = "memset_async", .kind = "2d", .probe = ProbeKind::entry_return, .dst = 1, .bytes = 4, .count = 5, .stream = 6, .value = 3, .elem = 2},
    {.id = 79, .symbol = "cuMemsetD2D16Async_ptsz", .family = Family::memset, .op = "memset_async", .kind = "2d", .probe = ProbeKind::entry_return, .dst = 1, .bytes = 4, .count = 5, .stream = 6, .value = 3, .elem = 2, .per_thread = true},
    {.id = 80, .symbol = "cuMemsetD32_v2", .family = Family::memset, .op = "memset", .kind = "", .probe = ProbeKind::entry_return, .dst = 1, .bytes = 3, .value = 2, .elem = 4},
    {.id = 81, .symbol = "cuMemsetD32_v2_ptds", .family = Family::memset, .op = "memset", .kind = "", .probe = ProbeKind::entry_return, .dst = 1, .bytes = 3, .value = 2, .elem = 4, .per_thread = true},
    {.id = 82, .symbol = "cuMemsetD32Async", .family = Family::memset, .op = "memset_async", .kind = "", .probe = ProbeKind::entry_return, .dst = 1, .bytes = 3, .stream = 4, .value = 2, .elem = 4},
    {.id = 83, .symbol = "cuMemsetD32Async_ptsz", .family = Family::memset, .op = "memset_async", .kind = "", .probe = ProbeKind::entry_return, .dst = 1, .bytes = 3, .stream = 4, .value = 2, .elem = 4, .per_thread = true},
    {.id = 84, .symbol = "cuMemsetD2D32_v2", .family = Family::memset, .op = "memset", .kind = "2d", .probe = ProbeKind::entry_return, .dst = 1, .bytes = 4, .count = 5, .value = 3, .elem = 4},
    {.id = 85, .symbol = "cuMemsetD2D32_v2_ptds", .family = Family::memset, .op = "memset", .kind = "2d", .probe = ProbeKind::entry_return, .dst = 1, .bytes = 4, .count = 5, .value = 3, .elem = 4, .per_thread = true},
    {.id = 86, .symbol = "cuMemsetD2D32Async", .family = Family::memset, .op = "memset_async", .kind = "2d", .probe = ProbeKind::entry_return, .dst = 1, .bytes = 4, .count = 5, .stream = 6, .value = 3, .elem = 4},
    {.id = 87, .symbol = "cuMemsetD2D32Async_ptsz", .family = Family::memset, .op = "memset_async", .kind = "2d", .probe = ProbeKind::entry_return, .dst = 1, .bytes = 4, .count = 5, .stream = 6, .value = 3, .elem = 4, .per_thread = true},
    {.id = 88, .symbol = "cuStreamCreate", .family = Family::stream, .op = "create", .kind = "", .probe = ProbeKind::entry_return, .out_arg = 1, .flags = 2},
    {.id = 89, .symbol = "cuStreamCreateWithPriority", .family = Family::stream, .op = "create", .kind = "", .probe = ProbeKind::entry_return, .out_arg = 1, .flags = 2, .value = 3},
    {.id = 90, .symbol = "cuStreamDestroy_v2", .family = Family::stream, .op = "destroy", .kind = "", .probe = ProbeKind::entry_return, .stream = 1},
    {.id = 91, .symbol = "cuStreamWaitEvent", .family = Family::stream, .op = "wait_event", .kind = "", .probe = ProbeKind::entry_return, .stream = 1, .event = 2, .flags = 3},
    {.id = 92, .symbol = "cuStreamWaitEvent_ptsz", .family = Family::stream, .op = "wait_event", .kind = "", .probe = ProbeKind::entry_return, .stream = 1, .event = 2, .flags = 3, .per_thread = true},
    {.id = 93, .symbol = "cuStreamQuery", .family = Family::stream, .op = "query", .kind = "", .probe = ProbeKind::entry_return, .stream = 1},
    {.id = 94, .symbol = "cuStreamQuery_ptsz", .family = Family::stream, .op = "query", .kind = "", .probe = ProbeKind::entry_return, .stream = 1, .per_thread = true},
    {.id = 95, .symbol = "cuStreamBeginCapture_v2", .family = Family::stream, .op = "capture_begin", .kind = "", .probe = ProbeKind::entry_return, .stream = 1, .flags = 2},
    {.id = 96, .symbol = "cuStreamBeginCapture_v2_ptsz", .family = Family::stream, .op = "capture_begin", .kind = "", .probe = ProbeKind::entry_return, .stream = 1, .flags = 2, .per_thread = true},
    {.id = 97, .symbol = "cuStreamEndCapture", .family = Family::stream, .op = "capture_end", .kind = "", .probe = ProbeKind::entry_return, .out_arg = 2, .stream = 1},
    {.id = 98, .symbol = "cuStreamEndCapture_ptsz", .family = Family::stream, .op = "capture_end", .kind = "", .probe = ProbeKind::entry_return, .out_arg = 2, .stream = 1, .per_thread = true},
    {.id = 99, .symbol = "cuEventCreate", .family = Family::event, .op = "create", .kind = "", .probe = ProbeKind::entry_return, .out_arg = 1, .flags = 2},
    {.id = 100, .symbol = "cuEventRecord", .family = Family::event, .op = "record", .kind = "", .probe = ProbeKind::entry_return, .stream = 2, .event = 1},
    {.id = 101, .symbol = "cuEventRecord_ptsz", .family = Family::event, .op = "record", .kind = "", .probe = ProbeKind::entry_return, .stream = 2, .event = 1, .per_thread = true},
    {.id = 102, .symbol = "cuEventRecordWithFlags", .family = Family::event, .op = "record", .kind = "", .probe = ProbeKind::entry_return, .stream = 2, .event = 1, .flags = 3},
    {.id = 103, .symbol = "cuEventRecordWithFlags_ptsz", .family = Family::event, .op = "record", .kind = "", .probe = ProbeKind::entry_return, .stream = 2, .event = 1, .flags = 3, .per_thread = true},
    {.id = 104, .symbol = "cuEventQuery", .family = Family::event, .op = "query", .kind = "", .probe = ProbeKind::entry_return, .event = 1},
    {.id = 105, .symbol = "cuEventDestroy_v2", .family = Family::event, .op = "destroy", .kind = "", .probe = ProbeKind::entry_return, .event = 1},
    {.id = 106, .symbol = "cuStreamSynchronize", .family = Family::sync, .op = "sync", .kind = "stream", .probe = ProbeKind::entry_return, .stream = 1},
    {.id = 107, .symbol = "cuStreamSynchronize_ptsz", .family = Family::sync, .op = "sync", .kind = "stream", .probe = ProbeKind::entry_return, .stream = 1, .per_thread = true},
    {.id = 108, .symbol = "cuEventSynchronize", .family = Family::sync, .op = "sync", .kind = "event", .probe = ProbeKind::entry_return, .event = 1},
    {.id = 109, .symbol = "cuCtxSynchronize", .family = Family::sync, .op = "sync", .kind = "context", .probe = ProbeKind::entry_return},
    {.id = 110, .symbol = "cuCtxSynchronize_v2", .family = Family::sync, .op = "sync", .kind = "context", .probe = ProbeKind::entry_return, .handle = 1},
    {.id = 111, .symbol = "cuModuleGetFunction", .family = Family::module, .op = "get_function", .kind = "function", .probe = ProbeKind::entry_return, .out_arg = 1, .blob_arg = 3, .blob_kind = 1, .handle = 2},
    {.id = 112, .symbol = "cuLibraryGetKernel", .family = Family::module, .op = "get_kernel", .kind = "kernel", .probe = ProbeKind::entry_return, .out_arg = 1, .blob_arg = 3, .blob_kind = 1, .handle = 2},
    {.id = 113, .symbol = "cuKernelGetFunction", .family = Family::module, .op = "kernel_function", .kind = "function", .probe = ProbeKind::entry_return, .out_arg = 1, .handle = 2},
    {.id = 114, .symbol = "cuModuleLoad", .family = Family::module, .op = "load", .kind = "module", .probe = ProbeKind::entry_return, .out_arg = 1, .blob_arg = 2, .blob_kind = 1},
    {.id = 115, .symbol = "cuModuleLoadData", .family = Family::module, .op = "load", .kind = "module", .probe = ProbeKind::entry_return, .out_arg = 1},
    {.id = 116, .symbol = "cuModuleLoadDataEx", .family = Family::module, .op = "load", .kind = "module", .probe = ProbeKind::entry_return, .out_arg = 1},
    {.id = 117, .symbol = "cuLibraryLoadData", .family = Family::module, .op = "load", .kind = "library", .probe = ProbeKind::entry_return, .out_arg = 1},
    {.id = 118, .symbol = "cuLibraryLoadFromFile", .family = Family::module, .op = "load", .kind = "library", .probe = ProbeKind::entry_return, .out_arg = 1, .blob_arg = 2, .blob_kind = 1},
    // Appended later: ids continue, never renumber.
    {.id = 119, .symbol = "cuMemcpyAtoA_v2", .family = Family::copy, .op = "copy", .kind = "AtoA", .probe = ProbeKind::entry_return, .dst = 1, .src = 3, .bytes = 5},
    {.id = 120, .symbol = "cuMemcpyAtoA_v2_ptds", .family = Family::copy, .op = "copy", .kind = "AtoA", .probe = ProbeKind::entry_return, .dst = 1, .src = 3, .bytes = 5, .per_thread = true},
    {.id = 121, .symbol = "cuMemcpyHtoAAsync_v2", .family = Family::copy, .op = "copy_async", .kind = "HtoA", .probe = ProbeKind::entry_return, .dst = 1, .src = 3, .bytes = 4, .stream = 5},
    {.id = 122, .symbol = "cuMemcpyHtoAAsync_v2_ptsz", .family = Family::copy, .op = "copy_async", .kind = "HtoA", .probe = ProbeKind::entry_return, .dst = 1, .src = 3, .bytes = 4, .stream = 5, .per_thread = true},
    {.id = 123, .symbol = "cuMemcpyAtoHAsync_v2", .family = Family::copy, .op = "copy_async", .kind = "AtoH", .probe = ProbeKind::entry_return, .dst = 1, .src = 2, .bytes = 4, .stream = 5},
    {.id = 124, .symbol = "cuMemcpyAtoHAsync_v2_ptsz", .family = Family::copy, .op = "copy_async", .kind = "AtoH", .probe = ProbeKind::entry_return, .dst = 1, .src = 2, .bytes = 4, .stream = 5, .per_thread = true},
    // CUDA_MEMCPY3D_PEER: the fields decoded sit where CUDA_MEMCPY3D has them.
    {.id = 125, .symbol = "cuMemcpy3DPeer", .family = Family::copy, .op = "copy", .kind = "3d", .probe = ProbeKind::entry_return, .blob_arg = 1, .blob_kind = 2, .blob_len = 200},
    {.id = 126, .symbol = "cuMemcpy3DPeer_ptds", .family = Family::copy, .op = "copy", .kind = "3d", .probe = ProbeKind::entry_return, .blob_arg = 1, .blob_kind = 2, .blob_len = 200, .per_thread = true},
    {.id = 127, .symbol = "cuMemcpy3DPeerAsync", .family = Family::copy, .op = "copy_async", .kind = "3d", .probe = ProbeKind::entry_return, .blob_arg = 1, .blob_kind = 2, .blob_len = 200, .stream = 2},
    {.id = 128, .symbol = "cuMemcpy3DPeerAsync_ptsz", .family = Family::copy, .op = "copy_async", .kind = "3d", .probe = ProbeKind::entry_return, .blob_arg = 1, .blob_kind = 2, .blob_len = 200, .stream = 2, .per_thread = true},
};
}  // namespace

std::span<const ApiSpec> cuda_api_table() { return kTable; }

const ApiSpec* api_by_id(uint32_t id) {
  // Ids are dense and ordered in each table (CUDA from 1, HIP from 1001):
  // index directly, check, fall back to a scan.
  auto find = [](std::span<const ApiSpec> t, uint32_t first, uint32_t id) -> const ApiSpec* {
    if (id >= first && id - first < t.size() && t[id - first].id == id) return &t[id - first];
    auto it = std::find_if(t.begin(), t.end(), [&](const ApiSpec& s) { return s.id == id; });
    return it == t.end() ? nullptr : &*it;
  };
  return id > 1000 ? find(hip_api_table(), 1001, id) : find(kTable, 1, id);
}

std::string_view api_name(uint32_t id) {
  const ApiSpec* s = api_by_id(id);
  return s ? s->symbol : std::string_view("unknown");
}

}  // namespace gpuobs
