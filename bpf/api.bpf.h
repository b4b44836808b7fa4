/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Generic probes for every other libcuda call: the cookie says which argument
 * is an out-pointer and which to copy (string or struct); user space decodes
 * the raw arguments with its API table (userspace/decode/cuda_api.cpp).
 *   cu_call        entry only (launch-like calls: no return probe)
 *   cu_call_enter  entry of a call whose result/out-value/blocked time we need
 *   cu_call_exit   its return probe
 *   cu_launch_kernel_ex  cuLaunchKernelEx(_ptsz): CUlaunchConfig and attributes */
#ifndef GPUOBS_API_BPF_H
#define GPUOBS_API_BPF_H

#include "maps.bpf.h"

/* Records are too big for the BPF stack. Uprobe programs run preemptibly, so
 * no per-CPU scratch buffer: entry-only calls are built in their ring-buffer
 * reservation, entry+return calls in their thread's call_inflight value. This
 * all-zero value is only ever read: the template a new in-flight entry is
 * inserted from. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gpuobs_api_call);
} call_zero SEC(".maps");

/* tid -> call in flight (entry seen, return not yet). Deleted on every return
 * and when the thread exits (a thread killed inside a call never returns). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct gpuobs_api_call);
} call_inflight SEC(".maps");

static __always_inline __u64 call__size(const struct gpuobs_api_call *e)
{
	__u64 len = e->blob_len;
	if (len > GPUOBS_BLOB_MAX)
		len = GPUOBS_BLOB_MAX;
	return GPUOBS_API_CALL_BASE_SIZE + ((len + 7) & ~7ull);
}

static __always_inline void call__output(struct gpuobs_api_call *e)
{
	/* 64-bit and pinned by the barrier to one register, so the bound checked
	 * below is the bound the verifier sees at bpf_ringbuf_output (clang
	 * otherwise re-extends a 32-bit copy taken before the check). */
	__u64 size = call__size(e);
	asm volatile("" : "+r"(size));
	if (size > sizeof(*e))
		return;
	e->hdr.size = (__u32)size;
	__u64 flags = BPF_RB_NO_WAKEUP;
	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > bpf_ringbuf_query(&events, BPF_RB_RING_SIZE) / 2)
		flags = BPF_RB_FORCE_WAKEUP;
	if (bpf_ringbuf_output(&events, e, size, flags))
		counter__add(GPUOBS_CNT_DROP_API);
	else
		counter__add(GPUOBS_CNT_SUBMIT_API);
}

/* Fills a record from the registers, the stack and the blob argument. */
static __always_inline void call__build(struct gpuobs_api_call *e, struct pt_regs *ctx, __u64 pid_tgid,
					__u64 cookie)
{
	hdr__fill(&e->hdr, GPUOBS_EV_API_CALL, GPUOBS_API_CALL_BASE_SIZE, pid_tgid, bpf_ktime_get_ns());
	e->args[0] = PT_REGS_PARM1(ctx);
	e->args[1] = PT_REGS_PARM2(ctx);
	e->args[2] = PT_REGS_PARM3(ctx);
	e->args[3] = PT_REGS_PARM4(ctx);
	e->args[4] = PT_REGS_PARM5(ctx);
	e->args[5] = PT_REGS_PARM6(ctx);
	e->flags = 0;
	if (bpf_probe_read_user(&e->args[6], 2 * sizeof(__u64), (void *)(PT_REGS_SP(ctx) + 8))) {
		e->args[6] = e->args[7] = 0;
		e->flags |= GPUOBS_CALL_F_STACK_ARGS_MISSING;
	}
	e->ret = 0;
	e->duration_ns = 0;
	e->out_value = 0;
	e->api = GPUOBS_COOKIE_API(cookie);
	e->blob_len = 0;
	e->blob_kind = GPUOBS_COOKIE_BLOB_KIND(cookie);

	__u32 arg = GPUOBS_COOKIE_BLOB_ARG(cookie);
	if (arg < 1 || arg > 8 || e->blob_kind == GPUOBS_BLOB_NONE)
		return;
	void *src = (void *)e->args[(arg - 1) & 7];
	if (e->blob_kind == GPUOBS_BLOB_STRING) {
		long n = bpf_probe_read_user_str(e->blob, GPUOBS_BLOB_MAX, src);
		if (n > 0)
			e->blob_len = (__u32)n;
		else
			e->flags |= GPUOBS_CALL_F_BLOB_FAULT;
	} else {
		__u32 n = GPUOBS_COOKIE_BLOB_LEN(cookie);
		if (n > GPUOBS_BLOB_MAX)
			n = GPUOBS_BLOB_MAX;
		if (n && bpf_probe_read_user(e->blob, n, src) == 0)
			e->blob_len = n;
		else
			e->flags |= GPUOBS_CALL_F_BLOB_FAULT;
	}
}

/* Entry-only calls: built in a full-size reservation; hdr.size says how much
 * of it is the record (the decoder accepts ring padding after it). */
static __always_inline struct gpuobs_api_call *call__reserve(void)
{
	struct gpuobs_api_call *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e)
		counter__add(GPUOBS_CNT_DROP_API);
	return e;
}

static __always_inline void call__submit(struct gpuobs_api_call *e)
{
	e->hdr.size = (__u32)call__size(e);
	ringbuf__submit(e);
	counter__add(GPUOBS_CNT_SUBMIT_API);
}

SEC("uprobe")
int cu_call(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!process__wanted(pid_tgid >> 32))
		return 0;
	struct gpuobs_api_call *e = call__reserve();
	if (!e)
		return 0;
	call__build(e, ctx, pid_tgid, bpf_get_attach_cookie(ctx));
	call__submit(e);
	return 0;
}

SEC("uprobe")
int cu_call_enter(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!process__wanted(pid_tgid >> 32))
		return 0;
	__u32 zero = 0, tid = (__u32)pid_tgid;
	struct gpuobs_api_call *tmpl = bpf_map_lookup_elem(&call_zero, &zero);
	if (!tmpl)
		return 0;
	/* Claim this thread's slot, then fill it in place. */
	inflight__store(&call_inflight, tid, tmpl, GPUOBS_CNT_API_STALE, GPUOBS_CNT_API_ENTRY_FULL);
	struct gpuobs_api_call *e = bpf_map_lookup_elem(&call_inflight, &tid);
	if (e)
		call__build(e, ctx, pid_tgid, bpf_get_attach_cookie(ctx));
	return 0;
}

SEC("uretprobe")
int cu_call_exit(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;
	struct gpuobs_api_call *e = bpf_map_lookup_elem(&call_inflight, &tid);
	if (!e) {
		if (process__wanted(pid_tgid >> 32))
			counter__add(GPUOBS_CNT_API_NO_ENTRY);
		return 0;
	}
	e->ret = (__s32)PT_REGS_RC(ctx); /* CUresult is a 32-bit enum in eax */
	e->duration_ns = bpf_ktime_get_ns() - e->hdr.ts_ns;
	e->flags |= GPUOBS_CALL_F_RETURNED;
	__u64 cookie = bpf_get_attach_cookie(ctx);
	/* A string argument in a page not yet faulted in cannot be read at entry
	 * (BPF reads do not fault); the driver has read it by now. Seen on the
	 * H100: cuBLAS kernel names passed to cuLibraryGetKernel. */
	__u32 blob_arg = GPUOBS_COOKIE_BLOB_ARG(cookie);
	if ((e->flags & GPUOBS_CALL_F_BLOB_FAULT) && e->blob_kind == GPUOBS_BLOB_STRING && blob_arg >= 1 &&
	    blob_arg <= 8) {
		long n = bpf_probe_read_user_str(e->blob, GPUOBS_BLOB_MAX, (void *)e->args[(blob_arg - 1) & 7]);
		if (n > 0) {
			e->blob_len = (__u32)n;
			e->flags &= ~GPUOBS_CALL_F_BLOB_FAULT;
		}
	}
	__u32 out = GPUOBS_COOKIE_OUT_ARG(cookie);
	if (out >= 1 && out <= 8) {
		void *p = (void *)e->args[(out - 1) & 7];
		if (p && bpf_probe_read_user(&e->out_value, sizeof(e->out_value), p) == 0)
			e->flags |= GPUOBS_CALL_F_OUT_READ;
	}
	call__output(e);
	bpf_map_delete_elem(&call_inflight, &tid);
	return 0;
}

/* cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params, void **extra):
 * the blob holds the config (56 B) and its first 4 attributes (72 B each). */
#define GPUOBS_LAUNCH_CONFIG_SIZE 56
#define GPUOBS_LAUNCH_ATTR_SIZE 72
#define GPUOBS_LAUNCH_ATTRS_MAX 4

SEC("uprobe")
int cu_launch_kernel_ex(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!process__wanted(pid_tgid >> 32))
		return 0;
	__u64 cookie = bpf_get_attach_cookie(ctx);
	struct gpuobs_api_call *e = call__reserve();
	if (!e)
		return 0;
	/* Blob: the config struct (arg 1); the attributes are appended below. */
	call__build(e, ctx, pid_tgid,
		    GPUOBS_COOKIE(GPUOBS_COOKIE_API(cookie), 0, 1, GPUOBS_BLOB_STRUCT, GPUOBS_LAUNCH_CONFIG_SIZE));
	e->blob_kind = GPUOBS_BLOB_LAUNCH_CONFIG;
	if (e->blob_len == GPUOBS_LAUNCH_CONFIG_SIZE) {
		__u64 attrs = *(__u64 *)&e->blob[40];
		__u32 n = *(__u32 *)&e->blob[48];
		if (n > GPUOBS_LAUNCH_ATTRS_MAX)
			n = GPUOBS_LAUNCH_ATTRS_MAX;
		__u32 bytes = n * GPUOBS_LAUNCH_ATTR_SIZE;
		if (attrs && bytes && bytes <= GPUOBS_LAUNCH_ATTRS_MAX * GPUOBS_LAUNCH_ATTR_SIZE &&
		    bpf_probe_read_user(&e->blob[GPUOBS_LAUNCH_CONFIG_SIZE], bytes, (void *)attrs) == 0)
			e->blob_len += bytes;
	}
	call__submit(e);
	return 0;
}

#endif
