/* Test workload for the DRM decoders: issues the real i915, xe and amdgpu
 * request numbers (the include/uapi/drm headers of Linux 6.18, abi-reference.md
 * §7) with valid argument images on stand-in character devices that gpuobs is
 * told to decode as those drivers: the i915 submissions on the render and
 * blitter engines, an xe VM_BIND of two binds through vector_of_binds, and
 * amdgpu CS calls with IB chunks for COMPUTE, GFX and (cut at the BPF bound)
 * DMA. The stand-ins answer ENOTTY, so every call fails and only inputs are
 * decoded. Writes the issued sequence as JSON: driver, cmd, request, ret.
 *
 * usage: drm_ioctl_workload --i915 DEV --xe DEV --amdgpu DEV --truth FILE
 *
 * The numbers are computed here from the headers' _IOC rule, apart from the
 * decoder's tables (userspace/catalogue/drm_uapi.h), so a wrong table fails. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define DRM_IOW(nr, size)  ((1u << 30) | ((uint32_t)(size) << 16) | (0x64u << 8) | (nr))
#define DRM_IOWR(nr, size) ((3u << 30) | ((uint32_t)(size) << 16) | (0x64u << 8) | (nr))
#define CMD_BASE           0x40

static FILE *truth;
static int first = 1;

static void put32(uint8_t *b, size_t off, uint32_t v)
{
	memcpy(b + off, &v, 4);
}
static void put16(uint8_t *b, size_t off, uint16_t v)
{
	memcpy(b + off, &v, 2);
}
static void put64(uint8_t *b, size_t off, uint64_t v)
{
	memcpy(b + off, &v, 8);
}

static void issue(int fd, const char *driver, uint32_t cmd, void *arg, const char *request)
{
	long r = ioctl(fd, cmd, arg);
	long ret = r < 0 ? -errno : r;
	fprintf(truth, "%s\n  {\"driver\": \"%s\", \"cmd\": %u, \"request\": \"%s\", \"ret\": %ld}", first ? "" : ",",
		driver, cmd, request, ret);
	first = 0;
}

/* drm_i915_gem_execbuffer2 (64 B): buffers_ptr, buffer_count @8, batch_start_offset @12, batch_len @16,
 * flags @40, rsvd1 @48 (context id), rsvd2 @56 (fence fds). */
static void execbuf(int fd, int wr, uint32_t buffers, uint64_t flags, uint32_t ctx, uint64_t rsvd2)
{
	uint8_t e[64] = {0};
	static uint8_t objects[4 * 56];
	put64(e, 0, (uint64_t)(uintptr_t)objects);
	put32(e, 8, buffers);
	put32(e, 16, 4096);
	put64(e, 40, flags);
	put64(e, 48, ctx);
	put64(e, 56, rsvd2);
	if (wr)
		issue(fd, "i915", DRM_IOWR(CMD_BASE + 0x29, 64), e, "DRM_IOCTL_I915_GEM_EXECBUFFER2_WR");
	else
		issue(fd, "i915", DRM_IOW(CMD_BASE + 0x29, 64), e, "DRM_IOCTL_I915_GEM_EXECBUFFER2");
}

static void i915(int fd)
{
	uint8_t create[16] = {0}; /* size, handle (out) */
	put64(create, 0, 65536);
	issue(fd, "i915", DRM_IOWR(CMD_BASE + 0x1b, 16), create, "DRM_IOCTL_I915_GEM_CREATE");
	uint8_t ctx[16] = {0}; /* context_create_ext: ctx_id (out), flags, extensions */
	issue(fd, "i915", DRM_IOWR(CMD_BASE + 0x2d, 16), ctx, "DRM_IOCTL_I915_GEM_CONTEXT_CREATE_EXT");
	/* I915_EXEC_RENDER (1) | NO_RELOC (1 << 11), context 5; then the blitter
	 * (I915_EXEC_BLT, 3) with an in-fence (FENCE_IN, 1 << 16) in rsvd2. */
	execbuf(fd, 0, 3, 1 | (1u << 11), 5, 0);
	execbuf(fd, 0, 2, 1 | (1u << 11), 5, 0);
	execbuf(fd, 1, 1, 3 | (1u << 16), 5, 4);
	uint8_t sync[8] = {0}; /* drm_syncobj_create: handle (out), flags */
	issue(fd, "i915", DRM_IOWR(0xbf, 8), sync, "DRM_IOCTL_SYNCOBJ_CREATE");
	uint8_t destroy[8] = {0};
	put32(destroy, 0, 5);
	issue(fd, "i915", DRM_IOW(CMD_BASE + 0x2e, 8), destroy, "DRM_IOCTL_I915_GEM_CONTEXT_DESTROY");
}

/* drm_xe_vm_bind_op (80 B): obj @8, obj_offset @16, range @24, addr @32, op @40. */
static void bind_op(uint8_t *b, uint32_t op, uint32_t obj, uint64_t range, uint64_t addr)
{
	put32(b, 8, obj);
	put64(b, 24, range);
	put64(b, 32, addr);
	put32(b, 40, op);
}

static void xe(int fd)
{
	uint8_t vm[32] = {0}; /* vm_create: extensions, flags @8, vm_id (out) @12 */
	issue(fd, "xe", DRM_IOWR(CMD_BASE + 0x03, 32), vm, "DRM_IOCTL_XE_VM_CREATE");
	/* exec_queue_create (48 B): width @8, num_placements @10, vm_id @12, exec_queue_id (out) @20,
	 * instances @24 -> drm_xe_engine_class_instance {class, instance, gt_id, pad}: COMPUTE (4) 0. */
	static uint8_t instance[8];
	put16(instance, 0, 4);
	uint8_t q[48] = {0};
	put16(q, 8, 1);
	put16(q, 10, 1);
	put32(q, 12, 1);
	put64(q, 24, (uint64_t)(uintptr_t)instance);
	issue(fd, "xe", DRM_IOWR(CMD_BASE + 0x06, 48), q, "DRM_IOCTL_XE_EXEC_QUEUE_CREATE");
	/* vm_bind (136 B): vm_id @8, num_binds @20, vector_of_binds @24 (2 binds: MAP, UNMAP), num_syncs @108. */
	static uint8_t binds[2 * 80];
	bind_op(binds, 0, 4, 0x10000, 0x200000);
	bind_op(binds + 80, 1, 0, 0x10000, 0x400000);
	uint8_t b[136] = {0};
	put32(b, 8, 1);
	put32(b, 20, 2);
	put64(b, 24, (uint64_t)(uintptr_t)binds);
	issue(fd, "xe", DRM_IOW(CMD_BASE + 0x05, 136), b, "DRM_IOCTL_XE_VM_BIND");
	/* exec (56 B): exec_queue_id @8, num_syncs @12, address @24, num_batch_buffer @32. */
	uint8_t e[56] = {0};
	put32(e, 8, 3);
	put64(e, 24, 0x1a0000);
	put16(e, 32, 1);
	issue(fd, "xe", DRM_IOW(CMD_BASE + 0x09, 56), e, "DRM_IOCTL_XE_EXEC");
	uint8_t qd[24] = {0};
	put32(qd, 0, 3);
	issue(fd, "xe", DRM_IOW(CMD_BASE + 0x07, 24), qd, "DRM_IOCTL_XE_EXEC_QUEUE_DESTROY");
}

/* One amdgpu CS: drm_amdgpu_cs_in {ctx_id, bo_list_handle, num_chunks @8, flags @12, chunks @16} ->
 * __u64[num_chunks] -> drm_amdgpu_cs_chunk {chunk_id, length_dw, chunk_data}. */
struct chunk {
	uint32_t chunk_id, length_dw;
	uint64_t chunk_data;
};

static void cs(int fd, uint32_t ctx, struct chunk *chunks, uint32_t n)
{
	uint64_t ptrs[8];
	for (uint32_t i = 0; i < n; i++)
		ptrs[i] = (uint64_t)(uintptr_t)&chunks[i];
	uint8_t in[24] = {0};
	put32(in, 0, ctx);
	put32(in, 8, n);
	put64(in, 16, (uint64_t)(uintptr_t)ptrs);
	issue(fd, "amdgpu", DRM_IOWR(CMD_BASE + 0x04, 24), in, "DRM_IOCTL_AMDGPU_CS");
}

/* drm_amdgpu_cs_chunk_ib (32 B): flags @4, va_start @8, ib_bytes @16, ip_type @20, ip_instance @24, ring @28. */
static void ib(uint8_t *b, uint32_t ip_type, uint32_t bytes)
{
	put64(b, 8, 0x800000000ull);
	put32(b, 16, bytes);
	put32(b, 20, ip_type);
}

static void amdgpu(int fd)
{
	uint8_t ctx[16] = {0}; /* ctx_in: op = AMDGPU_CTX_OP_ALLOC_CTX, flags, ctx_id, priority */
	put32(ctx, 0, 1);
	issue(fd, "amdgpu", DRM_IOWR(CMD_BASE + 0x02, 16), ctx, "DRM_IOCTL_AMDGPU_CTX");
	uint8_t gem[32] = {0}; /* gem_create_in: bo_size, alignment, domains (VRAM 0x4), domain_flags */
	put64(gem, 0, 1 << 20);
	put64(gem, 8, 4096);
	put64(gem, 16, 0x4);
	issue(fd, "amdgpu", DRM_IOWR(CMD_BASE + 0x00, 32), gem, "DRM_IOCTL_AMDGPU_GEM_CREATE");

	/* COMPUTE (ip 1): IB, fence, one syncobj out. */
	static uint8_t ib_compute[32], fence[8], sem_out[4], ib_gfx[32], dep[24], ib_dma[8][32];
	ib(ib_compute, 1, 256);
	struct chunk compute[3] = {{1, 8, (uint64_t)(uintptr_t)ib_compute},
				   {2, 2, (uint64_t)(uintptr_t)fence},
				   {5, 1, (uint64_t)(uintptr_t)sem_out}};
	cs(fd, 1, compute, 3);
	/* GFX (ip 0): IB and one dependency (drm_amdgpu_cs_chunk_dep, 24 B). */
	ib(ib_gfx, 0, 512);
	struct chunk gfx[2] = {{1, 8, (uint64_t)(uintptr_t)ib_gfx}, {3, 6, (uint64_t)(uintptr_t)dep}};
	cs(fd, 1, gfx, 2);
	/* DMA (ip 2): 8 IB chunks, 2 past what BPF keeps. */
	struct chunk dma[8];
	for (int i = 0; i < 8; i++) {
		ib(ib_dma[i], 2, 64);
		dma[i] = (struct chunk){1, 8, (uint64_t)(uintptr_t)ib_dma[i]};
	}
	cs(fd, 1, dma, 8);
	/* wait_cs_in: handle, timeout @8, ip_type @16, ip_instance, ring, ctx_id @28. */
	uint8_t wait[32] = {0};
	put64(wait, 0, 0x55);
	put64(wait, 8, 1000000000);
	put32(wait, 28, 1);
	issue(fd, "amdgpu", DRM_IOWR(CMD_BASE + 0x09, 32), wait, "DRM_IOCTL_AMDGPU_WAIT_CS");
	/* userq_in (72 B): op = CREATE (1), queue_id, ip_type = COMPUTE @8, ..., queue_va @24, queue_size @32. */
	uint8_t uq[72] = {0};
	put32(uq, 0, 1);
	put32(uq, 8, 1);
	put64(uq, 24, 0x900000000ull);
	put64(uq, 32, 1 << 16);
	issue(fd, "amdgpu", DRM_IOWR(CMD_BASE + 0x16, 72), uq, "DRM_IOCTL_AMDGPU_USERQ");
}

int main(int argc, char **argv)
{
	const char *i915_dev = 0, *xe_dev = 0, *amdgpu_dev = 0, *truth_path = 0;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--i915"))
			i915_dev = argv[i + 1];
		else if (!strcmp(argv[i], "--xe"))
			xe_dev = argv[i + 1];
		else if (!strcmp(argv[i], "--amdgpu"))
			amdgpu_dev = argv[i + 1];
		else if (!strcmp(argv[i], "--truth"))
			truth_path = argv[i + 1];
	}
	if (!i915_dev || !xe_dev || !amdgpu_dev || !truth_path)
		return 2;
	int fi = open(i915_dev, O_RDWR), fx = open(xe_dev, O_RDWR), fa = open(amdgpu_dev, O_RDWR);
	truth = fopen(truth_path, "w");
	if (fi < 0 || fx < 0 || fa < 0 || !truth)
		return 1;
	fputs("[", truth);
	i915(fi);
	xe(fx);
	amdgpu(fa);
	fputs("\n]\n", truth);
	return fclose(truth) == 0 ? 0 : 1;
}
