/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Level Zero launches (libze_loader.so.1's exported functions):
 *   zeCommandListAppendLaunchKernel(hCommandList, hKernel, const ze_group_count_t *pLaunchFuncArgs,
 *                                   hSignalEvent, numWaitEvents, phWaitEvents)
 * and its cooperative and indirect variants. The grid (group count, three
 * u32) is behind argument 3; the block (group size) is not an argument at
 * all: zeKernelSetGroupSize(hKernel, x, y, z) set it on the kernel earlier.
 * ze_set_group_size keeps it per (process, kernel) here, so each launch
 * record is complete when it leaves BPF, like a CUDA one, without user
 * space having to replay kernel state in record order. */
#ifndef GPUOBS_LEVEL_ZERO_BPF_H
#define GPUOBS_LEVEL_ZERO_BPF_H

#include "launch.bpf.h"
#include "maps.bpf.h"

struct ze_kernel_key {
	__u64 kernel; /* ze_kernel_handle_t: an address, unique within a process */
	__u32 tgid;
	__u32 pad0;
};

struct ze_group_size {
	__u32 x;
	__u32 y;
	__u32 z;
	__u32 pad0;
};

/* (process, kernel) -> its group size. LRU: a process that exits leaves its
 * entries to be evicted, never blocks a new one. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct ze_kernel_key);
	__type(value, struct ze_group_size);
} ze_group_sizes SEC(".maps");

SEC("uprobe")
int ze_set_group_size(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!process__wanted(pid_tgid >> 32))
		return 0;
	struct ze_kernel_key key = {.kernel = PT_REGS_PARM1(ctx), .tgid = pid_tgid >> 32};
	/* uint32_t arguments: the registers' upper halves are unspecified. */
	struct ze_group_size size = {
		.x = (__u32)PT_REGS_PARM2(ctx),
		.y = (__u32)PT_REGS_PARM3(ctx),
		.z = (__u32)PT_REGS_PARM4(ctx),
	};
	bpf_map_update_elem(&ze_group_sizes, &key, &size, BPF_ANY);
	return 0;
}

/* The cookie's blob kind says whether argument 3 is host memory to read
 * (GPUOBS_BLOB_STRUCT) or device memory (the indirect launch: not read). */
SEC("uprobe")
int ze_launch_kernel(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!process__wanted(pid_tgid >> 32))
		return 0;
	__u64 *busy;
	struct gpuobs_launch *e = record__begin(&busy);
	if (!e)
		return 0;
	__u64 cookie = bpf_get_attach_cookie(ctx);
	hdr__fill(&e->hdr, GPUOBS_EV_LAUNCH, 0, pid_tgid, bpf_ktime_get_ns());
	e->stream = PT_REGS_PARM1(ctx);
	e->function = PT_REGS_PARM2(ctx);
	e->kernel_params = 0;
	e->extra = 0;
	e->shared_mem_bytes = 0;
	e->api = GPUOBS_COOKIE_API(cookie);
	e->flags = 0;
	e->pad0 = 0;
	__u32 grid[3] = {0, 0, 0};
	if (GPUOBS_COOKIE_BLOB_KIND(cookie) != GPUOBS_BLOB_STRUCT) {
		e->flags |= GPUOBS_LAUNCH_F_GRID_UNKNOWN;
	} else if (bpf_probe_read_user(grid, sizeof(grid), (void *)PT_REGS_PARM3(ctx))) {
		grid[0] = grid[1] = grid[2] = 0;
		e->flags |= GPUOBS_LAUNCH_F_GRID_UNKNOWN;
		counter__add(GPUOBS_CNT_LAUNCH_ARGS_FAULT);
	}
	e->grid_x = grid[0];
	e->grid_y = grid[1];
	e->grid_z = grid[2];
	struct ze_kernel_key key = {.kernel = e->function, .tgid = pid_tgid >> 32};
	struct ze_group_size *size = bpf_map_lookup_elem(&ze_group_sizes, &key);
	/* 0: never set by this process (the driver's default or the kernel's
	 * required size applies, which only the driver knows). */
	e->block_x = size ? size->x : 0;
	e->block_y = size ? size->y : 0;
	e->block_z = size ? size->z : 0;
	launch__submit(ctx, e, busy, pid_tgid);
	return 0;
}

#endif
