/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Uprobe on cuLaunchKernel / cuLaunchKernel_ptsz, and on
 * cuLaunchCooperativeKernel(_ptsz), whose arguments are the same minus
 * extra (libcuda.so.1).
 * Prototype (cuda.h): CUresult cuLaunchKernel(CUfunction f, unsigned gX, gY, gZ,
 *   unsigned bX, bY, bZ, unsigned sharedMemBytes, CUstream hStream,
 *   void **kernelParams, void **extra)
 * Arguments 1..6 in rdi..r9; at function entry [sp] is the return address and
 * arguments 7..11 are the 8-byte stack slots [sp+8] .. [sp+40]. */
#ifndef GPUOBS_LAUNCH_BPF_H
#define GPUOBS_LAUNCH_BPF_H

#include "maps.bpf.h"
#include "stack.bpf.h"

struct launch_stack_args {
	__u64 block_z;
	__u64 shared_mem_bytes;
	__u64 stream;
	__u64 kernel_params;
	__u64 extra;
};

/* A filled launch record: the caller's stack after it, then into the ring,
 * counted (cu_launch_kernel here, ze_launch_kernel in level_zero.bpf.h). */
static __always_inline void launch__submit(struct pt_regs *ctx, struct gpuobs_launch *e, __u64 *busy, __u64 pid_tgid)
{
	__u32 stack = stack__fill(ctx, PT_REGS_IP(ctx), PT_REGS_SP(ctx), PT_REGS_FP(ctx), (__u8 *)(e + 1),
				  GPUOBS_STACK_F_AT_ENTRY);
	if (record__submit(e, busy, sizeof(*e) + stack, pid_tgid >> 32))
		counter__add(GPUOBS_CNT_SUBMIT_LAUNCH);
	else
		counter__add(GPUOBS_CNT_DROP_LAUNCH);
}

SEC("uprobe")
/* libbpf 1.1's BPF_KPROBE takes at most 5 arguments: blockDimY (arg 6) is read
 * from its register directly. */
int BPF_UPROBE(cu_launch_kernel, __u64 f, __u32 gx, __u32 gy, __u32 gz, __u32 bx)
{
	__u32 by = (__u32)PT_REGS_PARM6(ctx);
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!process__wanted(pid_tgid >> 32))
		return 0;

	__u64 *busy;
	struct gpuobs_launch *e = record__begin(&busy);
	if (!e)
		return 0;
	hdr__fill(&e->hdr, GPUOBS_EV_LAUNCH, 0, pid_tgid, bpf_ktime_get_ns());
	e->function = f;
	e->grid_x = gx; /* 32-bit arguments: the register's upper half is unspecified */
	e->grid_y = gy;
	e->grid_z = gz;
	e->block_x = bx;
	e->block_y = by;
	e->api = GPUOBS_COOKIE_API(bpf_get_attach_cookie(ctx));
	e->pad0 = 0;

	struct launch_stack_args sa;
	if (bpf_probe_read_user(&sa, sizeof(sa), (void *)(PT_REGS_SP(ctx) + 8)) == 0) {
		e->block_z = (__u32)sa.block_z;
		e->shared_mem_bytes = (__u32)sa.shared_mem_bytes;
		e->stream = sa.stream;
		e->kernel_params = sa.kernel_params;
		e->extra = sa.extra;
		e->flags = 0;
	} else {
		e->block_z = 0;
		e->shared_mem_bytes = 0;
		e->stream = 0;
		e->kernel_params = 0;
		e->extra = 0;
		e->flags = GPUOBS_LAUNCH_F_STACK_ARGS_MISSING;
		counter__add(GPUOBS_CNT_LAUNCH_ARGS_FAULT);
	}
	launch__submit(ctx, e, busy, pid_tgid);
	return 0;
}

/* The floor every probe is measured against (bench/): a uprobe that does
 * nothing, attached to the same symbols. Never attached in a capture. */
SEC("uprobe")
int empty_uprobe(struct pt_regs *ctx)
{
	return 0;
}

/* The floor of a call probed at entry and return. */
SEC("uretprobe")
int empty_uretprobe(struct pt_regs *ctx)
{
	return 0;
}

#endif
