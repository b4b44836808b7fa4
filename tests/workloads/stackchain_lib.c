/* libstackchain.so: a shared library between the workload and libcuda, so a
 * stack crosses three files (tests/workloads/stack_workload.c "lib"). */
typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **,
			 void **);

__attribute__((noinline)) static void lib_inner(launch_fn launch, int n)
{
	for (int i = 0; i < n; ++i)
		launch((void *)0x4000, 4, 1, 1, 128, 1, 1, 0, 0, 0, 0); /* SITE_LIB */
	__asm__ volatile("" ::: "memory");
}

__attribute__((visibility("default"), noinline)) void lib_outer(launch_fn launch, int n)
{
	lib_inner(launch, n);
	__asm__ volatile("" ::: "memory");
}
