/* How long the fake libcuda's calls take (tests/fakes/fake_libcuda.c, its
 * only includer): synchronizations, and any call a test names in
 * FAKE_CUDA_DELAY_US. Read from the environment at each call, so a test sets
 * them per process. */
#pragma once

#include <stdlib.h>
#include <string.h>
#include <time.h>

static void sleep_us(long us)
{
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
	nanosleep(&ts, 0);
}

/* Synchronizations block 200 us, or FAKE_CUDA_SYNC_US microseconds (a test
 * that kills threads inside a call sets it high). */
__attribute__((noinline)) static void wait_a_little(void)
{
	const char *env = getenv("FAKE_CUDA_SYNC_US");
	sleep_us(env ? atol(env) : 200);
}

/* FAKE_CUDA_DELAY_US="cuMemcpyHtoD_v2=300,cuMemcpyDtoH_v2=50": the named
 * calls take that long (gpuobs diff's tests make one API slower between two
 * runs). Only cuMemcpyHtoD_v2 and cuMemcpyDtoH_v2 read it. */
__attribute__((noinline)) static void api_delay(const char *name)
{
	const char *env = getenv("FAKE_CUDA_DELAY_US");
	size_t n = strlen(name);
	for (const char *p = env; p && *p;) {
		if (strncmp(p, name, n) == 0 && p[n] == '=') {
			sleep_us(atol(p + n + 1));
			return;
		}
		p = strchr(p, ',');
		if (p)
			++p;
	}
}

/* FAKE_CUDA_FAIL="cuMemcpyHtoD_v2,cuMemsetD8_v2": the named calls fail with
 * CUDA_ERROR_UNKNOWN (999), as every call of the toolkit's stub libcuda
 * fails (copy_sum's failed columns). Only those two read it. */
__attribute__((noinline)) static int api_fails(const char *name)
{
	const char *env = getenv("FAKE_CUDA_FAIL");
	size_t n = strlen(name);
	for (const char *p = env; p && *p;) {
		if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == 0))
			return 1;
		p = strchr(p, ',');
		if (p)
			++p;
	}
	return 0;
}
