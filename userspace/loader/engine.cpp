#include "loader/engine.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/capability.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <map>
#include <thread>

#include "catalogue/api_spec.h"
#include "gpuobs.skel.h"
#include "loader/elf_symbols.h"
#include "loader/uprobe_multi.h"

namespace gpuobs {
namespace {

constexpr uint32_t kCapPerfmon = 38;
constexpr uint32_t kCapBpf = 39;
constexpr uint32_t kCapSysAdmin = 21;

bool has_cap(const __user_cap_data_struct (&data)[2], uint32_t cap) {
  return data[cap / 32].effective & (1u << (cap % 32));
}

Status check_privileges() {
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (::syscall(SYS_capget, &hdr, data) != 0)
    return make_error(std::string("cannot read capabilities: ") + std::strerror(errno));
  bool bpf_ok = has_cap(data, kCapSysAdmin) || (has_cap(data, kCapBpf) && has_cap(data, kCapPerfmon));
  if (!bpf_ok)
    return make_error("insufficient privileges to load BPF programs (need CAP_BPF and CAP_PERFMON, or root)",
                      "run as root, e.g. sudo gpuobs record ...", 1);
  return {};
}

// Syscall tracepoints are attached by id, read from tracefs.
Status ensure_tracefs() {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists("/sys/kernel/tracing/events/syscalls", ec) ||
      fs::exists("/sys/kernel/debug/tracing/events/syscalls", ec))
    return {};
  if (::mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, nullptr) != 0)
    return make_error(std::string("tracefs is not mounted and mounting it failed: ") + std::strerror(errno),
                      "mount -t tracefs tracefs /sys/kernel/tracing");
  if (!fs::exists("/sys/kernel/tracing/events/syscalls", ec))
    return make_error("the kernel has no syscall tracepoints (/sys/kernel/tracing/events/syscalls)",
                      "gpuobs needs CONFIG_FTRACE_SYSCALLS=y");
  spdlog::info("mounted tracefs on /sys/kernel/tracing");
  return {};
}

uint32_t round_ring_size(uint32_t bytes) {
  uint32_t page = static_cast<uint32_t>(::sysconf(_SC_PAGESIZE));
  uint32_t v = page;
  while (v < bytes && v < (1u << 30)) v <<= 1;
  return v;
}

int on_record(void* ctx, void* data, size_t size) {
  auto* handler = static_cast<Engine::RecordHandler*>(ctx);
  (*handler)(data, size);
  return 0;
}

}  // namespace

void LinkDeleter::operator()(bpf_link* l) const { bpf_link__destroy(l); }
void RingBufferDeleter::operator()(ring_buffer* r) const { ring_buffer__free(r); }
void Engine::SkeletonDeleter::operator()(gpuobs_bpf* s) const { gpuobs_bpf__destroy(s); }

namespace {

// The name each BPF counter has in the capture's counters table and in
// `gpuobs report capture` (counter.<name>). One row per GPUOBS_CNT_*
// (bpf/events.h); tests/unit/loader/counters_test.cpp checks that none is missing.
struct CounterName {
  int index;
  const char* name;
};
constexpr CounterName kCounterNames[] = {
    {GPUOBS_CNT_SUBMIT_LAUNCH, "submitted_launch"},
    {GPUOBS_CNT_SUBMIT_IOCTL, "submitted_ioctl"},
    {GPUOBS_CNT_SUBMIT_PROC, "submitted_process"},
    {GPUOBS_CNT_DROP_LAUNCH, "dropped_launch_ringbuf_full"},
    {GPUOBS_CNT_DROP_IOCTL, "dropped_ioctl_ringbuf_full"},
    {GPUOBS_CNT_DROP_PROC, "dropped_process_ringbuf_full"},
    {GPUOBS_CNT_IOCTL_STALE, "ioctl_entry_stale"},
    {GPUOBS_CNT_IOCTL_ENTRY_FULL, "dropped_ioctl_inflight_full"},
    {GPUOBS_CNT_LAUNCH_ARGS_FAULT, "launch_stack_args_unreadable"},
    {GPUOBS_CNT_TRACK_FULL, "untracked_child_map_full"},
    {GPUOBS_CNT_SUBMIT_API, "submitted_api_call"},
    {GPUOBS_CNT_DROP_API, "dropped_api_call_ringbuf_full"},
    {GPUOBS_CNT_API_STALE, "api_entry_stale"},
    {GPUOBS_CNT_API_ENTRY_FULL, "dropped_api_call_inflight_full"},
    {GPUOBS_CNT_API_NO_ENTRY, "api_return_without_entry"},
    {GPUOBS_CNT_STACK_FAULT, "stack_unreadable"},
    {GPUOBS_CNT_DROP_SCRATCH_BUSY, "dropped_scratch_slots_busy"},
    {GPUOBS_CNT_PY_NO_THREAD, "python_thread_without_state"},
    {GPUOBS_CNT_PY_MAIN_THREAD, "python_main_thread_stacks"},
    {GPUOBS_CNT_PY_MAIN_RUNNING, "python_main_thread_running"},
    {GPUOBS_CNT_PY_FAULT, "python_frames_unreadable"},
    {GPUOBS_CNT_PY_FULL, "python_frames_depth_reached"},
    {GPUOBS_CNT_SUBMIT_GPU_TRACE, "submitted_gpu_trace"},
    {GPUOBS_CNT_DROP_GPU_TRACE, "dropped_gpu_trace_ringbuf_full"},
};
static_assert(std::size(kCounterNames) == GPUOBS_CNT__COUNT, "a GPUOBS_CNT_* counter has no name here");

}  // namespace

const char* counter_name(int idx) {
  for (const auto& c : kCounterNames)
    if (c.index == idx) return c.name;
  return "unknown";
}

Status preflight() {
  if (auto s = check_privileges(); !s) return s;
  if (::access("/sys/kernel/btf/vmlinux", R_OK) != 0)
    return make_error(
        "the kernel has no BTF (/sys/kernel/btf/vmlinux is missing)",
        "gpuobs needs a kernel built with CONFIG_DEBUG_INFO_BTF=y (Debian, Ubuntu, RHEL kernels have it)");
  return ensure_tracefs();
}

Result<std::unique_ptr<Engine>> Engine::create(const EngineOptions& opts) {
  if (auto s = preflight(); !s) return s.error();
  std::unique_ptr<Engine> e(new Engine());
  e->skel_.reset(gpuobs_bpf__open());
  if (!e->skel_) return make_error(std::string("cannot open the BPF object: ") + std::strerror(errno));

  // One link per program and file where the kernel can (uprobe-multi);
  // programs must be loaded for that attach type.
  // GPUOBS_NO_UPROBE_MULTI=1 forces the per-symbol path (what kernels before
  // 6.6 get), so it stays tested.
  const char* no_multi = std::getenv("GPUOBS_NO_UPROBE_MULTI");
  e->multi_ = !(no_multi && *no_multi == '1') && uprobe_multi_supported();
  if (e->multi_)
    for (auto* p : {e->skel_->progs.cu_launch_kernel, e->skel_->progs.cu_launch_kernel_ex, e->skel_->progs.cu_call,
                    e->skel_->progs.cu_call_enter, e->skel_->progs.cu_call_exit, e->skel_->progs.outer_call_enter,
                    e->skel_->progs.outer_call_exit, e->skel_->progs.ze_launch_kernel,
                    e->skel_->progs.ze_set_group_size, e->skel_->progs.empty_uprobe, e->skel_->progs.empty_uretprobe})
      bpf_program__set_expected_attach_type(p, static_cast<bpf_attach_type>(kAttachUprobeMulti));
  spdlog::debug("library probes: {}", e->multi_ ? "uprobe-multi links" : "one perf-event uprobe per symbol");

  // Configure: read-only knobs and map sizes, before load.
  e->skel_->rodata->filter_tracked = opts.only_tracked ? 1 : 0;
  e->skel_->rodata->self_tgid = static_cast<uint32_t>(::getpid());
  e->skel_->rodata->lib_hold = opts.attach_lib_map && opts.hold_on_map ? 1 : 0;
  e->ring_bytes_ = round_ring_size(opts.ring_bytes);
  if (int err = bpf_map__set_max_entries(e->skel_->maps.events, e->ring_bytes_))
    return make_error("cannot size the ring buffer: " + std::string(std::strerror(-err)));
  e->skel_->rodata->ring_wake_bytes = e->ring_bytes_ / 2;
  if (opts.stack_depth > GPUOBS_STACK_MAX)
    return make_error("stack depth " + std::to_string(opts.stack_depth) + " is above the maximum",
                      "pass --stack-depth between 0 (no stacks) and " + std::to_string(GPUOBS_STACK_MAX), 2);
  e->skel_->rodata->stack_depth = opts.stack_depth;
  if (opts.stack_copy_bytes > GPUOBS_STACK_COPY_MAX || opts.stack_copy_bytes % 8)
    return make_error("stack copy size " + std::to_string(opts.stack_copy_bytes) + " is not valid",
                      "pass --stack-copy as a multiple of 8 up to " + std::to_string(GPUOBS_STACK_COPY_MAX), 2);
  e->skel_->rodata->stack_copy_bytes = opts.stack_copy_bytes;
  // Scratch slots (bpf/maps.bpf.h): room for the largest body and a full
  // stack section; the verifier bounds every write by this size.
  uint64_t copy_section =
      opts.stack_copy_bytes ? sizeof(gpuobs_stack_regs) + opts.stack_copy_bytes + sizeof(gpuobs_stack_copy_hdr) : 0;
  // Python frames (bpf/python.bpf.h): at most the native depth, at most
  // GPUOBS_PY_FRAMES_MAX; none without stacks.
  uint32_t py_depth = opts.python_stacks ? std::min<uint32_t>(opts.stack_depth, GPUOBS_PY_FRAMES_MAX) : 0;
  e->skel_->rodata->python_depth = py_depth;
  e->skel_->rodata->python_main_thread = py_depth && opts.python_main_thread ? 1 : 0;
  // bpf/python.bpf.h struct gpuobs_py_area: frames, a thread-state buffer, a frame block.
  uint64_t py_area = py_depth ? sizeof(gpuobs_py_frame) * (GPUOBS_PY_FRAMES_MAX + 1) + GPUOBS_PY_READ_MAX +
                                    GPUOBS_PY_BLOCK + GPUOBS_PY_READ_MAX + 32
                              : 0;
  uint64_t record_max =
      GPUOBS_RECORD_BODY_MAX + copy_section + uint64_t{opts.stack_depth} * 8 + py_area + sizeof(gpuobs_stack_trailer);
  record_max = (record_max + 7) & ~uint64_t{7};
  e->skel_->rodata->scratch_bytes = static_cast<uint32_t>(record_max);
  int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return make_error("cannot count the possible CPUs: " + std::string(std::strerror(-ncpu)));
  if (int err = bpf_map__set_value_size(e->skel_->maps.scratch, static_cast<uint32_t>(record_max + 8)))
    return make_error("cannot size the record scratch slots: " + std::string(std::strerror(-err)));
  if (int err = bpf_map__set_max_entries(e->skel_->maps.scratch, static_cast<uint32_t>(ncpu) * GPUOBS_SCRATCH_SLOTS))
    return make_error("cannot size the record scratch slots: " + std::string(std::strerror(-err)));
  e->skel_->rodata->unwind_in_bpf = opts.unwind_in_bpf ? 1 : 0;
  e->rows_cap_ = opts.unwind_in_bpf ? opts.unwind_rows : 0;
  if (int err = bpf_map__set_max_entries(e->skel_->maps.unwind_rows, e->rows_cap_ ? e->rows_cap_ : 1))
    return make_error("cannot size the unwind table: " + std::string(std::strerror(-err)));
  e->stack_depth_ = opts.stack_depth;
  if (e->skel_->rodata->gpuobs_abi_version != GPUOBS_ABI_VERSION)
    return make_error("BPF object ABI version does not match the loader (stale build?)");

  e->plan_gpu_tracepoints(opts);

  if (int err = gpuobs_bpf__load(e->skel_.get()))
    return make_error("cannot load the BPF programs: " + std::string(std::strerror(-err)),
                      "run with -v debug to see the verifier log");
  if (e->rows_cap_) {
    // Rows are written straight into the map's memory: tables of millions
    // of rows cost no syscall each.
    void* mem = ::mmap(nullptr, size_t{e->rows_cap_} * 8, PROT_READ | PROT_WRITE, MAP_SHARED,
                       bpf_map__fd(e->skel_->maps.unwind_rows), 0);
    if (mem == MAP_FAILED) return make_error(std::string("cannot map the unwind table: ") + std::strerror(errno));
    e->rows_ = MappedRegion(mem, size_t{e->rows_cap_} * 8);
  }
  if (auto s = e->attach_tracepoints(opts); !s) return s.error();
  e->attach_gpu_tracepoints();
  return e;
}

void Engine::plan_gpu_tracepoints(const EngineOptions& opts) {
  struct Planned {
    bpf_program* prog;
    uint32_t kind, name_gen;
    const char* key_field;  // the fence key the record-mode filter reads
  };
  const Planned planned[] = {
      {skel_->progs.gpu_job_queue, GPUOBS_GPU_TP_QUEUE, 0, "fence_context"},
      {skel_->progs.gpu_job_run, GPUOBS_GPU_TP_RUN, 0, "fence_context"},
      {skel_->progs.gpu_job_done, GPUOBS_GPU_TP_DONE, 0, "fence_context"},
      {skel_->progs.gpu_job_queue_old, GPUOBS_GPU_TP_QUEUE, 1, "fence"},
      {skel_->progs.gpu_job_run_old, GPUOBS_GPU_TP_RUN, 1, "fence"},
      {skel_->progs.gpu_job_done_old, GPUOBS_GPU_TP_DONE, 1, "fence"},
      {skel_->progs.gpu_fence_signaled, GPUOBS_GPU_TP_FENCE, 0, "context"},
  };
  std::string events_dir = tracefs_events_dir();
  bool new_names = false;
  for (const auto& p : planned) {
    // SEC("tracepoint/SYSTEM/EVENT"): the names the kernel must have.
    std::string sec = bpf_program__section_name(p.prog);
    std::string where = sec.substr(sec.find('/') + 1);
    TracepointResult r;
    r.system = where.substr(0, where.find('/'));
    r.event = where.substr(where.find('/') + 1);
    r.program = bpf_program__name(p.prog);
    r.kind = p.kind;
    r.name_gen = p.name_gen;
    if (!opts.attach_gpu_jobs) {
      r.status = ProbeStatus::missing;
      r.error = "not asked for";
    } else if (p.name_gen == 1 && new_names) {
      r.status = ProbeStatus::missing;
      r.error = "this kernel has the 6.17+ scheduler event names";
    } else if (events_dir.empty()) {
      r.status = ProbeStatus::missing;
      r.error = "tracefs is not mounted";
    } else if (auto f = read_trace_format(events_dir, r.system, r.event); !f) {
      r.status = ProbeStatus::missing;
      // gpu_scheduler's events exist only while a driver that uses the DRM
      // GPU scheduler (amdgpu, xe, nouveau, panthor, v3d, ...) is loaded.
      r.error = f.error().message + (r.system == "gpu_scheduler" ? "; no DRM GPU-scheduler driver is loaded" : "");
    } else if (const TraceField* key = f->field(p.key_field);
               !key || (key->size != 4 && key->size != 8) || key->offset + 8 > GPUOBS_GPU_TRACE_RAW_MAX) {
      r.status = ProbeStatus::failed;
      r.error = std::string("its format has no 4- or 8-byte field ") + p.key_field + " in the first " +
                std::to_string(GPUOBS_GPU_TRACE_RAW_MAX) + " bytes";
    } else {
      skel_->rodata->gpu_key_off[p.kind] = key->offset;
      skel_->rodata->gpu_key_size[p.kind] = key->size;
      r.format = std::move(*f);
      if (p.kind == GPUOBS_GPU_TP_QUEUE && p.name_gen == 0) new_names = true;
    }
    if (r.status != ProbeStatus::attached) bpf_program__set_autoload(p.prog, false);
    gpu_tps_.push_back(std::move(r));
  }
}

Status Engine::attach_gpu_program_to(const std::string& program, const std::string& system, const std::string& event) {
  bpf_program* prog = bpf_object__find_program_by_name(skel_->obj, program.c_str());
  if (!prog || !bpf_program__autoload(prog)) return make_error("no loaded program " + program);
  Link link(bpf_program__attach_tracepoint(prog, system.c_str(), event.c_str()));
  if (!link)
    return make_error("cannot attach " + program + " to " + system + "/" + event + ": " + std::strerror(errno));
  links_.push_back(std::move(link));
  return {};
}

void Engine::attach_gpu_tracepoints() {
  for (auto& r : gpu_tps_) {
    if (r.status != ProbeStatus::attached) continue;
    bpf_program* prog = bpf_object__find_program_by_name(skel_->obj, r.program.c_str());
    Link link(prog ? bpf_program__attach(prog) : nullptr);
    if (!link) {
      r.status = ProbeStatus::failed;
      r.error = std::string("attach failed: ") + std::strerror(errno);
      r.format.reset();
      spdlog::warn("cannot attach {}/{}: {}", r.system, r.event, r.error);
      continue;
    }
    links_.push_back(std::move(link));
  }
}

Status Engine::attach_tracepoints(const EngineOptions& opts) {
  std::vector<bpf_program*> progs;
  if (opts.attach_ioctl) {
    progs.push_back(skel_->progs.ioctl_enter);
    progs.push_back(skel_->progs.ioctl_exit);
  }
  if (opts.attach_process) {
    progs.push_back(skel_->progs.proc_fork);
    progs.push_back(skel_->progs.proc_exec);
    progs.push_back(skel_->progs.proc_exit);
  }
  for (auto* p : progs) {
    Link link(bpf_program__attach(p));
    if (!link) return make_error(std::string("cannot attach ") + bpf_program__name(p) + ": " + std::strerror(errno));
    links_.push_back(std::move(link));
  }
  if (opts.attach_lib_map) {
    // Optional: without them libraries are still found at a process's first
    // GPU ioctl and by rescans, later.
    std::vector<Link> made;
    for (auto* p : {skel_->progs.lib_mmap_enter, skel_->progs.lib_mmap_exit}) {
      Link link(bpf_program__attach(p));
      if (!link) {
        spdlog::warn("cannot attach {}: {}; GPU libraries are found at first GPU ioctl and by rescans only",
                     bpf_program__name(p), std::strerror(errno));
        made.clear();  // both or neither
        break;
      }
      made.push_back(std::move(link));
    }
    lib_map_ = !made.empty();
    for (auto& l : made) links_.push_back(std::move(l));
  }
  spdlog::debug("attached {} tracepoint programs", progs.size());
  return {};
}

std::vector<ProbeResult> Engine::attach_api(const LibraryFile& lib, std::span<const ApiSpec> table) {
  {
    // Detached a moment ago and mapped again: its old probes must be gone
    // first, or every call would be recorded twice.
    std::unique_lock lk(lib_mu_);
    reap_cv_.wait(lk, [&] { return !reaping_.count({lib.dev, lib.ino}); });
  }
  std::vector<ProbeResult> out;
  std::vector<Site> sites;
  auto syms = read_function_symbols(lib.realpath);
  for (const ApiSpec& spec : table) {
    ProbeResult r{lib, std::string(spec.symbol), "", ProbeStatus::attached, ""};
    Site site{out.size(), 0, GPUOBS_COOKIE(spec.id, spec.out_arg, spec.blob_arg, spec.blob_kind, spec.blob_len), {}};
    switch (spec.probe) {
      case ProbeKind::launch: site.progs = {{skel_->progs.cu_launch_kernel, false}}; break;
      case ProbeKind::launch_ex: site.progs = {{skel_->progs.cu_launch_kernel_ex, false}}; break;
      case ProbeKind::entry:
      case ProbeKind::launch_dim3: site.progs = {{skel_->progs.cu_call, false}}; break;
      case ProbeKind::entry_return:
        site.progs = {{skel_->progs.cu_call_enter, false}, {skel_->progs.cu_call_exit, true}};
        break;
      case ProbeKind::outer_entry_return:
        site.progs = {{skel_->progs.outer_call_enter, false}, {skel_->progs.outer_call_exit, true}};
        break;
      case ProbeKind::launch_group_count: site.progs = {{skel_->progs.ze_launch_kernel, false}}; break;
      case ProbeKind::group_size: site.progs = {{skel_->progs.ze_set_group_size, false}}; break;
    }
    for (auto& [p, ret] : site.progs) r.program += (r.program.empty() ? "" : "+") + std::string(bpf_program__name(p));
    if ((spec.probe == ProbeKind::entry || spec.probe == ProbeKind::launch_dim3) &&
        spec.blob_kind != GPUOBS_BLOB_NONE) {
      // cu_call records are the fixed part only (bpf/api.bpf.h): a blob
      // needs a return probe or a program of its own.
      r.status = ProbeStatus::failed;
      r.error = "API table: an entry-only probe cannot copy a blob";
    } else if (!syms) {
      r.status = ProbeStatus::failed;
      r.error = syms.error().message;
    } else if (auto it = syms->find(r.symbol); it == syms->end()) {
      r.status = ProbeStatus::missing;
      r.error = "no such symbol";
    } else if (auto why = unprobeable_reason(it->second.first_byte); !why.empty()) {
      r.status = ProbeStatus::failed;
      r.error = why;
    } else {
      site.offset = it->second.file_offset;
      sites.push_back(std::move(site));
    }
    out.push_back(std::move(r));
  }
  attach_sites(lib, sites, out);
  return out;
}

void Engine::attach_sites(const LibraryFile& lib, const std::vector<Site>& sites, std::vector<ProbeResult>& results) {
  LibraryLinks made_here;
  // Whatever this call made joins the file's links, also on an early return.
  struct Keep {
    Engine* e;
    const LibraryFile& lib;
    LibraryLinks& made;
    ~Keep() {
      if (made.links.empty() && made.multi_fds.empty()) return;
      std::lock_guard lk(e->lib_mu_);
      auto& to = e->lib_links_[{lib.dev, lib.ino}];
      for (auto& l : made.links) to.links.push_back(std::move(l));
      for (auto& fd : made.multi_fds) to.multi_fds.push_back(std::move(fd));
    }
  } keep{this, lib, made_here};
  if (!multi_) {
    for (const auto& site : sites)
      results[site.result] = attach_at(results[site.result], site.offset, site.cookie, site.progs, made_here);
    return;
  }
  // Group by (program, return probe): one link each, for every symbol on this file.
  std::map<std::pair<bpf_program*, bool>, std::vector<const Site*>> groups;
  for (const auto& site : sites)
    for (const auto& pr : site.progs) groups[pr].push_back(&site);
  // One link per group, made in parallel: registering uprobes can wait for
  // an RCU grace period (tens of ms on a busy host), and the waits overlap.
  // The latency from a process's mmap to its probes is what this is about.
  std::vector<std::pair<bpf_program*, bool>> keys;
  std::vector<std::vector<uint64_t>> offsets, cookies;
  for (auto& [key, members] : groups) {
    keys.push_back(key);
    offsets.emplace_back();
    cookies.emplace_back();
    for (const Site* site : members) {
      offsets.back().push_back(site->offset);
      cookies.back().push_back(site->cookie);
    }
  }
  std::vector<int> fds(keys.size(), -1);
  {
    std::vector<std::thread> pool;
    for (size_t i = 0; i < keys.size(); ++i)
      pool.emplace_back([&, i] {
        fds[i] =
            uprobe_multi_link(bpf_program__fd(keys[i].first), lib.realpath, offsets[i], cookies[i], keys[i].second);
      });
    for (auto& t : pool) t.join();
  }
  std::vector<Fd> made;
  std::string err;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (fds[i] >= 0) made.emplace_back(fds[i]);
    else if (err.empty()) err = std::string(bpf_program__name(keys[i].first)) + ": " + std::strerror(-fds[i]);
  }
  if (!err.empty()) {
    // All or nothing per file: an entry probe without its return probe (or
    // the reverse) would fill the in-flight map or miscount. (Programs
    // loaded for uprobe-multi cannot fall back to perf-event uprobes.)
    spdlog::warn("uprobe-multi link on {} failed ({}); no probe attached on this file", lib.realpath, err);
    made.clear();
    for (const auto& site : sites) {
      results[site.result].status = ProbeStatus::failed;
      results[site.result].error = err;
    }
    return;
  }
  for (auto& fd : made) made_here.multi_fds.push_back(std::move(fd));
}

size_t Engine::detach_library(uint64_t dev, uint64_t ino) {
  std::lock_guard lk(lib_mu_);
  auto it = lib_links_.find({dev, ino});
  if (it == lib_links_.end()) return 0;
  size_t n = it->second.links.size() + it->second.multi_fds.size();
  reaping_.insert(it->first);
  reap_queue_.emplace_back(it->first, std::move(it->second));
  lib_links_.erase(it);
  if (!reaper_.joinable()) reaper_ = std::thread([this] { reap(); });
  reap_cv_.notify_all();
  return n;
}

void Engine::release_links(LibraryLinks& ll) {
  std::vector<std::thread> pool;
  for (auto& l : ll.links) pool.emplace_back([&l] { l.reset(); });
  for (auto& fd : ll.multi_fds) pool.emplace_back([&fd] { fd.reset(); });
  for (auto& t : pool) t.join();
}

void Engine::reap() {
  std::unique_lock lk(lib_mu_);
  for (;;) {
    reap_cv_.wait(lk, [&] { return reap_stop_ || !reap_queue_.empty(); });
    if (reap_queue_.empty()) return;  // stopping, and nothing left to release
    auto item = std::move(reap_queue_.front());
    reap_queue_.pop_front();
    lk.unlock();
    release_links(item.second);
    lk.lock();
    reaping_.erase(reaping_.find(item.first));
    reap_cv_.notify_all();
  }
}

size_t Engine::attached_libraries() const {
  std::lock_guard lk(lib_mu_);
  return lib_links_.size();
}

ProbeResult Engine::attach_at(ProbeResult r, uint64_t offset, uint64_t cookie,
                              const std::vector<std::pair<bpf_program*, bool>>& progs, LibraryLinks& into) {
  std::vector<Link> made;
  for (auto& [prog, ret] : progs) {
    LIBBPF_OPTS(bpf_uprobe_opts, uo, .bpf_cookie = cookie, .retprobe = ret);
    // pid -1: every process that maps this file, present and future.
    Link link(bpf_program__attach_uprobe_opts(prog, -1, r.library.realpath.c_str(), offset, &uo));
    if (!link) {
      r.status = ProbeStatus::failed;
      r.error = std::string(bpf_program__name(prog)) + ": " + std::strerror(errno);
      return r;  // all or nothing per symbol: `made` releases what this symbol got
    }
    made.push_back(std::move(link));
  }
  for (auto& l : made) into.links.push_back(std::move(l));
  return r;
}

std::vector<ProbeResult> Engine::attach_empty_probes(const LibraryFile& lib, const std::vector<std::string>& symbols,
                                                     bool with_return) {
  std::vector<ProbeResult> out;
  std::vector<Site> sites;
  auto syms = read_function_symbols(lib.realpath);
  for (const auto& sym : symbols) {
    ProbeResult r{lib, sym, "empty_uprobe", ProbeStatus::attached, ""};
    if (!syms || !syms->count(sym)) {
      r.status = ProbeStatus::missing;
      r.error = syms ? "no such symbol" : syms.error().message;
    } else {
      Site site{out.size(), syms->at(sym).file_offset, 0, {{skel_->progs.empty_uprobe, false}}};
      if (with_return) site.progs.push_back({skel_->progs.empty_uretprobe, true});
      sites.push_back(std::move(site));
    }
    out.push_back(std::move(r));
  }
  attach_sites(lib, sites, out);
  return out;
}

Status Engine::watch_device(const DeviceMatch& dev) {
  uint64_t key = (static_cast<uint64_t>(dev.major) << 32) | (dev.minor ? *dev.minor : 0xffffffffu);
  uint32_t driver = dev.driver;
  if (bpf_map__update_elem(skel_->maps.watched_devs, &key, sizeof key, &driver, sizeof driver, BPF_ANY))
    return make_error("cannot watch device " + dev.name + ": " + std::strerror(errno));
  return {};
}

Status Engine::set_ioctl_rules(const std::vector<IoctlRuleEntry>& rules) {
  for (const auto& r : rules)
    if (bpf_map__update_elem(skel_->maps.ioctl_rules, &r.key, sizeof r.key, &r.rule, sizeof r.rule, BPF_ANY))
      return make_error(std::string("cannot load the ioctl argument rules: ") + std::strerror(errno));
  return {};
}

Status Engine::track(uint32_t tgid) {
  uint32_t one = 1;
  if (bpf_map__update_elem(skel_->maps.tracked, &tgid, sizeof tgid, &one, sizeof one, BPF_ANY))
    return make_error("cannot track pid " + std::to_string(tgid) + ": " + std::strerror(errno));
  return {};
}

Status Engine::start(RecordHandler handler) {
  handler_ = std::move(handler);
  ring_.reset(ring_buffer__new(bpf_map__fd(skel_->maps.events), on_record, &handler_, nullptr));
  if (!ring_) return make_error(std::string("cannot open the ring buffer: ") + std::strerror(errno));
  return {};
}

int Engine::poll(int timeout_ms) {
  // BPF submits without waking us (except past half full), so a timed-out
  // poll is the normal path: consume explicitly afterwards.
  int n = ring_buffer__poll(ring_.get(), timeout_ms);
  if (n < 0 && n != -EINTR) return n;
  int m = ring_buffer__consume(ring_.get());
  if (m < 0) return m;
  return (n > 0 ? n : 0) + m;
}

Status Engine::set_unwind_proc(uint32_t tgid, const gpuobs_unwind_proc& proc) {
  if (bpf_map__update_elem(skel_->maps.unwind_procs, &tgid, sizeof tgid, &proc, sizeof proc, BPF_ANY))
    return make_error(std::string("cannot load the unwind table of a process: ") + std::strerror(errno));
  return {};
}

void Engine::drop_unwind_proc(uint32_t tgid) { bpf_map__delete_elem(skel_->maps.unwind_procs, &tgid, sizeof tgid, 0); }

Status Engine::set_python_proc(uint32_t tgid, const gpuobs_py_proc& proc) {
  if (bpf_map__update_elem(skel_->maps.py_procs, &tgid, sizeof tgid, &proc, sizeof proc, BPF_ANY))
    return make_error("cannot describe process " + std::to_string(tgid) + "'s interpreter: " + std::strerror(errno));
  return {};
}

Status Engine::set_library_known(uint32_t kdev, uint64_t ino, uint32_t value) {
  gpuobs_lib_key key{};
  key.ino = ino;
  key.kdev = kdev;
  if (bpf_map__update_elem(skel_->maps.lib_known, &key, sizeof key, &value, sizeof value, BPF_ANY))
    return make_error(std::string("cannot record a known library in BPF: ") + std::strerror(errno));
  return {};
}

void Engine::forget_library(uint32_t kdev, uint64_t ino) {
  gpuobs_lib_key key{};
  key.ino = ino;
  key.kdev = kdev;
  bpf_map__delete_elem(skel_->maps.lib_known, &key, sizeof key, 0);
}

std::vector<std::pair<uint32_t, int64_t>> Engine::held_processes() const {
  std::vector<std::pair<uint32_t, int64_t>> out;
  uint32_t key = 0, next = 0;
  const uint32_t* prev = nullptr;
  uint32_t budget = 2 * bpf_map__max_entries(skel_->maps.lib_held);
  while (budget-- > 0 && bpf_map__get_next_key(skel_->maps.lib_held, prev, &next, sizeof next) == 0) {
    key = next;
    prev = &key;
    uint64_t ts = 0;
    if (bpf_map__lookup_elem(skel_->maps.lib_held, &key, sizeof key, &ts, sizeof ts, 0) == 0)
      out.emplace_back(key, static_cast<int64_t>(ts));
  }
  return out;
}

void Engine::unheld(uint32_t tgid) { bpf_map__delete_elem(skel_->maps.lib_held, &tgid, sizeof tgid, 0); }

void Engine::drop_python_proc(uint32_t tgid) { bpf_map__delete_elem(skel_->maps.py_procs, &tgid, sizeof tgid, 0); }

size_t Engine::inflight_calls() const {
  size_t n = 0;
  uint32_t key = 0, next = 0;
  uint32_t* prev = nullptr;
  while (bpf_map__get_next_key(skel_->maps.call_inflight, prev, &next, sizeof next) == 0) {
    ++n;
    key = next;
    prev = &key;
  }
  return n;
}

std::vector<gpuobs_api_call> Engine::inflight_calls_between(uint32_t first_api, uint32_t last_api) const {
  std::vector<gpuobs_api_call> out;
  uint32_t key = 0, next = 0;
  uint32_t* prev = nullptr;
  gpuobs_api_call v;
  // Entries come and go while this walks: a key deleted under it makes the
  // walk start again from the first, so it is bounded by the map's size.
  uint32_t budget = 2 * bpf_map__max_entries(skel_->maps.outer_inflight);
  while (budget-- > 0 && bpf_map__get_next_key(skel_->maps.outer_inflight, prev, &next, sizeof next) == 0) {
    key = next;
    prev = &key;
    // An entry deleted between the two calls is simply not there.
    if (bpf_map__lookup_elem(skel_->maps.outer_inflight, &key, sizeof key, &v, sizeof v, 0) == 0 &&
        v.api >= first_api && v.api <= last_api)
      out.push_back(v);
  }
  return out;
}

Counters Engine::counters() const {
  Counters out{};
  int ncpu = libbpf_num_possible_cpus();
  std::vector<uint64_t> vals(ncpu > 0 ? ncpu : 1);
  for (uint32_t i = 0; i < GPUOBS_CNT__COUNT; ++i) {
    if (bpf_map__lookup_elem(skel_->maps.counters, &i, sizeof i, vals.data(), vals.size() * sizeof(uint64_t), 0) == 0)
      for (auto v : vals) out[i] += v;
  }
  return out;
}

Engine::~Engine() {
  {
    std::lock_guard lk(lib_mu_);
    reap_stop_ = true;
  }
  reap_cv_.notify_all();
  if (reaper_.joinable()) reaper_.join();  // releases what is queued first
  // The owners release everything; what is explicit here is the order (the
  // ring and the mapping, then the links, the link fds, and the object last:
  // skel_ is the first member) and the parallel release of the links.
  ring_.reset();
  rows_.reset();
  // Releasing a uprobe waits for an RCU grace period: about 80 ms each on
  // the dev VM, so ~230 links released one by one held `gpuobs record` for
  // 18 s after its command exited. Released from several threads the waits
  // overlap and share grace periods.
  std::vector<Fd> multi_links;
  for (auto& [key, ll] : lib_links_) {
    for (auto& l : ll.links) links_.push_back(std::move(l));
    for (auto& fd : ll.multi_fds) multi_links.push_back(std::move(fd));
  }
  constexpr size_t kThreads = 32;
  std::vector<std::thread> pool;
  for (size_t t = 0; t < kThreads && t < links_.size(); ++t)
    pool.emplace_back([this, t] {
      for (size_t i = t; i < links_.size(); i += kThreads) links_[i].reset();
    });
  for (auto& th : pool) th.join();
  multi_links.clear();
}

}  // namespace gpuobs
