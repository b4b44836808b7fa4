/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* GPU runtime libraries as processes map them: the dynamic loader mmap()s
 * libcuda.so.1 at exec (a DT_NEEDED entry, wherever LD_LIBRARY_PATH or
 * RUNPATH found it) and at each dlopen(), before it relocates the library
 * and runs its constructors, so this is the earliest moment the file is
 * known. Entry notes an executable mapping of a file named like a GPU
 * runtime; exit, once the mapping exists in /proc/PID/maps, wakes user space
 * with a GPUOBS_EV_LIB_MAP record.
 *
 * Uprobes belong to an inode: a file user space attached before (lib_known)
 * costs the process nothing. An inode met for the first time is held: the
 * exit sends the process SIGSTOP, which stops every thread of it before the
 * mmap returns to user space, so none of the library's code has run; user
 * space attaches the file's probes and sends SIGCONT
 * (userspace/capture/library_watch.cpp, docs/design.md "Holding a process at
 * its first mapping"). Three cases are not held and say so in the record:
 * holding off, a ptraced process (its tracer would see the stop), and a job
 * that a job-control shell started (the shell would report it "Stopped").
 *
 * Syscall tracepoints, not kprobes (not every kernel gpuobs runs on allows
 * them): field layouts in docs/reference/abi-reference.md, "mmap tracepoints". */
#ifndef GPUOBS_LIBRARY_BPF_H
#define GPUOBS_LIBRARY_BPF_H

#include "maps.bpf.h"
#include "python.bpf.h"

#define GPUOBS_PROT_EXEC     0x4
#define GPUOBS_MAP_ANONYMOUS 0x20
#define GPUOBS_S_IFREG       0100000
#define GPUOBS_SIGSTOP       19
#define GPUOBS_PIDTYPE_PGID  2
#define LIB_NAME_LEN         GPUOBS_LIB_NAME_LEN

/* Hold a process that maps an unknown GPU library (the loader sets it). */
const volatile __u32 lib_hold = 0;

struct lib_map_entry {
	__u64 ts_ns;
	struct gpuobs_lib_key key;
	__u8 name[LIB_NAME_LEN];
};

/* (dev, inode) -> GPUOBS_KNOWN_*: the files user space has probes on (or has
 * given up on). Written by user space only. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct gpuobs_lib_key);
	__type(value, __u32);
} lib_known SEC(".maps");

/* tgid -> the hold's time (bpf_ktime_get_ns): the processes BPF stopped and
 * user space has not resumed yet. User space deletes an entry when it sends
 * SIGCONT, and resumes what is left here even when its record was lost (a
 * full ring) or its attach never ends. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} lib_held SEC(".maps");

/* tid -> mmap of a GPU library in flight. Deleted at exit on every path and
 * when the thread dies (process.bpf.h). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct lib_map_entry);
} lib_map_inflight SEC(".maps");

/* "libcuda.so", "libamdhip64.so", "libnccl.so", "librccl.so" or "libze_loader.so", then the end or a '.': the names
 * user space probes (userspace/capture/procfs.cpp: is_gpu_runtime_name(),
 * which also checks that only digits follow). */
static __always_inline int lib__stem_is(const __u8 *name, const char *stem, int len)
{
#pragma unroll
	for (int i = 0; i < 15; i++) {
		if (i >= len)
			break;
		if (name[i] != (__u8)stem[i])
			return 0;
	}
	return name[len] == 0 || name[len] == '.';
}

/* Also libpython3.X.so* while Python frames are on: user space describes the
 * interpreter to the Python walk (bpf/python.bpf.h) before it runs any code
 * that could launch (an interpreter linked statically is found at exec). */
static __always_inline int lib__gpu_runtime_name(const __u8 *name)
{
	return lib__stem_is(name, "libcuda.so", 10) || lib__stem_is(name, "libamdhip64.so", 14) ||
	       lib__stem_is(name, "libnccl.so", 10) || lib__stem_is(name, "librccl.so", 10) ||
	       lib__stem_is(name, "libze_loader.so", 15);
}

static __always_inline int lib__gpu_name(const __u8 *name)
{
	return lib__gpu_runtime_name(name) || (python_depth && lib__stem_is(name, "libpython3", 10));
}

SEC("tracepoint/syscalls/sys_enter_mmap")
int lib_mmap_enter(struct trace_event_raw_sys_enter *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!process__wanted(pid_tgid >> 32))
		return 0;
	__u64 prot = ctx->args[2], flags = ctx->args[3];
	int fd = (int)ctx->args[4];
	if ((flags & GPUOBS_MAP_ANONYMOUS) || fd < 0)
		return 0;
	/* ld.so maps a library first whole (read-only for -z separate-code
	 * objects), then its code executable, microseconds later and before
	 * running any of it: the executable mapping is the one that matters (a
	 * tool that only reads the ELF file maps it read-only). */
	if (!(prot & GPUOBS_PROT_EXEC))
		return 0;
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
	if (!fdt || (unsigned int)fd >= BPF_CORE_READ(fdt, max_fds))
		return 0;
	struct file **fds = BPF_CORE_READ(fdt, fd);
	struct file *file = 0;
	if (bpf_core_read(&file, sizeof(file), &fds[fd]) || !file)
		return 0;
	if ((BPF_CORE_READ(file, f_inode, i_mode) & GPUOBS_S_IFMT) != GPUOBS_S_IFREG)
		return 0;
	struct lib_map_entry ent = {};
	ent.key.ino = BPF_CORE_READ(file, f_inode, i_ino);
	ent.key.kdev = BPF_CORE_READ(file, f_inode, i_sb, s_dev);
	const unsigned char *name = BPF_CORE_READ(file, f_path.dentry, d_name.name);
	if (bpf_probe_read_kernel_str(ent.name, sizeof(ent.name), name) <= 0)
		return 0;
	if (!lib__gpu_name(ent.name))
		return 0;
	ent.ts_ns = bpf_ktime_get_ns();
	__u32 tid = (__u32)pid_tgid;
	bpf_map_update_elem(&lib_map_inflight, &tid, &ent, BPF_ANY);
	return 0;
}

/* A job-control shell puts each job in a process group of its own and
 * reports a stopped child ("[1]+ Stopped"), handing the terminal back: a
 * process that leads its group on a terminal, its parent in another group,
 * is such a job. Its children, and everything without a terminal (services,
 * `gpuobs record`'s command, Python's subprocesses), can be held unseen. */
static __always_inline int lib__shell_job(struct task_struct *task)
{
	if (!BPF_CORE_READ(task, signal, tty))
		return 0;
	int pgid = BPF_CORE_READ(task, signal, pids[GPUOBS_PIDTYPE_PGID], numbers[0].nr);
	int parent_pgid = BPF_CORE_READ(task, real_parent, signal, pids[GPUOBS_PIDTYPE_PGID], numbers[0].nr);
	return pgid == BPF_CORE_READ(task, tgid) && parent_pgid != pgid;
}

static __always_inline __u32 lib__hold(struct lib_map_entry *ent, __u32 tgid)
{
	if (!lib__gpu_runtime_name(ent->name))
		return GPUOBS_LIB_NOT_RUNTIME;
	__u32 *known = bpf_map_lookup_elem(&lib_known, &ent->key);
	if (known)
		return *known == GPUOBS_KNOWN_ATTACHED ? GPUOBS_LIB_ATTACHED : GPUOBS_LIB_UNPROBED;
	if (!lib_hold)
		return GPUOBS_LIB_HOLD_OFF;
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	if (BPF_CORE_READ(task, ptrace))
		return GPUOBS_LIB_TRACED;
	if (lib__shell_job(task))
		return GPUOBS_LIB_JOB;
	/* The whole thread group stops on its way back to user space, before
	 * the mmap returns: no instruction of the library has run. */
	if (bpf_send_signal(GPUOBS_SIGSTOP))
		return GPUOBS_LIB_SIGNAL_FAILED;
	__u64 now = bpf_ktime_get_ns();
	bpf_map_update_elem(&lib_held, &tgid, &now, BPF_ANY);
	return GPUOBS_LIB_HELD;
}

SEC("tracepoint/syscalls/sys_exit_mmap")
int lib_mmap_exit(struct trace_event_raw_sys_exit *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;
	struct lib_map_entry *ent = bpf_map_lookup_elem(&lib_map_inflight, &tid);
	if (!ent)
		return 0; /* not a GPU library: the common case */
	/* A failed mmap returns -errno (-4095..-1): nothing was mapped. */
	if ((unsigned long)ctx->ret >= (unsigned long)-4095L) {
		bpf_map_delete_elem(&lib_map_inflight, &tid);
		return 0;
	}
	/* Decided before the record is reserved: a held process must be
	 * resumed even when its record is lost (user space also reads lib_held). */
	__u32 hold = lib__hold(ent, pid_tgid >> 32);
	struct gpuobs_lib_map *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		counter__add(GPUOBS_CNT_DROP_PROC);
		bpf_map_delete_elem(&lib_map_inflight, &tid);
		return 0;
	}
	__builtin_memset(e, 0, sizeof(*e));
	hdr__fill(&e->hdr, GPUOBS_EV_LIB_MAP, sizeof(*e), pid_tgid, ent->ts_ns);
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	e->start_boottime_ns = BPF_CORE_READ(task, group_leader, start_boottime);
	e->ppid = BPF_CORE_READ(task, real_parent, tgid);
	e->hold = hold;
	e->ino = ent->key.ino;
	e->kdev = ent->key.kdev;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	__builtin_memcpy(e->filename, ent->name, LIB_NAME_LEN);
	e->filename[LIB_NAME_LEN - 1] = 0;
	bpf_map_delete_elem(&lib_map_inflight, &tid);
	/* Wake the reader now: the process may call into the library within
	 * microseconds (or waits, held, for its probes), and may live only
	 * milliseconds. */
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	counter__add(GPUOBS_CNT_SUBMIT_PROC);
	return 0;
}

#endif
