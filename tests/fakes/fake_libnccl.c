/* A fake NCCL library for tests: exports the NCCL calls gpuobs probes with
 * the real x86-64 ABI (NCCL 2.28.9 prototypes, fake_nccl.h; register map in
 * abi-reference.md, "NCCL (libnccl.so.2)"), keeps a communicator of its own
 * (nranks, rank, device, magic) behind the opaque ncclComm_t, and never
 * touches the buffers it is given: a collective only counts itself and
 * returns, so a test knows exactly which calls were made and with what.
 * Built as libnccl.so.2.
 *
 * Knobs (environment, read by every collective; ncclSend/ncclRecv are not
 * collectives here and are not counted):
 *   FAKE_NCCL_HANG_AT=S  the S-th collective call of the process (1-based, in
 *                        call order) never returns: it blocks in pause() inside
 *                        the library, as a rank waiting for a peer that never
 *                        comes would ("entered, never returned").
 *   FAKE_NCCL_DIE_AT=S   the S-th collective call _exit(3)s inside the library.
 *   FAKE_NCCL_LIBCUDA=P  launch the work as the real library does, through
 *                        libcuda: a collective outside a group, and the
 *                        group end that closes one, call cuStreamQuery of the
 *                        libcuda file P before returning (a probed libcuda call
 *                        nested inside a probed NCCL call, on the same thread).
 *   FAKE_NCCL_DEVICE=D   the CUDA device a new communicator reports through
 *                        ncclCommCuDevice (default 0): the real library takes
 *                        the device current at init, set by cudaSetDevice. */
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "fake_nccl.h"

/* The fake ignores most arguments: they are there for the ABI. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

/* Weak, as in the real library: a default NCCL build (PROFAPI=1) defines
 * every ncclXxx weak and pncclXxx as a strong alias at the same address, so
 * a profiling shim can interpose the ncclXxx names. A symbol lookup that
 * skips weak symbols would find nothing in either. */
#define API __attribute__((visibility("default"), weak, noinline))

/* Marks a live communicator, checked on each use: a handle already destroyed
 * (while malloc has not reused its memory) gives ncclInvalidArgument, like
 * NULL, instead of quietly working; cleared on destroy. */
#define COMM_ALIVE 0x6e63636c636f6d6dull /* "ncclcomm" */

struct ncclComm {
	int nranks;
	int rank;
	int device;
	int with_config; /* made by ncclCommInitRankConfig */
	uint64_t magic;  /* the unique id's first 8 bytes, as the real comm->magic */
	uint64_t alive;
};

/* Which entry point a helper was called from. Each entry point passes its
 * own value, so no two have the same body: identical bodies could be folded
 * by -fipa-icf into one function plus a thunk, and a uprobe on the thunk's
 * symbol would see a jump, not a frame. */
enum fn {
	FN_ALL_REDUCE,
	FN_BROADCAST,
	FN_REDUCE,
	FN_ALL_GATHER,
	FN_REDUCE_SCATTER,
	FN_ALLTOALL,
	FN_SEND,
	FN_RECV,
	FN_GATHER,
	FN_SCATTER,
	FN_ALLTOALL_RCCL,
	FN_COUNT
};

static atomic_ulong collective_calls; /* every collective entry, valid or not */
static atomic_ulong fn_calls[FN_COUNT];
static _Thread_local int group_depth; /* the real group state is per thread too */
static _Thread_local const char *last_error = "";

static long env_long(const char *name, long fallback)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return fallback;
	char *end;
	long n = strtol(v, &end, 10);
	return *end ? fallback : n;
}

__attribute__((noinline)) static ncclResult_t fail(ncclResult_t r, const char *why)
{
	last_error = why;
	return r;
}

__attribute__((noinline)) static int comm_ok(ncclComm_t comm)
{
	return comm && comm->alive == COMM_ALIVE;
}

/* Entry points call helpers instead of touching atomics themselves: as
 * non-leaf functions built with frame pointers they start with "push %rbp"
 * like real library code. A lock-prefixed first instruction cannot be
 * uprobed on x86 (see fake_libcuda.c). */
__attribute__((noinline)) static void count_call(enum fn f)
{
	atomic_fetch_add_explicit(&fn_calls[f], 1, memory_order_relaxed);
}

/* FAKE_NCCL_LIBCUDA: the nested libcuda call of a launch. */
__attribute__((noinline)) static void launch_work(void)
{
	static int (*query)(void *);
	static int looked;
	if (!looked) {
		looked = 1;
		const char *path = getenv("FAKE_NCCL_LIBCUDA");
		void *lib = path && *path ? dlopen(path, RTLD_NOW) : NULL;
		if (lib)
			query = (int (*)(void *))dlsym(lib, "cuStreamQuery");
	}
	if (query)
		query(NULL);
}

/* The hang and die knobs. Called from the entry point, so the blocked or
 * dying thread has the entry point's frame on its stack and the call's
 * return probe never fires. */
__attribute__((noinline)) static void maybe_hang_or_die(void)
{
	unsigned long seq = atomic_fetch_add_explicit(&collective_calls, 1, memory_order_relaxed) + 1;
	long hang_at = env_long("FAKE_NCCL_HANG_AT", 0), die_at = env_long("FAKE_NCCL_DIE_AT", 0);
	if (die_at > 0 && seq == (unsigned long)die_at)
		_exit(3);
	if (hang_at > 0 && seq == (unsigned long)hang_at)
		for (;;)
			pause(); /* a handled signal returns from pause(): block again */
}

__attribute__((noinline)) static ncclResult_t collective(enum fn f, ncclComm_t comm, ncclDataType_t type)
{
	count_call(f);
	maybe_hang_or_die();
	if (!comm_ok(comm))
		return fail(ncclInvalidArgument, "invalid communicator");
	if ((int)type < 0 || type >= ncclNumTypes)
		return fail(ncclInvalidArgument, "invalid data type");
	if (group_depth == 0)
		launch_work();
	return ncclSuccess;
}

__attribute__((noinline)) static ncclResult_t point_to_point(enum fn f, ncclComm_t comm, ncclDataType_t type, int peer)
{
	count_call(f);
	if (!comm_ok(comm))
		return fail(ncclInvalidArgument, "invalid communicator");
	if ((int)type < 0 || type >= ncclNumTypes)
		return fail(ncclInvalidArgument, "invalid data type");
	if (peer < 0 || peer >= comm->nranks)
		return fail(ncclInvalidArgument, "invalid peer");
	return ncclSuccess;
}

__attribute__((noinline)) static ncclComm_t new_comm(int nranks, int rank, int device, uint64_t magic, int with_config)
{
	struct ncclComm *c = malloc(sizeof *c);
	if (!c)
		return NULL;
	*c = (struct ncclComm){.nranks = nranks,
			       .rank = rank,
			       .device = device,
			       .with_config = with_config,
			       .magic = magic,
			       .alive = COMM_ALIVE};
	return c;
}

__attribute__((noinline)) static ncclResult_t init_rank(ncclComm_t *comm, int nranks, const ncclUniqueId *id, int rank,
							int with_config)
{
	if (!comm)
		return fail(ncclInvalidArgument, "comm is NULL");
	if (nranks < 1 || rank < 0 || rank >= nranks)
		return fail(ncclInvalidArgument, "invalid rank or nranks");
	uint64_t magic;
	memcpy(&magic, id->internal, sizeof magic);
	*comm = new_comm(nranks, rank, (int)env_long("FAKE_NCCL_DEVICE", 0), magic, with_config);
	return *comm ? ncclSuccess : fail(ncclSystemError, "out of memory");
}

/* Destroy and abort differ in the real library (abort does not wait for
 * outstanding work); here both free the communicator. */
__attribute__((noinline)) static ncclResult_t free_comm(ncclComm_t comm, int aborting)
{
	if (!comm)
		return ncclSuccess; /* as the real ncclCommDestroy/Abort(NULL) */
	if (!comm_ok(comm))
		return fail(ncclInvalidArgument, "invalid communicator");
	if (aborting)
		last_error = "communicator aborted";
	comm->alive = 0;
	free(comm);
	return ncclSuccess;
}

__attribute__((noinline)) static ncclResult_t get_int(ncclComm_t comm, int *out, int value)
{
	if (!out)
		return fail(ncclInvalidArgument, "out-pointer is NULL");
	*out = value;
	return ncclSuccess;
}

/* getrandom() on a fresh boot can block; the tests run long after. */
__attribute__((noinline)) static ncclResult_t random_u64(uint64_t *v)
{
	size_t got = 0;
	while (got < sizeof *v) {
		ssize_t n = getrandom((char *)v + got, sizeof *v - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return fail(ncclSystemError, "getrandom failed");
		got += (size_t)n;
	}
	return ncclSuccess;
}

API ncclResult_t ncclGetVersion(int *version)
{
	return version ? get_int(NULL, version, FAKE_NCCL_VERSION_CODE) : fail(ncclInvalidArgument, "version is NULL");
}

/* The real default id (NCCL >= 2.16) is a bootstrap handle: a random 64-bit
 * magic at offset 0, the root's socket address at 8, zeros after. The fake
 * keeps the random magic and fills bytes 8..127 with their own offsets, so a
 * test reading the by-value copy off the stack can tell every byte apart. */
API ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId)
{
	if (!uniqueId)
		return fail(ncclInvalidArgument, "uniqueId is NULL");
	uint64_t magic;
	ncclResult_t r = random_u64(&magic);
	if (r != ncclSuccess)
		return r;
	memcpy(uniqueId->internal, &magic, sizeof magic);
	for (size_t i = sizeof magic; i < NCCL_UNIQUE_ID_BYTES; ++i)
		uniqueId->internal[i] = (char)i;
	return ncclSuccess;
}

/* commId is on the stack at [rsp+8, rsp+136) at entry; rank is in edx. */
API ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
	return init_rank(comm, nranks, &commId, rank, 0);
}

/* The fake never reads config (NULL means the defaults in the real one). */
API ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
					ncclConfig_t *config)
{
	return init_rank(comm, nranks, &commId, rank, 1);
}

/* NCCL 2.23+: several ids to spread the bootstrap; the fake takes the
 * first's magic, as every rank passes the same ids in the same order. */
API ncclResult_t ncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId, ncclUniqueId *commIds,
					  ncclConfig_t *config)
{
	if (nId < 1 || !commIds)
		return fail(ncclInvalidArgument, "no unique ids");
	return init_rank(newcomm, nranks, &commIds[0], myrank, config != NULL);
}

/* One process, ndev ranks: rank i on devlist[i] (or device i). */
API ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist)
{
	if (!comm || ndev < 1)
		return fail(ncclInvalidArgument, "invalid comm array or ndev");
	uint64_t magic;
	ncclResult_t r = random_u64(&magic);
	for (int i = 0; r == ncclSuccess && i < ndev; ++i) {
		comm[i] = new_comm(ndev, i, devlist ? devlist[i] : i, magic, 0);
		if (!comm[i])
			r = fail(ncclSystemError, "out of memory");
	}
	return r;
}

/* The fake knows no other rank's color: the child has the parent's ranks. */
API ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config)
{
	if (!comm_ok(comm) || !newcomm)
		return fail(ncclInvalidArgument, "invalid communicator");
	if (color == NCCL_SPLIT_NOCOLOR) {
		*newcomm = NULL; /* this rank takes part in no child */
		return ncclSuccess;
	}
	*newcomm = new_comm(comm->nranks, comm->rank, comm->device,
			    comm->magic ^ (0x9e3779b97f4a7c15ull * (uint64_t)(unsigned)color), config != NULL);
	return *newcomm ? ncclSuccess : fail(ncclSystemError, "out of memory");
}

API ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	return free_comm(comm, 0);
}

API ncclResult_t ncclCommAbort(ncclComm_t comm)
{
	return free_comm(comm, 1);
}

API ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
	return comm_ok(comm) ? get_int(comm, count, comm->nranks) : fail(ncclInvalidArgument, "invalid communicator");
}

API ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device)
{
	return comm_ok(comm) ? get_int(comm, device, comm->device) : fail(ncclInvalidArgument, "invalid communicator");
}

API ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
	return comm_ok(comm) ? get_int(comm, rank, comm->rank) : fail(ncclInvalidArgument, "invalid communicator");
}

/* The fake's own wording (the real strings are not part of the ABI). A
 * helper of its own, so ncclGetErrorString is not a frameless leaf. */
__attribute__((noinline)) static const char *error_string(ncclResult_t result)
{
	switch (result) {
	case ncclSuccess:
		return "success (fake nccl)";
	case ncclUnhandledCudaError:
		return "unhandled cuda error (fake nccl)";
	case ncclSystemError:
		return "system error (fake nccl)";
	case ncclInternalError:
		return "internal error (fake nccl)";
	case ncclInvalidArgument:
		return "invalid argument (fake nccl)";
	case ncclInvalidUsage:
		return "invalid usage (fake nccl)";
	case ncclRemoteError:
		return "remote error (fake nccl)";
	case ncclInProgress:
		return "operation in progress (fake nccl)";
	default:
		return "unknown result code (fake nccl)";
	}
}

API const char *ncclGetErrorString(ncclResult_t result)
{
	return error_string(result);
}

/* As in the real library, the comm argument is ignored: the last error is
 * the calling thread's. */
API const char *ncclGetLastError(ncclComm_t comm)
{
	return last_error;
}

API ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
			       ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
	return collective(FN_ALL_REDUCE, comm, datatype);
}

API ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
			       ncclComm_t comm, cudaStream_t stream)
{
	return collective(FN_BROADCAST, comm, datatype);
}

API ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
			    int root, ncclComm_t comm, cudaStream_t stream)
{
	return collective(FN_REDUCE, comm, datatype);
}

API ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
			       ncclComm_t comm, cudaStream_t stream)
{
	return collective(FN_ALL_GATHER, comm, datatype);
}

API ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype,
				   ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
	return collective(FN_REDUCE_SCATTER, comm, datatype);
}

API ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
			      ncclComm_t comm, cudaStream_t stream)
{
	return collective(FN_ALLTOALL, comm, datatype);
}

/* RCCL spells it ncclAllToAll (same arguments); the fake, built as
 * librccl.so.1 too, exports both. */
API ncclResult_t ncclAllToAll(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
			      ncclComm_t comm, cudaStream_t stream)
{
	return collective(FN_ALLTOALL_RCCL, comm, datatype);
}

/* 2.28+: rooted gather and scatter. */
API ncclResult_t ncclGather(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
			    ncclComm_t comm, cudaStream_t stream)
{
	return collective(FN_GATHER, comm, datatype);
}

API ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
			     ncclComm_t comm, cudaStream_t stream)
{
	return collective(FN_SCATTER, comm, datatype);
}

API ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
			  cudaStream_t stream)
{
	return point_to_point(FN_SEND, comm, datatype, peer);
}

API ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
			  cudaStream_t stream)
{
	return point_to_point(FN_RECV, comm, datatype, peer);
}

__attribute__((noinline)) static ncclResult_t group_step(int delta)
{
	if (delta < 0 && group_depth == 0)
		return fail(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
	group_depth += delta;
	if (delta < 0 && group_depth == 0)
		launch_work();
	return ncclSuccess;
}

API ncclResult_t ncclGroupStart(void)
{
	return group_step(1);
}

API ncclResult_t ncclGroupEnd(void)
{
	return group_step(-1);
}
