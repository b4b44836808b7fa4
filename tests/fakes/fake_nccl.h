/* The NCCL ABI as far as the fake libnccl.so.2 (fake_libnccl.c) and the
 * workloads that link against it (tests/workloads/nccl_rank_workload.cpp)
 * need it: types, enum values and prototypes of NCCL 2.28.9 (NVIDIA/nccl tag
 * v2.28.9-1, src/nccl.h.in; abi-reference.md "NCCL (libnccl.so.2)" has the
 * register map). Declared here rather than included because the real nccl.h
 * pulls in the CUDA runtime headers, which the build machines do not have.
 * Only the calling convention has to match the real library: a uprobe reads
 * registers and stack slots, not C types. */
#pragma once

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#define FAKE_NCCL_STATIC_ASSERT static_assert
#else
#define FAKE_NCCL_STATIC_ASSERT _Static_assert
#endif

/* NCCL_VERSION(2, 28, 9): X*10000 + Y*100 + Z from 2.9 on (2.8 and older
 * used X*1000 + Y*100 + Z). What ncclGetVersion reports. */
#define FAKE_NCCL_VERSION_CODE 22809

/* An opaque pointer in the real library too. */
typedef struct ncclComm *ncclComm_t;

/* 128 bytes, passed BY VALUE to ncclCommInitRank(Config): larger than 16
 * bytes, so it is copied onto the caller's stack and takes no register. */
#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
	char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
	ncclSuccess = 0,
	ncclUnhandledCudaError = 1,
	ncclSystemError = 2,
	ncclInternalError = 3,
	ncclInvalidArgument = 4,
	ncclInvalidUsage = 5,
	ncclRemoteError = 6, /* 2.13+ */
	ncclInProgress = 7,  /* 2.14+ */
	/* 2.30 inserted ncclTimeout = 8 here and moved ncclNumResults to 9. */
	ncclNumResults = 8
} ncclResult_t;

typedef enum {
	ncclInt8 = 0,
	ncclChar = 0,
	ncclUint8 = 1,
	ncclInt32 = 2,
	ncclInt = 2,
	ncclUint32 = 3,
	ncclInt64 = 4,
	ncclUint64 = 5,
	ncclFloat16 = 6,
	ncclHalf = 6,
	ncclFloat32 = 7,
	ncclFloat = 7,
	ncclFloat64 = 8,
	ncclDouble = 8,
	ncclBfloat16 = 9,
	ncclFloat8e4m3 = 10, /* 2.24+ */
	ncclFloat8e5m2 = 11, /* 2.24+ */
	ncclNumTypes = 12
} ncclDataType_t;

/* Values from ncclNumOps up are user-defined operators
 * (ncclRedOpCreatePreMulSum), scrambled with a hash of the communicator's
 * address; ncclMaxRedOp bounds them and keeps the enum 4 bytes wide. */
typedef enum {
	ncclSum = 0,
	ncclProd = 1,
	ncclMax = 2,
	ncclMin = 3,
	ncclAvg = 4, /* 2.10+ */
	ncclNumOps = 5,
	ncclMaxRedOp = 0x7fffffff
} ncclRedOp_t;

/* ncclConfig_v22800 in 2.28: the fake never looks inside, so it stays
 * incomplete here. */
typedef struct ncclConfig_v22800 ncclConfig_t;

/* cudaStream_t as the CUDA runtime declares it: an opaque pointer. */
typedef struct CUstream_st *cudaStream_t;

#define NCCL_SPLIT_NOCOLOR -1

FAKE_NCCL_STATIC_ASSERT(sizeof(ncclUniqueId) == 128, "ncclUniqueId is 128 bytes");
FAKE_NCCL_STATIC_ASSERT(sizeof(ncclResult_t) == 4 && sizeof(ncclDataType_t) == 4 && sizeof(ncclRedOp_t) == 4,
			"NCCL enums are 4 bytes (a 32-bit register or the low half of a stack slot)");

ncclResult_t ncclGetVersion(int *version);
ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId);
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank);
ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t *config);
/* 2.23+ */
ncclResult_t ncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId, ncclUniqueId *commIds,
				      ncclConfig_t *config);
ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist);
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm);
ncclResult_t ncclCommCount(const ncclComm_t comm, int *count);
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device);
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank);
const char *ncclGetErrorString(ncclResult_t result);
const char *ncclGetLastError(ncclComm_t comm);

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
			   ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
			   ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
			int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
			   ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype,
			       ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
/* 2.28+ */
ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,
			  cudaStream_t stream);
/* RCCL's spelling of ncclAlltoAll */
ncclResult_t ncclAllToAll(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,
			  cudaStream_t stream);
ncclResult_t ncclGather(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
			ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
			 ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
		      cudaStream_t stream);
ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
		      cudaStream_t stream);
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);

#ifdef __cplusplus
}
#endif
