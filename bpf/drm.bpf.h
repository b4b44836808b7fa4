/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* DRM render/primary nodes (char major 226): what the ioctl exit copies
 * beyond a rule's head and one aux block. amdgpu's CS is the one request
 * whose meaning (the engine each IB goes to) sits three pointers deep:
 * drm_amdgpu_cs_in.chunks -> __u64 chunk_array[num_chunks] -> struct
 * drm_amdgpu_cs_chunk -> chunk_data (drm_amdgpu_cs_chunk_ib for an IB).
 * One aux block behind one pointer cannot reach it, so this walk fills
 * struct gpuobs_amdgpu_cs_aux (events.h) instead: a fixed number of chunks
 * (a bounded loop of constant trip count, which the verifier of every
 * kernel gpuobs loads on accepts and clang 14 may unroll), three fixed-size
 * reads each, nothing that grows the record. Chunks past the bound are not
 * read; the decoder counts them as cut (num_chunks is in the head). */
#ifndef GPUOBS_DRM_BPF_H
#define GPUOBS_DRM_BPF_H

#include "maps.bpf.h"

struct amdgpu_cs_chunk_hdr {
	__u32 chunk_id;
	__u32 length_dw;
	__u64 chunk_data;
};

/* Fills e->aux with the chain of the CS whose drm_amdgpu_cs_in is in
 * e->head (got valid bytes); in0 is the head's first 8 bytes at entry.
 * Returns the aux bytes written. */
static __always_inline __u32 amdgpu__cs_chunks(struct gpuobs_ioctl *e, __u32 got, __u64 in0)
{
	struct gpuobs_amdgpu_cs_aux *a = (struct gpuobs_amdgpu_cs_aux *)e->aux;
	a->in0 = in0;
	a->chunks_read = 0;
	a->data_read = 0;
	if (got < GPUOBS_AMDGPU_CS_IN_SIZE)
		return 16;
	__u32 n = *(__u32 *)&e->head[GPUOBS_AMDGPU_CS_IN_NUM_CHUNKS];
	__u64 array = *(__u64 *)&e->head[GPUOBS_AMDGPU_CS_IN_CHUNKS];
	for (__u32 i = 0; i < GPUOBS_AMDGPU_CS_CHUNKS; i++) {
		if (i >= n || !array)
			break;
		__u64 p = 0;
		struct amdgpu_cs_chunk_hdr h;
		if (bpf_probe_read_user(&p, sizeof(p), (void *)(array + 8 * i)) || !p)
			break;
		if (bpf_probe_read_user(&h, sizeof(h), (void *)p))
			break;
		struct gpuobs_amdgpu_cs_chunk *c = &a->chunk[i];
		c->chunk_id = h.chunk_id;
		c->length_dw = h.length_dw;
		__builtin_memset(c->data, 0, sizeof(c->data));
		a->chunks_read = i + 1;
		__u64 len = (__u64)h.length_dw * 4;
		GPUOBS_CLAMP(len, GPUOBS_AMDGPU_CS_DATA);
		if (len && h.chunk_data && bpf_probe_read_user(c->data, len, (void *)h.chunk_data) == 0)
			a->data_read |= 1u << i;
	}
	return 16 + a->chunks_read * sizeof(struct gpuobs_amdgpu_cs_chunk);
}

#endif
