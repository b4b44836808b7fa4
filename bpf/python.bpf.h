/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* CPython frames (issue 18): in a process user space has described in
 * py_procs, every stack also carries the calling thread's interpreter frames
 * (layout in bpf/events.h). The walk needs no native frame: it starts from
 * the thread's PyThreadState, found in the interpreter's thread list by the
 * thread's fs base (what PyThreadState.thread_id holds: pthread_self()), so
 * a PyTorch launch whose native walk dies in libtorch (no frame pointers)
 * still names its Python caller. The calling thread is stopped in this
 * probe: its frames cannot change under the walk. A thread that runs no
 * Python (PyTorch's autograd worker) takes the main thread's frames instead
 * (GPUOBS_PY_T_MAIN), only while the main thread is off the CPU: waiting,
 * so they hold still while they are read. Either way an
 * unreadable frame ends the walk (GPUOBS_PY_S_FAULT), and a wrong pointer
 * yields a code address user space then refuses (it checks each object's
 * type). */
#ifndef GPUOBS_PYTHON_BPF_H
#define GPUOBS_PYTHON_BPF_H

#include "maps.bpf.h"
#include "unwind.bpf.h"

/* Most Python frames per record (<= GPUOBS_PY_FRAMES_MAX; 0: off), set by
 * the loader. */
const volatile __u32 python_depth = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* tgid */
	__type(value, struct gpuobs_py_proc);
} py_procs SEC(".maps");

/* The thread state last found for a thread, in the thread's own storage
 * (no hash lookup): checked on every use (its thread_id must still be this
 * thread's), so a freed and reused one costs a walk, never a wrong stack. */
struct py_thread {
	__u64 tstate;
	__u64 main_tstate; /* the main thread's, for GPUOBS_PY_T_MAIN */
};
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct py_thread);
} py_threads SEC(".maps");

/* Python stacks already sent, as hash(process, code objects) in a
 * direct-mapped table: a record whose stack is not in its slot wakes the
 * reader at once (maps.bpf.h wake_now), so it reads new code objects before
 * a short-lived process is gone. A collision costs one early wake-up. */
#define PY_SEEN_SLOTS 65536
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PY_SEEN_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} py_seen SEC(".maps");

/* Where the walk writes: the frames, then (at py[n]) the trailer; buf holds
 * one frame's bytes while it is read. */
struct gpuobs_py_area {
	struct gpuobs_py_frame py[GPUOBS_PY_FRAMES_MAX + 1];
	__u8 buf[GPUOBS_PY_READ_MAX];
	/* Frames as read: a block of the data stack (3.11+) or one frame; the
	 * tail keeps a frame at any offset below GPUOBS_PY_BLOCK in bounds. */
	__u8 blk[GPUOBS_PY_BLOCK + GPUOBS_PY_READ_MAX];
	/* [blk_lo, blk_lo + blk_len): the user memory blk holds. Kept here, not
	 * in registers: the verifier then sees one loop state, not one per
	 * path that set them. */
	__u64 blk_lo;
	__u64 blk_len;
	/* The walk's count and hash, in memory for the same reason: kept in
	 * registers they made each iteration a new state (2.3 s to load the
	 * object on the VM instead of 0.3). */
	__u64 n;
	__u64 hash;
};

#define PY_THREADS_MAX 256 /* threads searched per interpreter */

static __always_inline __u64 py__word(const __u8 *buf, __u16 off)
{
	return *(const __u64 *)(buf + (off & (GPUOBS_PY_READ_MAX - 8)));
}

static __always_inline int py__has(__u16 off)
{
	return off != GPUOBS_PY_NONE;
}

/* Whether a thread with no Python frame of its own takes the main
 * thread's (GPUOBS_PY_T_MAIN), set by the loader (--python-main-thread). */
const volatile __u32 python_main_thread = 0;

/* The innermost frame of the thread whose fs base is fsbase (0: it runs no
 * Python now); *ts its PyThreadState, 0 if it has none; *fault set when the
 * thread state was found but its frame pointer could not be read. *cache:
 * the thread state found last for that thread (checked before use, updated
 * after a search). buf: scratch for the thread state's bytes. */
static __always_inline __u64 py__thread_frame(const struct gpuobs_py_proc *p, __u8 *buf, __u64 fsbase, __u64 *cache,
					      __u64 *ts, int *fault)
{
	__u32 len = p->tstate_len;
	if (len > GPUOBS_PY_READ_MAX)
		len = GPUOBS_PY_READ_MAX;
	if (len < 8)
		len = 8;
	__u16 id_at = p->tstate_thread_id - p->tstate_lo, frame_at = p->tstate_frame - p->tstate_lo;
	__u64 frame = 0;
	*ts = 0;
	if (*cache && !bpf_probe_read_user(buf, len, (void *)(*cache + p->tstate_lo)) &&
	    py__word(buf, id_at) == fsbase) {
		*ts = *cache;
		frame = py__word(buf, frame_at);
	} else {
		__u64 interp = 0, t = 0, id = 0;
		if (bpf_probe_read_user(&interp, 8, (void *)(p->runtime + p->runtime_interp)) || !interp)
			return 0;
		if (bpf_probe_read_user(&t, 8, (void *)(interp + p->interp_threads)))
			return 0;
		int i;
		gpuobs_for(i, 0, PY_THREADS_MAX)
		{
			if (!t)
				break;
			if (bpf_probe_read_user(&id, 8, (void *)(t + p->tstate_thread_id)))
				return 0;
			if (id == fsbase)
				break;
			if (bpf_probe_read_user(&t, 8, (void *)(t + p->tstate_next)))
				return 0;
		}
		if (!t || id != fsbase)
			return 0;
		*cache = t;
		*ts = t;
		if (bpf_probe_read_user(&frame, 8, (void *)(t + p->tstate_frame))) {
			*fault = 1;
			return 0;
		}
	}
	/* 3.11/3.12: the thread state points to a _PyCFrame, which holds it. */
	if (frame && py__has(p->cframe_current) &&
	    bpf_probe_read_user(&frame, 8, (void *)(frame + p->cframe_current))) {
		*fault = 1;
		return 0;
	}
	return frame;
}

/* Walks the calling thread's Python frames into out; returns the bytes used
 * (frames and trailer), 0 when the process runs no known interpreter. A
 * global function: the verifier checks it once for all the probes. */
__noinline __u32 py__walk(struct gpuobs_py_area *out)
{
	if (!out)
		return 0;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	const struct gpuobs_py_proc *p = bpf_map_lookup_elem(&py_procs, &tgid);
	if (!p)
		return 0;
	__u32 depth = python_depth;
	if (depth > GPUOBS_PY_FRAMES_MAX)
		depth = GPUOBS_PY_FRAMES_MAX;
	__u64 n = 0;
	__u64 hash = 0xcbf29ce484222325ULL;
	__u16 status = GPUOBS_PY_S_DONE;
	__u64 ts = 0;
	int fault = 0;
	__u32 thread = GPUOBS_PY_T_CALLING;
	struct task_struct *task = bpf_get_current_task_btf();
	/* Task storage can be unavailable (nested programs on this CPU, no
	 * memory): the walk then searches without a cache. */
	__u64 no_cache[2] = {0, 0};
	struct py_thread *c = bpf_task_storage_get(&py_threads, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	__u64 *own_cache = c ? &c->tstate : &no_cache[0];
	__u64 *main_cache = c ? &c->main_tstate : &no_cache[1];
	__u64 frame = py__thread_frame(p, out->buf, BPF_CORE_READ(task, thread.fsbase), own_cache, &ts, &fault);
	/* A thread that runs no Python of its own (none, or no interpreter
	 * state): the main thread's frames say which Python line waits on it,
	 * but only while the main thread is off the CPU (blocked: in
	 * loss.backward(), a join, a sync). A main thread that runs is not
	 * waiting on this thread, and its frames would change under the walk. */
	if (!frame && !fault && python_main_thread && (__u32)pid_tgid != tgid) {
		struct task_struct *leader = BPF_CORE_READ(task, group_leader);
		if (BPF_CORE_READ(leader, __state) == 0 /* TASK_RUNNING */) {
			counter__add(GPUOBS_CNT_PY_MAIN_RUNNING);
		} else {
			__u64 main_ts = 0;
			int main_fault = 0;
			__u64 main_frame = py__thread_frame(p, out->buf, BPF_CORE_READ(leader, thread.fsbase),
							    main_cache, &main_ts, &main_fault);
			/* Taken only when it has frames: else the thread's own
			 * result (no state, or none running) stands. */
			if (main_ts && (main_frame || main_fault)) {
				ts = main_ts;
				frame = main_frame;
				fault = main_fault;
				thread = GPUOBS_PY_T_MAIN;
				counter__add(GPUOBS_CNT_PY_MAIN_THREAD);
			}
		}
	}
	if (!ts) {
		status = GPUOBS_PY_S_NO_THREAD;
		counter__add(GPUOBS_CNT_PY_NO_THREAD);
		goto done;
	}
	if (fault) {
		status = GPUOBS_PY_S_FAULT;
		counter__add(GPUOBS_CNT_PY_FAULT);
		goto done;
	}
	__u32 len = p->frame_read;
	if (len > GPUOBS_PY_READ_MAX)
		len = GPUOBS_PY_READ_MAX;
	if (len < 8)
		len = 8;
	out->blk_lo = 0;
	out->blk_len = 0;
	out->n = 0;
	out->hash = 0xcbf29ce484222325ULL;
	int i;
	/* Shim frames (3.12+) are skipped without taking a slot: the loop may
	 * see twice as many frames as it keeps. */
	gpuobs_for(i, 0, 2 * GPUOBS_PY_FRAMES_MAX)
	{
		if (!frame)
			break;
		__u64 k = out->n;
		if (k >= depth || k >= GPUOBS_PY_FRAMES_MAX) {
			status = GPUOBS_PY_S_FULL;
			counter__add(GPUOBS_CNT_PY_FULL);
			break;
		}
		/* The frame's bytes: in the block read last, or a new block that
		 * ends with this frame (its callers sit below it), or the frame
		 * alone where the block is not readable (or 3.10's heap frames). */
		if (!(frame >= out->blk_lo && frame + len <= out->blk_lo + out->blk_len)) {
			/* The first block is small (shallow stacks need no more; the
			 * copy is most of a read's cost), later ones whole. */
			__u64 blen = out->blk_len ? GPUOBS_PY_BLOCK : GPUOBS_PY_BLOCK / 4;
			/* Never below the frame's own page: the page before it can be
			 * unmapped (the start of a data-stack chunk), and a read that
			 * faults costs a page fault taken in the kernel, more than
			 * the walk (issue 42). Its callers in earlier pages are read
			 * when the loop reaches them. */
			__u64 page = frame & ~4095ULL;
			if (frame + len - blen < page)
				blen = frame + len - page;
			if (blen < len || blen > GPUOBS_PY_BLOCK)
				blen = len;
			out->blk_len = 0;
			if (p->frames == GPUOBS_PY_FRAMES_INTERP && frame + len > blen &&
			    !bpf_probe_read_user(out->blk, blen, (void *)(frame + len - blen))) {
				out->blk_lo = frame + len - blen;
				out->blk_len = blen;
			} else if (!bpf_probe_read_user(out->blk, len, (void *)frame)) {
				out->blk_lo = frame;
				out->blk_len = len;
			} else {
				status = GPUOBS_PY_S_FAULT;
				counter__add(GPUOBS_CNT_PY_FAULT);
				break;
			}
		}
		const __u8 *fb = out->blk + ((frame - out->blk_lo) & (GPUOBS_PY_BLOCK - 8));
		__u64 code = py__word(fb, p->frame_code);
		__u64 previous = py__word(fb, p->frame_previous);
		if (py__has(p->frame_owner) && p->owner_cstack != 0xff &&
		    fb[p->frame_owner & (GPUOBS_PY_READ_MAX - 1)] == p->owner_cstack) {
			/* A C function's call into the interpreter starts here: the
			 * frame kept before it is the outermost of that call. */
			if (k > 0)
				out->py[k - 1].flags |= GPUOBS_PY_F_ENTRY;
			frame = previous;
			continue;
		}
		struct gpuobs_py_frame *f = &out->py[k];
		f->code = code;
		out->hash = (out->hash ^ code) * 0x100000001b3ULL;
		f->flags = 0;
		if (p->frames == GPUOBS_PY_FRAMES_OBJECTS) {
			/* One interpreter call per frame object. */
			f->instr = *(const __u32 *)(fb + (p->frame_instr & (GPUOBS_PY_READ_MAX - 4)));
			f->flags = GPUOBS_PY_F_ENTRY;
		} else {
			f->instr = (__u32)(py__word(fb, p->frame_instr) - code);
			if (py__has(p->frame_is_entry) && fb[p->frame_is_entry & (GPUOBS_PY_READ_MAX - 1)])
				f->flags = GPUOBS_PY_F_ENTRY;
		}
		out->n = k + 1;
		frame = previous;
	}
	n = out->n;
	GPUOBS_CLAMP(n, GPUOBS_PY_FRAMES_MAX);
	hash = out->hash;
	/* The thread's first frame ends its interpreter call. */
	if (status == GPUOBS_PY_S_DONE && n > 0 && n <= GPUOBS_PY_FRAMES_MAX)
		out->py[n - 1].flags |= GPUOBS_PY_F_ENTRY;
	if (n > 0) {
		hash = (hash ^ tgid) * 0x100000001b3ULL;
		__u32 slot = (__u32)(hash >> 32) & (PY_SEEN_SLOTS - 1);
		__u64 *seen = bpf_map_lookup_elem(&py_seen, &slot);
		if (seen && *seen != hash) {
			*seen = hash;
			__u32 zero = 0;
			__u32 *wake = bpf_map_lookup_elem(&wake_now, &zero);
			if (wake)
				*wake = 1;
		}
	}
done:
	if (n > GPUOBS_PY_FRAMES_MAX)
		n = GPUOBS_PY_FRAMES_MAX;
	struct gpuobs_py_trailer *t = (struct gpuobs_py_trailer *)&out->py[n];
	t->n = (__u16)n;
	t->status = status;
	t->thread = thread;
	return n * sizeof(struct gpuobs_py_frame) + sizeof(struct gpuobs_py_trailer);
}

#endif
