// The HIP runtime table (libamdhip64.so, ROCm 5.x and 6.x): the same ApiSpec
// rows as the CUDA table, so HIP calls land in the same tables and reports.
// Prototypes and register maps: docs/reference/abi-reference.md §5.2. HIP's special
// streams (hipStreamLegacy 1, hipStreamPerThread 2) and hipErrorNotReady
// (600) have CUDA's values, so the stream and error logic is shared.
#include "catalogue/api_spec.h"

namespace gpuobs {
namespace {

// Ids from 1001, dense, never renumbered: only append.
// hipLaunchKernel(const void* f, dim3 grid, dim3 block, void** args, size_t shmem, hipStream_t stream):
// f=1, grid.xy=2, grid.z=3, block.xy=4, block.z=5, args=6, shmem=7, stream=8 (launch_dim3 decodes it).
// hipModuleLaunchKernel has cuLaunchKernel's layout (probe kind launch).
// One symbol per line, so the table reads as a table (clang-format would split each entry).
// clang-format off
constexpr ApiSpec kHip[] = {
    {.id = 1001, .symbol = "hipLaunchKernel", .family = Family::launch, .op = ApiOp::launch, .probe = ProbeKind::launch_dim3, .vendor = Vendor::hip},
    {.id = 1002, .symbol = "hipLaunchKernel_spt", .family = Family::launch, .op = ApiOp::launch, .probe = ProbeKind::launch_dim3, .per_thread = true, .vendor = Vendor::hip},
    {.id = 1003, .symbol = "hipLaunchCooperativeKernel", .family = Family::launch, .op = ApiOp::launch, .kind = ApiKind::cooperative, .probe = ProbeKind::launch_dim3, .vendor = Vendor::hip},
    {.id = 1004, .symbol = "hipLaunchCooperativeKernel_spt", .family = Family::launch, .op = ApiOp::launch, .kind = ApiKind::cooperative, .probe = ProbeKind::launch_dim3, .per_thread = true, .vendor = Vendor::hip},
    {.id = 1005, .symbol = "hipExtLaunchKernel", .family = Family::launch, .op = ApiOp::launch, .kind = ApiKind::ext, .probe = ProbeKind::launch_dim3, .vendor = Vendor::hip},
    {.id = 1006, .symbol = "hipModuleLaunchKernel", .family = Family::launch, .op = ApiOp::launch, .probe = ProbeKind::launch, .vendor = Vendor::hip},
    {.id = 1007, .symbol = "hipModuleLaunchCooperativeKernel", .family = Family::launch, .op = ApiOp::launch, .kind = ApiKind::cooperative, .probe = ProbeKind::launch, .vendor = Vendor::hip},
    // Work sizes in threads (grid * block), not blocks: divided back on decode.
    {.id = 1008, .symbol = "hipExtModuleLaunchKernel", .family = Family::launch, .op = ApiOp::launch, .kind = ApiKind::global_size, .probe = ProbeKind::launch, .vendor = Vendor::hip},
    {.id = 1009, .symbol = "hipHccModuleLaunchKernel", .family = Family::launch, .op = ApiOp::launch, .kind = ApiKind::global_size, .probe = ProbeKind::launch, .vendor = Vendor::hip},
    {.id = 1010, .symbol = "hipGraphLaunch", .family = Family::stream, .op = ApiOp::graph_launch, .probe = ProbeKind::entry, .stream = 2, .handle = 1, .vendor = Vendor::hip},
    {.id = 1011, .symbol = "hipGraphLaunch_spt", .family = Family::stream, .op = ApiOp::graph_launch, .probe = ProbeKind::entry, .stream = 2, .handle = 1, .per_thread = true, .vendor = Vendor::hip},
    {.id = 1012, .symbol = "hipLaunchHostFunc", .family = Family::stream, .op = ApiOp::host_func, .probe = ProbeKind::entry, .stream = 1, .handle = 2, .vendor = Vendor::hip},
    {.id = 1013, .symbol = "hipLaunchHostFunc_spt", .family = Family::stream, .op = ApiOp::host_func, .probe = ProbeKind::entry, .stream = 1, .handle = 2, .per_thread = true, .vendor = Vendor::hip},
    {.id = 1014, .symbol = "hipMalloc", .family = Family::memory, .op = ApiOp::alloc, .kind = ApiKind::device, .probe = ProbeKind::entry_return, .out_arg = 1, .bytes = 2, .vendor = Vendor::hip},
    {.id = 1015, .symbol = "hipExtMallocWithFlags", .family = Family::memory, .op = ApiOp::alloc, .kind = ApiKind::device, .probe = ProbeKind::entry_return, .out_arg = 1, .bytes = 2, .flags = 3, .vendor = Vendor::hip},
    {.id = 1016, .symbol = "hipMallocManaged", .family = Family::memory, .op = ApiOp::alloc, .kind = ApiKind::managed, .probe = ProbeKind::entry_return, .out_arg = 1, .bytes = 2, .flags = 3, .vendor = Vendor::hip},
    {.id = 1017, .symbol = "hipHostMalloc", .family = Family::memory, .op = ApiOp::alloc, .kind = ApiKind::host, .probe = ProbeKind::entry_return, .out_arg = 1, .bytes = 2, .flags = 3, .vendor = Vendor::hip},
    {.id = 1018, .symbol = "hipMallocHost", .family = Family::memory, .op = ApiOp::alloc, .kind = ApiKind::host, .probe = ProbeKind::entry_return, .out_arg = 1, .bytes = 2, .vendor = Vendor::hip},
    {.id = 1019, .symbol = "hipMallocAsync", .family = Family::memory, .op = ApiOp::alloc, .kind = ApiKind::async, .probe = ProbeKind::entry_return, .out_arg = 1, .bytes = 2, .stream = 3, .vendor = Vendor::hip},
    {.id = 1020, .symbol = "hipMallocFromPoolAsync", .family = Family::memory, .op = ApiOp::alloc, .kind = ApiKind::pool, .probe = ProbeKind::entry_return, .out_arg = 1, .bytes = 2, .stream = 4, .handle = 3, .vendor = Vendor::hip},
    // hipMallocPitch(void** ptr, size_t* pitch, size_t width, size_t height): width * height requested.
    {.id = 1021, .symbol = "hipMallocPitch", .family = Family::memory, .op = ApiOp::alloc, .kind = ApiKind::pitch, .probe = ProbeKind::entry_return, .out_arg = 1, .bytes = 3, .count = 4, .vendor = Vendor::hip},
    {.id = 1022, .symbol = "hipFree", .family = Family::memory, .op = ApiOp::free, .kind = ApiKind::device, .probe = ProbeKind::entry_return, .dst = 1, .vendor = Vendor::hip},
    {.id = 1023, .symbol = "hipFreeAsync", .family = Family::memory, .op = ApiOp::free, .kind = ApiKind::async, .probe = ProbeKind::entry_return, .dst = 1, .stream = 2, .vendor = Vendor::hip},
    {.id = 1024, .symbol = "hipHostFree", .family = Family::memory, .op = ApiOp::free, .kind = ApiKind::host, .probe = ProbeKind::entry_return, .dst = 1, .vendor = Vendor::hip},
    {.id = 1025, .symbol = "hipFreeHost", .family = Family::memory, .op = ApiOp::free, .kind = ApiKind::host, .probe = ProbeKind::entry_return, .dst = 1, .vendor = Vendor::hip},
    // hipMemcpy(dst, src, bytes, hipMemcpyKind kind[, stream]): the direction is an argument.
    {.id = 1026, .symbol = "hipMemcpy", .family = Family::copy, .op = ApiOp::copy, .kind = ApiKind::default_, .probe = ProbeKind::entry_return, .dst = 1, .src = 2, .bytes = 3, .dir_arg = 4, .vendor = Vendor::hip},
    {.id = 1027, .symbol = "hipMemcpy_spt", .family = Family::copy, .op = ApiOp::copy, .kind = ApiKind::default_, .probe = ProbeKind::entry_return, .dst = 1, .src = 2, .bytes = 3, .per_thread = true, .dir_arg = 4, .vendor = Vendor::hip},
    {.id = 1028, .symbol = "hipMemcpyAsync", .family = Family::copy, .op = ApiOp::copy_async, .kind = ApiKind::default_, .probe = ProbeKind::entry_return, .dst = 1, .src = 2, .bytes = 3, .stream = 5, .dir_arg = 4, .vendor = Vendor::hip},
    {.id = 1029, .symbol = "hipMemcpyAsync_spt", .family = Family::copy, .op = ApiOp::copy_async, .kind = ApiKind::default_, .probe = ProbeKind::entry_return, .dst = 1, .src = 2, .bytes = 3, .stream = 5, .per_thread = true, .dir_arg = 4, .vendor = Vendor::hip},
    {.id = 1030, .symbol = "hipMemcpyWithStream", .family = Family::copy, .op = ApiOp::copy, .kind = ApiKind::default_, .probe = ProbeKind::entry_return, .dst = 1, .src = 2, .bytes = 3, .stream = 5, .dir_arg = 4, .vendor = Vendor::hip},
    {.id = 1031, .symbol = "hipMemcpyHtoD", .family = Family::copy, .op = ApiOp::copy, .kind = ApiKind::HtoD, .probe = ProbeKind::entry_return, .dst = 1, .src = 2, .bytes = 3, .vendor = Vendor::hip},
    {.id = 1032, .symbol = "hipMemcpyDtoH", .family = Family::copy, .op = ApiOp::copy, .kind = ApiKind::DtoH, .probe = ProbeKind::entry_return, .dst = 1, .src = 2, .bytes = 3, .vendor = Vendor::hip},
    {.id = 1033, .symbol = "hipMemcpyDtoD", .family = Family::copy, .op = ApiOp::copy, .kind = ApiKind::DtoD, .probe = ProbeKind::entry_return, .dst = 1, .src = 2, .bytes = 3, .vendor = Vendor::hip},
    {.id = 1034, .symbol = "hipMemcpyHtoDAsync", .family = Family::copy, .op = ApiOp::copy_async, .kind = ApiKind::HtoD, .probe = ProbeKind::entry_return, .dst = 1, .src = 2, .bytes = 3, .stream = 4, .vendor = Vendor::hip},
    {.id = 1035, .symbol = "hipMemcpyDtoHAsync", .family = Family::copy, .op = ApiOp::copy_async, .kind = ApiKind::DtoH, .probe = ProbeKind::entry_return, .dst = 1, .src = 2, .bytes = 3, .stream = 4, .vendor = Vendor::hip},
    {.id = 1036, .symbol = "hipMemcpyDtoDAsync", .family = Family::copy, .op = ApiOp::copy_async, .kind = ApiKind::DtoD, .probe = ProbeKind::entry_return, .dst = 1, .src = 2, .bytes = 3, .stream = 4, .vendor = Vendor::hip},
    // hipMemcpyPeer(dst, dstDevice, src, srcDevice, bytes[, stream])
    {.id = 1037, .symbol = "hipMemcpyPeer", .family = Family::copy, .op = ApiOp::copy, .kind = ApiKind::peer, .probe = ProbeKind::entry_return, .dst = 1, .src = 3, .bytes = 5, .vendor = Vendor::hip},
    {.id = 1038, .symbol = "hipMemcpyPeerAsync", .family = Family::copy, .op = ApiOp::copy_async, .kind = ApiKind::peer, .probe = ProbeKind::entry_return, .dst = 1, .src = 3, .bytes = 5, .stream = 6, .vendor = Vendor::hip},
    // hipMemset(dst, int value, bytes[, stream]) sets bytes; hipMemsetD16/D32 count elements.
    {.id = 1039, .symbol = "hipMemset", .family = Family::memset, .op = ApiOp::memset, .probe = ProbeKind::entry_return, .dst = 1, .bytes = 3, .value = 2, .elem = 1, .vendor = Vendor::hip},
    {.id = 1040, .symbol = "hipMemset_spt", .family = Family::memset, .op = ApiOp::memset, .probe = ProbeKind::entry_return, .dst = 1, .bytes = 3, .value = 2, .elem = 1, .per_thread = true, .vendor = Vendor::hip},
    {.id = 1041, .symbol = "hipMemsetAsync", .family = Family::memset, .op = ApiOp::memset_async, .probe = ProbeKind::entry_return, .dst = 1, .bytes = 3, .stream = 4, .value = 2, .elem = 1, .vendor = Vendor::hip},
    {.id = 1042, .symbol = "hipMemsetAsync_spt", .family = Family::memset, .op = ApiOp::memset_async, .probe = ProbeKind::entry_return, .dst = 1, .bytes = 3, .stream = 4, .value = 2, .elem = 1, .per_thread = true, .vendor = Vendor::hip},
    {.id = 1043, .symbol = "hipMemsetD8", .family = Family::memset, .op = ApiOp::memset, .probe = ProbeKind::entry_return, .dst = 1, .bytes = 3, .value = 2, .elem = 1, .vendor = Vendor::hip},
    {.id = 1044, .symbol = "hipMemsetD8Async", .family = Family::memset, .op = ApiOp::memset_async, .probe = ProbeKind::entry_return, .dst = 1, .bytes = 3, .stream = 4, .value = 2, .elem = 1, .vendor = Vendor::hip},
    {.id = 1045, .symbol = "hipMemsetD16", .family = Family::memset, .op = ApiOp::memset, .probe = ProbeKind::entry_return, .dst = 1, .bytes = 3, .value = 2, .elem = 2, .vendor = Vendor::hip},
    {.id = 1046, .symbol = "hipMemsetD16Async", .family = Family::memset, .op = ApiOp::memset_async, .probe = ProbeKind::entry_return, .dst = 1, .bytes = 3, .stream = 4, .value = 2, .elem = 2, .vendor = Vendor::hip},
    {.id = 1047, .symbol = "hipMemsetD32", .family = Family::memset, .op = ApiOp::memset, .probe = ProbeKind::entry_return, .dst = 1, .bytes = 3, .value = 2, .elem = 4, .vendor = Vendor::hip},
    {.id = 1048, .symbol = "hipMemsetD32Async", .family = Family::memset, .op = ApiOp::memset_async, .probe = ProbeKind::entry_return, .dst = 1, .bytes = 3, .stream = 4, .value = 2, .elem = 4, .vendor = Vendor::hip},
    {.id = 1049, .symbol = "hipStreamCreate", .family = Family::stream, .op = ApiOp::create, .probe = ProbeKind::entry_return, .out_arg = 1, .vendor = Vendor::hip},
    {.id = 1050, .symbol = "hipStreamCreateWithFlags", .family = Family::stream, .op = ApiOp::create, .probe = ProbeKind::entry_return, .out_arg = 1, .flags = 2, .vendor = Vendor::hip},
    {.id = 1051, .symbol = "hipStreamCreateWithPriority", .family = Family::stream, .op = ApiOp::create, .probe = ProbeKind::entry_return, .out_arg = 1, .flags = 2, .value = 3, .vendor = Vendor::hip},
    {.id = 1052, .symbol = "hipStreamDestroy", .family = Family::stream, .op = ApiOp::destroy, .probe = ProbeKind::entry_return, .stream = 1, .vendor = Vendor::hip},
    {.id = 1053, .symbol = "hipStreamWaitEvent", .family = Family::stream, .op = ApiOp::wait_event, .probe = ProbeKind::entry_return, .stream = 1, .event = 2, .flags = 3, .vendor = Vendor::hip},
    {.id = 1054, .symbol = "hipStreamWaitEvent_spt", .family = Family::stream, .op = ApiOp::wait_event, .probe = ProbeKind::entry_return, .stream = 1, .event = 2, .flags = 3, .per_thread = true, .vendor = Vendor::hip},
    {.id = 1055, .symbol = "hipStreamQuery", .family = Family::stream, .op = ApiOp::query, .probe = ProbeKind::entry_return, .stream = 1, .vendor = Vendor::hip},
    {.id = 1056, .symbol = "hipStreamQuery_spt", .family = Family::stream, .op = ApiOp::query, .probe = ProbeKind::entry_return, .stream = 1, .per_thread = true, .vendor = Vendor::hip},
    {.id = 1057, .symbol = "hipStreamBeginCapture", .family = Family::stream, .op = ApiOp::capture_begin, .probe = ProbeKind::entry_return, .stream = 1, .flags = 2, .vendor = Vendor::hip},
    {.id = 1058, .symbol = "hipStreamEndCapture", .family = Family::stream, .op = ApiOp::capture_end, .probe = ProbeKind::entry_return, .out_arg = 2, .stream = 1, .vendor = Vendor::hip},
    {.id = 1059, .symbol = "hipEventCreate", .family = Family::event, .op = ApiOp::create, .probe = ProbeKind::entry_return, .out_arg = 1, .vendor = Vendor::hip},
    {.id = 1060, .symbol = "hipEventCreateWithFlags", .family = Family::event, .op = ApiOp::create, .probe = ProbeKind::entry_return, .out_arg = 1, .flags = 2, .vendor = Vendor::hip},
    {.id = 1061, .symbol = "hipEventRecord", .family = Family::event, .op = ApiOp::record, .probe = ProbeKind::entry_return, .stream = 2, .event = 1, .vendor = Vendor::hip},
    {.id = 1062, .symbol = "hipEventRecord_spt", .family = Family::event, .op = ApiOp::record, .probe = ProbeKind::entry_return, .stream = 2, .event = 1, .per_thread = true, .vendor = Vendor::hip},
    {.id = 1063, .symbol = "hipEventQuery", .family = Family::event, .op = ApiOp::query, .probe = ProbeKind::entry_return, .event = 1, .vendor = Vendor::hip},
    {.id = 1064, .symbol = "hipEventDestroy", .family = Family::event, .op = ApiOp::destroy, .probe = ProbeKind::entry_return, .event = 1, .vendor = Vendor::hip},
    {.id = 1065, .symbol = "hipStreamSynchronize", .family = Family::sync, .op = ApiOp::sync, .kind = ApiKind::stream, .probe = ProbeKind::entry_return, .stream = 1, .vendor = Vendor::hip},
    {.id = 1066, .symbol = "hipStreamSynchronize_spt", .family = Family::sync, .op = ApiOp::sync, .kind = ApiKind::stream, .probe = ProbeKind::entry_return, .stream = 1, .per_thread = true, .vendor = Vendor::hip},
    {.id = 1067, .symbol = "hipEventSynchronize", .family = Family::sync, .op = ApiOp::sync, .kind = ApiKind::event, .probe = ProbeKind::entry_return, .event = 1, .vendor = Vendor::hip},
    {.id = 1068, .symbol = "hipDeviceSynchronize", .family = Family::sync, .op = ApiOp::sync, .kind = ApiKind::context, .probe = ProbeKind::entry_return, .vendor = Vendor::hip},
    {.id = 1069, .symbol = "hipModuleLoad", .family = Family::module, .op = ApiOp::load, .kind = ApiKind::module, .probe = ProbeKind::entry_return, .out_arg = 1, .blob_arg = 2, .blob_kind = 1, .vendor = Vendor::hip},
    {.id = 1070, .symbol = "hipModuleLoadData", .family = Family::module, .op = ApiOp::load, .kind = ApiKind::module, .probe = ProbeKind::entry_return, .out_arg = 1, .vendor = Vendor::hip},
    {.id = 1071, .symbol = "hipModuleLoadDataEx", .family = Family::module, .op = ApiOp::load, .kind = ApiKind::module, .probe = ProbeKind::entry_return, .out_arg = 1, .vendor = Vendor::hip},
    {.id = 1072, .symbol = "hipModuleGetFunction", .family = Family::module, .op = ApiOp::get_function, .kind = ApiKind::function, .probe = ProbeKind::entry_return, .out_arg = 1, .blob_arg = 3, .blob_kind = 1, .handle = 2, .vendor = Vendor::hip},
    // __hipRegisterFunction(void** modules, const void* hostFunction, char* deviceFunction,
    // const char* deviceName, ...): called by every HIP binary's constructors; maps the host
    // stub that hipLaunchKernel receives to the kernel's (mangled) name. Returns void.
    {.id = 1073, .symbol = "__hipRegisterFunction", .family = Family::module, .op = ApiOp::register_function, .kind = ApiKind::function, .probe = ProbeKind::entry_return, .blob_arg = 4, .blob_kind = 1, .handle = 2, .no_result = true, .vendor = Vendor::hip},
};
// clang-format on

}  // namespace

std::span<const ApiSpec> hip_api_table() { return kHip; }

}  // namespace gpuobs
