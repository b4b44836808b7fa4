/* A fake CUDA driver library for tests and benchmarks: exports every symbol
 * gpuobs probes (userspace/decode/cuda_api.cpp) with the real x86-64 ABI
 * (cuda.h 13.0 prototypes, abi-reference.md section 4.2), fills out-parameters
 * with plausible unique handles and addresses, fails where the real driver
 * would on obviously bad input (CUDA_ERROR_INVALID_VALUE = 1 for a zero-byte
 * allocation or a NULL out-pointer), and blocks ~200 us in synchronizations
 * so blocked time is measurable. Built as libcuda.so.1. */
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_delays.h"

/* The fake ignores most arguments: they are there for the ABI. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

typedef int CUresult;
typedef void *CUfunction;
typedef void *CUstream;
typedef unsigned long long CUdeviceptr;

#define API __attribute__((visibility("default"), noinline))

static atomic_ulong launch_calls;
static atomic_ulong api_calls;
static atomic_ulong handles;

/* Entry points call these helpers instead of touching the counters themselves:
 * as non-leaf functions (built with frame pointers, no sibling calls) they
 * start with "push %rbp" like real driver code. A lock-prefixed first
 * instruction cannot be uprobed on x86, and the kernel drops such a probe
 * silently when the library is mapped. */
__attribute__((noinline)) static CUresult count_launch(CUfunction f)
{
	atomic_fetch_add_explicit(&launch_calls, 1, memory_order_relaxed);
	return f ? 0 : 400; /* CUDA_ERROR_INVALID_HANDLE for a null function */
}

__attribute__((noinline)) static CUresult touch(void)
{
	atomic_fetch_add_explicit(&api_calls, 1, memory_order_relaxed);
	return 0;
}

/* Unique, 64 KiB-aligned, plausible-looking handles and device addresses. */
__attribute__((noinline)) static unsigned long long new_handle(void)
{
	return 0x7f1000000000ull + (atomic_fetch_add(&handles, 1) + 1) * 0x10000ull;
}

/* noinline + a body of its own: every entry point has its own address, so a
 * uprobe on one symbol never fires for another. */
API CUresult cuInit(unsigned int flags)
{
	return flags == 0 ? touch() : 1;
}

/* Set-up calls (issue 37): values a test can check. Version 13000, two
 * devices whose handle is their ordinal, attribute A of device D is
 * 1000 * (D + 1) + A, 80 GiB each, one primary context per device. */
API CUresult cuDriverGetVersion(int *v)
{
	if (!v)
		return 1;
	*v = 13000;
	return touch();
}

API CUresult cuDeviceGetCount(int *n)
{
	if (!n)
		return 1;
	*n = 2;
	return touch();
}

API CUresult cuDeviceGet(int *dev, int ordinal)
{
	if (!dev || ordinal < 0 || ordinal > 1)
		return 101; /* CUDA_ERROR_INVALID_DEVICE */
	*dev = ordinal;
	return touch();
}

API CUresult cuDeviceGetAttribute(int *v, int attrib, int dev)
{
	if (!v || dev < 0 || dev > 1)
		return 101;
	*v = 1000 * (dev + 1) + attrib;
	return touch();
}

API CUresult cuDeviceTotalMem_v2(size_t *bytes, int dev)
{
	if (!bytes || dev < 0 || dev > 1)
		return 101;
	*bytes = 80ull << 30;
	return touch();
}

API CUresult cuCtxCreate_v2(void **ctx, unsigned int flags, int dev)
{
	if (!ctx || dev < 0 || dev > 1)
		return 101;
	*ctx = (void *)new_handle();
	return touch();
}

/* Not probed (cudart calls it on hot paths), but the bundled example sets
 * its context with it: demo.sh on a machine without the CUDA toolkit runs
 * the example against this library (found timing the README from a fresh
 * Debian 12, issue 38). */
API CUresult cuCtxSetCurrent(void *ctx)
{
	(void)ctx;
	return touch();
}

API CUresult cuCtxCreate_v3(void **ctx, void *params, int n, unsigned int flags, int dev)
{
	if (!ctx || dev < 0 || dev > 1)
		return 101;
	*ctx = (void *)new_handle();
	return touch();
}

API CUresult cuCtxCreate_v4(void **ctx, void *params, unsigned int flags, int dev)
{
	if (!ctx || dev < 0 || dev > 1)
		return 101;
	*ctx = (void *)new_handle();
	return touch();
}

API CUresult cuCtxDestroy_v2(void *ctx)
{
	return ctx ? touch() : 201; /* CUDA_ERROR_INVALID_CONTEXT */
}

API CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev)
{
	if (!ctx || dev < 0 || dev > 1)
		return 101;
	*ctx = (void *)(0x7f2000000000ull + (unsigned long long)dev * 0x10000ull);
	return touch();
}

API CUresult cuDevicePrimaryCtxRelease_v2(int dev)
{
	return dev < 0 || dev > 1 ? 101 : touch();
}

API CUresult cuDevicePrimaryCtxReset_v2(int dev)
{
	return dev < 0 || dev > 1 ? 101 : touch();
}

API CUresult cuDevicePrimaryCtxSetFlags_v2(int dev, unsigned int flags)
{
	return dev < 0 || dev > 1 ? 101 : touch();
}

API CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
			    unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void **params,
			    void **extra)
{
	return count_launch(f);
}

API CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
				 unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void **params,
				 void **extra)
{
	return count_launch(f);
}

API CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
				       unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void **params)
{
	return count_launch(f);
}

API CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
					    unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem,
					    CUstream s, void **params)
{
	return count_launch(f);
}

API CUresult cuLaunchKernelEx(const void *config, CUfunction f, void **params, void **extra)
{
	return config ? count_launch(f) : 1;
}

API CUresult cuLaunchKernelEx_ptsz(const void *config, CUfunction f, void **params, void **extra)
{
	return config ? count_launch(f) : 1;
}

API CUresult cuLaunchHostFunc(CUstream s, void *fn, void *user)
{
	return fn ? touch() : 1;
}

API CUresult cuLaunchHostFunc_ptsz(CUstream s, void *fn, void *user)
{
	return fn ? touch() : 1;
}

/* Built without a frame pointer, so its first instruction is not push %rbp:
 * the kernel does not add the caller of such a function to a stack taken at
 * its entry, and gpuobs must recover it from [sp] (tests/integration/
 * stacks_test.cpp). */
__attribute__((optimize("omit-frame-pointer"))) API CUresult cuGraphLaunch(void *graph_exec, CUstream s)
{
	return graph_exec ? touch() : 400;
}

API CUresult cuGraphLaunch_ptsz(void *graph_exec, CUstream s)
{
	return graph_exec ? touch() : 400;
}

API CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
	if (!p)
		return 1;
	if (n == 0)
		return 1;
	*p = new_handle();
	return touch();
}

API CUresult cuMemAllocPitch_v2(CUdeviceptr *p, size_t *pitch, size_t w, size_t h, unsigned int elem)
{
	if (!p || !pitch || !w || !h)
		return 1;
	*pitch = (w + 511) & ~(size_t)511;
	*p = new_handle();
	return touch();
}

API CUresult cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned int flags)
{
	if (!p)
		return 1;
	if (n == 0)
		return 1;
	*p = new_handle();
	return touch();
}

API CUresult cuMemAllocHost_v2(void **pp, size_t n)
{
	if (!pp || !n)
		return 1;
	*pp = (void *)new_handle();
	return touch();
}

API CUresult cuMemHostAlloc(void **pp, size_t n, unsigned int flags)
{
	if (!pp || !n)
		return 1;
	*pp = (void *)new_handle();
	return touch();
}

API CUresult cuMemAllocAsync(CUdeviceptr *p, size_t n, CUstream s)
{
	if (!p)
		return 1;
	if (n == 0)
		return 1;
	*p = new_handle();
	return touch();
}

API CUresult cuMemAllocAsync_ptsz(CUdeviceptr *p, size_t n, CUstream s)
{
	if (!p)
		return 1;
	if (n == 0)
		return 1;
	*p = new_handle();
	return touch();
}

API CUresult cuMemAllocFromPoolAsync(CUdeviceptr *p, size_t n, void *pool, CUstream s)
{
	if (!p)
		return 1;
	if (n == 0)
		return 1;
	*p = new_handle();
	return touch();
}

API CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *p, size_t n, void *pool, CUstream s)
{
	if (!p)
		return 1;
	if (n == 0)
		return 1;
	*p = new_handle();
	return touch();
}

API CUresult cuMemFree_v2(CUdeviceptr p)
{
	return touch();
}

API CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
	return touch();
}

API CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s)
{
	return touch();
}

API CUresult cuMemFreeHost(void *p)
{
	return touch();
}

API CUresult cuMemCreate(unsigned long long *h, size_t n, const void *prop, unsigned long long flags)
{
	if (!h || !n)
		return 1;
	*h = new_handle();
	return touch();
}

API CUresult cuMemRelease(unsigned long long h)
{
	return touch();
}

API CUresult cuMemMap(CUdeviceptr p, size_t n, size_t offset, unsigned long long h, unsigned long long flags)
{
	return touch();
}

API CUresult cuMemUnmap(CUdeviceptr p, size_t n)
{
	return touch();
}

API CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	return touch();
}

API CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	return touch();
}

API CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
	return touch();
}

API CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
	return touch();
}

API CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	api_delay("cuMemcpyHtoD_v2");
	if (api_fails("cuMemcpyHtoD_v2"))
		return 999;
	return touch();
}

API CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	return touch();
}

API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
	return touch();
}

API CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
	return touch();
}

API CUresult cuMemcpyDtoH_v2(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	api_delay("cuMemcpyDtoH_v2");
	return touch();
}

API CUresult cuMemcpyDtoH_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	return touch();
}

API CUresult cuMemcpyDtoHAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
	return touch();
}

API CUresult cuMemcpyDtoHAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
	return touch();
}

API CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	return touch();
}

API CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	return touch();
}

API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
	return touch();
}

API CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
	return touch();
}

API CUresult cuMemcpyPeer(CUdeviceptr dst, void *dctx, CUdeviceptr src, void *sctx, size_t n)
{
	return touch();
}

API CUresult cuMemcpyPeer_ptds(CUdeviceptr dst, void *dctx, CUdeviceptr src, void *sctx, size_t n)
{
	return touch();
}

API CUresult cuMemcpyPeerAsync(CUdeviceptr dst, void *dctx, CUdeviceptr src, void *sctx, size_t n, CUstream s)
{
	return touch();
}

API CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dst, void *dctx, CUdeviceptr src, void *sctx, size_t n, CUstream s)
{
	return touch();
}

API CUresult cuMemcpy2D_v2(const void *desc)
{
	return desc ? touch() : 1;
}

API CUresult cuMemcpy2D_v2_ptds(const void *desc)
{
	return desc ? touch() : 1;
}

API CUresult cuMemcpy2DAsync_v2(const void *desc, CUstream s)
{
	return desc ? touch() : 1;
}

API CUresult cuMemcpy2DAsync_v2_ptsz(const void *desc, CUstream s)
{
	return desc ? touch() : 1;
}

API CUresult cuMemcpy3D_v2(const void *desc)
{
	return desc ? touch() : 1;
}

API CUresult cuMemcpy3D_v2_ptds(const void *desc)
{
	return desc ? touch() : 1;
}

API CUresult cuMemcpy3DAsync_v2(const void *desc, CUstream s)
{
	return desc ? touch() : 1;
}

API CUresult cuMemcpy3DAsync_v2_ptsz(const void *desc, CUstream s)
{
	return desc ? touch() : 1;
}

API CUresult cuMemcpyDtoA_v2(void *dst_array, size_t dst_offset, CUdeviceptr src, size_t n)
{
	return touch();
}

API CUresult cuMemcpyDtoA_v2_ptds(void *dst_array, size_t dst_offset, CUdeviceptr src, size_t n)
{
	return touch();
}

API CUresult cuMemcpyAtoD_v2(CUdeviceptr dst, void *src_array, size_t src_offset, size_t n)
{
	return touch();
}

API CUresult cuMemcpyAtoD_v2_ptds(CUdeviceptr dst, void *src_array, size_t src_offset, size_t n)
{
	return touch();
}

API CUresult cuMemcpyHtoA_v2(void *dst_array, size_t dst_offset, const void *src, size_t n)
{
	return touch();
}

API CUresult cuMemcpyHtoA_v2_ptds(void *dst_array, size_t dst_offset, const void *src, size_t n)
{
	return touch();
}

API CUresult cuMemcpyAtoH_v2(void *dst, void *src_array, size_t src_offset, size_t n)
{
	return touch();
}

API CUresult cuMemcpyAtoH_v2_ptds(void *dst, void *src_array, size_t src_offset, size_t n)
{
	return touch();
}

API CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char v, size_t count)
{
	if (api_fails("cuMemsetD8_v2"))
		return 999;
	return touch();
}

API CUresult cuMemsetD8_v2_ptds(CUdeviceptr dst, unsigned char v, size_t count)
{
	return touch();
}

API CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t count, CUstream s)
{
	return touch();
}

API CUresult cuMemsetD8Async_ptsz(CUdeviceptr dst, unsigned char v, size_t count, CUstream s)
{
	return touch();
}

API CUresult cuMemsetD2D8_v2(CUdeviceptr dst, size_t pitch, unsigned char v, size_t w, size_t h)
{
	return touch();
}

API CUresult cuMemsetD2D8_v2_ptds(CUdeviceptr dst, size_t pitch, unsigned char v, size_t w, size_t h)
{
	return touch();
}

API CUresult cuMemsetD2D8Async(CUdeviceptr dst, size_t pitch, unsigned char v, size_t w, size_t h, CUstream s)
{
	return touch();
}

API CUresult cuMemsetD2D8Async_ptsz(CUdeviceptr dst, size_t pitch, unsigned char v, size_t w, size_t h, CUstream s)
{
	return touch();
}

API CUresult cuMemsetD16_v2(CUdeviceptr dst, unsigned short v, size_t count)
{
	return touch();
}

API CUresult cuMemsetD16_v2_ptds(CUdeviceptr dst, unsigned short v, size_t count)
{
	return touch();
}

API CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short v, size_t count, CUstream s)
{
	return touch();
}

API CUresult cuMemsetD16Async_ptsz(CUdeviceptr dst, unsigned short v, size_t count, CUstream s)
{
	return touch();
}

API CUresult cuMemsetD2D16_v2(CUdeviceptr dst, size_t pitch, unsigned short v, size_t w, size_t h)
{
	return touch();
}

API CUresult cuMemsetD2D16_v2_ptds(CUdeviceptr dst, size_t pitch, unsigned short v, size_t w, size_t h)
{
	return touch();
}

API CUresult cuMemsetD2D16Async(CUdeviceptr dst, size_t pitch, unsigned short v, size_t w, size_t h, CUstream s)
{
	return touch();
}

API CUresult cuMemsetD2D16Async_ptsz(CUdeviceptr dst, size_t pitch, unsigned short v, size_t w, size_t h, CUstream s)
{
	return touch();
}

API CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned int v, size_t count)
{
	return touch();
}

API CUresult cuMemsetD32_v2_ptds(CUdeviceptr dst, unsigned int v, size_t count)
{
	return touch();
}

API CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int v, size_t count, CUstream s)
{
	return touch();
}

API CUresult cuMemsetD32Async_ptsz(CUdeviceptr dst, unsigned int v, size_t count, CUstream s)
{
	return touch();
}

API CUresult cuMemsetD2D32_v2(CUdeviceptr dst, size_t pitch, unsigned int v, size_t w, size_t h)
{
	return touch();
}

API CUresult cuMemsetD2D32_v2_ptds(CUdeviceptr dst, size_t pitch, unsigned int v, size_t w, size_t h)
{
	return touch();
}

API CUresult cuMemsetD2D32Async(CUdeviceptr dst, size_t pitch, unsigned int v, size_t w, size_t h, CUstream s)
{
	return touch();
}

API CUresult cuMemsetD2D32Async_ptsz(CUdeviceptr dst, size_t pitch, unsigned int v, size_t w, size_t h, CUstream s)
{
	return touch();
}

API CUresult cuStreamCreate(CUstream *ps, unsigned int flags)
{
	if (!ps)
		return 1;
	*ps = (CUstream)new_handle();
	return touch();
}

API CUresult cuStreamCreateWithPriority(CUstream *ps, unsigned int flags, int priority)
{
	if (!ps)
		return 1;
	*ps = (CUstream)new_handle();
	return touch();
}

API CUresult cuStreamDestroy_v2(CUstream s)
{
	return touch();
}

API CUresult cuStreamWaitEvent(CUstream s, void *e, unsigned int flags)
{
	return e ? touch() : 400;
}

API CUresult cuStreamWaitEvent_ptsz(CUstream s, void *e, unsigned int flags)
{
	return e ? touch() : 400;
}

API CUresult cuStreamQuery(CUstream s)
{
	return touch();
}

API CUresult cuStreamQuery_ptsz(CUstream s)
{
	return touch();
}

API CUresult cuStreamBeginCapture_v2(CUstream s, int mode)
{
	return touch();
}

API CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, int mode)
{
	return touch();
}

API CUresult cuStreamEndCapture(CUstream s, void **graph)
{
	if (!graph)
		return 1;
	*graph = (void *)new_handle();
	return touch();
}

API CUresult cuStreamEndCapture_ptsz(CUstream s, void **graph)
{
	if (!graph)
		return 1;
	*graph = (void *)new_handle();
	return touch();
}

API CUresult cuEventCreate(void **pe, unsigned int flags)
{
	if (!pe)
		return 1;
	*pe = (void *)new_handle();
	return touch();
}

API CUresult cuEventRecord(void *e, CUstream s)
{
	return e ? touch() : 400;
}

API CUresult cuEventRecord_ptsz(void *e, CUstream s)
{
	return e ? touch() : 400;
}

API CUresult cuEventRecordWithFlags(void *e, CUstream s, unsigned int flags)
{
	return e ? touch() : 400;
}

API CUresult cuEventRecordWithFlags_ptsz(void *e, CUstream s, unsigned int flags)
{
	return e ? touch() : 400;
}

API CUresult cuEventQuery(void *e)
{
	return touch();
}

API CUresult cuEventDestroy_v2(void *e)
{
	return touch();
}

API CUresult cuStreamSynchronize(CUstream s)
{
	wait_a_little();
	return touch();
}

API CUresult cuStreamSynchronize_ptsz(CUstream s)
{
	wait_a_little();
	return touch();
}

API CUresult cuEventSynchronize(void *e)
{
	wait_a_little();
	return touch();
}

API CUresult cuCtxSynchronize(void)
{
	wait_a_little();
	return touch();
}

API CUresult cuCtxSynchronize_v2(void *ctx)
{
	wait_a_little();
	return touch();
}

API CUresult cuModuleGetFunction(CUfunction *pf, void *mod, const char *name)
{
	if (!pf || !name)
		return 1;
	*pf = (CUfunction)new_handle();
	return touch();
}

API CUresult cuLibraryGetKernel(void **pk, void *lib, const char *name)
{
	/* Reads the name, as the real driver does: a page not yet faulted in
	 * becomes resident here (tests/workloads/api_workload.cpp relies on it). */
	if (!pk || !name || !*(volatile const char *)name)
		return 1;
	*pk = (void *)new_handle();
	return touch();
}

API CUresult cuKernelGetFunction(CUfunction *pf, void *kernel)
{
	if (!pf || !kernel)
		return 1;
	*pf = (CUfunction)new_handle();
	return touch();
}

API CUresult cuModuleLoad(void **pm, const char *path)
{
	if (!pm || !path)
		return 1;
	*pm = (void *)new_handle();
	return touch();
}

API CUresult cuModuleLoadData(void **pm, const void *image)
{
	if (!pm || !image)
		return 1;
	*pm = (void *)new_handle();
	return touch();
}

API CUresult cuModuleLoadDataEx(void **pm, const void *image, unsigned int n, void *opts, void **vals)
{
	if (!pm || !image)
		return 1;
	*pm = (void *)new_handle();
	return touch();
}

API CUresult cuLibraryLoadData(void **pl, const void *code, void *jo, void **jv, unsigned int nj, void *lo, void **lv,
			       unsigned int nl)
{
	if (!pl || !code)
		return 1;
	*pl = (void *)new_handle();
	return touch();
}

API CUresult cuLibraryLoadFromFile(void **pl, const char *path, void *jo, void **jv, unsigned int nj, void *lo,
				   void **lv, unsigned int nl)
{
	if (!pl || !path)
		return 1;
	*pl = (void *)new_handle();
	return touch();
}

API CUresult cuMemcpyAtoA_v2(void *dst_array, size_t dst_offset, void *src_array, size_t src_offset, size_t n)
{
	return touch();
}

API CUresult cuMemcpyAtoA_v2_ptds(void *dst_array, size_t dst_offset, void *src_array, size_t src_offset, size_t n)
{
	return touch();
}

API CUresult cuMemcpyHtoAAsync_v2(void *dst_array, size_t dst_offset, const void *src, size_t n, CUstream s)
{
	return touch();
}

API CUresult cuMemcpyHtoAAsync_v2_ptsz(void *dst_array, size_t dst_offset, const void *src, size_t n, CUstream s)
{
	return touch();
}

API CUresult cuMemcpyAtoHAsync_v2(void *dst, void *src_array, size_t src_offset, size_t n, CUstream s)
{
	return touch();
}

API CUresult cuMemcpyAtoHAsync_v2_ptsz(void *dst, void *src_array, size_t src_offset, size_t n, CUstream s)
{
	return touch();
}

API CUresult cuMemcpy3DPeer(const void *desc)
{
	return desc ? touch() : 1;
}

API CUresult cuMemcpy3DPeer_ptds(const void *desc)
{
	return desc ? touch() : 1;
}

API CUresult cuMemcpy3DPeerAsync(const void *desc, CUstream s)
{
	return desc ? touch() : 1;
}

API CUresult cuMemcpy3DPeerAsync_ptsz(const void *desc, CUstream s)
{
	return desc ? touch() : 1;
}

/* Test helpers, not CUDA symbols. */
API unsigned long fake_cuda_launch_calls(void)
{
	return atomic_load(&launch_calls);
}

API unsigned long fake_cuda_api_calls(void)
{
	return atomic_load(&api_calls);
}
