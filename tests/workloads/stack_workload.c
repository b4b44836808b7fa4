/* Test workload with known call chains for the stack tests
 * (tests/integration/stacks_test.cpp). Every probed call is made from
 * level_three(), reached through main -> level_one -> level_two; the lines of
 * the calls are marked SITE_* for the test to find. Built several ways from
 * this one file: with frame pointers and DWARF, stripped with MiniDebugInfo
 * only, and without frame pointers.
 *
 * usage: stack_workload LIBCUDA MODE N [OUT]
 *   chain   N launches, N graph launches, N stream syncs, N ioctls on /dev/null
 *   thread  the chain from a second thread (the walk ends at the thread's start)
 *   lib     N launches through libstackchain.so (lib_outer -> lib_inner)
 *   fork    a forked child makes N launches from child_main -> child_work
 *   brief   the chain without the ioctls
 * Every mode exits 10 ms after its last call: the shortest life gpuobs
 * promises to symbolize.
 *   reuse   runs "brief" in a child, then OUT (another build of this workload)
 *           "brief" in a second child given the same pid; prints the pid
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **,
			 void **);
typedef int (*graph_fn)(void *, void *);
typedef int (*sync_fn)(void *);

static launch_fn cu_launch;
static graph_fn cu_graph_launch;
static sync_fn cu_stream_sync;
static int n_calls;
static int null_fd = -1;

#define NOINLINE __attribute__((noinline))

NOINLINE void level_three(void)
{
	for (int i = 0; i < n_calls; ++i) {
		cu_launch((void *)0x1000, 1, 1, 1, 32, 1, 1, 0, 0, 0, 0); /* SITE_LAUNCH */
		cu_graph_launch((void *)0x2000, 0);                       /* SITE_GRAPH */
		cu_stream_sync(0);                                        /* SITE_SYNC */
		if (null_fd >= 0) {
			struct termios t;
			ioctl(null_fd, TCGETS, &t); /* SITE_IOCTL */
		}
	}
	__asm__ volatile("" ::: "memory"); /* keeps the calls above from being tail calls */
}

NOINLINE void level_two(void)
{
	level_three();
	__asm__ volatile("" ::: "memory");
}

NOINLINE void level_one(void)
{
	level_two();
	__asm__ volatile("" ::: "memory");
}

NOINLINE static void *thread_main(void *arg)
{
	(void)arg;
	level_one();
	return 0;
}

NOINLINE void child_work(void)
{
	for (int i = 0; i < n_calls; ++i)
		cu_launch((void *)0x3000, 2, 1, 1, 64, 1, 1, 0, 0, 0, 0); /* SITE_CHILD */
	__asm__ volatile("" ::: "memory");
}

NOINLINE void child_main(void)
{
	child_work();
	__asm__ volatile("" ::: "memory");
}

static void sleep_ms(int ms)
{
	struct timespec ts = {0, ms * 1000000L};
	nanosleep(&ts, 0);
}

/* Forks, and in the child execs argv; returns the child's pid after it exited. */
static pid_t run_child(char **argv)
{
	pid_t pid = fork();
	if (pid == 0) {
		execv(argv[0], argv);
		_exit(127);
	}
	int st;
	waitpid(pid, &st, 0);
	return pid;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: %s LIBCUDA MODE N [OUT]\n", argv[0]);
		return 2;
	}
	const char *mode = argv[2];
	n_calls = atoi(argv[3]);
	if (strcmp(mode, "reuse") == 0) {
		if (argc < 5)
			return 2;
		/* Two short processes with one pid: the second is given the first's
		 * pid through ns_last_pid (root only), retried if another process
		 * took it in between. */
		char *child1[] = {argv[0], argv[1], "brief", argv[3], 0};
		char *child2[] = {argv[4], argv[1], "brief", argv[3], 0};
		for (int attempt = 0; attempt < 20; ++attempt) {
			pid_t first = run_child(child1);
			FILE *f = fopen("/proc/sys/kernel/ns_last_pid", "w");
			if (!f)
				return 3;
			fprintf(f, "%d", first - 1);
			fclose(f);
			pid_t second = run_child(child2);
			if (second == first) {
				printf("%d\n", first);
				return 0;
			}
		}
		return 4;
	}
	void *lib = dlopen(argv[1], RTLD_NOW);
	if (!lib) {
		fprintf(stderr, "%s\n", dlerror());
		return 2;
	}
	cu_launch = (launch_fn)dlsym(lib, "cuLaunchKernel");
	cu_graph_launch = (graph_fn)dlsym(lib, "cuGraphLaunch");
	cu_stream_sync = (sync_fn)dlsym(lib, "cuStreamSynchronize");
	if (!cu_launch || !cu_graph_launch || !cu_stream_sync)
		return 2;

	if (strcmp(mode, "chain") == 0) {
		null_fd = open("/dev/null", O_RDONLY);
		level_one();
	} else if (strcmp(mode, "thread") == 0) {
		pthread_t t;
		pthread_create(&t, 0, thread_main, 0);
		pthread_join(t, 0);
	} else if (strcmp(mode, "lib") == 0) {
		char path[4096];
		snprintf(path, sizeof path, "%s", argv[0]);
		char *slash = strrchr(path, '/');
		snprintf(slash ? slash + 1 : path, sizeof path - (slash ? (size_t)(slash + 1 - path) : 0),
			 "libstackchain.so");
		void *chain = dlopen(path, RTLD_NOW);
		if (!chain) {
			fprintf(stderr, "%s\n", dlerror());
			return 2;
		}
		void (*outer)(launch_fn, int) = (void (*)(launch_fn, int))dlsym(chain, "lib_outer");
		outer(cu_launch, n_calls);
	} else if (strcmp(mode, "fork") == 0) {
		pid_t pid = fork();
		if (pid == 0) {
			child_main();
			sleep_ms(10);
			_exit(0);
		}
		int st;
		waitpid(pid, &st, 0);
	} else if (strcmp(mode, "brief") == 0) {
		level_one();
	} else {
		return 2;
	}
	sleep_ms(10);
	return 0;
}
