/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Process lifecycle: fork (new processes, not threads), exec, exit. In record
 * mode the fork handler also extends the tracked set to the child, so the
 * whole process tree of the recorded command is followed. */
#ifndef GPUOBS_PROCESS_BPF_H
#define GPUOBS_PROCESS_BPF_H

#include "maps.bpf.h"
#include "python.bpf.h"

static __always_inline struct gpuobs_proc *proc__reserve(__u32 type, struct task_struct *p)
{
	struct gpuobs_proc *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		counter__add(GPUOBS_CNT_DROP_PROC);
		return 0;
	}
	__u64 pid_tgid = ((__u64)BPF_CORE_READ(p, tgid) << 32) | (__u32)BPF_CORE_READ(p, pid);
	hdr__fill(&e->hdr, type, sizeof(*e), pid_tgid, bpf_ktime_get_ns());
	e->start_boottime_ns = BPF_CORE_READ(p, group_leader, start_boottime);
	e->ppid = BPF_CORE_READ(p, real_parent, tgid);
	e->exit_code = 0;
	bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), p->comm);
	e->filename[0] = 0;
	return e;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(proc_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 child_tgid = BPF_CORE_READ(child, tgid);
	if ((__u32)BPF_CORE_READ(child, pid) != child_tgid)
		return 0; /* a new thread, not a process */
	if (filter_tracked) {
		__u32 parent_tgid = BPF_CORE_READ(parent, tgid);
		if (!bpf_map_lookup_elem(&tracked, &parent_tgid))
			return 0;
		__u32 one = 1;
		if (bpf_map_update_elem(&tracked, &child_tgid, &one, BPF_ANY))
			counter__add(GPUOBS_CNT_TRACK_FULL);
	} else if (child_tgid == self_tgid) {
		return 0;
	}
	struct gpuobs_proc *e = proc__reserve(GPUOBS_EV_PROC_FORK, child);
	if (!e)
		return 0;
	e->ppid = BPF_CORE_READ(parent, tgid); /* real_parent may differ (CLONE_PARENT) */
	ringbuf__submit(e);
	counter__add(GPUOBS_CNT_SUBMIT_PROC);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(proc_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	/* A new program: the interpreter user space described (a forked
	 * child's, inherited) is gone with the old one. Until user space sees
	 * the exec, its stacks carry no Python walk rather than one over
	 * stale addresses. */
	__u32 exec_tgid = BPF_CORE_READ(p, tgid);
	bpf_map_delete_elem(&py_procs, &exec_tgid);
	if (!process__wanted(exec_tgid))
		return 0;
	struct gpuobs_proc *e = proc__reserve(GPUOBS_EV_PROC_EXEC, p);
	if (!e)
		return 0;
	bpf_probe_read_kernel_str(e->filename, sizeof(e->filename), BPF_CORE_READ(bprm, filename));
	/* The reader at once, not on its timer (20 ms): user space describes
	 * the new program's interpreter to BPF when it reads this record, and
	 * CPython 3.11 makes its first call into a GPU library about 13 ms
	 * after exec; launches before that have no Python frames. Execs are
	 * rare: the wake-up costs nothing that matters. */
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	counter__add(GPUOBS_CNT_SUBMIT_PROC);
	return 0;
}

/* Runs for every exiting thread. Only the first argument is used: the
 * group_dead flag is not in every kernel's tracepoint, and tp_btf programs
 * may ignore trailing arguments. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(proc_exit, struct task_struct *p)
{
	/* A thread that dies inside a probed call never reaches its return probe. */
	__u32 tid = BPF_CORE_READ(p, pid);
	bpf_map_delete_elem(&call_inflight, &tid);
	bpf_map_delete_elem(&outer_inflight, &tid);
	bpf_map_delete_elem(&ioctl_inflight, &tid);
	bpf_map_delete_elem(&lib_map_inflight, &tid);

	/* The process ends with its last thread, not with its leader (which can
	 * pthread_exit early): do_exit() decrements signal->live before this
	 * tracepoint, so 0 means the whole group is gone. */
	if (BPF_CORE_READ(p, signal, live.counter) != 0)
		return 0;
	__u32 tgid = BPF_CORE_READ(p, tgid);
	bpf_map_delete_elem(&event_procs, &tgid); /* a reused pid is a new process */
	bpf_map_delete_elem(&lib_held, &tgid);    /* killed while held: nothing to resume */
	if (!process__wanted(tgid))
		return 0;
	struct gpuobs_proc *e = proc__reserve(GPUOBS_EV_PROC_EXIT, p);
	if (e) {
		e->exit_code = BPF_CORE_READ(p, exit_code);
		ringbuf__submit(e);
		counter__add(GPUOBS_CNT_SUBMIT_PROC);
	}
	if (filter_tracked)
		bpf_map_delete_elem(&tracked, &tgid);
	return 0;
}

#endif
