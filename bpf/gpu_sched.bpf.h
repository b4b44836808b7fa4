/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* GPU jobs as the kernel schedules them: the DRM GPU scheduler's
 * tracepoints (queued, run on a ring, done) and dma_fence_signaled, on
 * kernels whose drivers use them (amdgpu, xe, nouveau, panthor, v3d, ...;
 * i915 signals its own fences). No vendor library is involved.
 *
 * Classic tracepoint programs that copy the trace entry as the kernel wrote
 * it: the entry's layout differs across kernels (before 6.17 it held a fence
 * pointer and a job id, since then the fence's context and seqno and the
 * DRM client id), and its strings are __data_loc fields placed after the
 * fixed ones. Reading fields here would need a per-kernel offset table for
 * every field and string handling in BPF; one bounded copy needs neither,
 * and user space decodes it with the event's own format file
 * (decode/gpu_trace.cpp), which the tests drive with recorded formats. Only
 * the filter reads a field (the fence key), at an offset user space took
 * from the same format file.
 *
 * The loader turns autoload off for the programs whose tracepoint this
 * kernel lacks (userspace/loader/engine.cpp): the gpu_scheduler events exist
 * only while a DRM scheduler driver is loaded, and one kernel has one of the
 * two name generations. */
#ifndef GPUOBS_GPU_SCHED_BPF_H
#define GPUOBS_GPU_SCHED_BPF_H

#include "maps.bpf.h"

/* Indexed by GPUOBS_GPU_TP_*: where the event's fence key sits in its trace
 * entry (fence_context since 6.17, the fence pointer before; the context for
 * dma_fence_signaled) and its size (4 or 8); offset 0: the event has none.
 * Set by the loader from the format files; read only in record mode. */
const volatile __u32 gpu_key_off[GPUOBS_GPU_TP_FENCE + 1] = {};
const volatile __u32 gpu_key_size[GPUOBS_GPU_TP_FENCE + 1] = {};

/* Fence keys of the jobs the recorded processes queued. The run, done and
 * signal events fire in scheduler workers and interrupts, not in the
 * submitting process, so in record mode they are kept only when their key
 * was queued by a tracked process. LRU: a job never finished ages out. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u64);
	__type(value, __u8);
} gpu_job_keys SEC(".maps");

static __always_inline __u64 gpu_trace__key(void *ctx, __u32 event)
{
	if (event > GPUOBS_GPU_TP_FENCE)
		return 0;
	__u32 off = gpu_key_off[event];
	if (!off || off > GPUOBS_GPU_TRACE_RAW_MAX - 8)
		return 0;
	if (gpu_key_size[event] == 4) {
		__u32 v = 0;
		bpf_probe_read_kernel(&v, sizeof(v), (__u8 *)ctx + off);
		return v;
	}
	__u64 v = 0;
	bpf_probe_read_kernel(&v, sizeof(v), (__u8 *)ctx + off);
	return v;
}

/* Whole host: every event. Record mode: a queue event of a tracked process
 * (its key remembered), and the later events of a remembered key. */
static __always_inline int gpu_trace__wanted(void *ctx, __u32 event, __u32 tgid)
{
	if (!filter_tracked)
		return 1;
	__u64 key = gpu_trace__key(ctx, event);
	if (event == GPUOBS_GPU_TP_QUEUE) {
		if (!process__wanted(tgid))
			return 0;
		if (key) {
			__u8 one = 1;
			bpf_map_update_elem(&gpu_job_keys, &key, &one, BPF_ANY);
		}
		return 1;
	}
	return key && bpf_map_lookup_elem(&gpu_job_keys, &key) != 0;
}

static __always_inline int gpu_trace__emit(void *ctx, __u32 type, __u32 event, __u16 name_gen)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!gpu_trace__wanted(ctx, event, pid_tgid >> 32))
		return 0;
	struct gpuobs_gpu_trace *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		counter__add(GPUOBS_CNT_DROP_GPU_TRACE);
		return 0;
	}
	hdr__fill(&e->hdr, type, sizeof(*e), pid_tgid, bpf_ktime_get_ns());
	e->event = event;
	e->name_gen = name_gen;
	/* The entry sits in the per-CPU trace buffer, which is larger than the
	 * copy: bytes past the entry's end are never decoded (every field and
	 * string is bounded by the format). Its first 8 bytes (the common
	 * fields) are not the entry's for a BPF program: the kernel stores its
	 * pt_regs pointer there before running it (perf_trace_run_bpf_submit),
	 * so they are zeroed here, not copied. On a fault the copy is zeroed. */
	*(__u64 *)e->raw = 0;
	e->raw_len = bpf_probe_read_kernel(e->raw + 8, sizeof(e->raw) - 8, (__u8 *)ctx + 8) == 0 ? sizeof(e->raw) : 0;
	ringbuf__submit(e);
	counter__add(GPUOBS_CNT_SUBMIT_GPU_TRACE);
	return 0;
}

SEC("tracepoint/gpu_scheduler/drm_sched_job_queue")
int gpu_job_queue(void *ctx)
{
	return gpu_trace__emit(ctx, GPUOBS_EV_GPU_JOB, GPUOBS_GPU_TP_QUEUE, 0);
}

SEC("tracepoint/gpu_scheduler/drm_sched_job_run")
int gpu_job_run(void *ctx)
{
	return gpu_trace__emit(ctx, GPUOBS_EV_GPU_JOB, GPUOBS_GPU_TP_RUN, 0);
}

SEC("tracepoint/gpu_scheduler/drm_sched_job_done")
int gpu_job_done(void *ctx)
{
	return gpu_trace__emit(ctx, GPUOBS_EV_GPU_JOB, GPUOBS_GPU_TP_DONE, 0);
}

/* Before 6.17: the same three moments under their first names. */
SEC("tracepoint/gpu_scheduler/drm_sched_job")
int gpu_job_queue_old(void *ctx)
{
	return gpu_trace__emit(ctx, GPUOBS_EV_GPU_JOB, GPUOBS_GPU_TP_QUEUE, 1);
}

SEC("tracepoint/gpu_scheduler/drm_run_job")
int gpu_job_run_old(void *ctx)
{
	return gpu_trace__emit(ctx, GPUOBS_EV_GPU_JOB, GPUOBS_GPU_TP_RUN, 1);
}

SEC("tracepoint/gpu_scheduler/drm_sched_process_job")
int gpu_job_done_old(void *ctx)
{
	return gpu_trace__emit(ctx, GPUOBS_EV_GPU_JOB, GPUOBS_GPU_TP_DONE, 1);
}

SEC("tracepoint/dma_fence/dma_fence_signaled")
int gpu_fence_signaled(void *ctx)
{
	return gpu_trace__emit(ctx, GPUOBS_EV_FENCE_SIGNAL, GPUOBS_GPU_TP_FENCE, 0);
}

#endif
