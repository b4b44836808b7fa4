/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The caller's user stack, appended to every event record (bpf/events.h:
 * ips[cap] + struct gpuobs_stack_trailer). Frames are copied with
 * bpf_get_stack, never interned in a stack map: a BPF stack id can be lost or,
 * with BPF_F_REUSE_STACKID, name another stack after a hash collision. User
 * space interns the frames (userspace/stacks/). */
#ifndef GPUOBS_STACK_BPF_H
#define GPUOBS_STACK_BPF_H

#include "maps.bpf.h"

/* Frames per record, set by the loader (<= GPUOBS_STACK_MAX; 0: no stacks).
 * Read-only data is a constant to the verifier, so record sizes stay constant. */
const volatile __u32 stack_depth = 64;

#define STACK_BYTES ((__u64)stack_depth * 8 + sizeof(struct gpuobs_stack_trailer))

/* Where the probe fired: what frame 0 of the walk is. */
enum stack_site {
	STACK_AT_RETURN,  /* return probe: ip is the call site, rbp the caller's frame */
	STACK_AT_ENTRY,   /* first instruction: ip is the callee, its caller is at [sp] */
	STACK_AT_SYSCALL, /* syscall exit: ip is in the libc wrapper, which has no frame */
};

/* Fills the stack area that starts at `area` (STACK_BYTES long); sp is the
 * user stack pointer where the probe fired. */
static __always_inline void stack__fill(void *ctx, __u64 sp, __u8 *area, enum stack_site site)
{
	__u32 cap = stack_depth;
	if (cap > GPUOBS_STACK_MAX)
		cap = GPUOBS_STACK_MAX;
	__u64 *ips = (__u64 *)area;
	struct gpuobs_stack_trailer *t = (struct gpuobs_stack_trailer *)(area + (__u64)cap * 8);
	t->cap = cap;
	t->flags = 0;
	t->nr = 0;
	if (!cap)
		return;
	long n = bpf_get_stack(ctx, ips, cap * 8, BPF_F_USER_STACK);
	if (n <= 0) {
		t->flags = GPUOBS_STACK_F_FAULT;
		counter__add(GPUOBS_CNT_STACK_FAULT);
		return;
	}
	__u32 nr = (__u32)n / 8;
	if (site != STACK_AT_RETURN) {
		/* The frame-pointer walk goes from ip to the frame rbp points at:
		 * the caller's caller. The caller is the return address at [sp]
		 * (kernels >= 6.10 add it themselves when the function starts with
		 * push %rbp or endbr64: then it is ips[1] already). */
		__u64 ret = 0;
		if (bpf_probe_read_user(&ret, sizeof(ret), (void *)sp) == 0 && ret) {
			if (site == STACK_AT_ENTRY && nr >= 2 && ips[1] == ret) {
				t->flags |= GPUOBS_STACK_F_DROP_FIRST;
			} else {
				ips[0] = ret; /* replaces the callee's own address / the libc wrapper */
				t->flags |= GPUOBS_STACK_F_FROM_SP;
			}
		} else if (site == STACK_AT_ENTRY) {
			t->flags |= GPUOBS_STACK_F_DROP_FIRST;
		}
	}
	if (nr >= cap)
		t->flags |= GPUOBS_STACK_F_FULL;
	t->nr = nr;
}

#endif
