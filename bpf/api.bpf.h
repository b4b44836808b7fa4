/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Generic probes for every other libcuda call: the cookie says which argument
 * is an out-pointer and which to copy (string or struct); user space decodes
 * the raw arguments with its API table (userspace/catalogue/cuda_api.cpp).
 *   cu_call        entry only (launch-like calls: no return probe)
 *   cu_call_enter  entry of a call whose result/out-value/blocked time we need
 *   cu_call_exit   its return probe
 *   outer_call_enter/outer_call_exit  the same for NCCL, whose calls make libcuda calls
 *   cu_launch_kernel_ex  cuLaunchKernelEx(_ptsz): CUlaunchConfig and attributes */
#ifndef GPUOBS_API_BPF_H
#define GPUOBS_API_BPF_H

#include "maps.bpf.h"
#include "stack.bpf.h"

/* Records are too big for the BPF stack. Entry-only calls are built in a
 * scratch slot (bpf/maps.bpf.h), entry+return calls in their thread's
 * call_inflight value until they return. This all-zero value is only ever
 * read: the template a new in-flight entry is inserted from. */
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

/* The same for calls of a library layered over libcuda (NCCL): an
 * ncclAllReduce launches its kernels and records its events through
 * libcuda calls, probed too, on the same thread before it returns. One
 * in-flight entry per thread in one map would have the inner call's entry
 * replace the outer's (stale), and the outer's return find none. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct gpuobs_api_call);
} outer_inflight SEC(".maps");

/* Copies the record into the ring at its used size; counts it. */
static __always_inline void call__submit(struct gpuobs_api_call *e, __u64 *busy, __u32 size)
{
	if (record__submit(e, busy, size, e->hdr.tgid))
		counter__add(GPUOBS_CNT_SUBMIT_API);
	else
		counter__add(GPUOBS_CNT_DROP_API);
}

/* A returned call: the entry built in call_inflight, its blob cut to what
 * is valid (rounded up to 8 bytes), then the stack taken here at the return
 * site, where the frame-pointer walk starts at the caller itself. */
static __always_inline void call__emit_returned(struct pt_regs *ctx, const struct gpuobs_api_call *v)
{
	__u64 *busy;
	struct gpuobs_api_call *e = record__begin(&busy);
	if (!e)
		return;
	__builtin_memcpy(e, v, sizeof(*e));
	/* In 8-byte words, clamped where the verifier sees it: the stack
	 * area's offset must stay provably inside the slot. */
	__u64 words = ((__u64)e->blob_len + 7) / 8;
	GPUOBS_CLAMP(words, GPUOBS_BLOB_MAX / 8);
	__u32 body = offsetof(struct gpuobs_api_call, blob) + words * 8;
	__u32 stack = stack__fill(ctx, PT_REGS_IP(ctx), PT_REGS_SP(ctx), PT_REGS_FP(ctx), (__u8 *)e + body,
				  GPUOBS_STACK_F_AT_RETURN);
	call__submit(e, busy, body + stack);
}

/* Fills the fixed part of a record (the bytes before blob):
 * header, registers, the two stack arguments. */
static __always_inline void call__fill_args(struct gpuobs_api_call *e, struct pt_regs *ctx, __u64 pid_tgid,
					    __u64 cookie)
{
	hdr__fill(&e->hdr, GPUOBS_EV_API_CALL, offsetof(struct gpuobs_api_call, blob), pid_tgid, bpf_ktime_get_ns());
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
}

/* The string blob of a STRING or STRING_AT call into e->blob: the argument
 * itself, or the char * at the cookie's offset in the struct it points to.
 * 1 when read. */
static __always_inline int call__read_string(struct gpuobs_api_call *e, __u64 cookie)
{
	__u32 arg = GPUOBS_COOKIE_BLOB_ARG(cookie);
	if (arg < 1 || arg > 8)
		return 0;
	__u64 src = e->args[(arg - 1) & 7];
	if (e->blob_kind == GPUOBS_BLOB_STRING_AT) {
		__u64 at = 0;
		if (!src || bpf_probe_read_user(&at, sizeof(at), (void *)(src + GPUOBS_COOKIE_BLOB_LEN(cookie))))
			return 0;
		src = at;
	}
	if (!src)
		return 0;
	long n = bpf_probe_read_user_str(e->blob, GPUOBS_BLOB_MAX, (void *)src);
	if (n <= 0)
		return 0;
	e->blob_len = (__u32)n;
	return 1;
}

/* Fills a whole record (a full-size one): the fixed part, then the blob. */
static __always_inline void call__build(struct gpuobs_api_call *e, struct pt_regs *ctx, __u64 pid_tgid, __u64 cookie)
{
	call__fill_args(e, ctx, pid_tgid, cookie);
	__u32 arg = GPUOBS_COOKIE_BLOB_ARG(cookie);
	if (arg < 1 || arg > 8 || e->blob_kind == GPUOBS_BLOB_NONE)
		return;
	void *src = (void *)e->args[(arg - 1) & 7];
	if (e->blob_kind == GPUOBS_BLOB_STRING || e->blob_kind == GPUOBS_BLOB_STRING_AT) {
		if (!call__read_string(e, cookie))
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

/* Entry-only calls carry no blob (the loader refuses a table entry that asks
 * for one: userspace/loader/engine.cpp), so their record is the fixed part. */
SEC("uprobe")
int cu_call(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!process__wanted(pid_tgid >> 32))
		return 0;
	__u64 *busy;
	struct gpuobs_api_call *e = record__begin(&busy);
	if (!e)
		return 0;
	call__fill_args(e, ctx, pid_tgid, bpf_get_attach_cookie(ctx));
	e->blob_kind = GPUOBS_BLOB_NONE;
	const __u32 body = offsetof(struct gpuobs_api_call, blob);
	__u32 stack = stack__fill(ctx, PT_REGS_IP(ctx), PT_REGS_SP(ctx), PT_REGS_FP(ctx), (__u8 *)e + body,
				  GPUOBS_STACK_F_AT_ENTRY);
	call__submit(e, busy, body + stack);
	return 0;
}

/* Entry of a call whose result, out-value or blocked time is needed: its
 * thread's slot in `map` is claimed and filled in place. */
static __always_inline int call__enter(struct pt_regs *ctx, void *map)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!process__wanted(pid_tgid >> 32))
		return 0;
	__u32 zero = 0, tid = (__u32)pid_tgid;
	struct gpuobs_api_call *tmpl = bpf_map_lookup_elem(&call_zero, &zero);
	if (!tmpl)
		return 0;
	inflight__store(map, tid, tmpl, GPUOBS_CNT_API_STALE, GPUOBS_CNT_API_ENTRY_FULL);
	struct gpuobs_api_call *e = bpf_map_lookup_elem(map, &tid);
	if (e)
		call__build(e, ctx, pid_tgid, bpf_get_attach_cookie(ctx));
	return 0;
}

/* Its return: result, time, out-value; the record emitted, the slot freed. */
static __always_inline int call__exit(struct pt_regs *ctx, void *map)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;
	struct gpuobs_api_call *e = bpf_map_lookup_elem(map, &tid);
	if (!e) {
		if (process__wanted(pid_tgid >> 32))
			counter__add(GPUOBS_CNT_API_NO_ENTRY);
		return 0;
	}
	e->ret = (__s32)PT_REGS_RC(ctx); /* CUresult / ncclResult_t: a 32-bit enum in eax */
	e->duration_ns = bpf_ktime_get_ns() - e->hdr.ts_ns;
	e->flags |= GPUOBS_CALL_F_RETURNED;
	__u64 cookie = bpf_get_attach_cookie(ctx);
	/* A string argument in a page not yet faulted in cannot be read at entry
	 * (BPF reads do not fault); the driver has read it by now. Seen on the
	 * H100: cuBLAS kernel names passed to cuLibraryGetKernel. */
	if ((e->flags & GPUOBS_CALL_F_BLOB_FAULT) &&
	    (e->blob_kind == GPUOBS_BLOB_STRING || e->blob_kind == GPUOBS_BLOB_STRING_AT) &&
	    call__read_string(e, cookie))
		e->flags &= ~GPUOBS_CALL_F_BLOB_FAULT;
	__u32 out = GPUOBS_COOKIE_OUT_ARG(cookie);
	if (out >= 1 && out <= 8) {
		void *p = (void *)e->args[(out - 1) & 7];
		if (p && bpf_probe_read_user(&e->out_value, sizeof(e->out_value), p) == 0)
			e->flags |= GPUOBS_CALL_F_OUT_READ;
	}
	call__emit_returned(ctx, e);
	bpf_map_delete_elem(map, &tid);
	return 0;
}

SEC("uprobe")
int cu_call_enter(struct pt_regs *ctx)
{
	return call__enter(ctx, &call_inflight);
}

SEC("uretprobe")
int cu_call_exit(struct pt_regs *ctx)
{
	return call__exit(ctx, &call_inflight);
}

/* NCCL (ProbeKind::outer_entry_return): the same, in outer_inflight. */
SEC("uprobe")
int outer_call_enter(struct pt_regs *ctx)
{
	return call__enter(ctx, &outer_inflight);
}

SEC("uretprobe")
int outer_call_exit(struct pt_regs *ctx)
{
	return call__exit(ctx, &outer_inflight);
}

/* cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params, void **extra):
 * the blob holds the config (56 B) and its first 4 attributes (72 B each). */
#define GPUOBS_LAUNCH_CONFIG_SIZE 56
#define GPUOBS_LAUNCH_ATTR_SIZE   72
#define GPUOBS_LAUNCH_ATTRS_MAX   4

/* One record of exactly the size for N attributes (N a constant per call site). */
static __always_inline void launch_ex__emit(struct pt_regs *ctx, __u64 pid_tgid, __u64 cookie, const __u8 *config,
					    int config_ok, __u64 attrs, const __u32 n)
{
	const __u32 body =
		offsetof(struct gpuobs_api_call, blob) + GPUOBS_LAUNCH_CONFIG_SIZE + n * GPUOBS_LAUNCH_ATTR_SIZE;
	__u64 *busy;
	struct gpuobs_api_call *e = record__begin(&busy);
	if (!e)
		return;
	call__fill_args(e, ctx, pid_tgid, cookie);
	e->blob_kind = GPUOBS_BLOB_LAUNCH_CONFIG;
	__builtin_memcpy(e->blob, config, GPUOBS_LAUNCH_CONFIG_SIZE);
	e->blob_len = config_ok ? GPUOBS_LAUNCH_CONFIG_SIZE : 0; /* 0: the launch's arguments are unknown */
	if (!config_ok)
		e->flags |= GPUOBS_CALL_F_BLOB_FAULT;
	if (n) {
		if (bpf_probe_read_user(&e->blob[GPUOBS_LAUNCH_CONFIG_SIZE], n * GPUOBS_LAUNCH_ATTR_SIZE,
					(void *)attrs) == 0)
			e->blob_len += n * GPUOBS_LAUNCH_ATTR_SIZE;
		else
			__builtin_memset(&e->blob[GPUOBS_LAUNCH_CONFIG_SIZE], 0, n * GPUOBS_LAUNCH_ATTR_SIZE);
	}
	__u32 stack = stack__fill(ctx, PT_REGS_IP(ctx), PT_REGS_SP(ctx), PT_REGS_FP(ctx), (__u8 *)e + body,
				  GPUOBS_STACK_F_AT_ENTRY);
	/* The blob area is sized by the attribute count; blob_len says how much
	 * of it is valid. */
	call__submit(e, busy, body + stack);
}

SEC("uprobe")
int cu_launch_kernel_ex(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!process__wanted(pid_tgid >> 32))
		return 0;
	__u64 cookie = GPUOBS_COOKIE(GPUOBS_COOKIE_API(bpf_get_attach_cookie(ctx)), 0, 0, GPUOBS_BLOB_NONE, 0);
	/* The 56-byte config goes through the stack, so the attribute count is
	 * known before the record is reserved at its exact size. */
	__u8 config[GPUOBS_LAUNCH_CONFIG_SIZE];
	int config_ok = bpf_probe_read_user(config, sizeof(config), (void *)PT_REGS_PARM1(ctx)) == 0;
	if (!config_ok) {
		__builtin_memset(config, 0, sizeof(config));
		counter__add(GPUOBS_CNT_LAUNCH_ARGS_FAULT);
	}
	__u64 attrs = *(__u64 *)&config[40];
	__u32 n = attrs ? *(__u32 *)&config[48] : 0;
	switch (n) {
	case 0:
		launch_ex__emit(ctx, pid_tgid, cookie, config, config_ok, attrs, 0);
		break;
	case 1:
		launch_ex__emit(ctx, pid_tgid, cookie, config, config_ok, attrs, 1);
		break;
	case 2:
		launch_ex__emit(ctx, pid_tgid, cookie, config, config_ok, attrs, 2);
		break;
	case 3:
		launch_ex__emit(ctx, pid_tgid, cookie, config, config_ok, attrs, 3);
		break;
	default:
		launch_ex__emit(ctx, pid_tgid, cookie, config, config_ok, attrs, GPUOBS_LAUNCH_ATTRS_MAX);
		break;
	}
	return 0;
}

#endif
