/* A Level Zero driver of our own, for tests without Intel hardware: the real
 * loader (Debian's libze1) loads it through ZE_ENABLE_ALT_DRIVERS and
 * dispatches the application's calls to it through the tables below, as it
 * does to Intel's libze_intel_gpu.so.1. gpuobs probes the loader's exported
 * functions, which every Level Zero program calls; this library only has to
 * answer them plausibly:
 *   - one driver, one device; handles are small heap objects;
 *   - memory is real host memory, so copies and fills do the work they name;
 *   - host synchronizations of fences and events block FAKE_ZE_SYNC_US
 *     microseconds (default 2000), so blocked time is measurable;
 *   - kernels are created only with the names in kKernelNames (others fail
 *     with ZE_RESULT_ERROR_INVALID_KERNEL_NAME, as a driver does for a name
 *     the module lacks).
 * The loader initialises only a driver that exports every ze, zet and zes
 * table getter (ze_ddi.h, zet_ddi.h, zes_ddi.h of loader 1.8): each getter
 * fills its whole table with a function answering
 * ZE_RESULT_ERROR_UNSUPPORTED_FEATURE, then sets what this fake implements. */
#include <level_zero/ze_api.h>
#include <level_zero/ze_ddi.h>
#include <level_zero/zes_ddi.h>
#include <level_zero/zet_ddi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The layouts catalogue/level_zero_api.cpp and bpf/level_zero.bpf.h assume
 * (abi-reference.md §9.3), checked against the loader's own headers. */
_Static_assert(sizeof(ze_group_count_t) == 12, "the launch probe reads 12 bytes of group count");
_Static_assert(offsetof(ze_kernel_desc_t, pKernelName) == 24, "zeKernelCreate's name pointer is at offset 24");
_Static_assert(sizeof(ze_result_t) == 4, "results are read from eax");

/* The fake ignores most arguments: they are there for the ABI. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

#define EXPORT __attribute__((visibility("default")))

struct fake_object {
	uint32_t magic;
	uint32_t kind;
	char name[64];
};
#define FAKE_MAGIC 0x5a45464bu /* "KFEZ" */

static void *new_object(uint32_t kind, const char *name)
{
	struct fake_object *o = calloc(1, sizeof(*o));
	if (!o)
		return 0;
	o->magic = FAKE_MAGIC;
	o->kind = kind;
	if (name)
		strncpy(o->name, name, sizeof(o->name) - 1);
	return o;
}

static ze_result_t free_object(void *h)
{
	struct fake_object *o = h;
	if (!o || o->magic != FAKE_MAGIC)
		return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
	o->magic = 0;
	free(o);
	return ZE_RESULT_SUCCESS;
}

static void sleep_us(long us)
{
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
	nanosleep(&ts, 0);
}

static void host_wait(void)
{
	const char *env = getenv("FAKE_ZE_SYNC_US");
	sleep_us(env ? atol(env) : 2000);
}

static ze_result_t unsupported(void)
{
	return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
}

/* Every slot of a DDI table is a function pointer. */
static void fill_unsupported(void *table, size_t size)
{
	typedef ze_result_t (*any_fn)(void);
	any_fn *slot = table;
	for (size_t i = 0; i < size / sizeof(any_fn); ++i)
		slot[i] = unsupported;
}

static char fake_driver_object;
static char fake_device_object;

static ze_result_t fake_init(ze_init_flags_t flags)
{
	return ZE_RESULT_SUCCESS;
}

static ze_result_t one_handle(uint32_t *count, void **out, void *handle)
{
	if (!count)
		return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
	if (*count == 0 || !out) {
		*count = 1;
		return ZE_RESULT_SUCCESS;
	}
	*count = 1;
	out[0] = handle;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t driver_get(uint32_t *count, ze_driver_handle_t *drivers)
{
	return one_handle(count, (void **)drivers, &fake_driver_object);
}

static ze_result_t driver_api_version(ze_driver_handle_t d, ze_api_version_t *v)
{
	*v = ZE_API_VERSION_CURRENT;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t driver_properties(ze_driver_handle_t d, ze_driver_properties_t *p)
{
	memset(p->uuid.id, 0x5a, sizeof(p->uuid.id));
	p->driverVersion = 1;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t device_get(ze_driver_handle_t d, uint32_t *count, ze_device_handle_t *devices)
{
	return one_handle(count, (void **)devices, &fake_device_object);
}

static ze_result_t device_properties(ze_device_handle_t d, ze_device_properties_t *p)
{
	p->type = ZE_DEVICE_TYPE_GPU;
	p->vendorId = 0x8086;
	p->deviceId = 0x0bd5;
	strncpy(p->name, "gpuobs fake Level Zero device", sizeof(p->name) - 1);
	return ZE_RESULT_SUCCESS;
}

static ze_result_t context_create(ze_driver_handle_t d, const ze_context_desc_t *desc, ze_context_handle_t *out)
{
	if (!out)
		return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
	*out = new_object(1, "context");
	return ZE_RESULT_SUCCESS;
}

static ze_result_t destroy(void *h)
{
	return free_object(h);
}

static ze_result_t queue_create(ze_context_handle_t c, ze_device_handle_t d, const ze_command_queue_desc_t *desc,
				ze_command_queue_handle_t *out)
{
	if (!out || !desc)
		return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
	*out = new_object(2, "queue");
	return ZE_RESULT_SUCCESS;
}

static ze_result_t queue_execute(ze_command_queue_handle_t q, uint32_t n, ze_command_list_handle_t *lists,
				 ze_fence_handle_t fence)
{
	return n && lists ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_SIZE;
}

static ze_result_t queue_synchronize(ze_command_queue_handle_t q, uint64_t timeout)
{
	host_wait();
	return ZE_RESULT_SUCCESS;
}

static ze_result_t list_create(ze_context_handle_t c, ze_device_handle_t d, const ze_command_list_desc_t *desc,
			       ze_command_list_handle_t *out)
{
	if (!out)
		return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
	*out = new_object(3, "list");
	return ZE_RESULT_SUCCESS;
}

static ze_result_t list_create_immediate(ze_context_handle_t c, ze_device_handle_t d,
					 const ze_command_queue_desc_t *desc, ze_command_list_handle_t *out)
{
	if (!out)
		return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
	*out = new_object(4, "immediate list");
	return ZE_RESULT_SUCCESS;
}

static ze_result_t list_ok(ze_command_list_handle_t l)
{
	return l ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
}

static ze_result_t append_launch(ze_command_list_handle_t l, ze_kernel_handle_t k, const ze_group_count_t *groups,
				 ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *waits)
{
	return l && k && groups ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
}

static ze_result_t append_copy(ze_command_list_handle_t l, void *dst, const void *src, size_t size,
			       ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *waits)
{
	if (!dst || !src)
		return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
	memcpy(dst, src, size);
	return ZE_RESULT_SUCCESS;
}

static ze_result_t append_fill(ze_command_list_handle_t l, void *ptr, const void *pattern, size_t pattern_size,
			       size_t size, ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *waits)
{
	if (!ptr || !pattern || !pattern_size)
		return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
	for (size_t i = 0; i < size; ++i)
		((uint8_t *)ptr)[i] = ((const uint8_t *)pattern)[i % pattern_size];
	return ZE_RESULT_SUCCESS;
}

static ze_result_t append_barrier(ze_command_list_handle_t l, ze_event_handle_t signal, uint32_t nwait,
				  ze_event_handle_t *waits)
{
	return list_ok(l);
}

static ze_result_t append_signal(ze_command_list_handle_t l, ze_event_handle_t e)
{
	return e ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
}

static ze_result_t append_wait(ze_command_list_handle_t l, uint32_t n, ze_event_handle_t *events)
{
	return n && events ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_SIZE;
}

static ze_result_t pool_create(ze_context_handle_t c, const ze_event_pool_desc_t *desc, uint32_t ndev,
			       ze_device_handle_t *devs, ze_event_pool_handle_t *out)
{
	if (!out)
		return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
	*out = new_object(5, "event pool");
	return ZE_RESULT_SUCCESS;
}

static ze_result_t event_create(ze_event_pool_handle_t p, const ze_event_desc_t *desc, ze_event_handle_t *out)
{
	if (!out)
		return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
	*out = new_object(6, "event");
	return ZE_RESULT_SUCCESS;
}

static ze_result_t event_host_synchronize(ze_event_handle_t e, uint64_t timeout)
{
	host_wait();
	return ZE_RESULT_SUCCESS;
}

/* Not signalled yet: what a poll of work still running answers. */
static ze_result_t event_query(ze_event_handle_t e)
{
	return ZE_RESULT_NOT_READY;
}

static ze_result_t event_host_signal(ze_event_handle_t e)
{
	return ZE_RESULT_SUCCESS;
}

static ze_result_t fence_create(ze_command_queue_handle_t q, const ze_fence_desc_t *desc, ze_fence_handle_t *out)
{
	if (!out)
		return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
	*out = new_object(7, "fence");
	return ZE_RESULT_SUCCESS;
}

static ze_result_t fence_host_synchronize(ze_fence_handle_t f, uint64_t timeout)
{
	host_wait();
	return ZE_RESULT_SUCCESS;
}

static ze_result_t alloc(size_t size, size_t alignment, void **out)
{
	if (!out)
		return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
	if (!size)
		return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
	*out = aligned_alloc(alignment ? alignment : 64, (size + 63) / 64 * 64);
	return *out ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
}

static ze_result_t mem_alloc_device(ze_context_handle_t c, const ze_device_mem_alloc_desc_t *desc, size_t size,
				    size_t alignment, ze_device_handle_t d, void **out)
{
	return alloc(size, alignment, out);
}

static ze_result_t mem_alloc_host(ze_context_handle_t c, const ze_host_mem_alloc_desc_t *desc, size_t size,
				  size_t alignment, void **out)
{
	return alloc(size, alignment, out);
}

static ze_result_t mem_alloc_shared(ze_context_handle_t c, const ze_device_mem_alloc_desc_t *ddesc,
				    const ze_host_mem_alloc_desc_t *hdesc, size_t size, size_t alignment,
				    ze_device_handle_t d, void **out)
{
	return alloc(size, alignment, out);
}

static ze_result_t mem_free(ze_context_handle_t c, void *ptr)
{
	free(ptr);
	return ZE_RESULT_SUCCESS;
}

static ze_result_t module_create(ze_context_handle_t c, ze_device_handle_t d, const ze_module_desc_t *desc,
				 ze_module_handle_t *out, ze_module_build_log_handle_t *log)
{
	if (!out || !desc)
		return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
	if (log)
		*log = 0;
	*out = new_object(8, "module");
	return ZE_RESULT_SUCCESS;
}

static const char *const kKernelNames[] = {"vector_add", "scale_rows", "reduce_sum"};

static ze_result_t kernel_create(ze_module_handle_t m, const ze_kernel_desc_t *desc, ze_kernel_handle_t *out)
{
	if (!out || !desc || !desc->pKernelName)
		return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
	for (size_t i = 0; i < sizeof(kKernelNames) / sizeof(kKernelNames[0]); ++i)
		if (strcmp(desc->pKernelName, kKernelNames[i]) == 0) {
			*out = new_object(9, desc->pKernelName);
			return ZE_RESULT_SUCCESS;
		}
	return ZE_RESULT_ERROR_INVALID_KERNEL_NAME;
}

static ze_result_t kernel_set_group_size(ze_kernel_handle_t k, uint32_t x, uint32_t y, uint32_t z)
{
	return k && x && y && z ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
}

/* The getters: whole table unsupported, then this fake's functions. */
#define GETTER(name, type, fill)                                                                                       \
	EXPORT ze_result_t ZE_APICALL name(ze_api_version_t version, type *t)                                          \
	{                                                                                                              \
		if (!t)                                                                                                \
			return ZE_RESULT_ERROR_INVALID_NULL_POINTER;                                                   \
		fill_unsupported(t, sizeof(*t));                                                                       \
		fill;                                                                                                  \
		return ZE_RESULT_SUCCESS;                                                                              \
	}
#define NOTHING ((void)0)

GETTER(zeGetGlobalProcAddrTable, ze_global_dditable_t, t->pfnInit = fake_init)
GETTER(zeGetDriverProcAddrTable, ze_driver_dditable_t,
       (t->pfnGet = driver_get, t->pfnGetApiVersion = driver_api_version, t->pfnGetProperties = driver_properties))
GETTER(zeGetDeviceProcAddrTable, ze_device_dditable_t,
       (t->pfnGet = device_get, t->pfnGetProperties = device_properties))
GETTER(zeGetDeviceExpProcAddrTable, ze_device_exp_dditable_t, NOTHING)
GETTER(zeGetContextProcAddrTable, ze_context_dditable_t,
       (t->pfnCreate = context_create, t->pfnDestroy = (ze_pfnContextDestroy_t)destroy))
GETTER(zeGetCommandQueueProcAddrTable, ze_command_queue_dditable_t,
       (t->pfnCreate = queue_create, t->pfnDestroy = (ze_pfnCommandQueueDestroy_t)destroy,
	t->pfnExecuteCommandLists = queue_execute, t->pfnSynchronize = queue_synchronize))
GETTER(zeGetCommandListProcAddrTable, ze_command_list_dditable_t,
       (t->pfnCreate = list_create, t->pfnCreateImmediate = list_create_immediate,
	t->pfnDestroy = (ze_pfnCommandListDestroy_t)destroy, t->pfnClose = list_ok, t->pfnReset = list_ok,
	t->pfnAppendLaunchKernel = append_launch, t->pfnAppendLaunchCooperativeKernel = append_launch,
	t->pfnAppendLaunchKernelIndirect = append_launch, t->pfnAppendMemoryCopy = append_copy,
	t->pfnAppendMemoryFill = append_fill, t->pfnAppendBarrier = append_barrier,
	t->pfnAppendSignalEvent = append_signal, t->pfnAppendWaitOnEvents = append_wait))
GETTER(zeGetImageProcAddrTable, ze_image_dditable_t, NOTHING)
GETTER(zeGetImageExpProcAddrTable, ze_image_exp_dditable_t, NOTHING)
GETTER(zeGetFenceProcAddrTable, ze_fence_dditable_t,
       (t->pfnCreate = fence_create, t->pfnDestroy = (ze_pfnFenceDestroy_t)destroy,
	t->pfnHostSynchronize = fence_host_synchronize))
GETTER(zeGetEventPoolProcAddrTable, ze_event_pool_dditable_t,
       (t->pfnCreate = pool_create, t->pfnDestroy = (ze_pfnEventPoolDestroy_t)destroy))
GETTER(zeGetEventProcAddrTable, ze_event_dditable_t,
       (t->pfnCreate = event_create, t->pfnDestroy = (ze_pfnEventDestroy_t)destroy,
	t->pfnHostSynchronize = event_host_synchronize, t->pfnQueryStatus = event_query,
	t->pfnHostSignal = event_host_signal))
GETTER(zeGetEventExpProcAddrTable, ze_event_exp_dditable_t, NOTHING)
GETTER(zeGetModuleProcAddrTable, ze_module_dditable_t,
       (t->pfnCreate = module_create, t->pfnDestroy = (ze_pfnModuleDestroy_t)destroy))
GETTER(zeGetModuleBuildLogProcAddrTable, ze_module_build_log_dditable_t, NOTHING)
GETTER(zeGetKernelProcAddrTable, ze_kernel_dditable_t,
       (t->pfnCreate = kernel_create, t->pfnDestroy = (ze_pfnKernelDestroy_t)destroy,
	t->pfnSetGroupSize = kernel_set_group_size))
GETTER(zeGetKernelExpProcAddrTable, ze_kernel_exp_dditable_t, NOTHING)
GETTER(zeGetSamplerProcAddrTable, ze_sampler_dditable_t, NOTHING)
GETTER(zeGetPhysicalMemProcAddrTable, ze_physical_mem_dditable_t, NOTHING)
GETTER(zeGetMemProcAddrTable, ze_mem_dditable_t,
       (t->pfnAllocDevice = mem_alloc_device, t->pfnAllocHost = mem_alloc_host, t->pfnAllocShared = mem_alloc_shared,
	t->pfnFree = mem_free))
GETTER(zeGetVirtualMemProcAddrTable, ze_virtual_mem_dditable_t, NOTHING)
GETTER(zeGetFabricVertexExpProcAddrTable, ze_fabric_vertex_exp_dditable_t, NOTHING)
GETTER(zeGetFabricEdgeExpProcAddrTable, ze_fabric_edge_exp_dditable_t, NOTHING)
GETTER(zetGetDeviceProcAddrTable, zet_device_dditable_t, NOTHING)
GETTER(zetGetContextProcAddrTable, zet_context_dditable_t, NOTHING)
GETTER(zetGetCommandListProcAddrTable, zet_command_list_dditable_t, NOTHING)
GETTER(zetGetModuleProcAddrTable, zet_module_dditable_t, NOTHING)
GETTER(zetGetKernelProcAddrTable, zet_kernel_dditable_t, NOTHING)
GETTER(zetGetMetricGroupProcAddrTable, zet_metric_group_dditable_t, NOTHING)
GETTER(zetGetMetricGroupExpProcAddrTable, zet_metric_group_exp_dditable_t, NOTHING)
GETTER(zetGetMetricProcAddrTable, zet_metric_dditable_t, NOTHING)
GETTER(zetGetMetricStreamerProcAddrTable, zet_metric_streamer_dditable_t, NOTHING)
GETTER(zetGetMetricQueryPoolProcAddrTable, zet_metric_query_pool_dditable_t, NOTHING)
GETTER(zetGetMetricQueryProcAddrTable, zet_metric_query_dditable_t, NOTHING)
GETTER(zetGetTracerExpProcAddrTable, zet_tracer_exp_dditable_t, NOTHING)
GETTER(zetGetDebugProcAddrTable, zet_debug_dditable_t, NOTHING)
GETTER(zesGetDriverProcAddrTable, zes_driver_dditable_t, NOTHING)
GETTER(zesGetDeviceProcAddrTable, zes_device_dditable_t, NOTHING)
GETTER(zesGetSchedulerProcAddrTable, zes_scheduler_dditable_t, NOTHING)
GETTER(zesGetPerformanceFactorProcAddrTable, zes_performance_factor_dditable_t, NOTHING)
GETTER(zesGetPowerProcAddrTable, zes_power_dditable_t, NOTHING)
GETTER(zesGetFrequencyProcAddrTable, zes_frequency_dditable_t, NOTHING)
GETTER(zesGetEngineProcAddrTable, zes_engine_dditable_t, NOTHING)
GETTER(zesGetStandbyProcAddrTable, zes_standby_dditable_t, NOTHING)
GETTER(zesGetFirmwareProcAddrTable, zes_firmware_dditable_t, NOTHING)
GETTER(zesGetMemoryProcAddrTable, zes_memory_dditable_t, NOTHING)
GETTER(zesGetFabricPortProcAddrTable, zes_fabric_port_dditable_t, NOTHING)
GETTER(zesGetTemperatureProcAddrTable, zes_temperature_dditable_t, NOTHING)
GETTER(zesGetPsuProcAddrTable, zes_psu_dditable_t, NOTHING)
GETTER(zesGetFanProcAddrTable, zes_fan_dditable_t, NOTHING)
GETTER(zesGetLedProcAddrTable, zes_led_dditable_t, NOTHING)
GETTER(zesGetRasProcAddrTable, zes_ras_dditable_t, NOTHING)
GETTER(zesGetDiagnosticsProcAddrTable, zes_diagnostics_dditable_t, NOTHING)
