/* Launches from threads that run no Python, for
 * tests/workloads/python_native_threads.py (issue 18, the main thread's
 * Python frames): the script calls these through ctypes, which releases the
 * GIL, so the main thread waits in that call, at a known line, while a
 * thread created here launches.
 *
 * launch_on_plain_thread: a pthread with no interpreter state at all (a C++
 * thread pool's worker). launch_on_idle_python_thread: a pthread that gets
 * an interpreter state and releases the GIL before launching, as PyTorch's
 * autograd worker does (it holds a PyThreadState with no frame).
 * start_plain_thread / join_plain_thread: the same thread started, launching
 * after delay_ms, and joined later: the main thread runs Python meanwhile
 * (it is not waiting on the thread).
 * allreduce_on_plain_thread: an ncclAllReduce on such a thread, as DDP's
 * reducer calls NCCL from the autograd worker while Python waits in
 * loss.backward().
 * The CPython functions are looked up at run time (the interpreter is the
 * process itself or its libpython): this library links no Python. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **,
			 void **);

struct job {
	launch_fn launch;
	int n;
	int python; /* take an interpreter state first */
	int done;   /* launches made */
	int delay_ms;
	unsigned grid0; /* the first launch's grid x */
};

/* Waits (up to 5 s) until the process's main thread sleeps in a futex wait
 * (state S, system call 202 on x86-64): it is then in pthread_join, waiting
 * on this thread. gpuobs takes the main thread's frames only while it
 * waits, and right after pthread_create it may still be on its way there. */
static void wait_main_joined(void)
{
	char stat_path[64], call_path[64], buf[512];
	snprintf(stat_path, sizeof stat_path, "/proc/self/task/%d/stat", (int)getpid());
	snprintf(call_path, sizeof call_path, "/proc/self/task/%d/syscall", (int)getpid());
	for (int i = 0; i < 5000; ++i, usleep(1000)) {
		FILE *f = fopen(stat_path, "r");
		if (!f)
			return;
		size_t n = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		buf[n] = 0;
		const char *state = strrchr(buf, ')');
		if (!state || state[1] != ' ' || state[2] != 'S')
			continue;
		if (!(f = fopen(call_path, "r")))
			return;
		n = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		buf[n] = 0;
		if (strncmp(buf, "202 ", 4) == 0)
			return;
	}
}

static void launch_n(struct job *j)
{
	/* The fake refuses a NULL function, as the real one would; the call
	 * is what is observed. */
	if (j->delay_ms)
		usleep((useconds_t)j->delay_ms * 1000);
	else
		wait_main_joined();
	for (int i = 0; i < j->n; ++i, ++j->done)
		(void)j->launch(0, j->grid0 + (unsigned)i, 1, 1, 1, 1, 1, 0, 0, 0, 0);
}

static void *run(void *arg)
{
	struct job *j = arg;
	if (!j->python) {
		launch_n(j);
		return 0;
	}
	int (*ensure)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "PyGILState_Ensure");
	void (*release)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "PyGILState_Release");
	void *(*save)(void) = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyEval_SaveThread");
	void (*restore)(void *) = (void (*)(void *))dlsym(RTLD_DEFAULT, "PyEval_RestoreThread");
	if (!ensure || !release || !save || !restore)
		return 0;
	int g = ensure();
	void *ts = save(); /* keeps the thread state, with no frame, GIL released */
	launch_n(j);
	restore(ts);
	release(g);
	return 0;
}

static int on_thread(void *launch, int n, int python)
{
	struct job j = {(launch_fn)launch, n, python, 0, 0, 20};
	pthread_t t;
	if (pthread_create(&t, 0, run, &j))
		return -1;
	pthread_join(t, 0);
	return j.done;
}

int launch_on_plain_thread(void *launch, int n)
{
	return on_thread(launch, n, 0);
}

int launch_on_idle_python_thread(void *launch, int n)
{
	return on_thread(launch, n, 1);
}

struct started {
	pthread_t thread;
	struct job job;
};

void *start_plain_thread(void *launch, int n, int delay_ms)
{
	struct started *s = calloc(1, sizeof *s);
	if (!s)
		return 0;
	s->job = (struct job){(launch_fn)launch, n, 0, 0, delay_ms, 30};
	if (pthread_create(&s->thread, 0, run, &s->job)) {
		free(s);
		return 0;
	}
	return s;
}

int join_plain_thread(void *handle)
{
	struct started *s = handle;
	if (!s)
		return -1;
	pthread_join(s->thread, 0);
	int done = s->job.done;
	free(s);
	return done;
}

typedef int (*allreduce_fn)(const void *, void *, size_t, int, int, void *, void *);

struct reduce_job {
	allreduce_fn fn;
	void *comm, *stream;
	size_t count;
	int result;
};

static void *run_allreduce(void *arg)
{
	struct reduce_job *j = arg;
	wait_main_joined();
	j->result = j->fn(0, 0, j->count, 7 /* ncclFloat32 */, 0 /* ncclSum */, j->comm, j->stream);
	return 0;
}

int allreduce_on_plain_thread(void *fn, void *comm, void *stream, size_t count)
{
	struct reduce_job j = {(allreduce_fn)fn, comm, stream, count, -1};
	pthread_t t;
	if (pthread_create(&t, 0, run_allreduce, &j))
		return -1;
	pthread_join(t, 0);
	return j.result;
}
