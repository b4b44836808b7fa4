/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The caller's user stack, appended to every event record (bpf/events.h:
 * ips[nr] + struct gpuobs_stack_trailer). Frames are walked here
 * (stack__fp_walk), never interned in a stack map: a BPF stack id can be lost
 * or, with BPF_F_REUSE_STACKID, name another stack after a hash collision.
 * User space interns the frames (userspace/stacks/). */
#ifndef GPUOBS_STACK_BPF_H
#define GPUOBS_STACK_BPF_H

#include "maps.bpf.h"
#include "python.bpf.h"
#include "unwind.bpf.h"

/* Most frames per record, set by the loader (<= GPUOBS_STACK_MAX; 0: no
 * stacks). Read-only data is a constant to the verifier, which bounds every
 * write into a scratch slot with it. */
const volatile __u32 stack_depth = 64;
/* Bytes of user stack copied per record for DWARF unwinding in user space
 * (--unwind dwarf; 0: frame pointers only). <= GPUOBS_STACK_COPY_MAX. */
const volatile __u32 stack_copy_bytes = 0;

#define STACK_COPY_SECTION                                                                                             \
	(stack_copy_bytes                                                                                              \
		 ? sizeof(struct gpuobs_stack_regs) + (__u64)stack_copy_bytes + sizeof(struct gpuobs_stack_copy_hdr)   \
		 : 0)
/* The Python section's room in a scratch slot (the walk's read buffer too). */
#define STACK_PY_AREA (python_depth ? sizeof(struct gpuobs_py_area) : 0)
#define STACK_BYTES   (STACK_COPY_SECTION + (__u64)stack_depth * 8 + STACK_PY_AREA + sizeof(struct gpuobs_stack_trailer))

/* Copies the user stack from sp upward into area (regs, bytes, header). */
static __always_inline void stack__copy(__u8 *area, __u64 ip, __u64 sp, __u64 bp)
{
	__u32 copy = stack_copy_bytes;
	if (copy > GPUOBS_STACK_COPY_MAX)
		copy = GPUOBS_STACK_COPY_MAX;
	struct gpuobs_stack_regs *r = (struct gpuobs_stack_regs *)area;
	r->ip = ip;
	r->sp = sp;
	r->bp = bp;
	r->reserved = 0;
	__u8 *bytes = area + sizeof(*r);
	struct gpuobs_stack_copy_hdr *h = (struct gpuobs_stack_copy_hdr *)(bytes + copy);
	h->cap = copy;
	/* The main thread's stack ends above its initial stack pointer: never
	 * read past the mapping (the whole read would fail). */
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 top = BPF_CORE_READ(task, mm, start_stack);
	__u64 len = copy;
	if (sp < top && top - sp < len)
		len = top - sp;
	if (len > copy)
		len = copy;
	if (bpf_probe_read_user(bytes, len, (void *)sp)) {
		/* A thread stack near its end: the rest of sp's page is mapped. */
		len = 4096 - (sp & 4095);
		if (len > copy)
			len = copy;
		if (bpf_probe_read_user(bytes, len, (void *)sp))
			len = 0;
	}
	h->len = (__u32)len;
}

/* The frame-pointer walk bpf_get_stack does (perf_callchain_user: ip, then
 * the return address of each frame the saved rbp chain links), without its
 * last read. The kernel follows the chain until a read faults, and every
 * chain ends in one: glibc's _start leaves rbp 0, and a caller built without
 * frame pointers leaves whatever its rbp holds. That page fault, taken in
 * the kernel and fixed up, was most of the launch probe's time on the H100
 * host (docs/performance.md, issue 42). This walk reads a frame only where
 * one can be: 8-byte aligned, at or above sp and above the frame before it
 * (the stack grows down, so callers' frames lie higher). It stops where the
 * kernel's faults, and before a chain into readable garbage the kernel
 * would follow. Returns the frames stored (ip first). */
static __always_inline __u32 stack__fp_walk(__u64 ip, __u64 sp, __u64 bp, __u64 *ips, __u32 cap)
{
	if (!cap)
		return 0;
	ips[0] = ip;
	__u32 n = 1;
	__u64 low = sp;
	int i;
	gpuobs_for(i, 1, GPUOBS_STACK_MAX)
	{
		if (n >= cap || n >= GPUOBS_STACK_MAX)
			break;
		if (bp < low || (bp & 7))
			break;
		__u64 frame[2]; /* the saved rbp, then the return address */
		if (bpf_probe_read_user(frame, sizeof(frame), (void *)bp))
			break;
		ips[n] = frame[1];
		n++;
		low = bp + sizeof(frame);
		bp = frame[0];
	}
	return n;
}

/* Fills the stack area that starts at `area` (at most STACK_BYTES long) and
 * returns the bytes it used: the copy section, the frames walked, the
 * trailer. ip, sp, bp are the user registers where the probe fired, site one
 * of GPUOBS_STACK_F_AT_*. No interpretation here: user space knows which
 * words are code. */
static __always_inline __u32 stack__fill(void *ctx, __u64 ip, __u64 sp, __u64 bp, __u8 *area, __u32 site)
{
	__u32 cap = stack_depth;
	if (cap > GPUOBS_STACK_MAX)
		cap = GPUOBS_STACK_MAX;
	__u32 flags = site;
	__u32 used = 0;
	if (stack_copy_bytes) {
		stack__copy(area, ip, sp, bp);
		area += STACK_COPY_SECTION;
		used = STACK_COPY_SECTION;
		flags |= GPUOBS_STACK_F_COPY;
	}
	__u64 *ips = (__u64 *)area;
	__u64 sp_word = 0;
	__u32 nr = 0;
	if (cap) {
		flags |= GPUOBS_STACK_F_ASKED;
		if (site != GPUOBS_STACK_F_AT_RETURN && bpf_probe_read_user(&sp_word, sizeof(sp_word), (void *)sp))
			sp_word = 0;
		long n = -1;
		if (unwind_in_bpf) {
			n = unwind__walk(ip, sp, bp, ips, cap, site == GPUOBS_STACK_F_AT_ENTRY);
			if (n >= 0) {
				flags |= GPUOBS_STACK_F_BPF_DWARF;
				nr = (__u32)n;
			}
		}
		if (n < 0) {
			nr = stack__fp_walk(ip, sp, bp, ips, cap);
			if (!nr) {
				flags |= GPUOBS_STACK_F_FAULT;
				counter__add(GPUOBS_CNT_STACK_FAULT);
			}
		}
		if (nr >= cap) {
			nr = cap;
			flags |= GPUOBS_STACK_F_FULL;
		}
	}
	/* The Python frames follow the native ones (bpf/events.h). */
	__u64 py = 0;
	if (cap && python_depth) {
		py = py__walk((struct gpuobs_py_area *)(area + (__u64)nr * 8));
		GPUOBS_CLAMP(py,
			     sizeof(struct gpuobs_py_frame) * GPUOBS_PY_FRAMES_MAX + sizeof(struct gpuobs_py_trailer));
		if (py)
			flags |= GPUOBS_STACK_F_PYTHON;
	}
	/* The record ends after the frames walked: the trailer follows them. */
	struct gpuobs_stack_trailer *t = (struct gpuobs_stack_trailer *)(area + (__u64)nr * 8 + py);
	t->sp_word = sp_word;
	t->nr = (__u16)nr;
	t->cap = (__u16)nr;
	t->flags = flags;
	return used + nr * 8 + (__u32)py + sizeof(struct gpuobs_stack_trailer);
}

#endif
