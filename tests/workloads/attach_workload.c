/* A GPU process whose libcuda is wherever the test put it: dlopen it, touch
 * the "GPU" device (one ioctl on a node the daemon watches as nvidia, the
 * moment a real CUDA program's cuInit would), wait until the daemon has had
 * its chance to attach (a marker file appears, or a fixed delay), then call
 * cuLaunchKernel exactly N times. Prints "ready" once its library is mapped
 * (a test starts the daemon after that), and its pid.
 *
 * It waits 150 ms before loading the library: the daemon's scan on its exec
 * then finds nothing, and the first ioctl is what finds the library.
 *
 * attach_workload LIB DEVICE LAUNCHES (MARKER_FILE | -) [HOLD_FILE]
 * LIB "mmap:PATH": map PATH executable instead of loading it (a file named
 * like libcuda that is not one: its attach fails) and launch nothing.
 * HOLD_FILE: after the launches, stay alive until it exists (the library
 * stays mapped while the test looks). */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **,
			 void **);
typedef int (*init_fn)(unsigned);

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static int wait_for(const char *path, long max_ms)
{
	for (long t = 0; t < max_ms; t += 5) {
		if (access(path, F_OK) == 0)
			return 0;
		sleep_ms(5);
	}
	return -1;
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: attach_workload LIB DEVICE LAUNCHES (MARKER|-) [HOLD_FILE]\n");
		return 2;
	}
	sleep_ms(150);
	if (strncmp(argv[1], "mmap:", 5) == 0) {
		int lf = open(argv[1] + 5, O_RDONLY);
		struct stat st;
		if (lf < 0 || fstat(lf, &st) != 0 ||
		    mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, lf, 0) == MAP_FAILED) {
			perror("attach_workload: mmap");
			return 1;
		}
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		int fd = open(argv[2], O_RDWR);
		int arg = 0;
		if (fd >= 0)
			(void)ioctl(fd, 0x80045430u, &arg);
		sleep_ms(300);
		return 0;
	}
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "attach_workload: %s\n", dlerror());
		return 1;
	}
	init_fn init = (init_fn)dlsym(h, "cuInit");
	launch_fn launch = (launch_fn)dlsym(h, "cuLaunchKernel");
	if (!init || !launch) {
		fprintf(stderr, "attach_workload: no cuInit/cuLaunchKernel in %s\n", argv[1]);
		return 1;
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	int fd = open(argv[2], O_RDWR);
	if (fd < 0) {
		perror("attach_workload: open device");
		return 1;
	}
	/* The first "GPU" ioctl: the daemon's trigger. Its result does not matter. */
	int arg = 0;
	(void)ioctl(fd, 0x80045430u, &arg);
	if (strcmp(argv[4], "-") == 0) {
		sleep_ms(300);
	} else if (wait_for(argv[4], 20000) != 0) {
		fprintf(stderr, "attach_workload: %s never appeared\n", argv[4]);
		return 1;
	}
	init(0);
	long n = strtol(argv[3], NULL, 10);
	for (long i = 0; i < n; ++i)
		launch((void *)0x1000, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
	if (argc > 5 && wait_for(argv[5], 30000) != 0)
		return 1;
	close(fd);
	return 0;
}
