// The Level Zero table (libze_loader.so.1, loader 1.8 and later): the same
// ApiSpec rows as CUDA and HIP, so Level Zero calls land in the same tables
// and reports with vendor 'level_zero'. The loader's exported functions are
// what every Level Zero program calls (Intel's driver exports only the table
// getters the loader dispatches through), so they are probed there.
// Prototypes and register maps: docs/reference/abi-reference.md §9.
//
// How Level Zero maps onto the shared model:
// - a command list (regular or immediate) is the stream its appended work
//   goes to; a command queue is a stream too: executing lists on it is a
//   graph_launch (recorded work submitted to a queue), with the first list
//   as its handle and the fence as its event;
// - kernels are named at zeKernelCreate (the name behind the descriptor's
//   pKernelName, GPUOBS_BLOB_STRING_AT); their group size, set by
//   zeKernelSetGroupSize, is kept in BPF and becomes the block size of each
//   launch (bpf/level_zero.bpf.h); the group count is the grid;
// - arguments that are arrays of handles (the lists executed, the events
//   waited on) are read as their first element, through out_arg, at return.
#include "catalogue/api_spec.h"
#include "events.h"

namespace gpuobs {
namespace {

constexpr Vendor Z = Vendor::level_zero;

// Ids from 3001, dense, never renumbered: only append.
// zeCommandListAppendLaunchKernel(hCommandList, hKernel, const ze_group_count_t* pLaunchFuncArgs,
//   hSignalEvent, numWaitEvents, phWaitEvents): list=1, kernel=2, group count (12 B) behind 3.
// One symbol per line, so the table reads as a table (clang-format would split each entry).
// clang-format off
constexpr ApiSpec kLevelZero[] = {
    {.id = 3001, .symbol = "zeCommandListAppendLaunchKernel", .family = Family::launch, .op = ApiOp::launch, .probe = ProbeKind::launch_group_count, .blob_arg = 3, .blob_kind = GPUOBS_BLOB_STRUCT, .blob_len = 12, .vendor = Z},
    {.id = 3002, .symbol = "zeCommandListAppendLaunchCooperativeKernel", .family = Family::launch, .op = ApiOp::launch, .kind = ApiKind::cooperative, .probe = ProbeKind::launch_group_count, .blob_arg = 3, .blob_kind = GPUOBS_BLOB_STRUCT, .blob_len = 12, .vendor = Z},
    // The group count is in device memory, written by earlier GPU work: not read (the grid is stored as 0, unknown).
    {.id = 3003, .symbol = "zeCommandListAppendLaunchKernelIndirect", .family = Family::launch, .op = ApiOp::launch, .probe = ProbeKind::launch_group_count, .vendor = Z},
    // zeKernelSetGroupSize(hKernel, x, y, z): no record; BPF keeps the size for the kernel's next launches.
    {.id = 3004, .symbol = "zeKernelSetGroupSize", .family = Family::launch, .op = ApiOp::launch, .probe = ProbeKind::group_size, .handle = 1, .vendor = Z},
    // zeCommandQueueExecuteCommandLists(hCommandQueue, numCommandLists, phCommandLists, hFence)
    {.id = 3005, .symbol = "zeCommandQueueExecuteCommandLists", .family = Family::stream, .op = ApiOp::graph_launch, .probe = ProbeKind::entry_return, .out_arg = 3, .stream = 1, .event = 4, .vendor = Z},
    // zeCommandQueueCreate(hContext, hDevice, const ze_command_queue_desc_t* desc, phCommandQueue)
    {.id = 3006, .symbol = "zeCommandQueueCreate", .family = Family::stream, .op = ApiOp::create, .probe = ProbeKind::entry_return, .out_arg = 4, .vendor = Z},
    {.id = 3007, .symbol = "zeCommandQueueDestroy", .family = Family::stream, .op = ApiOp::destroy, .probe = ProbeKind::entry_return, .stream = 1, .vendor = Z},
    // zeCommandListCreate(hContext, hDevice, const ze_command_list_desc_t* desc, phCommandList)
    {.id = 3008, .symbol = "zeCommandListCreate", .family = Family::stream, .op = ApiOp::create, .probe = ProbeKind::entry_return, .out_arg = 4, .vendor = Z},
    {.id = 3009, .symbol = "zeCommandListCreateImmediate", .family = Family::stream, .op = ApiOp::create, .probe = ProbeKind::entry_return, .out_arg = 4, .vendor = Z},
    {.id = 3010, .symbol = "zeCommandListDestroy", .family = Family::stream, .op = ApiOp::destroy, .probe = ProbeKind::entry_return, .stream = 1, .vendor = Z},
    // zeCommandListAppendMemoryCopy(hCommandList, void* dstptr, const void* srcptr, size_t size, hSignalEvent, ...):
    // unified addressing, so the direction is the driver's to infer, like cuMemcpyAsync.
    {.id = 3011, .symbol = "zeCommandListAppendMemoryCopy", .family = Family::copy, .op = ApiOp::copy_async, .kind = ApiKind::default_, .probe = ProbeKind::entry_return, .dst = 2, .src = 3, .bytes = 4, .stream = 1, .vendor = Z},
    // zeCommandListAppendMemoryFill(hCommandList, void* ptr, const void* pattern, size_t pattern_size, size_t size, ...):
    // the pattern's first 8 bytes are copied; its size is argument 4.
    {.id = 3012, .symbol = "zeCommandListAppendMemoryFill", .family = Family::memset, .op = ApiOp::memset_async, .probe = ProbeKind::entry_return, .blob_arg = 3, .blob_kind = GPUOBS_BLOB_STRUCT, .blob_len = 8, .dst = 2, .bytes = 5, .stream = 1, .value_width_arg = 4, .vendor = Z},
    // zeCommandListAppendSignalEvent(hCommandList, hEvent)
    {.id = 3013, .symbol = "zeCommandListAppendSignalEvent", .family = Family::event, .op = ApiOp::record, .probe = ProbeKind::entry_return, .stream = 1, .event = 2, .vendor = Z},
    // zeCommandListAppendWaitOnEvents(hCommandList, numEvents, phEvents): the first event waited on.
    {.id = 3014, .symbol = "zeCommandListAppendWaitOnEvents", .family = Family::stream, .op = ApiOp::wait_event, .probe = ProbeKind::entry_return, .out_arg = 3, .stream = 1, .vendor = Z},
    // zeEventCreate(hEventPool, const ze_event_desc_t* desc, phEvent)
    {.id = 3015, .symbol = "zeEventCreate", .family = Family::event, .op = ApiOp::create, .probe = ProbeKind::entry_return, .out_arg = 3, .handle = 1, .vendor = Z},
    {.id = 3016, .symbol = "zeEventDestroy", .family = Family::event, .op = ApiOp::destroy, .probe = ProbeKind::entry_return, .event = 1, .vendor = Z},
    {.id = 3017, .symbol = "zeEventQueryStatus", .family = Family::event, .op = ApiOp::query, .probe = ProbeKind::entry_return, .event = 1, .vendor = Z},
    // zeEventHostSignal(hEvent): recorded from the host, on no list.
    {.id = 3018, .symbol = "zeEventHostSignal", .family = Family::event, .op = ApiOp::record, .probe = ProbeKind::entry_return, .event = 1, .vendor = Z},
    // Host synchronizations (hHandle, uint64_t timeout_ns): the blocked time is the call's.
    {.id = 3019, .symbol = "zeEventHostSynchronize", .family = Family::sync, .op = ApiOp::sync, .kind = ApiKind::event, .probe = ProbeKind::entry_return, .event = 1, .vendor = Z},
    {.id = 3020, .symbol = "zeFenceHostSynchronize", .family = Family::sync, .op = ApiOp::sync, .kind = ApiKind::fence, .probe = ProbeKind::entry_return, .event = 1, .vendor = Z},
    {.id = 3021, .symbol = "zeCommandQueueSynchronize", .family = Family::sync, .op = ApiOp::sync, .kind = ApiKind::stream, .probe = ProbeKind::entry_return, .stream = 1, .vendor = Z},
    // Loader 1.9 and later (API 1.6): the synchronization of an immediate command list.
    {.id = 3022, .symbol = "zeCommandListHostSynchronize", .family = Family::sync, .op = ApiOp::sync, .kind = ApiKind::stream, .probe = ProbeKind::entry_return, .stream = 1, .vendor = Z},
    // zeMemAllocDevice(hContext, const ze_device_mem_alloc_desc_t*, size_t size, size_t alignment, hDevice, void** pptr)
    {.id = 3023, .symbol = "zeMemAllocDevice", .family = Family::memory, .op = ApiOp::alloc, .kind = ApiKind::device, .probe = ProbeKind::entry_return, .out_arg = 6, .bytes = 3, .vendor = Z},
    // zeMemAllocHost(hContext, const ze_host_mem_alloc_desc_t*, size_t size, size_t alignment, void** pptr)
    {.id = 3024, .symbol = "zeMemAllocHost", .family = Family::memory, .op = ApiOp::alloc, .kind = ApiKind::host, .probe = ProbeKind::entry_return, .out_arg = 5, .bytes = 3, .vendor = Z},
    // zeMemAllocShared(hContext, device_desc*, host_desc*, size_t size, size_t alignment, hDevice, void** pptr):
    // pptr is the 7th argument, the first stack slot.
    {.id = 3025, .symbol = "zeMemAllocShared", .family = Family::memory, .op = ApiOp::alloc, .kind = ApiKind::managed, .probe = ProbeKind::entry_return, .out_arg = 7, .bytes = 4, .vendor = Z},
    // zeMemFree(hContext, void* ptr): any kind of allocation.
    {.id = 3026, .symbol = "zeMemFree", .family = Family::memory, .op = ApiOp::free, .kind = ApiKind::device, .probe = ProbeKind::entry_return, .dst = 2, .vendor = Z},
    // zeModuleCreate(hContext, hDevice, const ze_module_desc_t* desc, phModule, phBuildLog)
    {.id = 3027, .symbol = "zeModuleCreate", .family = Family::module, .op = ApiOp::load, .kind = ApiKind::module, .probe = ProbeKind::entry_return, .out_arg = 4, .vendor = Z},
    // zeKernelCreate(hModule, const ze_kernel_desc_t* desc, phKernel): the name is desc->pKernelName (offset 24).
    {.id = 3028, .symbol = "zeKernelCreate", .family = Family::module, .op = ApiOp::get_function, .kind = ApiKind::function, .probe = ProbeKind::entry_return, .out_arg = 3, .blob_arg = 2, .blob_kind = GPUOBS_BLOB_STRING_AT, .blob_len = 24, .handle = 1, .vendor = Z},
    {.id = 3029, .symbol = "zeInit", .family = Family::context, .op = ApiOp::init, .probe = ProbeKind::entry_return, .flags = 1, .vendor = Z},
    // zeDeviceGet(hDriver, uint32_t* pCount, phDevices): the count written back.
    {.id = 3030, .symbol = "zeDeviceGet", .family = Family::context, .op = ApiOp::device_count, .probe = ProbeKind::entry_return, .out_arg = 2, .vendor = Z},
    // zeContextCreate(hDriver, const ze_context_desc_t* desc, phContext)
    {.id = 3031, .symbol = "zeContextCreate", .family = Family::context, .op = ApiOp::context_create, .probe = ProbeKind::entry_return, .out_arg = 3, .vendor = Z},
    // zeContextCreateEx(hDriver, desc, numDevices, phDevices, phContext)
    {.id = 3032, .symbol = "zeContextCreateEx", .family = Family::context, .op = ApiOp::context_create, .probe = ProbeKind::entry_return, .out_arg = 5, .vendor = Z},
    {.id = 3033, .symbol = "zeContextDestroy", .family = Family::context, .op = ApiOp::context_destroy, .probe = ProbeKind::entry_return, .handle = 1, .vendor = Z},
};
// clang-format on

}  // namespace

std::span<const ApiSpec> level_zero_api_table() { return kLevelZero; }

}  // namespace gpuobs
