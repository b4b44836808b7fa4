// A fake libnvidia-ml.so.1 for the GPU metrics tests (issue 19): the NVML
// functions gpuobs calls, with the real prototypes and layouts
// (userspace/gpu_metrics/nvml_api.h), returning values a test can predict.
//
// Environment:
//   FAKE_NVML_GPUS=N           GPUs (default 2)
//   FAKE_NVML_INIT_ERROR=RC    nvmlInit_v2 fails with RC (9: driver not loaded)
//   FAKE_NVML_FAIL=a,b         these functions return NVML_ERROR_UNKNOWN (999)
//   FAKE_NVML_UNSUPPORTED=a,b  these return NVML_ERROR_NOT_SUPPORTED (3)
//   FAKE_NVML_NO_GPM=1         GPM not supported
//   FAKE_NVML_PIDS_FILE=PATH   pids (one per line) listed as compute processes of GPU 0
//   FAKE_NVML_XID=N            one Xid N event on the last GPU, at the first wait
//   FAKE_NVML_ENDED_PID=N      process utilization also reports pid N, which the
//                              compute-process list never shows (a process that ended)
//
// Values, for GPU i at its tick t (t counts nvmlDeviceGetUtilizationRates
// calls on that GPU, from 0; the other queries of a tick use the same t):
//   utilization gpu (t % 4) * 25, memory 10 + i; memory total 80 GiB, used (1 + i) GiB;
//   power 100000 + 1000 i mW; SM clock 1980, memory clock 2619 MHz; temperature 40 + i C;
//   clocks event reasons t even: 0x1 (gpu_idle), odd: 0x44 (sw_power_cap | hw_thermal_slowdown);
//   ECC corrected 5 + i, uncorrected 0;
//   GPM metric id m: m + 0.5 + i;
//   a listed process: SM 33 %, memory 11 %, 256 MiB.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define API      __attribute__((visibility("default")))
#define MAX_GPUS 8

typedef struct {
	unsigned gpu, memory;
} util_t;
typedef struct {
	unsigned long long total, free, used;
} memory_t;
typedef struct {
	char bus_id_legacy[16];
	unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
	char bus_id[32];
} pci_t;
typedef struct {
	unsigned pid;
	unsigned long long ts;
	unsigned sm, mem, enc, dec;
} proc_util_t;
typedef struct {
	unsigned pid;
	unsigned long long used;
	unsigned gi, ci;
} proc_info_t;
typedef struct {
	void *device;
	unsigned long long type, data;
	unsigned gi, ci;
} event_t;
typedef struct {
	unsigned version, supported;
} gpm_support_t;
typedef struct {
	unsigned id;
	int ret;
	double value;
	char *s, *l, *u;
} gpm_metric_t;
typedef struct {
	unsigned version, num;
	void *s1, *s2;
	gpm_metric_t metrics[];
} gpm_get_t;

static int gpus(void)
{
	const char *e = getenv("FAKE_NVML_GPUS");
	int n = e ? atoi(e) : 2;
	return n < 0 ? 0 : n > MAX_GPUS ? MAX_GPUS : n;
}

// "name" listed in the comma-separated variable?
static int listed(const char *var, const char *name)
{
	const char *v = getenv(var);
	if (!v)
		return 0;
	size_t n = strlen(name);
	for (const char *p = v; (p = strstr(p, name)); p += n)
		if ((p == v || p[-1] == ',') && (p[n] == ',' || p[n] == 0))
			return 1;
	return 0;
}

#define CHECK(name)                                                                                                    \
	do {                                                                                                           \
		if (listed("FAKE_NVML_FAIL", name))                                                                    \
			return 999;                                                                                    \
		if (listed("FAKE_NVML_UNSUPPORTED", name))                                                             \
			return 3;                                                                                      \
	} while (0)

// A device handle is 1 + its index (never NULL).
static int dev(void *d)
{
	long i = (long)d - 1;
	return i >= 0 && i < gpus() ? (int)i : -1;
}
static unsigned tick[MAX_GPUS]; // utilization calls so far
static unsigned t_of(int i)
{
	return tick[i] ? tick[i] - 1 : 0;
}

API int nvmlInit_v2(void)
{
	const char *e = getenv("FAKE_NVML_INIT_ERROR");
	return e ? atoi(e) : 0;
}
API int nvmlShutdown(void)
{
	return 0;
}
API const char *nvmlErrorString(int r)
{
	switch (r) {
	case 3:
		return "Not Supported";
	case 9:
		return "Driver Not Loaded";
	case 999:
		return "Unknown Error";
	default:
		return "Fake Error";
	}
}
API int nvmlSystemGetDriverVersion(char *buf, unsigned n)
{
	snprintf(buf, n, "580.00.fake");
	return 0;
}
API int nvmlDeviceGetCount_v2(unsigned *n)
{
	CHECK("nvmlDeviceGetCount_v2");
	*n = (unsigned)gpus();
	return 0;
}
API int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **d)
{
	if ((int)i >= gpus())
		return 2;
	*d = (void *)(long)(i + 1);
	return 0;
}
API int nvmlDeviceGetUUID(void *d, char *buf, unsigned n)
{
	snprintf(buf, n, "GPU-fake-0000-%04d", dev(d));
	return 0;
}
API int nvmlDeviceGetName(void *d, char *buf, unsigned n)
{
	snprintf(buf, n, "Fake H100 %d", dev(d));
	return 0;
}
API int nvmlDeviceGetPciInfo_v3(void *d, pci_t *p)
{
	memset(p, 0, sizeof *p);
	snprintf(p->bus_id, sizeof p->bus_id, "00000000:%02X:00.0", dev(d) + 1);
	return 0;
}
API int nvmlDeviceGetUtilizationRates(void *d, util_t *u)
{
	CHECK("nvmlDeviceGetUtilizationRates");
	int i = dev(d);
	unsigned t = tick[i]++;
	u->gpu = (t % 4) * 25;
	u->memory = 10 + (unsigned)i;
	return 0;
}
API int nvmlDeviceGetMemoryInfo(void *d, memory_t *m)
{
	CHECK("nvmlDeviceGetMemoryInfo");
	m->total = 80ULL << 30;
	m->used = (1ULL + (unsigned)dev(d)) << 30;
	m->free = m->total - m->used;
	return 0;
}
API int nvmlDeviceGetPowerUsage(void *d, unsigned *mw)
{
	CHECK("nvmlDeviceGetPowerUsage");
	*mw = 100000 + 1000 * (unsigned)dev(d);
	return 0;
}
API int nvmlDeviceGetClockInfo(void *d, int type, unsigned *mhz)
{
	(void)d;
	CHECK("nvmlDeviceGetClockInfo");
	*mhz = type == 1 ? 1980 : 2619;
	return 0;
}
API int nvmlDeviceGetTemperature(void *d, int sensor, unsigned *c)
{
	(void)sensor;
	CHECK("nvmlDeviceGetTemperature");
	*c = 40 + (unsigned)dev(d);
	return 0;
}
API int nvmlDeviceGetCurrentClocksEventReasons(void *d, unsigned long long *r)
{
	CHECK("nvmlDeviceGetCurrentClocksEventReasons");
	*r = t_of(dev(d)) % 2 == 0 ? 0x1 : 0x44;
	return 0;
}
API int nvmlDeviceGetTotalEccErrors(void *d, int type, int counter, unsigned long long *n)
{
	(void)counter;
	CHECK("nvmlDeviceGetTotalEccErrors");
	*n = type == 0 ? 5 + (unsigned)dev(d) : 0;
	return 0;
}

static int pids(unsigned *out, int max)
{
	const char *path = getenv("FAKE_NVML_PIDS_FILE");
	FILE *f = path ? fopen(path, "r") : NULL;
	int n = 0;
	if (!f)
		return 0;
	unsigned p;
	while (n < max && fscanf(f, "%u", &p) == 1)
		out[n++] = p;
	fclose(f);
	return n;
}
API int nvmlDeviceGetComputeRunningProcesses_v3(void *d, unsigned *count, proc_info_t *infos)
{
	CHECK("nvmlDeviceGetComputeRunningProcesses_v3");
	unsigned list[16];
	int n = dev(d) == 0 ? pids(list, 16) : 0;
	if ((unsigned)n > *count) {
		*count = (unsigned)n;
		return 7;
	}
	for (int k = 0; k < n; ++k)
		infos[k] = (proc_info_t){list[k], 256ULL << 20, ~0u, ~0u};
	*count = (unsigned)n;
	return 0;
}
API int nvmlDeviceGetProcessUtilization(void *d, proc_util_t *s, unsigned *count, unsigned long long last)
{
	CHECK("nvmlDeviceGetProcessUtilization");
	unsigned list[17];
	int n = dev(d) == 0 ? pids(list, 16) : 0;
	const char *ended = getenv("FAKE_NVML_ENDED_PID");
	if (ended && n > 0)
		list[n++] = (unsigned)atoi(ended);
	// One new sample per call, stamped now (CLOCK_REALTIME microseconds, as NVML's are).
	struct timespec rt;
	clock_gettime(CLOCK_REALTIME, &rt);
	unsigned long long ts = (unsigned long long)rt.tv_sec * 1000000ULL + (unsigned long long)rt.tv_nsec / 1000;
	if (n == 0 || ts <= last)
		return 6; // NVML_ERROR_NOT_FOUND: nothing since last
	if ((unsigned)n > *count) {
		*count = (unsigned)n;
		return 7;
	}
	for (int k = 0; k < n; ++k)
		s[k] = (proc_util_t){list[k], ts, 33, 11, 0, 0};
	*count = (unsigned)n;
	return 0;
}

static int xid_sent;
API int nvmlEventSetCreate(void **set)
{
	*set = (void *)1;
	return 0;
}
API int nvmlDeviceRegisterEvents(void *d, unsigned long long types, void *set)
{
	(void)d, (void)types, (void)set;
	return 0;
}
API int nvmlEventSetWait_v2(void *set, event_t *e, unsigned timeout_ms)
{
	(void)set, (void)timeout_ms;
	const char *x = getenv("FAKE_NVML_XID");
	if (x && !xid_sent && gpus() > 0) {
		xid_sent = 1;
		*e = (event_t){(void *)(long)gpus(), 0x8, (unsigned long long)atoll(x), ~0u, ~0u};
		return 0;
	}
	return 10; // NVML_ERROR_TIMEOUT
}
API int nvmlEventSetFree(void *set)
{
	(void)set;
	return 0;
}

// GPM: a sample holds the times it was taken and the device it was taken on.
API int nvmlGpmQueryDeviceSupport(void *d, gpm_support_t *s)
{
	(void)d;
	s->supported = getenv("FAKE_NVML_NO_GPM") ? 0 : 1;
	return 0;
}
API int nvmlGpmSampleAlloc(void **s)
{
	*s = calloc(2, sizeof(long));
	return *s ? 0 : 20;
}
API int nvmlGpmSampleFree(void *s)
{
	free(s);
	return 0;
}
API int nvmlGpmSampleGet(void *d, void *s)
{
	CHECK("nvmlGpmSampleGet");
	((long *)s)[0]++;
	((long *)s)[1] = (long)d;
	return 0;
}
API int nvmlGpmMetricsGet(gpm_get_t *g)
{
	CHECK("nvmlGpmMetricsGet");
	if (g->version != 1 || !g->s1 || !g->s2 || g->s1 == g->s2)
		return 2;
	if (*(long *)g->s1 == 0 || *(long *)g->s2 == 0)
		return 2; // a sample never taken
	int i = dev((void *)((long *)g->s2)[1]);
	for (unsigned k = 0; k < g->num; ++k) {
		g->metrics[k].ret = 0;
		g->metrics[k].value = g->metrics[k].id + 0.5 + i;
	}
	return 0;
}
