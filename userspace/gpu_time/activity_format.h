// The file the CUPTI injection library (inject/cupti/cupti_inject.cpp) writes
// and gpuobs reads back (userspace/gpu_time/activity_file.cpp): GPU start/end
// times of kernels, copies and memsets, and the driver API calls that issued
// them (docs/gpu_time.md). Shared by writer and reader; nothing else.
//
// A file is a sequence of 96-byte slots, appended by one or more processes:
// each process writes one file header (starting with kGtMagic) before any of
// its records, then records (starting with a GtRecordType). Every record
// carries its writer's pid, so the records of processes that append to one
// file may interleave (every write() is whole slots; O_APPEND keeps them
// whole on a regular file).
//
// Rules as for bpf/events.h: fixed-size, fixed-width integer fields only,
// every hole named, largest fields first, sizes and offsets asserted here
// (and pinned by tests/unit/gpu_time/activity_file_test.cpp). A field's
// meaning never changes; a new field or record type raises kGtFormatVersion.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpuobs::gpu_time {

inline constexpr uint64_t kGtMagic = 0x544753424f555047ULL;  // "GPUOBSGT" read as little-endian bytes
// 2: record type 5 (runtime API). A reader reads every version up to its own.
inline constexpr uint32_t kGtFormatVersion = 2;
inline constexpr uint32_t kGtSlotSize = 96;  // every header and record

// GtFileHeader::clock_kind: how start_ns/end_ns of this process's records
// relate to CLOCK_MONOTONIC (the capture's clock, bpf_ktime_get_ns).
enum GtClockKind : uint32_t {
  // cuptiActivityRegisterTimestampCallback took our CLOCK_MONOTONIC callback:
  // timestamps are CLOCK_MONOTONIC ns already.
  kGtClockMonotonic = 1,
  // CUPTI's own clock (CLOCK_REALTIME on Linux): monotonic = ts -
  // clock_cupti_ns + clock_mono_ns, the pair read together at init.
  kGtClockCuptiPair = 2,
};

// GtFileHeader::tid_kind: what GtRecord::tid of a driver API record holds.
enum GtTidKind : uint32_t {
  kGtTidPthread = 0,  // pthread_self() truncated (CUPTI's default): not a kernel tid, not joinable by thread
  kGtTidSystem = 1,   // gettid(): the tid gpuobs captures (cuptiSetThreadIdType SYSTEM accepted)
};

// GtFileHeader::flags: which CUPTI activity kinds were enabled.
enum GtEnabledKind : uint32_t {
  kGtEnabledKernel = 1u << 0,  // CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
  kGtEnabledMemcpy = 1u << 1,
  kGtEnabledMemset = 1u << 2,
  kGtEnabledDriver = 1u << 3,
  kGtEnabledRuntime = 1u << 4,
};

struct GtFileHeader {
  uint64_t magic;           // kGtMagic
  uint32_t version;         // kGtFormatVersion of the writer
  uint32_t slot_size;       // kGtSlotSize of the writer
  uint32_t pid;             // the writing process (getpid at InitializeInjection)
  uint32_t clock_kind;      // GtClockKind
  uint32_t tid_kind;        // GtTidKind
  uint32_t cupti_version;   // cuptiGetVersion(), 0 when unknown
  uint64_t clock_mono_ns;   // CLOCK_MONOTONIC at init ...
  uint64_t clock_cupti_ns;  // ... and CUPTI's timestamp at the same moment (equal for kGtClockMonotonic)
  uint64_t realtime_ns;     // CLOCK_REALTIME at init, for people
  uint32_t flags;           // GtEnabledKind bits
  uint32_t pad0;
  uint64_t reserved[4];  // zero
};

// GtRecord::type and friends. Numbers are stored: never reuse one.
enum GtRecordType : uint32_t {
  kGtKernel = 1,      // GtRecord: a kernel (CONCURRENT_KERNEL)
  kGtMemcpy = 2,      // GtRecord: a copy (MEMCPY)
  kGtMemset = 3,      // GtRecord: a memset (MEMSET)
  kGtDriverApi = 4,   // GtRecord: a driver API call (DRIVER): tid, cbid, result
  kGtRuntimeApi = 5,  // GtRecord: a runtime API call (RUNTIME), the same fields: the API a kernel launched
                      // through cudaLaunchKernel correlates with (its driver call inside has another id)
  kGtName = 16,       // GtNameChunk: up to 72 bytes of a kernel name
  kGtStats = 17,      // GtStats: the writer's cumulative counters
};

// One activity. Fields a kind does not have are zero.
struct GtRecord {
  uint32_t type;                       // kGtKernel, kGtMemcpy, kGtMemset, kGtDriverApi
  uint32_t pid;                        // the writing process
  uint64_t start_ns;                   // GPU start (driver API: call entry); clock per the header's clock_kind
  uint64_t end_ns;                     // GPU end (driver API: call return)
  uint64_t bytes;                      // memcpy, memset
  uint64_t name_hash;                  // kernel: FNV-1a 64 of the full name, resolved by kGtName chunks
  uint32_t device_id;                  // kernel, memcpy, memset
  uint32_t context_id;                 // kernel, memcpy, memset
  uint32_t stream_id;                  // kernel, memcpy, memset: CUPTI's stream id, not the CUstream handle
  uint32_t correlation_id;             // all: the id CUPTI gives the driver API call and the GPU work it issued
  uint32_t tid;                        // driver API: calling thread (see GtFileHeader::tid_kind)
  uint32_t cbid;                       // driver API: CUpti_driver_api_trace_cbid
  uint32_t grid_x, grid_y, grid_z;     // kernel
  uint32_t block_x, block_y, block_z;  // kernel
  uint8_t copy_kind;                   // memcpy: CUpti_ActivityMemcpyKind (1 HtoD, 2 DtoH, 8 DtoD, ...)
  uint8_t src_kind;                    // memcpy: CUpti_ActivityMemoryKind
  uint8_t dst_kind;                    // memcpy: CUpti_ActivityMemoryKind
  uint8_t pad0;
  uint32_t result;  // driver API: the CUresult returned
};

// Kernel names are variable-length (mangled template names run to several
// hundred bytes), so a kernel record carries a hash and the name travels in
// fixed-size chunks, once per name and process (again when the writer's
// table of names already written is full). A fixed name field in GtRecord
// would either cut names or make every record (most are driver API calls)
// hundreds of bytes long.
inline constexpr uint32_t kGtNameChunkBytes = 72;
inline constexpr uint32_t kGtMaxNameBytes = 64 * 1024;  // longer names are cut by the writer

struct GtNameChunk {
  uint32_t type;  // kGtName
  uint32_t pid;
  uint64_t name_hash;               // FNV-1a 64 of all name_len bytes
  uint32_t name_len;                // the whole name, bytes, no terminator; <= kGtMaxNameBytes
  uint32_t offset;                  // of text[0] within the name
  uint8_t text[kGtNameChunkBytes];  // min(72, name_len - offset) bytes used, the rest zero
};

// Written when CUPTI reports dropped records and at exit (final = 1); each
// one holds the totals so far, so the reader keeps the last per pid.
struct GtStats {
  uint32_t type;  // kGtStats
  uint32_t pid;
  uint64_t cupti_dropped;    // records CUPTI dropped (cuptiActivityGetNumDroppedRecords)
  uint64_t records_written;  // GtRecords written by this process
  uint64_t write_errors;     // write() calls that failed or wrote short (their slots are lost)
  uint64_t buffer_failures;  // CUPTI buffers not allocated (CUPTI drops their records)
  uint64_t unknown_kinds;    // CUPTI records of kinds this writer does not convert
  uint32_t final;            // 1: written at exit after cuptiActivityFlushAll
  uint32_t pad0;
  uint64_t reserved[5];
};

// FNV-1a 64: the kernel name hash of GtRecord::name_hash and GtNameChunk.
inline uint64_t gt_name_hash(const char* s, size_t n) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<uint8_t>(s[i])) * 0x100000001b3ULL;
  return h;
}

static_assert(sizeof(GtFileHeader) == kGtSlotSize);
static_assert(sizeof(GtRecord) == kGtSlotSize);
static_assert(sizeof(GtNameChunk) == kGtSlotSize);
static_assert(sizeof(GtStats) == kGtSlotSize);
static_assert(offsetof(GtFileHeader, version) == 8 && offsetof(GtFileHeader, pid) == 16);
static_assert(offsetof(GtFileHeader, clock_mono_ns) == 32 && offsetof(GtFileHeader, flags) == 56);
static_assert(offsetof(GtRecord, start_ns) == 8 && offsetof(GtRecord, name_hash) == 32);
static_assert(offsetof(GtRecord, device_id) == 40 && offsetof(GtRecord, correlation_id) == 52);
static_assert(offsetof(GtRecord, tid) == 56 && offsetof(GtRecord, grid_x) == 64);
static_assert(offsetof(GtRecord, copy_kind) == 88 && offsetof(GtRecord, result) == 92);
static_assert(offsetof(GtNameChunk, text) == 24);
static_assert(offsetof(GtStats, final) == 48);
// The magic's first four bytes are never a record type, so a slot is a header or a record by its first bytes.
static_assert(static_cast<uint32_t>(kGtMagic) > kGtStats);

}  // namespace gpuobs::gpu_time
