/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * gpuobs wire format: the only header shared by the BPF programs and the C++
 * decoder (userspace/decode/decoder.cpp).
 *
 * Rules (docs/design.md): fixed-size records of __u8/__u16/__u32/__u64/__s32/
 * __s64 only; every hole is a named pad field; largest fields first after the
 * common header; type numbers are explicit and never reused; a meaning never
 * changes (add a field or a type and bump GPUOBS_ABI_VERSION instead).
 * Sizes and the offsets user space relies on are asserted at the end of this
 * file, so a drifting layout fails to compile on both sides;
 * tests/unit/bpf/wire_layout_test.cpp checks offsetof/sizeof of every field.
 */
#ifndef GPUOBS_EVENTS_H
#define GPUOBS_EVENTS_H

#ifdef __BPF__
/* vmlinux.h provides __u8 .. __u64 for BPF programs. */
#else
#include <linux/types.h>
#endif

/* Bumped whenever a record layout, type number or counter index changes. */
#define GPUOBS_ABI_VERSION                                                                                             \
	9 /* 6: records sized to what they hold (trailer.cap = frames present); 7: CPython frames;                     \
	     8: GPUOBS_EV_LIB_MAP is struct gpuobs_lib_map (the inode and the hold);                                   \
	     9: DRM drivers (i915, xe, amdgpu, drm), ioctl aux modes ENTRY and AMDGPU_CS;                              \
		GPUOBS_EV_GPU_JOB / GPUOBS_EV_FENCE_SIGNAL (struct gpuobs_gpu_trace), two counters;                    \
		GPUOBS_BLOB_STRING_AT, GPUOBS_LAUNCH_F_GRID_UNKNOWN (Level Zero) */

/* Record type numbers (gpuobs_hdr.type). Never reuse a number. */
#define GPUOBS_EV_LAUNCH    1 /* struct gpuobs_launch */
#define GPUOBS_EV_IOCTL     2 /* struct gpuobs_ioctl */
#define GPUOBS_EV_PROC_FORK 3 /* struct gpuobs_proc: a new process (not a thread) */
#define GPUOBS_EV_PROC_EXEC 4 /* struct gpuobs_proc: exec, filename filled */
#define GPUOBS_EV_PROC_EXIT 5 /* struct gpuobs_proc: the whole thread group exited */
#define GPUOBS_EV_API_CALL  6 /* struct gpuobs_api_call: any other probed library call */
/* struct gpuobs_lib_map (ABI 8; struct gpuobs_proc before): the process mapped
 * the code of a file named like a GPU runtime (libcuda.so*, libamdhip64.so*,
 * libnccl.so*, librccl.so*, libpython3*), and whether it was held for user
 * space to attach it (bpf/library.bpf.h). ABI 5. */
#define GPUOBS_EV_LIB_MAP 7
/* struct gpuobs_gpu_trace (ABI 9): a GPU-scheduler tracepoint fired
 * (gpu_scheduler/drm_sched_job_queue, _run, _done, or the pre-6.17 names
 * drm_sched_job, drm_run_job, drm_sched_process_job; bpf/gpu_sched.bpf.h). */
#define GPUOBS_EV_GPU_JOB 9
/* struct gpuobs_gpu_trace (ABI 9): dma_fence/dma_fence_signaled fired. */
#define GPUOBS_EV_FENCE_SIGNAL 10

/* Which probed library symbol produced a record. The full numbering is the
 * table in userspace/catalogue/cuda_api.cpp (1 and 2 are fixed here because the
 * walking skeleton's captures use them). Never reuse a number. */
#define GPUOBS_API_CU_LAUNCH_KERNEL      1 /* cuLaunchKernel */
#define GPUOBS_API_CU_LAUNCH_KERNEL_PTSZ 2 /* cuLaunchKernel_ptsz (per-thread default stream) */

/*
 * The bpf cookie of a library probe tells the generic programs what to read:
 *   bits  0..15  API number
 *   bits 16..19  out-argument (1-based): at return, read the u64 it points to
 *   bits 20..23  blob argument (1-based): copy what it points to at entry
 *   bits 24..27  blob kind (GPUOBS_BLOB_*)
 *   bits 32..47  blob length in bytes for GPUOBS_BLOB_STRUCT (<= GPUOBS_BLOB_MAX);
 *                for GPUOBS_BLOB_STRING_AT, the offset of the string pointer
 */
#define GPUOBS_BLOB_NONE          0
#define GPUOBS_BLOB_STRING        1 /* NUL-terminated C string, truncated to GPUOBS_BLOB_MAX */
#define GPUOBS_BLOB_STRUCT        2 /* fixed-size struct of the cookie's length */
#define GPUOBS_BLOB_LAUNCH_CONFIG 3 /* CUlaunchConfig (56 B) + up to 4 CUlaunchAttribute (72 B) */
/* The C string a descriptor points to: the argument is a struct whose field
 * at the cookie's offset is a char * (ze_kernel_desc_t's pKernelName). */
#define GPUOBS_BLOB_STRING_AT 4
#define GPUOBS_COOKIE(api, out_arg, blob_arg, blob_kind, blob_len)                                                     \
	((__u64)(api) | ((__u64)(out_arg) << 16) | ((__u64)(blob_arg) << 20) | ((__u64)(blob_kind) << 24) |            \
	 ((__u64)(blob_len) << 32))
#define GPUOBS_COOKIE_API(c)       ((__u32)((c)&0xffff))
#define GPUOBS_COOKIE_OUT_ARG(c)   ((__u32)(((c) >> 16) & 0xf))
#define GPUOBS_COOKIE_BLOB_ARG(c)  ((__u32)(((c) >> 20) & 0xf))
#define GPUOBS_COOKIE_BLOB_KIND(c) ((__u32)(((c) >> 24) & 0xf))
#define GPUOBS_COOKIE_BLOB_LEN(c)  ((__u32)(((c) >> 32) & 0xffff))

#define GPUOBS_COMM_LEN 16
#define GPUOBS_PATH_LEN 256

/*
 * Every event record (launch, ioctl, api call) ends with the caller's user
 * stack: ips[cap] then struct gpuobs_stack_trailer, both counted in hdr.size.
 * The trailer is always the record's last 16 bytes and ips start cap * 8
 * bytes before it. Since ABI 6 a record is as long as what it holds: cap is
 * the number of frames walked (at most the loader's depth; 0: stacks off or
 * none read) and an api call's blob is cut to blob_len rounded up to 8
 * (bpf/maps.bpf.h: record__begin/record__submit). ips is
 * the kernel's frame-pointer walk, innermost first; what frame 0 is depends
 * on where the probe fired (GPUOBS_STACK_F_AT_*), and user space completes
 * it with sp_word (userspace/stacks/stack_resolver.cpp).
 */
#define GPUOBS_STACK_MAX 127 /* largest depth the loader accepts */
struct gpuobs_stack_trailer {
	__u64 sp_word; /* the word at the user stack pointer (0 if unreadable) */
	__u16 nr;      /* valid frames in ips[0 .. nr) */
	__u16 cap;     /* frames in the record (ips[cap]); nr == cap since ABI 6 */
	__u32 flags;   /* GPUOBS_STACK_F_* */
};
/* Return probe: ips[0] is the call site in the caller; all frames are real. */
#define GPUOBS_STACK_F_AT_RETURN 1u
/* A function's first instruction: ips[0] is the probed function itself and
 * its caller's return address is sp_word. The kernel (>= 6.10) adds it as
 * ips[1] when the function starts with push %rbp or endbr64; otherwise the
 * walk goes from ips[0] to the caller's caller. */
#define GPUOBS_STACK_F_AT_ENTRY 2u
/* Syscall exit: ips[0] is in the libc wrapper; sp_word is its return
 * address when the wrapper has no stack frame of its own. */
#define GPUOBS_STACK_F_AT_SYSCALL 4u
#define GPUOBS_STACK_F_FAULT      8u  /* bpf_get_stack failed: no frames */
#define GPUOBS_STACK_F_FULL       16u /* the walk filled the configured depth: it may have gone deeper */
#define GPUOBS_STACK_F_COPY       32u /* a stack copy precedes ips (below) */
/* --unwind bpf: ips were unwound in BPF from the unwind tables user space
 * loaded (bpf/unwind.bpf.h); frame 0 is the ip where the probe fired,
 * except at an entry (AT_ENTRY), where it is the caller. */
#define GPUOBS_STACK_F_BPF_DWARF 64u
/* Stacks were asked for (depth > 0): the record has a stack, maybe of 0
 * frames (a fault). Since ABI 6 cap is the frames walked, so cap 0 alone no
 * longer says "stacks off". */
#define GPUOBS_STACK_F_ASKED 128u
/* The calling thread's CPython frames follow ips (below). */
#define GPUOBS_STACK_F_PYTHON 256u

/*
 * CPython frames (issue 18). In a process whose interpreter user space has
 * described in py_procs (bpf/python.bpf.h), the thread's interpreter frames,
 * innermost first, sit between ips and the trailer:
 *   [... ips[nr]][gpuobs_py_frame py[n]][gpuobs_py_trailer][gpuobs_stack_trailer]
 * BPF records addresses only; user space reads each code object once per
 * process for its name, file and line table (userspace/stacks/python_*).
 */
#define GPUOBS_PY_FRAMES_MAX 64  /* most Python frames per record */
#define GPUOBS_PY_READ_MAX   256 /* bytes of a frame (or a thread state) read at once */
/* 3.11+ keeps a thread's frames next to each other (its data stack): one
 * read of this many bytes ending at a frame holds its callers too. */
#define GPUOBS_PY_BLOCK 2048
struct gpuobs_py_frame {
	__u64 code;  /* the code object (PyCodeObject *) */
	__u32 instr; /* 3.11+: instruction pointer - code (bytes); 3.10: f_lasti */
	__u32 flags; /* GPUOBS_PY_F_* */
};
/* The outermost frame of one interpreter call (one _PyEval_EvalFrameDefault
 * frame of the native stack runs this frame and the newer ones up to the
 * previous entry frame). */
#define GPUOBS_PY_F_ENTRY 1u
struct gpuobs_py_trailer {
	__u16 n;      /* frames in py[] */
	__u16 status; /* GPUOBS_PY_S_* */
	__u32 thread; /* GPUOBS_PY_T_*: whose frames py[] holds (0 before this field) */
};
/* The calling thread's own frames. */
#define GPUOBS_PY_T_CALLING 0
/* The process's main thread's frames: the calling thread runs no Python
 * (a C++ thread such as PyTorch's autograd worker, or one whose interpreter
 * state has no frame), so the Python line that is waiting on it is the
 * main thread's (loss.backward(), a blocking call into C++). Taken only
 * while the main thread is off the CPU (blocked), and only when it has a
 * frame; user space checks every code object. */
#define GPUOBS_PY_T_MAIN      1
#define GPUOBS_PY_S_DONE      0 /* walked to the thread's first frame (or it runs none) */
#define GPUOBS_PY_S_FULL      1 /* stopped at the configured depth */
#define GPUOBS_PY_S_FAULT     2 /* a frame could not be read: the frames before it stand */
#define GPUOBS_PY_S_NO_THREAD 3 /* the thread has no interpreter state (a C++ thread) */

/* What the walker needs to know of one process's interpreter: addresses and
 * field offsets for its CPython version (userspace/stacks/python_layout.cpp).
 * An offset of GPUOBS_PY_NONE: the version has no such field. */
#define GPUOBS_PY_NONE           0xffff
#define GPUOBS_PY_FRAMES_OBJECTS 0 /* 3.10: PyFrameObject chain, f_lasti */
#define GPUOBS_PY_FRAMES_INTERP  1 /* 3.11+: _PyInterpreterFrame chain, instruction pointer */
struct gpuobs_py_proc {
	__u64 runtime;          /* address of _PyRuntime */
	__u32 version;          /* PY_VERSION_HEX >> 16, e.g. 0x030c */
	__u8 frames;            /* GPUOBS_PY_FRAMES_* */
	__u8 owner_cstack;      /* owner value of the C-stack shim frames (3.12+); 0xff: none */
	__u16 frame_read;       /* bytes of a frame to read: past every frame field, <= GPUOBS_PY_READ_MAX */
	__u16 runtime_interp;   /* _PyRuntime.interpreters.head */
	__u16 interp_threads;   /* PyInterpreterState.threads.head */
	__u16 tstate_next;      /* PyThreadState.next */
	__u16 tstate_thread_id; /* PyThreadState.thread_id (pthread_self(): the thread's fs base) */
	__u16 tstate_frame;     /* 3.10 frame, 3.11/3.12 cframe, 3.13 current_frame */
	__u16 cframe_current;   /* 3.11/3.12: _PyCFrame.current_frame; NONE: tstate_frame is the frame */
	__u16 frame_code;       /* f_code (3.13 f_executable) */
	__u16 frame_previous;   /* previous (3.10 f_back) */
	__u16 frame_instr;      /* prev_instr / instr_ptr (a pointer); 3.10 f_lasti (an int) */
	__u16 frame_owner;      /* owner (char); NONE before 3.11 */
	__u16 frame_is_entry;   /* 3.11 is_entry (bool); NONE elsewhere */
	/* The bytes of a thread state read at once, from tstate_lo: they hold
	 * thread_id and the frame pointer (one read checks the cached thread
	 * state and finds the frame). */
	__u16 tstate_lo;
	__u16 tstate_len;
	__u16 pad[3];
};

/*
 * Unwind tables for --unwind bpf. One row per CFI row of a code file, sorted
 * by address, all files' rows in one array map (unwind_rows); a process's
 * executable mappings say which rows are theirs (unwind_procs).
 *   bits  0..31  address (ELF vaddr) where the row starts
 *   bits 32..47  CFA offset (signed)
 *   bits 48..55  GPUOBS_UNWIND_*: how to find the CFA
 *   bits 56..63  saved rbp at CFA + 8 * this (signed); 0: rbp unchanged
 * The return address is always at CFA - 8 (x86-64; other rules are stored
 * as GPUOBS_UNWIND_FP).
 */
#define GPUOBS_UNWIND_FP  0 /* no usable CFI: frame-pointer rule */
#define GPUOBS_UNWIND_RSP 1 /* CFA = rsp + offset */
#define GPUOBS_UNWIND_RBP 2 /* CFA = rbp + offset */
#define GPUOBS_UNWIND_END 3 /* return address undefined: outermost frame */
#define GPUOBS_UNWIND_ROW(pc, type, cfa_off, rbp_slot)                                                                 \
	((__u64)(__u32)(pc) | ((__u64)(__u16)(cfa_off) << 32) | ((__u64)(__u8)(type) << 48) |                          \
	 ((__u64)(__u8)(rbp_slot) << 56))
#define GPUOBS_UNWIND_MAPS_MAX 256
struct gpuobs_unwind_mapping {
	__u64 start; /* [start, end): executable mapping */
	__u64 end;
	__u64 bias;      /* ip - bias = ELF vaddr */
	__u32 row_start; /* its file's rows in unwind_rows */
	__u32 row_count;
};
struct gpuobs_unwind_proc {
	__u32 n; /* mappings, sorted by start */
	__u32 pad;
	struct gpuobs_unwind_mapping m[GPUOBS_UNWIND_MAPS_MAX];
};

/*
 * With --unwind dwarf the loader sets a copy size: then ips is preceded by
 * the registers the unwinder starts from and a copy of the user stack from
 * sp upward, for user space to unwind with the ELF call-frame information:
 *   [gpuobs_stack_regs][copy bytes][gpuobs_stack_copy_hdr][ips][trailer]
 */
#define GPUOBS_STACK_COPY_MAX 65536
struct gpuobs_stack_regs {
	__u64 ip;
	__u64 sp;
	__u64 bp;
	__u64 reserved;
};
struct gpuobs_stack_copy_hdr {
	__u32 len; /* bytes of the copy that are valid (from sp upward) */
	__u32 cap; /* bytes reserved for it (the configured copy size) */
};

/* Common header, first in every record. 24 bytes. */
struct gpuobs_hdr {
	__u32 type;  /* GPUOBS_EV_* */
	__u32 size;  /* sizeof the whole record, checked by the decoder */
	__u64 ts_ns; /* CLOCK_MONOTONIC (bpf_ktime_get_ns) */
	__u32 tgid;  /* process id */
	__u32 tid;   /* thread id */
};

/* cuLaunchKernel(f, gX, gY, gZ, bX, bY, bZ, shmem, stream, params, extra).
 * Arguments 7..11 are read from the caller's stack at [sp+8].. [sp+40]. */
struct gpuobs_launch {
	struct gpuobs_hdr hdr;
	__u64 function;      /* CUfunction or CUkernel handle */
	__u64 stream;        /* CUstream; 0 = default, 1 = legacy, 2 = per-thread */
	__u64 kernel_params; /* void **kernelParams (pointer value only) */
	__u64 extra;         /* void **extra (pointer value only) */
	__u32 grid_x;
	__u32 grid_y;
	__u32 grid_z;
	__u32 block_x;
	__u32 block_y;
	__u32 block_z;
	__u32 shared_mem_bytes;
	__u32 api;   /* GPUOBS_API_* */
	__u32 flags; /* GPUOBS_LAUNCH_F_* */
	__u32 pad0;
};
/* The stack slots holding arguments 7..11 could not be read. */
#define GPUOBS_LAUNCH_F_STACK_ARGS_MISSING 1u
/* The grid is unknown: the group count struct (Level Zero) was unreadable,
 * or is in device memory (an indirect launch), so grid_* are 0. */
#define GPUOBS_LAUNCH_F_GRID_UNKNOWN 2u

/* Which driver a watched device belongs to: the value of watched_devs,
 * copied into every ioctl record; selects the argument rules and the
 * user-space decoder (userspace/decode/driver_ioctl.h). */
#define GPUOBS_DRV_OTHER      0 /* a device given by the user without a driver */
#define GPUOBS_DRV_NVIDIA     1 /* /dev/nvidiactl, /dev/nvidiaN (RM escapes, 'F') */
#define GPUOBS_DRV_NVIDIA_UVM 2 /* /dev/nvidia-uvm(-tools): raw command numbers */
#define GPUOBS_DRV_KFD        3 /* /dev/kfd ('K') */
#define GPUOBS_DRV_I915       4 /* a DRM node (char major 226) of the i915 driver ('d') */
#define GPUOBS_DRV_XE         5 /* a DRM node of the xe driver */
#define GPUOBS_DRV_AMDGPU     6 /* a DRM node of the amdgpu driver */
#define GPUOBS_DRV_DRM        7 /* a DRM node of any other driver: core DRM requests only */

/*
 * What the ioctl exit copies from the process, per (driver, command): a rule
 * in the ioctl_rules map, filled by user space from its decoder tables.
 * cmd_key is the whole cmd for NVIDIA UVM (raw numbers) and a device
 * without a driver; cmd & 0xffff (type and number) otherwise: NVIDIA, KFD
 * and DRM dispatch on the number and accept every size a version had.
 * Without a rule: head = _IOC_SIZE(cmd) bytes (none for UVM), no aux.
 */
#define GPUOBS_IOCTL_HEAD_MAX 256
#define GPUOBS_IOCTL_AUX_MAX  256
#define GPUOBS_IOCTL_AUX_NONE 0
#define GPUOBS_IOCTL_AUX_PTR  1 /* aux from the u64 pointer at head[aux_off] */
#define GPUOBS_IOCTL_AUX_ARG  2 /* aux from arg + aux_off (a field past the head) */
/* aux: the argument's first aux_len (at most GPUOBS_IOCTL_ENTRY_MAX) bytes as
 * they were at syscall entry. amdgpu's arguments are unions of an in and an
 * out struct: a call that succeeds writes its outputs over the inputs (the
 * CS sequence over ctx_id; GEM_CREATE, BO_LIST and WAIT_CS clear the whole
 * struct first), so what the exit copies no longer holds them. */
#define GPUOBS_IOCTL_AUX_ENTRY 3
#define GPUOBS_IOCTL_ENTRY_MAX 32
/* aux: struct gpuobs_amdgpu_cs_aux (AMDGPU_CS, three levels of pointers). */
#define GPUOBS_IOCTL_AUX_AMDGPU_CS 4
struct gpuobs_ioctl_rule_key {
	__u32 driver; /* GPUOBS_DRV_* */
	__u32 cmd_key;
};
struct gpuobs_ioctl_rule {
	__u16 head_len; /* bytes of *arg; 0: _IOC_SIZE(cmd) */
	__u16 aux_off;
	__u16 aux_len; /* bytes of aux (at most GPUOBS_IOCTL_AUX_MAX) */
	__u8 aux_mode; /* GPUOBS_IOCTL_AUX_* */
	/* Nonzero: the aux length is the u32 at head[aux_len_field - 1],
	 * capped by aux_len (NV_ESC_IOCTL_XFER_CMD's size). */
	__u8 aux_len_field;
};

/* One ioctl on a watched character device, emitted at syscall exit. The
 * argument struct is copied there: it holds the inputs, which the drivers
 * leave in place, and the outputs (status, new handles). */
struct gpuobs_ioctl {
	struct gpuobs_hdr hdr; /* ts_ns = syscall entry */
	__u64 latency_ns;      /* exit - entry */
	__u64 arg;             /* third ioctl argument (usually a user pointer) */
	__s64 ret;             /* syscall return value (negative errno on failure) */
	__u32 cmd;             /* ioctl request number */
	__u32 dev_major;
	__u32 dev_minor;
	__s32 fd;
	__u32 driver;   /* GPUOBS_DRV_* */
	__u16 head_len; /* valid bytes of head */
	__u16 aux_len;  /* valid bytes of aux */
	__u32 flags;    /* GPUOBS_IOCTL_F_* */
	__u32 pad0;
	__u8 head[GPUOBS_IOCTL_HEAD_MAX]; /* *arg */
	__u8 aux[GPUOBS_IOCTL_AUX_MAX];   /* what the rule's aux points to */
};
#define GPUOBS_IOCTL_F_HEAD_FAULT 1u /* *arg (or part of it) unreadable */
#define GPUOBS_IOCTL_F_AUX_FAULT  2u /* nothing of the aux block was readable */
#define GPUOBS_IOCTL_F_HEAD_CUT   4u /* the argument is larger than head */

/* What the ioctl exit keeps of an AMDGPU_CS call's chunk chain in aux
 * (bpf/drm.bpf.h: amdgpu__cs_chunks). drm_amdgpu_cs_in.chunks points to an
 * array of num_chunks user pointers, each to a drm_amdgpu_cs_chunk {chunk_id,
 * length_dw, chunk_data}, and chunk_data to the chunk's payload (an IB's
 * drm_amdgpu_cs_chunk_ib names its engine). The first
 * GPUOBS_AMDGPU_CS_CHUNKS chunks are kept, each with the first
 * GPUOBS_AMDGPU_CS_DATA bytes of its payload (a whole chunk_ib, a fence, the
 * first dependency); the decoder counts the chunks past them as cut. */
#define GPUOBS_AMDGPU_CS_CHUNKS 6
#define GPUOBS_AMDGPU_CS_DATA   32
/* drm_amdgpu_cs_in's size and the offsets the walk reads (include/uapi/drm/
 * amdgpu_drm.h; checked against userspace/catalogue/drm_uapi.h's mirror). */
#define GPUOBS_AMDGPU_CS_IN_SIZE       24
#define GPUOBS_AMDGPU_CS_IN_NUM_CHUNKS 8
#define GPUOBS_AMDGPU_CS_IN_CHUNKS     16
struct gpuobs_amdgpu_cs_chunk {
	__u32 chunk_id;                   /* AMDGPU_CHUNK_ID_* */
	__u32 length_dw;                  /* payload length, 4-byte words */
	__u8 data[GPUOBS_AMDGPU_CS_DATA]; /* min(length_dw * 4, 32) bytes of the payload */
};
struct gpuobs_amdgpu_cs_aux {
	__u64 in0;         /* drm_amdgpu_cs_in's first 8 bytes at entry (ctx_id, bo_list_handle) */
	__u32 chunks_read; /* chunk headers copied (chunk[0..chunks_read)) */
	__u32 data_read;   /* bit i: chunk[i].data copied */
	struct gpuobs_amdgpu_cs_chunk chunk[GPUOBS_AMDGPU_CS_CHUNKS];
};

/* Process lifecycle. fork: hdr.tgid = child; exec: filename set; exit: exit_code. */
struct gpuobs_proc {
	struct gpuobs_hdr hdr;
	__u64 start_boottime_ns; /* task start, CLOCK_BOOTTIME: identity with tgid */
	__u32 ppid;              /* parent tgid */
	__s32 exit_code;         /* wait(2) status, exit only */
	__u8 comm[GPUOBS_COMM_LEN];
	__u8 filename[GPUOBS_PATH_LEN]; /* exec only, NUL-terminated */
};

/* A GPU library's code mapped (GPUOBS_EV_LIB_MAP, ABI 8): the same head as
 * struct gpuobs_proc, then the file as the kernel knows it (the mmap'd
 * file's inode: its superblock's dev_t in the kernel's encoding, major << 20
 * | minor) and what BPF did about it (GPUOBS_LIB_*). hdr.ts_ns = the mmap's
 * entry. */
#define GPUOBS_LIB_NAME_LEN 48
struct gpuobs_lib_map {
	struct gpuobs_hdr hdr;
	__u64 start_boottime_ns;
	__u32 ppid;
	__u32 hold; /* GPUOBS_LIB_* */
	__u8 comm[GPUOBS_COMM_LEN];
	__u64 ino;
	__u32 kdev; /* MKDEV(major, minor) of the kernel: major << 20 | minor */
	__u32 pad0;
	__u8 filename[GPUOBS_LIB_NAME_LEN]; /* the file's base name, NUL-terminated */
};
/* What BPF did when a process mapped a GPU library's code (the lib_known map
 * says what user space knows of the inode). */
#define GPUOBS_LIB_NOT_RUNTIME   0 /* libpython: described, never held */
#define GPUOBS_LIB_ATTACHED      1 /* its probes were live before the mapping */
#define GPUOBS_LIB_HELD          2 /* unknown inode: SIGSTOP sent, user space attaches and resumes it */
#define GPUOBS_LIB_UNPROBED      3 /* known to user space and not attachable (a cap, a failure) */
#define GPUOBS_LIB_HOLD_OFF      4 /* unknown inode, not held: holding is off */
#define GPUOBS_LIB_TRACED        5 /* unknown inode, not held: the process is ptraced */
#define GPUOBS_LIB_JOB           6 /* unknown inode, not held: a job of a job-control shell */
#define GPUOBS_LIB_SIGNAL_FAILED 7 /* unknown inode, not held: bpf_send_signal failed */
/* lib_known values (user space writes them, BPF reads them). */
#define GPUOBS_KNOWN_ATTACHED 1
#define GPUOBS_KNOWN_UNPROBED 2
struct gpuobs_lib_key {
	__u64 ino;
	__u32 kdev;
	__u32 pad0;
};

/*
 * A kernel tracepoint of the GPU's job life (GPUOBS_EV_GPU_JOB,
 * GPUOBS_EV_FENCE_SIGNAL; bpf/gpu_sched.bpf.h). The trace entry's layout
 * changes across kernels (6.17 renamed the scheduler events and replaced
 * the fence pointer by its context and seqno), so BPF copies the entry as
 * the kernel wrote it, common fields first, and user space decodes it with
 * the event's format file from tracefs (common/trace_format.h,
 * decode/gpu_trace.h). hdr.tgid/tid are the task the event fired in: the
 * submitting thread for a queue event, a scheduler worker or an interrupt's
 * victim for the others.
 */
#define GPUOBS_GPU_TRACE_RAW_MAX 192 /* bytes of trace entry copied: fixed fields and short strings */
#define GPUOBS_GPU_TP_QUEUE      1   /* drm_sched_job_queue (6.17+), drm_sched_job (before) */
#define GPUOBS_GPU_TP_RUN        2   /* drm_sched_job_run (6.17+), drm_run_job (before) */
#define GPUOBS_GPU_TP_DONE       3   /* drm_sched_job_done (6.17+), drm_sched_process_job (before) */
#define GPUOBS_GPU_TP_FENCE      4   /* dma_fence_signaled */
struct gpuobs_gpu_trace {
	struct gpuobs_hdr hdr; /* ts_ns = when the tracepoint fired */
	__u32 event;           /* GPUOBS_GPU_TP_* */
	__u16 raw_len;         /* bytes of raw copied (GPUOBS_GPU_TRACE_RAW_MAX; 0 when the copy faulted) */
	__u16 name_gen;        /* 0: the 6.17+ scheduler event names, 1: the older ones (which program fired) */
	/* The trace entry at its format's offsets; bytes 0..7 (the common
	 * fields) are zero: the kernel keeps a pt_regs pointer there for BPF. */
	__u8 raw[GPUOBS_GPU_TRACE_RAW_MAX];
};

/* A library call other than cuLaunchKernel(_ptsz): raw arguments, decoded in
 * user space by the API table. Emitted at entry (no return probe) or at
 * return (then ret, duration_ns and out_value are set). Variable size:
 * the fixed part is offsetof(struct gpuobs_api_call, blob) bytes (128), then
 * blob bytes (exactly as many as the program reserved), then the stack. */
#define GPUOBS_BLOB_MAX 512
struct gpuobs_api_call {
	struct gpuobs_hdr hdr; /* ts_ns = call entry */
	__u64 args[8];         /* integer arguments 1..8 (7 and 8 from the stack) */
	__s64 ret;             /* return value (CUresult), if GPUOBS_CALL_F_RETURNED */
	__u64 duration_ns;     /* entry to return, if GPUOBS_CALL_F_RETURNED */
	__u64 out_value;       /* *(u64 *)args[out_arg - 1] at return, if GPUOBS_CALL_F_OUT_READ */
	__u32 api;             /* API number */
	__u32 flags;           /* GPUOBS_CALL_F_* */
	__u32 blob_len;        /* bytes of blob that are valid */
	__u32 blob_kind;       /* GPUOBS_BLOB_* */
	__u8 blob[GPUOBS_BLOB_MAX];
};
#define GPUOBS_CALL_F_RETURNED           1u /* ret/duration_ns are valid */
#define GPUOBS_CALL_F_OUT_READ           2u /* out_value is valid */
#define GPUOBS_CALL_F_STACK_ARGS_MISSING 4u /* args 7, 8 unreadable (zero) */
#define GPUOBS_CALL_F_BLOB_FAULT         8u /* the blob argument could not be read */

/* The largest record body before the stack area (an api call with its whole
 * blob): with the stack section, what a scratch slot must hold
 * (bpf/maps.bpf.h, userspace/loader/engine.cpp). */
#define GPUOBS_RECORD_BODY_MAX 640
/* Scratch slots per CPU: how many preempted handlers one CPU can have
 * building a record at once. */
#define GPUOBS_SCRATCH_SLOTS 4

/*
 * Counters: one per-CPU array (map "counters") indexed by these numbers; the
 * loader sums the CPUs. Part of the ABI: never renumber.
 */
#define GPUOBS_CNT_SUBMIT_LAUNCH     0  /* launch records submitted */
#define GPUOBS_CNT_SUBMIT_IOCTL      1  /* ioctl records submitted */
#define GPUOBS_CNT_SUBMIT_PROC       2  /* process records submitted */
#define GPUOBS_CNT_DROP_LAUNCH       3  /* launch lost: ring buffer full */
#define GPUOBS_CNT_DROP_IOCTL        4  /* ioctl lost: ring buffer full */
#define GPUOBS_CNT_DROP_PROC         5  /* process record lost: ring buffer full */
#define GPUOBS_CNT_IOCTL_STALE       6  /* ioctl entry of a thread replaced: its exit was never seen */
#define GPUOBS_CNT_IOCTL_ENTRY_FULL  7  /* ioctl entry not stored: in-flight map full */
#define GPUOBS_CNT_LAUNCH_ARGS_FAULT 8  /* stack arguments of a launch unreadable */
#define GPUOBS_CNT_TRACK_FULL        9  /* child not followed: tracked-process map full */
#define GPUOBS_CNT_SUBMIT_API        10 /* api-call records submitted */
#define GPUOBS_CNT_DROP_API          11 /* api call lost: ring buffer full */
#define GPUOBS_CNT_API_STALE         12 /* api entry of a thread replaced: its return was never seen */
#define GPUOBS_CNT_API_ENTRY_FULL    13 /* api call lost: in-flight map full */
/* GPUOBS_CNT_API_NO_ENTRY: a return without a stored entry (attached
 * mid-call, or its entry was lost: counted in API_ENTRY_FULL). */
#define GPUOBS_CNT_API_NO_ENTRY      14
#define GPUOBS_CNT_STACK_FAULT       15 /* user stack unreadable: the record has no frames */
#define GPUOBS_CNT_DROP_SCRATCH_BUSY 16 /* event lost: every scratch slot of its CPU in use (bpf/maps.bpf.h) */
#define GPUOBS_CNT_PY_NO_THREAD      17 /* Python process, calling thread without interpreter state */
#define GPUOBS_CNT_PY_FAULT          18 /* Python frames cut short: a frame unreadable */
#define GPUOBS_CNT_PY_FULL           19 /* Python frames cut at the depth limit */
#define GPUOBS_CNT_PY_MAIN_THREAD    20 /* Python frames taken from the main thread (GPUOBS_PY_T_MAIN) */
#define GPUOBS_CNT_PY_MAIN_RUNNING   21 /* ... not taken: the main thread was running, not waiting */
#define GPUOBS_CNT_SUBMIT_GPU_TRACE  22 /* GPU job / fence-signal records submitted (bpf/gpu_sched.bpf.h) */
#define GPUOBS_CNT_DROP_GPU_TRACE    23 /* GPU job / fence-signal record lost: ring buffer full */
#define GPUOBS_CNT__COUNT            24

/*
 * Layout checks, compiled on both sides (BPF C and C++): a field moved,
 * resized or an implicit hole added fails the build here instead of
 * decoding garbage. The numbers are what userspace/decode/decoder.cpp,
 * userspace/stacks/ and the loader rely on.
 */
#ifdef __cplusplus
#define GPUOBS_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define GPUOBS_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif
#define GPUOBS_ASSERT_SIZE(type, n) GPUOBS_ASSERT(sizeof(struct type) == (n), "sizeof(" #type ") changed")
#define GPUOBS_ASSERT_OFF(type, field, n)                                                                              \
	GPUOBS_ASSERT(__builtin_offsetof(struct type, field) == (n), "offsetof(" #type ", " #field ") changed")

GPUOBS_ASSERT_SIZE(gpuobs_hdr, 24);
GPUOBS_ASSERT_OFF(gpuobs_hdr, type, 0);
GPUOBS_ASSERT_OFF(gpuobs_hdr, size, 4);
GPUOBS_ASSERT_OFF(gpuobs_hdr, ts_ns, 8);
GPUOBS_ASSERT_OFF(gpuobs_hdr, tgid, 16);
GPUOBS_ASSERT_OFF(gpuobs_hdr, tid, 20);

GPUOBS_ASSERT_SIZE(gpuobs_launch, 96);
GPUOBS_ASSERT_OFF(gpuobs_launch, function, 24);
GPUOBS_ASSERT_OFF(gpuobs_launch, stream, 32);
GPUOBS_ASSERT_OFF(gpuobs_launch, kernel_params, 40);
GPUOBS_ASSERT_OFF(gpuobs_launch, extra, 48);
GPUOBS_ASSERT_OFF(gpuobs_launch, grid_x, 56);
GPUOBS_ASSERT_OFF(gpuobs_launch, block_x, 68);
GPUOBS_ASSERT_OFF(gpuobs_launch, shared_mem_bytes, 80);
GPUOBS_ASSERT_OFF(gpuobs_launch, api, 84);
GPUOBS_ASSERT_OFF(gpuobs_launch, flags, 88);
GPUOBS_ASSERT_OFF(gpuobs_launch, pad0, 92);

GPUOBS_ASSERT_SIZE(gpuobs_ioctl_rule_key, 8);
GPUOBS_ASSERT_SIZE(gpuobs_ioctl_rule, 8);
GPUOBS_ASSERT_OFF(gpuobs_ioctl_rule, aux_mode, 6);
GPUOBS_ASSERT_OFF(gpuobs_ioctl_rule, aux_len_field, 7);
GPUOBS_ASSERT_SIZE(gpuobs_ioctl, 592);
GPUOBS_ASSERT_OFF(gpuobs_ioctl, latency_ns, 24);
GPUOBS_ASSERT_OFF(gpuobs_ioctl, ret, 40);
GPUOBS_ASSERT_OFF(gpuobs_ioctl, cmd, 48);
GPUOBS_ASSERT_OFF(gpuobs_ioctl, driver, 64);
GPUOBS_ASSERT_OFF(gpuobs_ioctl, head_len, 68);
GPUOBS_ASSERT_OFF(gpuobs_ioctl, aux_len, 70);
GPUOBS_ASSERT_OFF(gpuobs_ioctl, flags, 72);
GPUOBS_ASSERT_OFF(gpuobs_ioctl, pad0, 76);
GPUOBS_ASSERT_OFF(gpuobs_ioctl, head, 80);
GPUOBS_ASSERT_OFF(gpuobs_ioctl, aux, 80 + GPUOBS_IOCTL_HEAD_MAX);
GPUOBS_ASSERT_SIZE(gpuobs_amdgpu_cs_chunk, 40);
GPUOBS_ASSERT_OFF(gpuobs_amdgpu_cs_chunk, length_dw, 4);
GPUOBS_ASSERT_OFF(gpuobs_amdgpu_cs_chunk, data, 8);
GPUOBS_ASSERT_SIZE(gpuobs_amdgpu_cs_aux, 16 + 40 * GPUOBS_AMDGPU_CS_CHUNKS);
GPUOBS_ASSERT_OFF(gpuobs_amdgpu_cs_aux, chunks_read, 8);
GPUOBS_ASSERT_OFF(gpuobs_amdgpu_cs_aux, data_read, 12);
GPUOBS_ASSERT_OFF(gpuobs_amdgpu_cs_aux, chunk, 16);
GPUOBS_ASSERT(sizeof(struct gpuobs_amdgpu_cs_aux) <= GPUOBS_IOCTL_AUX_MAX, "amdgpu CS chunks above the aux size");

GPUOBS_ASSERT_SIZE(gpuobs_proc, 312);
GPUOBS_ASSERT_OFF(gpuobs_proc, start_boottime_ns, 24);
GPUOBS_ASSERT_OFF(gpuobs_proc, ppid, 32);
GPUOBS_ASSERT_OFF(gpuobs_proc, exit_code, 36);
GPUOBS_ASSERT_OFF(gpuobs_proc, comm, 40);
GPUOBS_ASSERT_OFF(gpuobs_proc, filename, 56);

GPUOBS_ASSERT_SIZE(gpuobs_lib_map, 120);
GPUOBS_ASSERT_OFF(gpuobs_lib_map, start_boottime_ns, 24);
GPUOBS_ASSERT_OFF(gpuobs_lib_map, ppid, 32);
GPUOBS_ASSERT_OFF(gpuobs_lib_map, hold, 36);
GPUOBS_ASSERT_OFF(gpuobs_lib_map, comm, 40);
GPUOBS_ASSERT_OFF(gpuobs_lib_map, ino, 56);
GPUOBS_ASSERT_OFF(gpuobs_lib_map, kdev, 64);
GPUOBS_ASSERT_OFF(gpuobs_lib_map, filename, 72);
GPUOBS_ASSERT_SIZE(gpuobs_lib_key, 16);

GPUOBS_ASSERT_SIZE(gpuobs_gpu_trace, 224);
GPUOBS_ASSERT_OFF(gpuobs_gpu_trace, event, 24);
GPUOBS_ASSERT_OFF(gpuobs_gpu_trace, raw_len, 28);
GPUOBS_ASSERT_OFF(gpuobs_gpu_trace, name_gen, 30);
GPUOBS_ASSERT_OFF(gpuobs_gpu_trace, raw, 32);

/* The fixed part of an API call ends at blob: the entry-only programs reserve
 * exactly that much, and the decoder reads exactly that much. */
GPUOBS_ASSERT_OFF(gpuobs_api_call, args, 24);
GPUOBS_ASSERT_OFF(gpuobs_api_call, ret, 88);
GPUOBS_ASSERT_OFF(gpuobs_api_call, duration_ns, 96);
GPUOBS_ASSERT_OFF(gpuobs_api_call, out_value, 104);
GPUOBS_ASSERT_OFF(gpuobs_api_call, api, 112);
GPUOBS_ASSERT_OFF(gpuobs_api_call, flags, 116);
GPUOBS_ASSERT_OFF(gpuobs_api_call, blob_len, 120);
GPUOBS_ASSERT_OFF(gpuobs_api_call, blob_kind, 124);
GPUOBS_ASSERT_OFF(gpuobs_api_call, blob, 128);
GPUOBS_ASSERT_SIZE(gpuobs_api_call, 128 + GPUOBS_BLOB_MAX);

/* The stack area (read from the record's end by the decoder). */
GPUOBS_ASSERT_SIZE(gpuobs_stack_trailer, 16);
GPUOBS_ASSERT_OFF(gpuobs_stack_trailer, sp_word, 0);
GPUOBS_ASSERT_OFF(gpuobs_stack_trailer, nr, 8);
GPUOBS_ASSERT_OFF(gpuobs_stack_trailer, cap, 10);
GPUOBS_ASSERT_OFF(gpuobs_stack_trailer, flags, 12);
GPUOBS_ASSERT_SIZE(gpuobs_py_frame, 16);
GPUOBS_ASSERT_OFF(gpuobs_py_frame, code, 0);
GPUOBS_ASSERT_OFF(gpuobs_py_frame, instr, 8);
GPUOBS_ASSERT_OFF(gpuobs_py_frame, flags, 12);
GPUOBS_ASSERT_SIZE(gpuobs_py_trailer, 8);
GPUOBS_ASSERT_SIZE(gpuobs_py_proc, 48);
GPUOBS_ASSERT_SIZE(gpuobs_stack_regs, 32);
GPUOBS_ASSERT_OFF(gpuobs_stack_regs, ip, 0);
GPUOBS_ASSERT_OFF(gpuobs_stack_regs, sp, 8);
GPUOBS_ASSERT_OFF(gpuobs_stack_regs, bp, 16);
GPUOBS_ASSERT_SIZE(gpuobs_stack_copy_hdr, 8);
GPUOBS_ASSERT_OFF(gpuobs_stack_copy_hdr, len, 0);
GPUOBS_ASSERT_OFF(gpuobs_stack_copy_hdr, cap, 4);

/* Every body fits a scratch slot's body part. */
GPUOBS_ASSERT(sizeof(struct gpuobs_api_call) <= GPUOBS_RECORD_BODY_MAX, "api call body above the scratch size");
GPUOBS_ASSERT(sizeof(struct gpuobs_ioctl) <= GPUOBS_RECORD_BODY_MAX, "ioctl body above the scratch size");
GPUOBS_ASSERT(sizeof(struct gpuobs_launch) <= GPUOBS_RECORD_BODY_MAX, "launch body above the scratch size");

/* Unwind tables: written by user space into the unwind_procs map. */
GPUOBS_ASSERT_SIZE(gpuobs_unwind_mapping, 32);
GPUOBS_ASSERT_OFF(gpuobs_unwind_mapping, start, 0);
GPUOBS_ASSERT_OFF(gpuobs_unwind_mapping, end, 8);
GPUOBS_ASSERT_OFF(gpuobs_unwind_mapping, bias, 16);
GPUOBS_ASSERT_OFF(gpuobs_unwind_mapping, row_start, 24);
GPUOBS_ASSERT_OFF(gpuobs_unwind_mapping, row_count, 28);
GPUOBS_ASSERT_SIZE(gpuobs_unwind_proc, 8 + 32 * GPUOBS_UNWIND_MAPS_MAX);
GPUOBS_ASSERT_OFF(gpuobs_unwind_proc, m, 8);

#undef GPUOBS_ASSERT_OFF
#undef GPUOBS_ASSERT_SIZE
#undef GPUOBS_ASSERT

#endif /* GPUOBS_EVENTS_H */
