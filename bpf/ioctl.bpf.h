/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* ioctl(2) on watched character devices (NVIDIA 195:*, nvidia-uvm, /dev/kfd,
 * DRM nodes 226:N, or a stand-in device chosen by a test). Entry stores the call per thread;
 * exit emits one record with latency and return value. */
#ifndef GPUOBS_IOCTL_BPF_H
#define GPUOBS_IOCTL_BPF_H

#include "maps.bpf.h"
#include "stack.bpf.h"
#include "drm.bpf.h"

struct ioctl_entry {
	__u64 ts_ns;
	__u64 arg;
	__u8 in[GPUOBS_IOCTL_ENTRY_MAX]; /* amdgpu: the argument at entry (GPUOBS_IOCTL_AUX_ENTRY) */
	__u32 cmd;
	__u32 major;
	__u32 minor;
	__s32 fd;
	__u32 driver;
	__u32 in_len; /* valid bytes of in */
};

/* (driver, command) -> what to copy of its argument (events.h). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct gpuobs_ioctl_rule_key);
	__type(value, struct gpuobs_ioctl_rule);
} ioctl_rules SEC(".maps");

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

/* The driver of a watched device, or -1 when the device is not watched. */
static __always_inline int dev__watched(__u32 major, __u32 minor)
{
	__u64 key = ((__u64)major << 32) | minor;
	__u32 *drv = bpf_map_lookup_elem(&watched_devs, &key);
	if (!drv) {
		key = ((__u64)major << 32) | GPUOBS_ANY_MINOR;
		drv = bpf_map_lookup_elem(&watched_devs, &key);
	}
	return drv ? (int)*drv : -1;
}

#define GPUOBS_IOC_SIZE(cmd) (((cmd) >> 16) & 0x3fff)
#define GPUOBS_PAGE          4096

/* Copies up to GPUOBS_IOCTL_HEAD_MAX bytes from user memory. A struct that
 * ends just before an unmapped page fails as one read, so then only the part
 * in the first page is kept. Returns the bytes copied. */
/* len clamped to GPUOBS_IOCTL_HEAD_MAX in the register that is then used:
 * the compiler may clamp a copy of len and pass the original, which the
 * verifier then sees unbounded. A mask (& 511) is not enough: aux ends 256
 * bytes before the end of a record without stack frames (--stack-depth 0),
 * so the verifier must know len <= 256 (issue 20). */
static __always_inline __u64 ioctl__clamp_len(__u64 len)
{
	GPUOBS_CLAMP(len, GPUOBS_IOCTL_HEAD_MAX);
	return len;
}

/* Up to len (<= GPUOBS_IOCTL_HEAD_MAX) bytes of user memory at src into dst;
 * the bytes copied: all, or what the first page held, or 0. */
static __always_inline __u32 user__copy(__u8 *dst, __u32 want, __u64 src)
{
	__u64 len = ioctl__clamp_len(want);
	if (!len || !src)
		return 0;
	if (bpf_probe_read_user(dst, len, (void *)src) == 0)
		return len;
	__u64 first = GPUOBS_PAGE - (src & (GPUOBS_PAGE - 1));
	if (first >= len)
		return 0;
	first = ioctl__clamp_len(first);
	if (bpf_probe_read_user(dst, first, (void *)src))
		return 0;
	return first;
}

/* The first GPUOBS_IOCTL_ENTRY_MAX bytes of the argument into the entry, or
 * what of them the first page holds (a small struct at a page's end). */
static __always_inline __u32 ioctl__entry_copy(__u8 *dst, __u64 src)
{
	if (bpf_probe_read_user(dst, GPUOBS_IOCTL_ENTRY_MAX, (void *)src) == 0)
		return GPUOBS_IOCTL_ENTRY_MAX;
	__u64 first = GPUOBS_PAGE - (src & (GPUOBS_PAGE - 1));
	if (first >= GPUOBS_IOCTL_ENTRY_MAX)
		return 0;
	GPUOBS_CLAMP(first, GPUOBS_IOCTL_ENTRY_MAX);
	if (!first || bpf_probe_read_user(dst, first, (void *)src))
		return 0;
	return first;
}

/* The argument struct and, by the rule, the block one of its fields names
 * (or the entry's copy of the argument: in, in_len). */
static __always_inline void ioctl__copy_args(struct gpuobs_ioctl *e, const __u8 *in, __u32 in_len)
{
	struct gpuobs_ioctl_rule_key key = {
		.driver = e->driver,
		.cmd_key = (e->driver == GPUOBS_DRV_NVIDIA_UVM || e->driver == GPUOBS_DRV_OTHER) ? e->cmd
												 : (e->cmd & 0xffff),
	};
	struct gpuobs_ioctl_rule *rule = bpf_map_lookup_elem(&ioctl_rules, &key);
	__u32 want = 0;
	if (rule && rule->head_len)
		want = rule->head_len;
	else if (e->driver != GPUOBS_DRV_NVIDIA_UVM) /* UVM numbers carry no size */
		want = GPUOBS_IOC_SIZE(e->cmd);
	if (want > GPUOBS_IOCTL_HEAD_MAX)
		e->flags |= GPUOBS_IOCTL_F_HEAD_CUT;
	__u32 got = user__copy(e->head, want, e->arg);
	e->head_len = got;
	if (got < want && got < GPUOBS_IOCTL_HEAD_MAX)
		e->flags |= GPUOBS_IOCTL_F_HEAD_FAULT;
	if (!rule || rule->aux_mode == GPUOBS_IOCTL_AUX_NONE)
		return;
	if (rule->aux_mode == GPUOBS_IOCTL_AUX_ENTRY || rule->aux_mode == GPUOBS_IOCTL_AUX_AMDGPU_CS) {
		if (in_len < 8) {
			e->flags |= GPUOBS_IOCTL_F_AUX_FAULT;
			return;
		}
		if (rule->aux_mode == GPUOBS_IOCTL_AUX_AMDGPU_CS) {
			e->aux_len = amdgpu__cs_chunks(e, got, *(const __u64 *)in);
		} else {
			__builtin_memcpy(e->aux, in, GPUOBS_IOCTL_ENTRY_MAX);
			e->aux_len = in_len < rule->aux_len ? in_len : rule->aux_len;
		}
		return;
	}
	__u64 src = 0;
	__u32 len = rule->aux_len;
	__u32 off = rule->aux_off;
	if (rule->aux_mode == GPUOBS_IOCTL_AUX_PTR) {
		if (off > GPUOBS_IOCTL_HEAD_MAX - 8 || off + 8 > got)
			return;
		src = *(__u64 *)&e->head[off & (GPUOBS_IOCTL_HEAD_MAX - 1)];
	} else {
		src = e->arg + off;
	}
	if (!src)
		return; /* a NULL pointer field (a class without parameters): nothing to read */
	__u32 lf = rule->aux_len_field;
	if (lf && lf <= GPUOBS_IOCTL_HEAD_MAX - 4 && lf - 1 + 4 <= got) {
		__u32 n = *(__u32 *)&e->head[(lf - 1) & (GPUOBS_IOCTL_HEAD_MAX - 1)];
		if (n < len)
			len = n;
	}
	/* aux_len is an upper bound (class parameter blocks differ in size):
	 * only an aux of which nothing could be read is a fault. */
	__u32 copied = user__copy(e->aux, len, src);
	e->aux_len = copied;
	if (len && !copied)
		e->flags |= GPUOBS_IOCTL_F_AUX_FAULT;
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
	int driver = dev__watched(major, minor);
	if (driver < 0)
		return 0;

	struct ioctl_entry ent = {
		.ts_ns = bpf_ktime_get_ns(),
		.arg = ctx->args[2],
		.cmd = (__u32)ctx->args[1],
		.major = major,
		.minor = minor,
		.fd = fd,
		.driver = (__u32)driver,
	};
	if (driver == GPUOBS_DRV_AMDGPU)
		ent.in_len = ioctl__entry_copy(ent.in, ent.arg);
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

	__u64 *busy;
	struct gpuobs_ioctl *e = record__begin(&busy);
	if (!e) {
		bpf_map_delete_elem(&ioctl_inflight, &tid);
		return 0;
	}
	hdr__fill(&e->hdr, GPUOBS_EV_IOCTL, 0, pid_tgid, ent->ts_ns);
	e->latency_ns = now - ent->ts_ns;
	e->arg = ent->arg;
	e->ret = ctx->ret;
	e->cmd = ent->cmd;
	e->dev_major = ent->major;
	e->dev_minor = ent->minor;
	e->fd = ent->fd;
	e->driver = ent->driver;
	e->head_len = 0;
	e->aux_len = 0;
	e->flags = 0;
	e->pad0 = 0;
	/* The entry's bytes outlive its deletion on this program's stack. */
	__u8 in[GPUOBS_IOCTL_ENTRY_MAX];
	__builtin_memcpy(in, ent->in, sizeof(in));
	__u32 in_len = ent->in_len;
	bpf_map_delete_elem(&ioctl_inflight, &tid);
	ioctl__copy_args(e, in, in_len);
	/* The syscall's user registers: the thread is in ioctl(2) itself. */
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	__u32 stack = stack__fill(ctx, BPF_CORE_READ(regs, ip), BPF_CORE_READ(regs, sp), BPF_CORE_READ(regs, bp),
				  (__u8 *)(e + 1), GPUOBS_STACK_F_AT_SYSCALL);
	if (record__submit(e, busy, sizeof(*e) + stack, pid_tgid >> 32))
		counter__add(GPUOBS_CNT_SUBMIT_IOCTL);
	else
		counter__add(GPUOBS_CNT_DROP_IOCTL);
	return 0;
}

#endif
