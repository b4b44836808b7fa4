/* A short GPU process whose libcuda.so.1 is wherever the test put it, for
 * the library watch (tests/integration/library_discovery_test.cpp).
 *
 * Built twice from this file:
 *  lib_needed_workload LAUNCHES DELAY_MS
 *    linked against libcuda.so.1 (the fake) without RUNPATH: the dynamic
 *    loader finds it through LD_LIBRARY_PATH only, before main.
 *  lib_dlopen_workload LAUNCHES DELAY_MS PATH
 *    dlopen()s PATH 10 ms after it starts.
 *  lib_dlopen_workload map HOLD_FILE FILE...
 *    maps every FILE executable (as the loader maps code), prints "ready PID",
 *    and stays until HOLD_FILE exists: copies named libcuda.so.1 by a user.
 *
 * After loading, the process waits DELAY_MS (a stand-in for cuInit, which
 * takes 100 ms and more on a real driver before any launch can follow),
 * calls cuInit once and cuLaunchKernel LAUNCHES times, prints "window
 * FIRST_NS LAST_NS" (CLOCK_MONOTONIC before the first and after the last
 * launch) and "done PID", and exits: with DELAY_MS 30 it lives about 50 ms in all. */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **,
			 void **);
typedef int (*init_fn)(unsigned);

#ifdef LIB_WORKLOAD_LINKED
int cuInit(unsigned flags);
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
		   unsigned shmem, void *stream, void **params, void **extra);
#endif

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static int map_files(int argc, char **argv)
{
	for (int i = 3; i < argc; ++i) {
		int fd = open(argv[i], O_RDONLY);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) != 0 ||
		    mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) == MAP_FAILED) {
			perror(argv[i]);
			return 1;
		}
		close(fd);
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (int t = 0; t < 60000 && access(argv[2], F_OK) != 0; t += 5)
		sleep_ms(5);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[1], "map") == 0)
		return map_files(argc, argv);
	if (argc < 3) {
		fprintf(stderr, "usage: lib_workload LAUNCHES DELAY_MS [PATH]\n");
		return 2;
	}
	long n = strtol(argv[1], NULL, 10), delay = strtol(argv[2], NULL, 10);
#ifdef LIB_WORKLOAD_LINKED
	init_fn init = cuInit;
	launch_fn launch = cuLaunchKernel;
#else
	if (argc < 4) {
		fprintf(stderr, "usage: lib_dlopen_workload LAUNCHES DELAY_MS PATH\n");
		return 2;
	}
	sleep_ms(10);
	void *h = dlopen(argv[3], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "lib_dlopen_workload: %s\n", dlerror());
		return 1;
	}
	init_fn init = (init_fn)dlsym(h, "cuInit");
	launch_fn launch = (launch_fn)dlsym(h, "cuLaunchKernel");
	if (!init || !launch) {
		fprintf(stderr, "lib_dlopen_workload: no cuInit/cuLaunchKernel in %s\n", argv[3]);
		return 1;
	}
#endif
	sleep_ms(delay);
	init(0);
	struct timespec first, last;
	clock_gettime(CLOCK_MONOTONIC, &first); /* the clock of bpf_ktime_get_ns */
	for (long i = 0; i < n; ++i)
		launch((void *)0x1000, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
	clock_gettime(CLOCK_MONOTONIC, &last);
	printf("window %lld %lld\n", (long long)first.tv_sec * 1000000000LL + first.tv_nsec,
	       (long long)last.tv_sec * 1000000000LL + last.tv_nsec);
	printf("done %d\n", (int)getpid());
	return 0;
}
