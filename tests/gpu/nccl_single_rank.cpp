// GPU verification program for the NCCL capture: one process, one rank
// (ncclCommInitRank with nranks 1) on device 0, against a real libnccl.so.2
// (dlopen'd by name, so the copy the loader finds is the one used: the
// system's, or --nccl PATH). Every collective and a send/recv pair to itself
// in a group, ITERATIONS times, on one stream; device buffers from the
// driver API (the primary context, which NCCL's runtime calls share).
// Prints the truth as JSON: pid, comm, stream, the library used, calls per
// function and the bytes each moves (bench/h100/run_issue22_24.sh compares).
//
// usage: nccl_single_rank [--nccl libnccl.so.2] [--lib libcuda.so.1] [--iterations N]
#include <dlfcn.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

namespace {

struct UniqueId {
  char internal[128];  // ncclUniqueId: passed by value
};
using Comm = void*;
using Stream = void*;
void* g_cuda;
void* g_nccl;
std::map<std::string, int> g_calls;
std::map<std::string, uint64_t> g_bytes;

void* sym(void* lib, const char* name, bool required = true) {
  void* p = dlsym(lib, name);
  if (!p && required) {
    std::fprintf(stderr, "nccl_single_rank: no %s\n", name);
    std::exit(1);
  }
  return p;
}

template <class... A>
void cu(const char* name, A... args) {
  int r = reinterpret_cast<int (*)(A...)>(sym(g_cuda, name))(args...);
  if (r != 0) {
    std::fprintf(stderr, "nccl_single_rank: %s failed: %d\n", name, r);
    std::exit(1);
  }
}

template <class... A>
void nccl(const char* name, uint64_t bytes, A... args) {
  int r = reinterpret_cast<int (*)(A...)>(sym(g_nccl, name))(args...);
  if (r != 0) {
    std::fprintf(stderr, "nccl_single_rank: %s failed: %d\n", name, r);
    std::exit(1);
  }
  ++g_calls[name];
  g_bytes[name] += bytes;
}

}  // namespace

int main(int argc, char** argv) {
  const char* nccl_path = "libnccl.so.2";
  const char* cuda_path = "libcuda.so.1";
  int iterations = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--nccl")) nccl_path = argv[i + 1];
    else if (!std::strcmp(argv[i], "--lib")) cuda_path = argv[i + 1];
    else if (!std::strcmp(argv[i], "--iterations")) iterations = std::atoi(argv[i + 1]);
  }
  g_cuda = dlopen(cuda_path, RTLD_NOW);
  g_nccl = dlopen(nccl_path, RTLD_NOW);
  if (!g_cuda || !g_nccl) {
    std::fprintf(stderr, "nccl_single_rank: %s\n", dlerror());
    return 1;
  }
  // An application loads libnccl well before it makes a communicator
  // (PyTorch at import); gpuobs attaches a library when it is mapped, within
  // milliseconds, not before: the calls of the first milliseconds are not seen.
  usleep(300 * 1000);
  int dev = 0;
  void* ctx = nullptr;
  cu("cuInit", 0u);
  cu("cuDeviceGet", &dev, 0);
  cu("cuDevicePrimaryCtxRetain", &ctx, dev);
  cu("cuCtxSetCurrent", ctx);
  unsigned long long send = 0, recv = 0;
  cu("cuMemAlloc_v2", &send, size_t{1} << 20);
  cu("cuMemAlloc_v2", &recv, size_t{1} << 20);
  Stream stream = nullptr;
  cu("cuStreamCreate", &stream, 0u);

  UniqueId id;
  nccl("ncclGetUniqueId", 0, &id);
  g_calls.erase("ncclGetUniqueId");
  Comm comm = nullptr;
  nccl("ncclCommInitRank", 0, &comm, 1, id, 0);
  void* sb = reinterpret_cast<void*>(send);
  void* rb = reinterpret_cast<void*>(recv);
  bool has_alltoall = sym(g_nccl, "ncclAlltoAll", false) != nullptr;
  // ncclDataType_t: int8 0, int32 2, int64 4, float16 6, float32 7, float64 8, bfloat16 9;
  // ncclRedOp_t: sum 0, prod 1, max 2.
  for (int i = 0; i < iterations; ++i) {
    nccl("ncclAllReduce", 1024 * 4, sb, rb, size_t{1024}, 7, 0, comm, stream);
    nccl("ncclBroadcast", 256 * 4, sb, rb, size_t{256}, 2, 0, comm, stream);
    nccl("ncclAllGather", 128 * 2, sb, rb, size_t{128}, 6, comm, stream);
    nccl("ncclReduceScatter", 64 * 2, sb, rb, size_t{64}, 9, 2, comm, stream);
    nccl("ncclGroupStart", 0);
    nccl("ncclSend", 32 * 8, sb, size_t{32}, 4, 0, comm, stream);
    nccl("ncclRecv", 32 * 8, rb, size_t{32}, 4, 0, comm, stream);
    nccl("ncclGroupEnd", 0);
    nccl("ncclReduce", 32 * 8, sb, rb, size_t{32}, 8, 1, 0, comm, stream);
    if (has_alltoall) nccl("ncclAlltoAll", 16, sb, rb, size_t{16}, 0, comm, stream);
  }
  cu("cuStreamSynchronize", stream);
  nccl("ncclCommDestroy", 0, comm);
  Dl_info info{};
  dladdr(sym(g_nccl, "ncclAllReduce"), &info);
  char real[4096] = "?";
  if (info.dli_fname && !realpath(info.dli_fname, real)) std::snprintf(real, sizeof real, "%s", info.dli_fname);
  std::printf("{\"pid\": %d, \"comm\": \"%p\", \"stream\": \"%p\", \"library\": \"%s\", \"calls\": {", getpid(), comm,
              stream, real);
  const char* sep = "";
  for (auto& [name, n] : g_calls) {
    std::printf("%s\"%s\": [%d, %llu]", sep, name.c_str(), n, static_cast<unsigned long long>(g_bytes[name]));
    sep = ", ";
  }
  std::printf("}}\n");
  return 0;
}
