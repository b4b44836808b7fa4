/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* ioctl(2) on watched character devices (NVIDIA 195:*, nvidia-uvm, /dev/kfd,
 * or a stand-in device chosen by a test). Entry stores the call per thread;
 * exit emits one record with latency and return value. */
#ifndef GPUOBS_IOCTL_BPF_H
#define GPUOBS_IOCTL_BPF_H

#include "maps.bpf.h"
#include "stack.bpf.h"

struct ioctl_entry {
	__u64 ts_ns;
	__u64 arg;
	__u32 cmd;
	__u32 major;
	__u32 minor;
	__s32 fd;
};

/* tid -> call in flight. Deleted at exit on every path. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct ioctl_entry);
} ioctl_inflight SEC(".maps");

/* The character device behind fd in the current task, or 0 if not a char device. */
static __always_inline __u32 fd__chrdev(int fd)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
	if (!fdt || fd < 0 || (unsigned int)fd >= BPF_CORE_READ(fdt, max_fds))
		return 0;
	struct file **fds = BPF_CORE_READ(fdt, fd);
	struct file *file = 0;
	if (bpf_core_read(&file, sizeof(file), &fds[fd]) || !file)
		return 0;
	struct inode *inode = BPF_CORE_READ(file, f_inode);
	if (!inode)
		return 0;
	if ((BPF_CORE_READ(inode, i_mode) & GPUOBS_S_IFMT) != GPUOBS_S_IFCHR)
		return 0;
	return BPF_CORE_READ(inode, i_rdev);
}

static __always_inline int dev__watched(__u32 major, __u32 minor)
{
	__u64 key = ((__u64)major << 32) | minor;
	if (bpf_map_lookup_elem(&watched_devs, &key))
		return 1;
	key = ((__u64)major << 32) | GPUOBS_ANY_MINOR;
	return bpf_map_lookup_elem(&watched_devs, &key) != 0;
}

SEC("tracepoint/syscalls/sys_enter_ioctl")
int ioctl_enter(struct trace_event_raw_sys_enter *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!process__wanted(pid_tgid >> 32))
		return 0;
	int fd = (int)ctx->args[0];
	__u32 dev = fd__chrdev(fd);
	if (!dev)
		return 0;
	__u32 major = GPUOBS_MAJOR(dev), minor = GPUOBS_MINOR(dev);
	if (!dev__watched(major, minor))
		return 0;

	struct ioctl_entry ent = {
		.ts_ns = bpf_ktime_get_ns(),
		.arg = ctx->args[2],
		.cmd = (__u32)ctx->args[1],
		.major = major,
		.minor = minor,
		.fd = fd,
	};
	inflight__store(&ioctl_inflight, (__u32)pid_tgid, &ent, GPUOBS_CNT_IOCTL_STALE, GPUOBS_CNT_IOCTL_ENTRY_FULL);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_ioctl")
int ioctl_exit(struct trace_event_raw_sys_exit *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;
	struct ioctl_entry *ent = bpf_map_lookup_elem(&ioctl_inflight, &tid);
	if (!ent)
		return 0; /* not a watched device: the common case */
	__u64 now = bpf_ktime_get_ns();

	const __u64 size = sizeof(struct gpuobs_ioctl) + STACK_BYTES;
	struct gpuobs_ioctl *e = bpf_ringbuf_reserve(&events, size, 0);
	if (!e) {
		counter__add(GPUOBS_CNT_DROP_IOCTL);
		bpf_map_delete_elem(&ioctl_inflight, &tid);
		return 0;
	}
	hdr__fill(&e->hdr, GPUOBS_EV_IOCTL, size, pid_tgid, ent->ts_ns);
	e->latency_ns = now - ent->ts_ns;
	e->arg = ent->arg;
	e->ret = ctx->ret;
	e->cmd = ent->cmd;
	e->dev_major = ent->major;
	e->dev_minor = ent->minor;
	e->fd = ent->fd;
	bpf_map_delete_elem(&ioctl_inflight, &tid);
	/* The syscall's user registers: the thread is in ioctl(2) itself. */
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	stack__fill(ctx, BPF_CORE_READ(regs, ip), BPF_CORE_READ(regs, sp), BPF_CORE_READ(regs, bp), (__u8 *)(e + 1),
		    GPUOBS_STACK_F_AT_SYSCALL);
	ringbuf__submit_event(e, pid_tgid >> 32);
	counter__add(GPUOBS_CNT_SUBMIT_IOCTL);
	return 0;
}

#endif
