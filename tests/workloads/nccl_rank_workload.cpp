// One rank of an NCCL job with known truth, against the fake libnccl.so.2
// (tests/fakes/fake_libnccl.c; linked, so libnccl.so.2 is a DT_NEEDED entry as
// in a real application). Run N of these, one process per rank, with the same
// --id-file: rank 0 publishes the unique id there, the others wait for it.
//
// usage: nccl_rank_workload --rank R --nranks N --id-file PATH --iters K
//          [--sleep-ms MS [--sleep-every E]]  sleep MS ms before the first
//              collective of every E-th iteration (0-based i with (i+1) % E == 0;
//              E defaults to 1: every iteration): a straggler rank
//          [--stop-before-iter I]  block in pause() before iteration I (0-based,
//              I < K): the rank never enters I's first collective, and never
//              prints its truth; it says so on stderr
//          [--config]  ncclCommInitRankConfig instead of ncclCommInitRank
//          [--rooted]  ncclCommInitRankScalable (one id) instead of
//              ncclCommInitRank, and each iteration is three other
//              collectives: ncclGather and ncclScatter (root 0, 64 float32 per
//              rank) and ncclAllToAll (RCCL's spelling, 8 int32 per rank);
//              the fake's collective S is then in iteration (S-1)/3
//          [--linger-ms N]  keep the communicator N ms after the last iteration,
//              before destroying it
//          [--start-ms N]  sleep N ms before the first NCCL call: an application
//              loads libnccl long before it makes a communicator (PyTorch at
//              import), and gpuobs attaches a library mapped while it runs
//              within milliseconds of the mapping, not before it
//
// Each iteration, on stream (cudaStream_t)(0x5000 + R): ncclAllReduce,
// ncclBroadcast, ncclAllGather, ncclReduceScatter, { ncclGroupStart, ncclSend
// to (R+1)%N, ncclRecv from (R+N-1)%N, ncclGroupEnd }, ncclReduce,
// ncclAlltoAll: six collectives (the fake's FAKE_NCCL_HANG_AT / _DIE_AT count
// those, 1-based: collective S is in iteration (S-1)/6, position (S-1)%6).
// At the end, one JSON line on stdout: the truth (pid, rank, comm handle,
// stream, buffers, iterations done and the calls made, per function).
// Exit 0 on success, 1 when a call fails or the id never comes (10 s), 2 on
// bad arguments. The id file must not exist before rank 0 writes it: a stale
// one would be read by the other ranks.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>

#include "fakes/fake_nccl.h"

namespace {

constexpr const char* kUsage =
    "usage: nccl_rank_workload --rank R --nranks N --id-file PATH --iters K [--sleep-ms MS] [--sleep-every E]\n"
    "                          [--stop-before-iter I] [--config] [--rooted] [--linger-ms N] [--start-ms N]\n";
constexpr auto kIdTimeout = std::chrono::seconds(10);

struct Options {
  int rank = -1, nranks = -1;
  std::string id_file;
  int64_t iters = -1;  // required
  uint32_t sleep_ms = 0, sleep_every = 1, linger_ms = 0, start_ms = 0;
  int64_t stop_before_iter = -1;  // -1: never
  bool config = false;
  bool rooted = false;
};

// The calls this workload makes, in the order the truth lists them.
enum Fn : size_t {
  kGetVersion,
  kGetUniqueId,
  kCommInitRank,
  kCommInitRankConfig,
  kCommCount,
  kCommCuDevice,
  kCommUserRank,
  kAllReduce,
  kBroadcast,
  kAllGather,
  kReduceScatter,
  kGroupStart,
  kSend,
  kRecv,
  kGroupEnd,
  kReduce,
  kAlltoAll,
  kCommDestroy,
  kCommInitRankScalable,
  kGather,
  kScatter,
  kAllToAllRccl,
  kFnCount
};
constexpr std::array<const char*, kFnCount> kFnNames = {"ncclGetVersion",
                                                        "ncclGetUniqueId",
                                                        "ncclCommInitRank",
                                                        "ncclCommInitRankConfig",
                                                        "ncclCommCount",
                                                        "ncclCommCuDevice",
                                                        "ncclCommUserRank",
                                                        "ncclAllReduce",
                                                        "ncclBroadcast",
                                                        "ncclAllGather",
                                                        "ncclReduceScatter",
                                                        "ncclGroupStart",
                                                        "ncclSend",
                                                        "ncclRecv",
                                                        "ncclGroupEnd",
                                                        "ncclReduce",
                                                        "ncclAlltoAll",
                                                        "ncclCommDestroy",
                                                        "ncclCommInitRankScalable",
                                                        "ncclGather",
                                                        "ncclScatter",
                                                        "ncclAllToAll"};
std::array<uint64_t, kFnCount> g_calls{};

[[noreturn]] void bad_args(const std::string& why) {
  std::fprintf(stderr, "nccl_rank_workload: %s\n%s", why.c_str(), kUsage);
  std::exit(2);
}

[[noreturn]] void fail(int rank, const std::string& why) {
  std::fprintf(stderr, "nccl_rank_workload: rank %d: %s\n", rank, why.c_str());
  std::exit(1);
}

template <typename T>
T parse_number(std::string_view opt, std::string_view text, T min, T max) {
  T v{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < min || v > max)
    bad_args(std::string(opt) + ": not a number in [" + std::to_string(min) + ", " + std::to_string(max) + "]: '" +
             std::string(text) + "'");
  return v;
}

Options parse_options(int argc, char** argv) {
  Options o;
  constexpr uint32_t kMaxU32 = UINT32_MAX;
  for (int i = 1; i < argc; ++i) {
    std::string_view k = argv[i];
    if (k == "--config" || k == "--rooted") {
      (k == "--config" ? o.config : o.rooted) = true;
      continue;
    }
    if (i + 1 >= argc) bad_args(std::string(k) + " needs a value");
    std::string_view v = argv[++i];
    if (k == "--rank") o.rank = parse_number<int>(k, v, 0, 1 << 20);
    else if (k == "--nranks") o.nranks = parse_number<int>(k, v, 1, 1 << 20);
    else if (k == "--id-file") o.id_file = v;
    else if (k == "--iters") o.iters = parse_number<int64_t>(k, v, 0, kMaxU32);
    else if (k == "--sleep-ms") o.sleep_ms = parse_number<uint32_t>(k, v, 0, kMaxU32);
    else if (k == "--sleep-every") o.sleep_every = parse_number<uint32_t>(k, v, 1, kMaxU32);
    else if (k == "--stop-before-iter") o.stop_before_iter = parse_number<int64_t>(k, v, 0, kMaxU32);
    else if (k == "--linger-ms") o.linger_ms = parse_number<uint32_t>(k, v, 0, kMaxU32);
    else if (k == "--start-ms") o.start_ms = parse_number<uint32_t>(k, v, 0, kMaxU32);
    else bad_args("unknown option '" + std::string(k) + "'");
  }
  if (o.rank < 0) bad_args("--rank is required");
  if (o.nranks < 0) bad_args("--nranks is required");
  if (o.rank >= o.nranks) bad_args("--rank must be below --nranks");
  if (o.id_file.empty()) bad_args("--id-file is required");
  if (o.iters < 0) bad_args("--iters is required");
  if (o.stop_before_iter >= 0 && o.stop_before_iter >= o.iters) bad_args("--stop-before-iter must be below --iters");
  return o;
}

// Counts the call, and ends the process when it did not succeed.
void check(int rank, Fn fn, ncclResult_t r) {
  ++g_calls[fn];
  if (r != ncclSuccess)
    fail(rank, std::string(kFnNames[fn]) + " returned " + std::to_string(r) + " (" + ncclGetErrorString(r) +
                   "): " + ncclGetLastError(nullptr));
}

// Rank 0: the id goes to a temporary file renamed over PATH, so a reader sees
// all 128 bytes or no file.
void publish_id(const Options& o, const ncclUniqueId& id) {
  std::string tmp = o.id_file + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(o.rank, "cannot create " + tmp + ": " + std::strerror(errno));
  ssize_t n = ::write(fd, id.internal, sizeof id.internal);
  int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(sizeof id.internal))
    fail(o.rank, "cannot write " + tmp + ": " + (n < 0 ? std::strerror(err) : "short write"));
  if (::rename(tmp.c_str(), o.id_file.c_str()) != 0)
    fail(o.rank, "cannot rename " + tmp + " to " + o.id_file + ": " + std::strerror(errno));
}

// Other ranks: poll for the file rank 0 renames into place.
ncclUniqueId wait_for_id(const Options& o) {
  auto deadline = std::chrono::steady_clock::now() + kIdTimeout;
  for (;;) {
    int fd = ::open(o.id_file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      ncclUniqueId id;
      ssize_t n = ::read(fd, id.internal, sizeof id.internal);
      char extra;
      ssize_t more = ::read(fd, &extra, 1);
      ::close(fd);
      if (n != static_cast<ssize_t>(sizeof id.internal) || more != 0)
        fail(o.rank, o.id_file + " is not a 128-byte unique id (a stale or foreign file?)");
      return id;
    }
    if (errno != ENOENT) fail(o.rank, "cannot open " + o.id_file + ": " + std::strerror(errno));
    if (std::chrono::steady_clock::now() >= deadline)
      fail(o.rank, "no unique id in " + o.id_file + " after 10 s: is rank 0 running with the same --id-file?");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// One send and one receive buffer per call, sized for N ranks: distinct
// addresses, so a test can tell every call's pointer arguments apart.
struct Buffers {
  void* send = nullptr;
  void* recv = nullptr;
};

void* host_buffer(int rank, size_t bytes) {
  void* p = std::calloc(1, bytes);
  if (!p) fail(rank, "out of memory");
  return p;
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

std::string hex(const void* p) { return hex(reinterpret_cast<uintptr_t>(p)); }

}  // namespace

int main(int argc, char** argv) {
  Options o = parse_options(argc, argv);
  const int R = o.rank, N = o.nranks;
  const size_t n = static_cast<size_t>(N);
  if (o.start_ms) std::this_thread::sleep_for(std::chrono::milliseconds(o.start_ms));

  int version = 0;
  check(R, kGetVersion, ncclGetVersion(&version));

  ncclUniqueId id;
  if (R == 0) {
    check(R, kGetUniqueId, ncclGetUniqueId(&id));
    publish_id(o, id);
  } else {
    id = wait_for_id(o);
  }
  uint64_t magic;
  std::memcpy(&magic, id.internal, sizeof magic);

  // The stand-in for cudaSetDevice(rank): the fake takes the device from the
  // environment at init, unless the test chose one.
  if (!std::getenv("FAKE_NCCL_DEVICE")) ::setenv("FAKE_NCCL_DEVICE", std::to_string(R).c_str(), 1);

  // The fake never reads the config; this one starts as the real
  // NCCL_CONFIG_INITIALIZER does (size, magic 0xcafebeef, version), so the
  // pointer points at something plausible.
  struct {
    size_t size;
    unsigned magic, version;
    int rest[20];
  } config{sizeof config, 0xcafebeefu, FAKE_NCCL_VERSION_CODE, {}};
  ncclComm_t comm = nullptr;
  if (o.rooted) check(R, kCommInitRankScalable, ncclCommInitRankScalable(&comm, N, R, 1, &id, nullptr));
  else if (o.config)
    check(R, kCommInitRankConfig, ncclCommInitRankConfig(&comm, N, id, R, reinterpret_cast<ncclConfig_t*>(&config)));
  else check(R, kCommInitRank, ncclCommInitRank(&comm, N, id, R));

  int count = -1, device = -1, user_rank = -1;
  check(R, kCommCount, ncclCommCount(comm, &count));
  check(R, kCommCuDevice, ncclCommCuDevice(comm, &device));
  check(R, kCommUserRank, ncclCommUserRank(comm, &user_rank));
  if (count != N || user_rank != R)
    fail(R, "the communicator says rank " + std::to_string(user_rank) + " of " + std::to_string(count));

  auto stream = reinterpret_cast<cudaStream_t>(uintptr_t{0x5000} + static_cast<unsigned>(R));
  std::array<Buffers, kFnCount> buf{};
  // Bytes: count x element size, x N where the receive side gathers from all ranks.
  buf[kAllReduce] = {host_buffer(R, 1024 * 4), host_buffer(R, 1024 * 4)};
  buf[kBroadcast] = {host_buffer(R, 256 * 4), host_buffer(R, 256 * 4)};
  buf[kAllGather] = {host_buffer(R, 128 * 2), host_buffer(R, 128 * 2 * n)};
  buf[kReduceScatter] = {host_buffer(R, 64 * 2 * n), host_buffer(R, 64 * 2)};
  buf[kSend] = {host_buffer(R, 32 * 8), nullptr};
  buf[kRecv] = {nullptr, host_buffer(R, 32 * 8)};
  buf[kReduce] = {host_buffer(R, 32 * 8), host_buffer(R, 32 * 8)};
  buf[kAlltoAll] = {host_buffer(R, 16 * n), host_buffer(R, 16 * n)};
  if (o.rooted) {
    buf[kGather] = {host_buffer(R, 64 * 4), host_buffer(R, 64 * 4 * n)};
    buf[kScatter] = {host_buffer(R, 64 * 4 * n), host_buffer(R, 64 * 4)};
    buf[kAllToAllRccl] = {host_buffer(R, 8 * 4 * n), host_buffer(R, 8 * 4 * n)};
  }
  const int next = (R + 1) % N, prev = (R + N - 1) % N;

  uint32_t done = 0;
  for (uint32_t i = 0; i < static_cast<uint32_t>(o.iters); ++i) {
    if (o.stop_before_iter == int64_t{i}) {
      std::fprintf(stderr, "nccl_rank_workload: rank %d: stopped before iteration %" PRIu32 " (pid %d)\n", R, i,
                   static_cast<int>(::getpid()));
      std::fflush(stderr);
      for (;;) ::pause();
    }
    if (o.sleep_ms && (i + 1) % o.sleep_every == 0) std::this_thread::sleep_for(std::chrono::milliseconds(o.sleep_ms));
    if (o.rooted) {
      check(R, kGather, ncclGather(buf[kGather].send, buf[kGather].recv, 64, ncclFloat32, 0, comm, stream));
      check(R, kScatter, ncclScatter(buf[kScatter].send, buf[kScatter].recv, 64, ncclFloat32, 0, comm, stream));
      check(R, kAllToAllRccl,
            ncclAllToAll(buf[kAllToAllRccl].send, buf[kAllToAllRccl].recv, 8, ncclInt32, comm, stream));
      ++done;
      continue;
    }
    check(R, kAllReduce,
          ncclAllReduce(buf[kAllReduce].send, buf[kAllReduce].recv, 1024, ncclFloat32, ncclSum, comm, stream));
    check(R, kBroadcast, ncclBroadcast(buf[kBroadcast].send, buf[kBroadcast].recv, 256, ncclInt32, 0, comm, stream));
    check(R, kAllGather, ncclAllGather(buf[kAllGather].send, buf[kAllGather].recv, 128, ncclFloat16, comm, stream));
    check(
        R, kReduceScatter,
        ncclReduceScatter(buf[kReduceScatter].send, buf[kReduceScatter].recv, 64, ncclBfloat16, ncclMax, comm, stream));
    check(R, kGroupStart, ncclGroupStart());
    check(R, kSend, ncclSend(buf[kSend].send, 32, ncclInt64, next, comm, stream));
    check(R, kRecv, ncclRecv(buf[kRecv].recv, 32, ncclInt64, prev, comm, stream));
    check(R, kGroupEnd, ncclGroupEnd());
    check(R, kReduce, ncclReduce(buf[kReduce].send, buf[kReduce].recv, 32, ncclFloat64, ncclProd, 0, comm, stream));
    check(R, kAlltoAll, ncclAlltoAll(buf[kAlltoAll].send, buf[kAlltoAll].recv, 16, ncclInt8, comm, stream));
    ++done;
  }
  const ncclComm_t comm_value = comm;
  // Kept before the destroy: a real rank whose peer is missing would still
  // be on the communicator (blocked), and the stall watch forgets a
  // communicator every rank has left.
  if (o.linger_ms) std::this_thread::sleep_for(std::chrono::milliseconds(o.linger_ms));
  check(R, kCommDestroy, ncclCommDestroy(comm));

  std::string calls, buffers;
  for (size_t f = 0; f < kFnCount; ++f) {
    calls += std::string(calls.empty() ? "" : ",") + "\"" + kFnNames[f] + "\":" + std::to_string(g_calls[f]);
    if (buf[f].send || buf[f].recv)
      buffers += std::string(buffers.empty() ? "" : ",") + "\"" + kFnNames[f] + "\":{\"send\":\"" + hex(buf[f].send) +
                 "\",\"recv\":\"" + hex(buf[f].recv) + "\"}";
  }
  std::printf(
      "{\"pid\":%d,\"rank\":%d,\"nranks\":%d,\"device\":%d,\"nccl_version\":%d,\"unique_id_magic\":\"%s\","
      "\"config\":%s,\"comm\":\"%s\",\"stream\":\"%s\",\"iterations\":%" PRIu32 ",\"calls\":{%s},\"buffers\":{%s}}\n",
      static_cast<int>(::getpid()), R, N, device, version, hex(magic).c_str(), o.config ? "true" : "false",
      hex(comm_value).c_str(), hex(stream).c_str(), done, calls.c_str(), buffers.c_str());
  std::fflush(stdout);
  for (auto& b : buf) {
    std::free(b.send);
    std::free(b.recv);
  }
  return 0;
}
