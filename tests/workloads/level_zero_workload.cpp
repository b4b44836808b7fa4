// Test workload for the Level Zero probes: a program linked with the real
// loader (Debian's libze1), which dispatches to the project's fake driver
// (tests/fakes/fake_level_zero.c, through ZE_ENABLE_ALT_DRIVERS). Several
// threads each build the same pipeline with distinct arguments: a context,
// a queue, a regular and an immediate command list, events, a fence, a
// module and its kernels, device/host/shared memory; then per iteration two
// launches, a copy, a fill, a signal, a wait, an execution on the queue and
// three host synchronizations. Ground truth as JSON: per thread its tid, the
// handles the driver returned, and how often each probed symbol was called.
//
// usage: level_zero_workload --threads T --iterations N --truth FILE
#include <level_zero/ze_api.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "workload_args.h"

namespace {

struct Thread {
  std::map<std::string, int> counts;
  nlohmann::json handles;
  int failures = 0;
};

uint64_t as_int(const void* p) { return reinterpret_cast<uint64_t>(p); }

// Calls a probed function and counts it under its name; a result other than
// `want` is a failure of the workload (the fake answers deterministically).
#define CALL(th, want, fn, ...)                                                                   \
  do {                                                                                            \
    ++(th).counts[#fn];                                                                           \
    ze_result_t r_ = fn(__VA_ARGS__);                                                             \
    if (r_ != (want)) {                                                                           \
      std::fprintf(stderr, "level_zero_workload: %s returned 0x%x\n", #fn, static_cast<int>(r_)); \
      ++(th).failures;                                                                            \
    }                                                                                             \
  } while (0)

ze_driver_handle_t g_driver;
ze_device_handle_t g_device;

// Frame-pointer-friendly, not inlined: the launch stacks name it.
__attribute__((noinline)) void submit_iteration(Thread& th, uint32_t t, ze_command_list_handle_t list,
                                                ze_command_list_handle_t immediate, ze_kernel_handle_t add,
                                                ze_kernel_handle_t scale, void* dev, void* host, ze_event_handle_t ev0,
                                                ze_event_handle_t ev1) {
  ze_group_count_t add_groups{4 + t, 2, 1};
  CALL(th, ZE_RESULT_SUCCESS, zeCommandListAppendLaunchKernel, list, add, &add_groups, ev0, 0, nullptr);
  ze_group_count_t scale_groups{8, 8, 1 + t};
  CALL(th, ZE_RESULT_SUCCESS, zeCommandListAppendLaunchKernel, immediate, scale, &scale_groups, nullptr, 0, nullptr);
  CALL(th, ZE_RESULT_SUCCESS, zeCommandListAppendMemoryCopy, list, dev, host, 4096 + 64 * t, nullptr, 0, nullptr);
  uint32_t pattern = 0xc0ffee00u + t;
  CALL(th, ZE_RESULT_SUCCESS, zeCommandListAppendMemoryFill, list, dev, &pattern, sizeof(pattern), 2048, nullptr, 0,
       nullptr);
  CALL(th, ZE_RESULT_SUCCESS, zeCommandListAppendSignalEvent, list, ev1);
  CALL(th, ZE_RESULT_SUCCESS, zeCommandListAppendWaitOnEvents, immediate, 1, &ev1);
}

void run(uint32_t t, uint32_t iterations, Thread& th) {
  th.handles["tid"] = static_cast<int64_t>(syscall(SYS_gettid));
  ze_context_desc_t cdesc{ZE_STRUCTURE_TYPE_CONTEXT_DESC, nullptr, 0};
  ze_context_handle_t ctx = nullptr;
  CALL(th, ZE_RESULT_SUCCESS, zeContextCreate, g_driver, &cdesc, &ctx);
  ze_command_queue_desc_t qdesc{
      ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, 0, 0, 0, ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS,
      ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
  ze_command_queue_handle_t queue = nullptr;
  CALL(th, ZE_RESULT_SUCCESS, zeCommandQueueCreate, ctx, g_device, &qdesc, &queue);
  ze_command_list_desc_t ldesc{ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, nullptr, 0, 0};
  ze_command_list_handle_t list = nullptr, immediate = nullptr;
  CALL(th, ZE_RESULT_SUCCESS, zeCommandListCreate, ctx, g_device, &ldesc, &list);
  CALL(th, ZE_RESULT_SUCCESS, zeCommandListCreateImmediate, ctx, g_device, &qdesc, &immediate);

  ze_event_pool_desc_t pdesc{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, 0, 2};
  ze_event_pool_handle_t pool = nullptr;
  zeEventPoolCreate(ctx, &pdesc, 1, &g_device, &pool);  // not probed
  ze_event_desc_t edesc{ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, 0, 0, 0};
  ze_event_handle_t ev0 = nullptr, ev1 = nullptr;
  CALL(th, ZE_RESULT_SUCCESS, zeEventCreate, pool, &edesc, &ev0);
  edesc.index = 1;
  CALL(th, ZE_RESULT_SUCCESS, zeEventCreate, pool, &edesc, &ev1);
  ze_fence_desc_t fdesc{ZE_STRUCTURE_TYPE_FENCE_DESC, nullptr, 0};
  ze_fence_handle_t fence = nullptr;
  zeFenceCreate(queue, &fdesc, &fence);  // not probed

  static const uint8_t kSpirv[16] = {0x03, 0x02, 0x23, 0x07};
  ze_module_desc_t mdesc{
      ZE_STRUCTURE_TYPE_MODULE_DESC, nullptr, ZE_MODULE_FORMAT_IL_SPIRV, sizeof(kSpirv), kSpirv, nullptr, nullptr};
  ze_module_handle_t module = nullptr;
  CALL(th, ZE_RESULT_SUCCESS, zeModuleCreate, ctx, g_device, &mdesc, &module, nullptr);
  ze_kernel_desc_t kdesc{ZE_STRUCTURE_TYPE_KERNEL_DESC, nullptr, 0, "vector_add"};
  ze_kernel_handle_t add = nullptr, scale = nullptr, reduce = nullptr, missing = nullptr;
  CALL(th, ZE_RESULT_SUCCESS, zeKernelCreate, module, &kdesc, &add);
  kdesc.pKernelName = "scale_rows";
  CALL(th, ZE_RESULT_SUCCESS, zeKernelCreate, module, &kdesc, &scale);
  kdesc.pKernelName = "reduce_sum";
  CALL(th, ZE_RESULT_SUCCESS, zeKernelCreate, module, &kdesc, &reduce);
  kdesc.pKernelName = "not_in_module";
  CALL(th, ZE_RESULT_ERROR_INVALID_KERNEL_NAME, zeKernelCreate, module, &kdesc, &missing);
  // Not counted: zeKernelSetGroupSize leaves no row, it sizes the launches.
  zeKernelSetGroupSize(add, 64 + 32 * t, 1, 1);
  zeKernelSetGroupSize(scale, 32, 4, 1);
  zeKernelSetGroupSize(reduce, 256, 1, 1);

  ze_device_mem_alloc_desc_t ddesc{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
  ze_host_mem_alloc_desc_t hdesc{ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
  void *dev = nullptr, *host = nullptr, *shared = nullptr;
  size_t dev_bytes = (1u << 20) * (t + 1);
  CALL(th, ZE_RESULT_SUCCESS, zeMemAllocDevice, ctx, &ddesc, dev_bytes, 64, g_device, &dev);
  CALL(th, ZE_RESULT_SUCCESS, zeMemAllocHost, ctx, &hdesc, 8192, 64, &host);
  CALL(th, ZE_RESULT_SUCCESS, zeMemAllocShared, ctx, &ddesc, &hdesc, 12288 + 4096 * t, 64, g_device, &shared);

  for (uint32_t i = 0; i < iterations; ++i) {
    submit_iteration(th, t, list, immediate, add, scale, dev, host, ev0, ev1);
    zeCommandListClose(list);  // not probed
    CALL(th, ZE_RESULT_SUCCESS, zeCommandQueueExecuteCommandLists, queue, 1, &list, fence);
    CALL(th, ZE_RESULT_SUCCESS, zeFenceHostSynchronize, fence, UINT64_MAX);
    CALL(th, ZE_RESULT_SUCCESS, zeCommandQueueSynchronize, queue, UINT64_MAX);
    CALL(th, ZE_RESULT_SUCCESS, zeEventHostSynchronize, ev0, UINT64_MAX);
    CALL(th, ZE_RESULT_NOT_READY, zeEventQueryStatus, ev1);
    zeCommandListReset(list);  // not probed
  }
  ze_group_count_t coop{2, 1, 1};
  CALL(th, ZE_RESULT_SUCCESS, zeCommandListAppendLaunchCooperativeKernel, immediate, reduce, &coop, nullptr, 0,
       nullptr);
  // The group count of an indirect launch lives in device memory.
  CALL(th, ZE_RESULT_SUCCESS, zeCommandListAppendLaunchKernelIndirect, immediate, add,
       static_cast<const ze_group_count_t*>(shared), nullptr, 0, nullptr);
  CALL(th, ZE_RESULT_SUCCESS, zeEventHostSignal, ev0);

  th.handles["context"] = as_int(ctx);
  th.handles["queue"] = as_int(queue);
  th.handles["list"] = as_int(list);
  th.handles["immediate"] = as_int(immediate);
  th.handles["ev0"] = as_int(ev0);
  th.handles["ev1"] = as_int(ev1);
  th.handles["fence"] = as_int(fence);
  th.handles["module"] = as_int(module);
  th.handles["vector_add"] = as_int(add);
  th.handles["scale_rows"] = as_int(scale);
  th.handles["reduce_sum"] = as_int(reduce);
  th.handles["dev"] = as_int(dev);
  th.handles["host"] = as_int(host);
  th.handles["shared"] = as_int(shared);
  th.handles["dev_bytes"] = dev_bytes;

  CALL(th, ZE_RESULT_SUCCESS, zeMemFree, ctx, dev);
  CALL(th, ZE_RESULT_SUCCESS, zeMemFree, ctx, host);
  CALL(th, ZE_RESULT_SUCCESS, zeMemFree, ctx, shared);
  CALL(th, ZE_RESULT_SUCCESS, zeEventDestroy, ev0);
  CALL(th, ZE_RESULT_SUCCESS, zeEventDestroy, ev1);
  CALL(th, ZE_RESULT_SUCCESS, zeCommandListDestroy, list);
  CALL(th, ZE_RESULT_SUCCESS, zeCommandListDestroy, immediate);
  CALL(th, ZE_RESULT_SUCCESS, zeCommandQueueDestroy, queue);
  CALL(th, ZE_RESULT_SUCCESS, zeContextDestroy, ctx);
}

}  // namespace

int main(int argc, char** argv) {
  auto a = gpuobs::testing::parse_workload_args(argc, argv, 2, 10);
  Thread main_thread;
  CALL(main_thread, ZE_RESULT_SUCCESS, zeInit, 0);
  uint32_t n = 1;
  if (zeDriverGet(&n, &g_driver) != ZE_RESULT_SUCCESS || n != 1) {
    std::fprintf(stderr, "level_zero_workload: no Level Zero driver (set ZE_ENABLE_ALT_DRIVERS to the fake)\n");
    return 1;
  }
  uint32_t count = 0;
  CALL(main_thread, ZE_RESULT_SUCCESS, zeDeviceGet, g_driver, &count, nullptr);
  CALL(main_thread, ZE_RESULT_SUCCESS, zeDeviceGet, g_driver, &count, &g_device);
  main_thread.handles["tid"] = static_cast<int64_t>(syscall(SYS_gettid));
  main_thread.handles["devices"] = count;

  std::vector<Thread> threads(a.threads);
  std::vector<std::thread> running;
  for (uint32_t t = 0; t < a.threads; ++t) running.emplace_back(run, t, a.iterations, std::ref(threads[t]));
  for (auto& r : running) r.join();

  int failures = main_thread.failures;
  nlohmann::json truth;
  truth["pid"] = getpid();
  truth["main"] = {{"handles", main_thread.handles}, {"counts", main_thread.counts}};
  for (uint32_t t = 0; t < a.threads; ++t) {
    failures += threads[t].failures;
    truth["threads"].push_back({{"index", t}, {"handles", threads[t].handles}, {"counts", threads[t].counts}});
  }
  if (!a.truth_path.empty()) std::ofstream(a.truth_path) << truth.dump(2) << "\n";
  return failures ? 1 : 0;
}
