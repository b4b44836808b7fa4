/* A fake CUDA driver library for tests and benchmarks: exports CUDA driver API
 * symbols with the real x86-64 ABI (cuda.h 13.0 prototypes, abi-reference.md
 * §4.2), fills out-parameters, and counts calls so a test can compare what
 * the library saw with what gpuobs recorded. Built as libcuda.so.1. */
#include <stdatomic.h>
#include <stdint.h>

typedef int CUresult;
typedef void *CUfunction;
typedef void *CUstream;

static atomic_ulong launch_calls;

/* Entry points call this instead of touching the counter themselves: as
 * non-leaf functions (built with frame pointers, no sibling calls) they start
 * with "push %rbp" like real driver code. A lock-prefixed first instruction
 * cannot be uprobed on x86, and the kernel drops such a probe silently. */
__attribute__((noinline)) static CUresult count_launch(CUfunction f)
{
	atomic_fetch_add_explicit(&launch_calls, 1, memory_order_relaxed);
	return f ? 0 : 400; /* CUDA_ERROR_INVALID_HANDLE for a null function */
}

/* noinline + a body of its own: every entry point has its own address, so a
 * uprobe on one symbol never fires for another. */
__attribute__((visibility("default"), noinline)) CUresult cuInit(unsigned int flags)
{
	return flags == 0 ? 0 : 1; /* CUDA_SUCCESS / CUDA_ERROR_INVALID_VALUE */
}

__attribute__((visibility("default"), noinline)) CUresult
cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
	       unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
	       unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
{
	(void)gridDimX; (void)gridDimY; (void)gridDimZ; (void)blockDimX; (void)blockDimY;
	(void)blockDimZ; (void)sharedMemBytes; (void)hStream; (void)kernelParams; (void)extra;
	return count_launch(f);
}

__attribute__((visibility("default"), noinline)) CUresult
cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
		    unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
		    unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
{
	(void)gridDimX; (void)gridDimY; (void)gridDimZ; (void)blockDimX; (void)blockDimY;
	(void)blockDimZ; (void)sharedMemBytes; (void)hStream; (void)kernelParams; (void)extra;
	return count_launch(f);
}

/* Test helper, not a CUDA symbol. */
__attribute__((visibility("default"))) unsigned long fake_cuda_launch_calls(void)
{
	return atomic_load(&launch_calls);
}
