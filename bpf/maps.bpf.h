/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Maps, read-only knobs and small helpers shared by every gpuobs program. */
#ifndef GPUOBS_MAPS_BPF_H
#define GPUOBS_MAPS_BPF_H

#include "events.h"

/* Set by the loader before load (userspace/loader/engine.cpp). */
const volatile __u32 gpuobs_abi_version = GPUOBS_ABI_VERSION;
/* 1: only processes in the "tracked" map (gpuobs record); 0: the whole host. */
const volatile __u32 filter_tracked = 0;
/* Events of this process (the observer itself) are never recorded. */
const volatile __u32 self_tgid = 0;
/* Half the ring's size, set with the ring's size by the loader: a constant,
 * so the hot path asks the ring only how full it is. */
const volatile __u64 ring_wake_bytes = 8 << 20;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20); /* resized by the loader */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, GPUOBS_CNT__COUNT);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* tgid -> 1: processes followed by gpuobs record (the command and its descendants). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u32);
} tracked SEC(".maps");

/* Watched character devices: key (major << 32 | minor); minor 0xffffffff
 * watches every minor of the major. Value: the driver (GPUOBS_DRV_*). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u64);
	__type(value, __u32);
} watched_devs SEC(".maps");

#define GPUOBS_ANY_MINOR 0xffffffffULL

/* v = min(v, max) in v's own register: the verifier then knows the bound
 * on the register that is used (clang clamps a zero-extended copy
 * otherwise). max must be a constant. */
#define GPUOBS_CLAMP(v, max) asm volatile("if %[x] <= %[m] goto +1; %[x] = %[m]" : [x] "+r"(v) : [m] "i"(max))

static __always_inline void counter__add(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);
	if (v)
		__sync_fetch_and_add(v, 1); /* uprobe programs can be preempted on this CPU */
}

/* Is this process one we record? Called first in every handler. */
static __always_inline int process__wanted(__u32 tgid)
{
	if (tgid == self_tgid)
		return 0;
	if (!filter_tracked)
		return 1;
	return bpf_map_lookup_elem(&tracked, &tgid) != 0;
}

/* Submit without waking the reader: it drains on a short timer. Wake it only
 * when the buffer is more than half full, so a burst cannot fill it while the
 * reader sleeps (docs/performance.md: a wake-up per record costs ~1.4 us). */
static __always_inline __u64 ringbuf__wake_flags(void)
{
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > ring_wake_bytes ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

static __always_inline void ringbuf__submit(void *rec)
{
	bpf_ringbuf_submit(rec, ringbuf__wake_flags());
}

/* Set (on this CPU) by a record that needs user space at once: the Python
 * walk found a stack it had not seen, whose code objects user space must
 * read while the process lives (bpf/python.bpf.h). record__submit wakes the
 * reader and clears it. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} wake_now SEC(".maps");

/* Processes that have produced an event record (deleted when they exit). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u8);
} event_procs SEC(".maps");

/*
 * Records are built in a scratch slot and copied into the ring at the size
 * they use (bpf_ringbuf_output), not reserved at their largest: a launch
 * with 6 frames takes 160 bytes of ring instead of 624 at depth 64, so the
 * same ring absorbs about 4 times the burst while the reader is held up.
 * A ring reservation needs a constant size, hence the copy.
 *
 * Uprobe programs are preemptible (migration is disabled, so the CPU is
 * fixed, but another task's program can run on it meanwhile), so a slot is
 * claimed with a compare-and-swap on its first word, not by nesting depth:
 * each CPU has GPUOBS_SCRATCH_SLOTS slots; an event that finds all of its
 * CPU's slots taken is counted (GPUOBS_CNT_DROP_SCRATCH_BUSY) and lost.
 * A slot is [__u64 busy][scratch_bytes of record] (BPF has 64-bit
 * compare-and-swap on every CPU version the object is built for).
 */
/* Bytes of record a slot holds: set by the loader from the stack options
 * (GPUOBS_RECORD_BODY_MAX + stack section); the map's value is 8 more. */
const volatile __u32 scratch_bytes = 8;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, 16); /* resized by the loader: 8 + scratch_bytes */
	__uint(max_entries, 1); /* resized: possible CPUs * GPUOBS_SCRATCH_SLOTS */
} scratch SEC(".maps");

/* A free slot of this CPU, claimed; 0 (counted) if none. *busy is what
 * record__submit releases. */
static __always_inline void *record__begin(__u64 **busy)
{
	__u32 base = bpf_get_smp_processor_id() * GPUOBS_SCRATCH_SLOTS;
	for (__u32 i = 0; i < GPUOBS_SCRATCH_SLOTS; i++) {
		__u32 key = base + i;
		__u64 *s = bpf_map_lookup_elem(&scratch, &key);
		if (!s)
			break;
		if (__sync_val_compare_and_swap(s, 0, 1) == 0) {
			*busy = s;
			return (__u8 *)s + 8;
		}
	}
	counter__add(GPUOBS_CNT_DROP_SCRATCH_BUSY);
	return 0;
}

/* Copies the first `size` bytes of the slot's record into the ring (its
 * header's size set first) and frees the slot. The first record of a
 * process wakes the reader at once: it reads the process's mappings for its
 * stacks while the process still exists, even one that exits milliseconds
 * later. Returns 0 when the ring is full (the caller counts the drop). */
static __always_inline int record__submit(void *rec, __u64 *busy, __u64 size, __u32 tgid)
{
	int ok = 0;
	if (size >= sizeof(struct gpuobs_hdr) && size <= scratch_bytes) {
		((struct gpuobs_hdr *)rec)->size = (__u32)size;
		__u64 flags = ringbuf__wake_flags();
		__u32 zero = 0;
		__u32 *wake = bpf_map_lookup_elem(&wake_now, &zero);
		if (wake && *wake) {
			*wake = 0;
			flags = BPF_RB_FORCE_WAKEUP;
		}
		if (!bpf_map_lookup_elem(&event_procs, &tgid)) {
			__u8 one = 1;
			bpf_map_update_elem(&event_procs, &tgid, &one, BPF_ANY);
			flags = BPF_RB_FORCE_WAKEUP;
		}
		ok = bpf_ringbuf_output(&events, rec, size, flags) == 0;
	}
	*busy = 0;
	return ok;
}

/* Entry/exit pairs keep the entry per thread. A thread with an entry already
 * stored missed its exit (count stale, replace); a full map loses the call. */
static __always_inline void inflight__store(void *map, __u32 tid, void *value, __u32 stale_counter, __u32 full_counter)
{
	if (bpf_map_update_elem(map, &tid, value, BPF_NOEXIST) == 0)
		return;
	if (bpf_map_lookup_elem(map, &tid)) {
		counter__add(stale_counter);
		bpf_map_update_elem(map, &tid, value, BPF_ANY);
	} else {
		counter__add(full_counter);
	}
}

static __always_inline void hdr__fill(struct gpuobs_hdr *h, __u32 type, __u32 size, __u64 pid_tgid, __u64 ts)
{
	h->type = type;
	h->size = size;
	h->ts_ns = ts;
	h->tgid = pid_tgid >> 32;
	h->tid = (__u32)pid_tgid;
}

#endif
