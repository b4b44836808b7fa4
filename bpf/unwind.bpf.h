/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* --unwind bpf: DWARF unwinding in BPF, from the unwind tables user space
 * derives from each code file's .eh_frame (userspace/stacks/unwind_table.cpp)
 * and loads into unwind_rows / unwind_procs (layout in bpf/events.h). Per
 * frame: find the mapping of ip, binary-search its file's rows, compute the
 * CFA, read the return address (and saved rbp) from the user stack. Loops
 * are open-coded numeric iterators, so the verifier checks each body once. */
#ifndef GPUOBS_UNWIND_BPF_H
#define GPUOBS_UNWIND_BPF_H

#include "maps.bpf.h"

extern int bpf_iter_num_new(struct bpf_iter_num *it, int start, int end) __ksym;
extern int *bpf_iter_num_next(struct bpf_iter_num *it) __ksym;
extern void bpf_iter_num_destroy(struct bpf_iter_num *it) __ksym;

/* for (i = start; i < end; i++) over a kernel numeric iterator. */
#define gpuobs_for(i, start, end)                                                                                      \
	for (struct bpf_iter_num ___it                                                                                 \
	     __attribute__((aligned(8), cleanup(bpf_iter_num_destroy))), /* naming the destructor makes clang emit its \
									    BTF (cleanup() alone does not) */          \
	     *___once __attribute__((unused)) =                                                                        \
		     (bpf_iter_num_new(&___it, (start), (end)), (void)bpf_iter_num_destroy, (void *)0);                \
	     ({                                                                                                        \
		     int *___v = bpf_iter_num_next(&___it);                                                            \
		     ___v && ((i) = *___v, (i) >= (start) && (i) < (end));                                             \
	     });)

/* 1: --unwind bpf. */
const volatile __u32 unwind_in_bpf = 0;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); /* sized by the loader */
	__type(key, __u32);
	__type(value, __u64);
} unwind_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct gpuobs_unwind_proc);
} unwind_procs SEC(".maps");

#define UNWIND_STOP 0xffffffffffffffffULL

/* The unwind row for ip in process p: 0 when no row covers it (frame-pointer
 * rule), UNWIND_STOP when ip is in no known mapping. A global function: the
 * verifier checks it once, not once per frame of the caller's loop. */
__noinline __u64 unwind_row_for(const struct gpuobs_unwind_proc *p, __u64 ip, __u32 is_return)
{
	if (!p)
		return UNWIND_STOP;
	/* The mapping: binary search over the sorted mappings. */
	__u32 lo = 0, hi = p->n, at = GPUOBS_UNWIND_MAPS_MAX;
	if (hi > GPUOBS_UNWIND_MAPS_MAX)
		hi = GPUOBS_UNWIND_MAPS_MAX;
	for (int i = 0; i < 9 && lo < hi; i++) { /* 2^9 > GPUOBS_UNWIND_MAPS_MAX */
		__u32 mid = (lo + hi) / 2;
		if (mid >= GPUOBS_UNWIND_MAPS_MAX)
			break;
		if (ip < p->m[mid].start) {
			hi = mid;
		} else if (ip >= p->m[mid].end) {
			lo = mid + 1;
		} else {
			at = mid;
			break;
		}
	}
	if (at >= GPUOBS_UNWIND_MAPS_MAX)
		return UNWIND_STOP;
	/* A return address's call is the byte before it. */
	__u64 vaddr = ip - p->m[at].bias - (is_return ? 1 : 0);
	/* The row: the last one starting at or before vaddr. */
	__u32 rlo = p->m[at].row_start, rhi = rlo + p->m[at].row_count, found = 0xffffffff;
	for (int i = 0; i < 32 && rlo < rhi; i++) {
		__u32 mid = rlo + (rhi - rlo) / 2;
		__u64 *row = bpf_map_lookup_elem(&unwind_rows, &mid);
		if (!row)
			return 0;
		if ((__u32)*row <= vaddr) {
			found = mid;
			rlo = mid + 1;
		} else {
			rhi = mid;
		}
	}
	if (found == 0xffffffff)
		return 0;
	__u64 *row = bpf_map_lookup_elem(&unwind_rows, &found);
	return row ? *row : 0;
}

/* Unwinds from (ip, sp, bp) into ips[0 .. cap); returns the frames written,
 * or -1 when this process has no tables (yet): the caller walks frame
 * pointers instead. At a function's entry (at_entry) the probed function is
 * not written: ips[0] is its caller, and cap callers fit (issue 17: with cap
 * 1 the one frame written was the probed function, which user space drops,
 * so --stack-depth 1 --unwind bpf recorded empty stacks). */
static __always_inline long unwind__walk(__u64 ip, __u64 sp, __u64 bp, __u64 *ips, __u32 cap, int at_entry)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	const struct gpuobs_unwind_proc *p = bpf_map_lookup_elem(&unwind_procs, &tgid);
	if (!p)
		return -1;
	/* ips[n] with n >= first_return is a return address. */
	__u32 first_return = 1;
	if (at_entry) {
		/* A function's first instruction, whatever its CFI says: the return
		 * address is at sp and rbp is still the caller's. Stepping here, out
		 * of the loop, keeps the loop's states as few as before. */
		if (bpf_probe_read_user(&ip, 8, (void *)sp) || !ip)
			return -1; /* the frame-pointer walk, with its fault flag and counter */
		sp += 8;
		first_return = 0;
	}
	__u32 n = 0;
	int i;
	gpuobs_for(i, 0, GPUOBS_STACK_MAX)
	{
		if (n >= cap || n >= GPUOBS_STACK_MAX)
			break;
		ips[n] = ip;
		/* Frame 0 outside an entry is where the probe fired; the others are
		 * return addresses. An address no table covers (its file's table is
		 * still being built, or JIT code) takes the frame-pointer rule. */
		__u64 row = unwind_row_for(p, ip, n >= first_return);
		n++;
		if (row == UNWIND_STOP)
			row = 0;
		__u32 type = (row >> 48) & 0xff;
		__s64 cfa_off = (__s16)(row >> 32);
		__s64 rbp_slot = (__s8)(row >> 56);
		__u64 cfa, ra = 0, next_bp = bp;
		if (!row || type == GPUOBS_UNWIND_FP) {
			cfa = bp + 16;
			if (bpf_probe_read_user(&ra, 8, (void *)(bp + 8)) ||
			    bpf_probe_read_user(&next_bp, 8, (void *)bp))
				break;
		} else if (type == GPUOBS_UNWIND_END) {
			break;
		} else {
			cfa = (type == GPUOBS_UNWIND_RBP ? bp : sp) + cfa_off;
			if (bpf_probe_read_user(&ra, 8, (void *)(cfa - 8)))
				break;
			if (rbp_slot && bpf_probe_read_user(&next_bp, 8, (void *)(cfa + rbp_slot * 8)))
				break;
		}
		if (cfa <= sp || !ra)
			break;
		sp = cfa;
		bp = next_bp;
		ip = ra;
	}
	return n;
}

#endif
