// gpuobs_cupti_inject: the library `gpuobs record --gpu-time` names in
// CUDA_INJECTION64_PATH (docs/gpu_time.md). The CUDA driver loads it at cuInit
// and calls InitializeInjection(); it turns on CUPTI's activity records for
// kernels, copies, memsets and driver API calls and appends them, converted
// to the fixed slots of userspace/gpu_time/activity_format.h, to the file
// named by GPUOBS_GPU_TIME_FILE.
//
// It runs inside someone else's program, so: libcupti is loaded with dlopen
// (nothing to resolve at load time), every failure is one line on stderr and
// the program runs on untraced, and nothing here throws or needs libstdc++ at
// run time (no new, no exceptions, no guarded statics: -fno-exceptions
// -fno-threadsafe-statics; readelf -d shows libc only).
#include <cupti.h>  // types and prototypes only: the functions come from dlsym
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "gpu_time/activity_format.h"

namespace {

using namespace gpuobs::gpu_time;

// The fields read from CUPTI's records are their leading ones, which have
// kept their offsets across record versions; pinned here against the
// CUPTI 13 headers this file is built with (CUPTI 12's Kernel9/Memcpy5 were
// not checked on this machine).
static_assert(offsetof(CUpti_ActivityKernel10, start) == 16 && offsetof(CUpti_ActivityKernel10, deviceId) == 40);
static_assert(offsetof(CUpti_ActivityKernel10, gridX) == 52 && offsetof(CUpti_ActivityKernel10, correlationId) == 92);
static_assert(offsetof(CUpti_ActivityMemcpy6, bytes) == 8 && offsetof(CUpti_ActivityMemcpy6, correlationId) == 44);
static_assert(offsetof(CUpti_ActivityMemset4, bytes) == 8 && offsetof(CUpti_ActivityMemset4, correlationId) == 44);
static_assert(offsetof(CUpti_ActivityAPI, start) == 8 && offsetof(CUpti_ActivityAPI, returnValue) == 36);

constexpr char kPrefix[] = "gpuobs gpu-time: ";
constexpr size_t kBufferBytes = 4u << 20;  // per CUPTI buffer; CUPTI asks for more when it needs them
constexpr uint32_t kFlushPeriodMs = 1000;  // a process killed by a signal loses about this much
constexpr size_t kBatchSlots = 128;        // slots per write()
constexpr size_t kNameTableSize = 8192;    // names written once per process, up to this many

struct CuptiFns {
  // Required.
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks;
  decltype(&cuptiActivityEnable) enable;
  decltype(&cuptiActivityGetNextRecord) next_record;
  decltype(&cuptiActivityFlushAll) flush_all;
  // Optional: null when this CUPTI does not have them.
  decltype(&cuptiActivityGetNumDroppedRecords) dropped;
  decltype(&cuptiGetResultString) result_string;
  decltype(&cuptiActivityRegisterTimestampCallback) register_timestamp;
  decltype(&cuptiSetThreadIdType) set_thread_id_type;
  decltype(&cuptiGetTimestamp) get_timestamp;
  decltype(&cuptiGetVersion) get_version;
  decltype(&cuptiActivityFlushPeriod) flush_period;
};

CuptiFns g_cupti;
std::atomic<bool> g_started{false};
int g_fd = -1;
uint32_t g_pid = 0;

// Everything below is written under g_lock (CUPTI calls buffer_completed on
// its worker thread, and flush_at_exit on the exiting one).
pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
unsigned char g_batch[kBatchSlots * kGtSlotSize];
size_t g_batch_used = 0;
uint64_t g_names[kNameTableSize];  // hashes of the names written; 0 = empty
size_t g_names_used = 0;
GtStats g_stats;
bool g_write_warned = false;
// Outside g_lock: CUPTI may ask for a buffer while start() holds it.
std::atomic<uint64_t> g_buffer_failures{0};

// One line on stderr, with write(2): no stdio buffer shared with the program.
__attribute__((format(printf, 1, 2))) void say(const char* fmt, ...) {
  char line[512];
  size_t n = sizeof(kPrefix) - 1;
  memcpy(line, kPrefix, n);
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
  va_end(ap);
  if (m < 0) return;
  n += static_cast<size_t>(m) < sizeof(line) - n - 1 ? static_cast<size_t>(m) : sizeof(line) - n - 2;
  line[n++] = '\n';
  ssize_t ignored = ::write(STDERR_FILENO, line, n);
  (void)ignored;
}

const char* result_text(CUptiResult r) {
  const char* s = nullptr;
  if (g_cupti.result_string && g_cupti.result_string(r, &s) == CUPTI_SUCCESS && s) return s;
  return "unknown CUPTI error";
}

uint64_t clock_ns(clockid_t id) {
  timespec t{};
  clock_gettime(id, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(t.tv_nsec);
}

// The capture's clock (bpf_ktime_get_ns is CLOCK_MONOTONIC): with this
// callback registered, CUPTI's timestamps need no conversion.
uint64_t CUPTIAPI monotonic_timestamp() { return clock_ns(CLOCK_MONOTONIC); }

void write_all(const unsigned char* p, size_t n) {
  if (g_fd < 0 || n == 0) return;
  ssize_t r;
  do r = ::write(g_fd, p, n);
  while (r < 0 && errno == EINTR);
  if (r == static_cast<ssize_t>(n)) return;
  // A short write leaves a partial slot; the reader counts the damage. Not retried: with
  // other processes appending, the rest would land after their slots anyway.
  ++g_stats.write_errors;
  if (!g_write_warned) {
    g_write_warned = true;
    say("writing GPU activity records failed: %s (records are lost from here on)",
        r < 0 ? strerror(errno) : "short write");
  }
}

void flush_batch() {
  write_all(g_batch, g_batch_used);
  g_batch_used = 0;
}

void emit(const void* slot) {
  if (g_batch_used + kGtSlotSize > sizeof(g_batch)) flush_batch();
  memcpy(g_batch + g_batch_used, slot, kGtSlotSize);
  g_batch_used += kGtSlotSize;
}

// True when the name was written before (or is recorded as written now).
bool name_seen(uint64_t hash) {
  if (hash == 0) return false;
  size_t i = hash % kNameTableSize;
  for (size_t probe = 0; probe < kNameTableSize; ++probe, i = (i + 1) % kNameTableSize) {
    if (g_names[i] == hash) return true;
    if (g_names[i] == 0) {
      if (g_names_used + 1 >= kNameTableSize) return false;  // full: write the name every time
      g_names[i] = hash;
      ++g_names_used;
      return false;
    }
  }
  return false;
}

uint64_t emit_name(const char* name) {
  if (!name) return 0;
  size_t len = strnlen(name, kGtMaxNameBytes);
  uint64_t hash = gt_name_hash(name, len);
  if (name_seen(hash)) return hash;
  for (size_t off = 0; off < len || off == 0; off += kGtNameChunkBytes) {
    GtNameChunk c{};
    c.type = kGtName;
    c.pid = g_pid;
    c.name_hash = hash;
    c.name_len = static_cast<uint32_t>(len);
    c.offset = static_cast<uint32_t>(off);
    size_t n = len - off < kGtNameChunkBytes ? len - off : kGtNameChunkBytes;
    memcpy(c.text, name + off, n);
    emit(&c);
    if (len == 0) break;
  }
  return hash;
}

uint32_t dim(int32_t v) { return v < 0 ? 0 : static_cast<uint32_t>(v); }

// The fields every GPU operation record has (kernel, memcpy, memset).
template <class A>
void gpu_operation(GtRecord& r, const A* a) {
  r.start_ns = a->start;
  r.end_ns = a->end;
  r.device_id = a->deviceId;
  r.context_id = a->contextId;
  r.stream_id = a->streamId;
  r.correlation_id = a->correlationId;
}

void convert(const CUpti_Activity* a) {
  GtRecord r{};
  r.pid = g_pid;
  switch (a->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(a);
      r.type = kGtKernel;
      gpu_operation(r, k);
      r.grid_x = dim(k->gridX), r.grid_y = dim(k->gridY), r.grid_z = dim(k->gridZ);
      r.block_x = dim(k->blockX), r.block_y = dim(k->blockY), r.block_z = dim(k->blockZ);
      r.name_hash = emit_name(k->name);  // the name's chunks go before the record that uses it
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(a);
      r.type = kGtMemcpy;
      gpu_operation(r, m);
      r.bytes = m->bytes;
      r.copy_kind = m->copyKind;
      r.src_kind = m->srcKind;
      r.dst_kind = m->dstKind;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(a);
      r.type = kGtMemset;
      gpu_operation(r, m);
      r.bytes = m->bytes;
      break;
    }
    case CUPTI_ACTIVITY_KIND_DRIVER:
    case CUPTI_ACTIVITY_KIND_RUNTIME: {
      auto* d = reinterpret_cast<const CUpti_ActivityAPI*>(a);
      r.type = a->kind == CUPTI_ACTIVITY_KIND_DRIVER ? kGtDriverApi : kGtRuntimeApi;
      r.start_ns = d->start;
      r.end_ns = d->end;
      r.correlation_id = d->correlationId;
      r.tid = d->threadId;
      r.cbid = d->cbid;
      r.result = d->returnValue;
      break;
    }
    default: ++g_stats.unknown_kinds; return;
  }
  ++g_stats.records_written;
  emit(&r);
}

void emit_stats(bool final) {
  g_stats.type = kGtStats;
  g_stats.pid = g_pid;
  g_stats.final = final ? 1 : 0;
  g_stats.buffer_failures = g_buffer_failures.load(std::memory_order_relaxed);
  emit(&g_stats);
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  void* p = nullptr;
  *max_records = 0;                                // as many as fit
  if (posix_memalign(&p, 8, kBufferBytes) != 0) {  // ACTIVITY_RECORD_ALIGNMENT
    p = nullptr;
    g_buffer_failures.fetch_add(1, std::memory_order_relaxed);
  }
  *buffer = static_cast<uint8_t*>(p);
  *size = p ? kBufferBytes : 0;
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t /*size*/, size_t valid) {
  pthread_mutex_lock(&g_lock);
  CUpti_Activity* record = nullptr;
  while (buffer && valid > 0 && g_cupti.next_record(buffer, valid, &record) == CUPTI_SUCCESS) convert(record);
  size_t dropped = 0;
  if (g_cupti.dropped && g_cupti.dropped(ctx, stream_id, &dropped) == CUPTI_SUCCESS && dropped > 0) {
    g_stats.cupti_dropped += dropped;
    emit_stats(false);
  }
  flush_batch();
  pthread_mutex_unlock(&g_lock);
  free(buffer);
}

void flush_at_exit() {
  // A child forked without exec inherits this handler but not CUPTI's
  // thread: flushing there could hang, and its slots would carry our pid.
  if (static_cast<uint32_t>(getpid()) != g_pid) return;
  g_cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  pthread_mutex_lock(&g_lock);
  emit_stats(true);
  flush_batch();
  pthread_mutex_unlock(&g_lock);
}

// GPUOBS_CUPTI_PATH when set (only that file: a path someone names is the one
// they mean), else the toolkit's sonames by the normal search path.
void* load_cupti() {
  const char* path = getenv("GPUOBS_CUPTI_PATH");
  if (path && *path) {
    void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) say("cannot load CUPTI from GPUOBS_CUPTI_PATH=%s (%s): GPU times are not recorded", path, dlerror());
    return h;
  }
  for (const char* name : {"libcupti.so.13", "libcupti.so.12", "libcupti.so"}) {
    if (void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return h;
  }
  say("CUPTI not found (libcupti.so.13, libcupti.so.12, libcupti.so; set GPUOBS_CUPTI_PATH to the file): "
      "GPU times are not recorded");
  return nullptr;
}

template <class F>
bool resolve(void* h, const char* name, F& fn, bool required) {
  fn = reinterpret_cast<F>(dlsym(h, name));
  if (!fn && required) say("CUPTI has no %s: GPU times are not recorded", name);
  return fn || !required;
}

bool resolve_all(void* h) {
  return resolve(h, "cuptiActivityRegisterCallbacks", g_cupti.register_callbacks, true) &&
         resolve(h, "cuptiActivityEnable", g_cupti.enable, true) &&
         resolve(h, "cuptiActivityGetNextRecord", g_cupti.next_record, true) &&
         resolve(h, "cuptiActivityFlushAll", g_cupti.flush_all, true) &&
         resolve(h, "cuptiActivityGetNumDroppedRecords", g_cupti.dropped, false) &&
         resolve(h, "cuptiGetResultString", g_cupti.result_string, false) &&
         resolve(h, "cuptiActivityRegisterTimestampCallback", g_cupti.register_timestamp, false) &&
         resolve(h, "cuptiSetThreadIdType", g_cupti.set_thread_id_type, false) &&
         resolve(h, "cuptiGetTimestamp", g_cupti.get_timestamp, false) &&
         resolve(h, "cuptiGetVersion", g_cupti.get_version, false) &&
         resolve(h, "cuptiActivityFlushPeriod", g_cupti.flush_period, false);
}

// The header: clock and thread-id choices, made before any kind is enabled.
GtFileHeader configure() {
  GtFileHeader hdr{};
  hdr.magic = kGtMagic;
  hdr.version = kGtFormatVersion;
  hdr.slot_size = kGtSlotSize;
  hdr.pid = g_pid;
  if (g_cupti.get_version) g_cupti.get_version(&hdr.cupti_version);
  hdr.tid_kind = kGtTidPthread;
  if (g_cupti.set_thread_id_type && g_cupti.set_thread_id_type(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) == CUPTI_SUCCESS)
    hdr.tid_kind = kGtTidSystem;
  hdr.realtime_ns = clock_ns(CLOCK_REALTIME);
  if (g_cupti.register_timestamp && g_cupti.register_timestamp(monotonic_timestamp) == CUPTI_SUCCESS) {
    hdr.clock_kind = kGtClockMonotonic;
    hdr.clock_mono_ns = hdr.clock_cupti_ns = clock_ns(CLOCK_MONOTONIC);
  } else {
    // CUPTI's own clock: a pair read together, the CUPTI reading between two
    // monotonic ones (their midpoint), so the reader can convert.
    hdr.clock_kind = kGtClockCuptiPair;
    uint64_t before = clock_ns(CLOCK_MONOTONIC);
    uint64_t cupti = 0;
    if (!g_cupti.get_timestamp || g_cupti.get_timestamp(&cupti) != CUPTI_SUCCESS) cupti = clock_ns(CLOCK_REALTIME);
    uint64_t after = clock_ns(CLOCK_MONOTONIC);
    hdr.clock_mono_ns = before + (after - before) / 2;
    hdr.clock_cupti_ns = cupti;
  }
  return hdr;
}

void start() {
  const char* file = getenv("GPUOBS_GPU_TIME_FILE");
  if (!file || !*file) {
    say("GPUOBS_GPU_TIME_FILE is not set: GPU times are not recorded");
    return;
  }
  void* h = load_cupti();
  if (!h || !resolve_all(h)) return;
  g_pid = static_cast<uint32_t>(getpid());
  // Never through a link or into a FIFO/device: gpuobs record creates the
  // file (0600, exclusively) before the command starts.
  g_fd = ::open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
  if (g_fd >= 0) {
    struct stat st {};
    if (::fstat(g_fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(g_fd);
      g_fd = -1;
      errno = EINVAL;
    }
  }
  if (g_fd < 0) {
    say("cannot open %s: %s: GPU times are not recorded", file, strerror(errno));
    return;
  }
  GtFileHeader hdr = configure();
  CUptiResult r = g_cupti.register_callbacks(buffer_requested, buffer_completed);
  if (r != CUPTI_SUCCESS) {
    say("cuptiActivityRegisterCallbacks failed: %s: GPU times are not recorded", result_text(r));
    ::close(g_fd);
    g_fd = -1;
    return;
  }
  struct Kind {
    CUpti_ActivityKind kind;
    uint32_t flag;
    const char* name;
  };
  // RUNTIME too: a kernel launched through the runtime (cudaLaunchKernel:
  // PyTorch, every CUDA C++ program) carries the runtime call's correlation
  // id; the driver call gpuobs probes inside it has an id of its own. On the
  // H200 a PyTorch run joined 0 of 615 by correlation without them.
  const Kind kinds[] = {{CUPTI_ACTIVITY_KIND_RUNTIME, kGtEnabledRuntime, "RUNTIME"},
                        {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, kGtEnabledKernel, "CONCURRENT_KERNEL"},
                        {CUPTI_ACTIVITY_KIND_MEMCPY, kGtEnabledMemcpy, "MEMCPY"},
                        {CUPTI_ACTIVITY_KIND_MEMSET, kGtEnabledMemset, "MEMSET"},
                        {CUPTI_ACTIVITY_KIND_DRIVER, kGtEnabledDriver, "DRIVER"}};
  // Enabled, then the header with what was enabled, all under g_lock: the
  // first buffer_completed (on CUPTI's thread) waits for the header, so the
  // header precedes every record of this process.
  pthread_mutex_lock(&g_lock);
  for (const Kind& k : kinds) {
    r = g_cupti.enable(k.kind);
    if (r == CUPTI_SUCCESS) hdr.flags |= k.flag;
    else say("cuptiActivityEnable(%s) failed: %s", k.name, result_text(r));
  }
  emit(&hdr);
  flush_batch();
  pthread_mutex_unlock(&g_lock);
  if (g_cupti.flush_period) g_cupti.flush_period(kFlushPeriodMs);
  atexit(flush_at_exit);
}

}  // namespace

// Called by the CUDA driver for CUDA_INJECTION64_PATH, once, inside cuInit.
// Always 1: whether recording works or not, the program must run on.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  if (g_started.exchange(true)) return 1;
  start();
  return 1;
}
