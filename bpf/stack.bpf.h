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

/* Fills the stack area that starts at `area` (STACK_BYTES long); sp is the
 * user stack pointer where the probe fired, site one of GPUOBS_STACK_F_AT_*.
 * No interpretation here: user space knows which words are code. */
static __always_inline void stack__fill(void *ctx, __u64 sp, __u8 *area, __u32 site)
{
	__u32 cap = stack_depth;
	if (cap > GPUOBS_STACK_MAX)
		cap = GPUOBS_STACK_MAX;
	__u64 *ips = (__u64 *)area;
	struct gpuobs_stack_trailer *t = (struct gpuobs_stack_trailer *)(area + (__u64)cap * 8);
	t->cap = cap;
	t->flags = site;
	t->nr = 0;
	t->sp_word = 0;
	if (!cap)
		return;
	if (site != GPUOBS_STACK_F_AT_RETURN && bpf_probe_read_user(&t->sp_word, sizeof(t->sp_word), (void *)sp))
		t->sp_word = 0;
	long n = bpf_get_stack(ctx, ips, cap * 8, BPF_F_USER_STACK);
	if (n <= 0) {
		t->flags |= GPUOBS_STACK_F_FAULT;
		counter__add(GPUOBS_CNT_STACK_FAULT);
		return;
	}
	__u32 nr = (__u32)n / 8;
	if (nr >= cap)
		t->flags |= GPUOBS_STACK_F_FULL;
	t->nr = nr;
}

#endif
