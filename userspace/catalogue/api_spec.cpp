// Lookups over the API tables and the SQL text of the catalogue's enums.
#include "catalogue/api_spec.h"

#include <algorithm>

namespace gpuobs {

std::string_view to_string(ApiOp op) {
  switch (op) {
    case ApiOp::launch: return "launch";
    case ApiOp::host_func: return "host_func";
    case ApiOp::graph_launch: return "graph_launch";
    case ApiOp::alloc: return "alloc";
    case ApiOp::free: return "free";
    case ApiOp::create: return "create";
    case ApiOp::release: return "release";
    case ApiOp::map: return "map";
    case ApiOp::unmap: return "unmap";
    case ApiOp::copy: return "copy";
    case ApiOp::copy_async: return "copy_async";
    case ApiOp::memset: return "memset";
    case ApiOp::memset_async: return "memset_async";
    case ApiOp::destroy: return "destroy";
    case ApiOp::wait_event: return "wait_event";
    case ApiOp::query: return "query";
    case ApiOp::capture_begin: return "capture_begin";
    case ApiOp::capture_end: return "capture_end";
    case ApiOp::record: return "record";
    case ApiOp::sync: return "sync";
    case ApiOp::load: return "load";
    case ApiOp::get_function: return "get_function";
    case ApiOp::get_kernel: return "get_kernel";
    case ApiOp::kernel_function: return "kernel_function";
    case ApiOp::register_function: return "register_function";
    case ApiOp::init: return "init";
    case ApiOp::driver_version: return "driver_version";
    case ApiOp::device_get: return "device_get";
    case ApiOp::device_count: return "device_count";
    case ApiOp::device_attribute: return "device_attribute";
    case ApiOp::device_total_mem: return "device_total_mem";
    case ApiOp::context_create: return "context_create";
    case ApiOp::context_destroy: return "context_destroy";
    case ApiOp::primary_retain: return "primary_retain";
    case ApiOp::primary_release: return "primary_release";
    case ApiOp::primary_reset: return "primary_reset";
    case ApiOp::primary_set_flags: return "primary_set_flags";
  }
  return "unknown";
}

std::string_view to_string(ApiKind kind) {
  switch (kind) {
    case ApiKind::none: return "";
    case ApiKind::cooperative: return "cooperative";
    case ApiKind::ex: return "ex";
    case ApiKind::ext: return "ext";
    case ApiKind::global_size: return "global_size";
    case ApiKind::device: return "device";
    case ApiKind::pitch: return "pitch";
    case ApiKind::managed: return "managed";
    case ApiKind::host: return "host";
    case ApiKind::async: return "async";
    case ApiKind::pool: return "pool";
    case ApiKind::physical: return "physical";
    case ApiKind::virtual_: return "virtual";
    case ApiKind::default_: return "default";
    case ApiKind::HtoD: return "HtoD";
    case ApiKind::DtoH: return "DtoH";
    case ApiKind::DtoD: return "DtoD";
    case ApiKind::DtoA: return "DtoA";
    case ApiKind::AtoD: return "AtoD";
    case ApiKind::HtoA: return "HtoA";
    case ApiKind::AtoH: return "AtoH";
    case ApiKind::AtoA: return "AtoA";
    case ApiKind::peer: return "peer";
    case ApiKind::two_d: return "2d";
    case ApiKind::three_d: return "3d";
    case ApiKind::stream: return "stream";
    case ApiKind::event: return "event";
    case ApiKind::context: return "context";
    case ApiKind::fence: return "fence";
    case ApiKind::function: return "function";
    case ApiKind::kernel: return "kernel";
    case ApiKind::module: return "module";
    case ApiKind::library: return "library";
  }
  return "unknown";
}

std::string_view to_string(Vendor vendor) {
  switch (vendor) {
    case Vendor::cuda: return "cuda";
    case Vendor::hip: return "hip";
    case Vendor::nccl: return "nccl";
    case Vendor::level_zero: return "level_zero";
  }
  return "unknown";
}

std::string_view to_string(NcclOp op) {
  switch (op) {
    case NcclOp::comm_init: return "comm_init";
    case NcclOp::comm_init_all: return "comm_init_all";
    case NcclOp::comm_split: return "comm_split";
    case NcclOp::comm_destroy: return "comm_destroy";
    case NcclOp::comm_abort: return "comm_abort";
    case NcclOp::comm_device: return "comm_device";
    case NcclOp::all_reduce: return "all_reduce";
    case NcclOp::broadcast: return "broadcast";
    case NcclOp::reduce: return "reduce";
    case NcclOp::all_gather: return "all_gather";
    case NcclOp::reduce_scatter: return "reduce_scatter";
    case NcclOp::all_to_all: return "all_to_all";
    case NcclOp::send: return "send";
    case NcclOp::recv: return "recv";
    case NcclOp::group_start: return "group_start";
    case NcclOp::group_end: return "group_end";
    case NcclOp::gather: return "gather";
    case NcclOp::scatter: return "scatter";
    case NcclOp::comm_rank: return "comm_rank";
    case NcclOp::comm_count: return "comm_count";
  }
  return "unknown";
}

const ApiSpec* api_by_id(uint32_t id) {
  // Ids are dense and ordered in each table (CUDA from 1, HIP from 1001):
  // index directly, check, fall back to a scan.
  auto find = [](std::span<const ApiSpec> t, uint32_t first, uint32_t id) -> const ApiSpec* {
    if (id >= first && id - first < t.size() && t[id - first].id == id) return &t[id - first];
    auto it = std::find_if(t.begin(), t.end(), [&](const ApiSpec& s) { return s.id == id; });
    return it == t.end() ? nullptr : &*it;
  };
  if (id > 3000) return find(level_zero_api_table(), 3001, id);
  if (id > 2000) return find(nccl_api_table(), 2001, id);
  return id > 1000 ? find(hip_api_table(), 1001, id) : find(cuda_api_table(), 1, id);
}

std::span<const ApiSpec> api_table_for_library(std::string_view path) {
  size_t slash = path.rfind('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  if (base.starts_with("libamdhip64.so")) return hip_api_table();
  if (base.starts_with("libnccl.so") || base.starts_with("librccl.so")) return nccl_api_table();
  if (base.starts_with("libze_loader.so")) return level_zero_api_table();
  return cuda_api_table();
}

const ApiSpec* api_by_symbol(std::string_view symbol) {
  for (auto table : {cuda_api_table(), hip_api_table(), nccl_api_table(), level_zero_api_table()})
    for (const ApiSpec& s : table)
      if (s.symbol == symbol) return &s;
  return nullptr;
}

std::string_view api_name(uint32_t id) {
  const ApiSpec* s = api_by_id(id);
  return s ? s->symbol : std::string_view("unknown");
}

}  // namespace gpuobs
