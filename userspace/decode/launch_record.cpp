#include "decode/launch_record.h"

#include <cstring>
#include <string>

namespace gpuobs {
namespace {

template <class T>
T read_at(const std::string& blob, size_t off) {
  T v{};
  if (off + sizeof(T) <= blob.size()) std::memcpy(&v, blob.data() + off, sizeof(T));
  return v;
}

bool is_kind(const ApiSpec* s, ApiKind kind) { return s && s->kind == kind; }

// hipExtModuleLaunchKernel takes work sizes in threads; a partial last
// workgroup is allowed, so blocks = ceil(global / local).
uint32_t blocks_of(uint32_t global, uint32_t local) {
  return local ? static_cast<uint32_t>((uint64_t{global} + local - 1) / local) : global;
}

// hipLaunchKernel(f, dim3 grid, dim3 block, void** args, size_t shmem, hipStream_t stream): a
// by-value dim3 is two registers, x | y << 32 then z (abi-reference §5.1), so
// the 8 integer arguments are f, grid.xy, grid.z, block.xy, block.z, args, shmem, stream.
LaunchRecord decode_dim3(const ApiCallEvent& e, const ApiSpec& s) {
  LaunchRecord r;
  r.api = e.api;
  r.function = e.args[0];
  r.grid[0] = static_cast<uint32_t>(e.args[1]), r.grid[1] = static_cast<uint32_t>(e.args[1] >> 32);
  r.grid[2] = static_cast<uint32_t>(e.args[2]);
  r.block[0] = static_cast<uint32_t>(e.args[3]), r.block[1] = static_cast<uint32_t>(e.args[3] >> 32);
  r.block[2] = static_cast<uint32_t>(e.args[4]);
  r.cooperative = is_kind(&s, ApiKind::cooperative);
  // hipLaunchCooperativeKernel's shared memory is an unsigned int; hipLaunchKernel's a size_t.
  r.shared_mem_bytes = r.cooperative ? e.args[6] & 0xffffffffu : e.args[6];
  r.stream = e.args[7];
  r.kernel_params = e.args[5];
  r.args_complete = !(e.flags & GPUOBS_CALL_F_STACK_ARGS_MISSING);
  r.per_thread_stream = s.per_thread;
  return r;
}

// cuLaunchKernelEx: the blob is CUlaunchConfig (grid @0, block @12, shared
// memory @24, stream @32, numAttrs @48) and up to 4 CUlaunchAttribute (72 B:
// id @0, value @8). CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2, CLUSTER_DIMENSION = 4.
LaunchRecord decode_ex(const ApiCallEvent& e, const ApiSpec& s) {
  const std::string& b = e.blob;
  LaunchRecord r;
  r.api = e.api;
  r.function = e.args[1];
  for (int i = 0; i < 3; ++i) {
    r.grid[i] = read_at<uint32_t>(b, 4 * i);
    r.block[i] = read_at<uint32_t>(b, 12 + 4 * i);
  }
  r.shared_mem_bytes = read_at<uint32_t>(b, 24);
  r.stream = read_at<uint64_t>(b, 32);
  r.kernel_params = e.args[2];
  r.extra = e.args[3];
  r.args_complete = b.size() >= 56;
  r.attributes = read_at<uint32_t>(b, 48);
  for (size_t off = 56; off + 72 <= b.size(); off += 72) {
    uint32_t id = read_at<uint32_t>(b, off);
    if (id == 2) r.cooperative = read_at<int32_t>(b, off + 8) != 0;
    if (id == 4) {
      r.has_cluster = true;
      for (int i = 0; i < 3; ++i) r.cluster[i] = read_at<uint32_t>(b, off + 8 + 4 * i);
    }
  }
  r.per_thread_stream = s.per_thread;
  return r;
}

}  // namespace

LaunchRecord decode_launch(const gpuobs_launch& l) {
  const ApiSpec* s = api_by_id(l.api);
  LaunchRecord r;
  r.api = l.api;
  r.function = l.function;
  r.grid[0] = l.grid_x, r.grid[1] = l.grid_y, r.grid[2] = l.grid_z;
  r.block[0] = l.block_x, r.block[1] = l.block_y, r.block[2] = l.block_z;
  if (is_kind(s, ApiKind::global_size))
    for (int i = 0; i < 3; ++i) r.grid[i] = blocks_of(r.grid[i], r.block[i]);
  r.shared_mem_bytes = l.shared_mem_bytes;
  r.stream = l.stream;
  r.kernel_params = l.kernel_params;
  r.cooperative = is_kind(s, ApiKind::cooperative);
  r.extra = r.cooperative ? 0 : l.extra;  // cuLaunchCooperativeKernel has no 11th argument
  r.args_complete = !(l.flags & (GPUOBS_LAUNCH_F_STACK_ARGS_MISSING | GPUOBS_LAUNCH_F_GRID_UNKNOWN));
  r.per_thread_stream = s && s->per_thread;
  return r;
}

LaunchRecord decode_launch(const ApiCallEvent& e, const ApiSpec& s) {
  return s.probe == ProbeKind::launch_dim3 ? decode_dim3(e, s) : decode_ex(e, s);
}

}  // namespace gpuobs
