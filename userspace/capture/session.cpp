#include "capture/session.h"

#include <spdlog/spdlog.h>

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <csignal>
#include "capture/api_library_check.h"
#include "capture/host_info.h"
#include "capture/procfs.h"
#include "catalogue/api_spec.h"
#include "common/monotonic_clock.h"
#include "common/thread_priority.h"
#include "store/capture_file.h"
#include "store/schema.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "version.h"

namespace gpuobs {

// The consumer's longest sleep while libraries are watched: part of the
// 100 ms budget from a first GPU ioctl to its library's probes.
constexpr int kLibraryWatchPollMs = 20;
constexpr auto kCountersPushInterval = std::chrono::milliseconds(100);
// Events decoded before the consumer hands them to the writer inside one
// poll: one lock per this many, and the writer sees them within ~1 ms at
// the highest rates.
constexpr size_t kHandOverEvents = 1024;
// record's room for its capture's end, counters and state on a full disk: the
// end transaction of a big capture (140 counters, the last launch counts,
// the library maps) measured ~300 KiB of WAL; 1 MiB leaves a margin.
constexpr uint64_t kRecordDiskReserveBytes = 1 << 20;

// The formats of the GPU job events the engine attached: what their records
// are decoded with.
GpuTraceFormats gpu_trace_formats(const std::vector<TracepointResult>& tps) {
  GpuTraceFormats f;
  for (const auto& tp : tps) {
    if (tp.status != ProbeStatus::attached || !tp.format) continue;
    if (tp.kind == GPUOBS_GPU_TP_FENCE) f.fence = tp.format;
    else if (tp.kind >= GPUOBS_GPU_TP_QUEUE && tp.kind <= GPUOBS_GPU_TP_DONE && tp.name_gen <= 1)
      f.sched[tp.name_gen][tp.kind] = tp.format;
  }
  return f;
}

std::string shell_quote(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    bool plain =
        !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") ==
                          std::string::npos;
    if (plain) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

Result<std::unique_ptr<Session>> Session::create(const SessionOptions& opts) {
  // --force never replaces a capture a newer gpuobs wrote (it may be the
  // only copy of data this build cannot even read in full).
  if (opts.force)
    if (auto st = refuse_replacing_newer(opts.output); !st) return st.error();
  // Privileges and kernel support first: a refusal leaves no file behind.
  if (auto st = preflight(); !st) return st.error();
  // Every mapped code file stays open (for its symbols after its process
  // exits): a host with many distinct libraries needs more than 1024 fds.
  if (rlimit rl{}; ::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }
  std::unique_ptr<Session> s(new Session());
  s->output_ = opts.output;
  auto writer = CaptureWriter::create(opts.output, opts.force, [](uint32_t tgid) { return read_proc_info(tgid); });
  if (!writer) return writer.error();
  s->writer_ = std::move(writer.value());
  {
    Session* self = s.get();
    s->writer_->set_origin_lookup([self](uint32_t tgid) { return self->take_origin(tgid); });
    s->prime_origins();
  }
  auto fail = [&](Error e) -> Result<std::unique_ptr<Session>> {
    s.reset();  // closes the database
    remove_capture_files(opts.output);
    return e;
  };
  // record: a full disk ends the storing with room kept for the capture's
  // end (gpuobsd makes room instead: its emergency deletion).
  if (opts.mode == CaptureMode::record)
    if (auto st = s->writer_->stop_storing_when_full(kRecordDiskReserveBytes); !st) return fail(st.error());

  EngineOptions eo;
  eo.only_tracked = opts.only_tracked;
  eo.ring_bytes = opts.ring_bytes;
  eo.stack_depth = opts.stack_depth;
  // --stack-depth 0 means no stacks in every mode: no copy to unwind either.
  eo.stack_copy_bytes = opts.unwind == UnwindMode::dwarf && opts.stack_depth > 0 ? opts.stack_copy_bytes : 0;
  eo.unwind_in_bpf = opts.unwind == UnwindMode::bpf;
  eo.python_stacks = opts.python_stacks && opts.stack_depth > 0;
  eo.python_main_thread = opts.python_main_thread;
  eo.attach_lib_map = opts.watch_libraries || opts.mode == CaptureMode::daemon;
  eo.hold_on_map = opts.library_hold_ms > 0;
  auto engine = Engine::create(eo);
  if (!engine) return fail(engine.error());
  s->engine_ = std::move(engine.value());
  s->decoder_.set_gpu_trace_formats(gpu_trace_formats(s->engine_->gpu_tracepoints()));

  HostInfo host = read_host_info();
  CaptureMeta meta{GPUOBS_VERSION,
                   opts.mode,
                   opts.command,
                   host.host,
                   host.kernel,
                   host.nvidia_driver,
                   mono_now_ns(),
                   realtime_offset_ns(),
                   s->engine_->ring_bytes()};
  meta.stack_depth = opts.stack_depth;
  meta.unwind = opts.unwind;
  meta.stack_copy_bytes = eo.stack_copy_bytes;
  meta.python_stacks = eo.python_stacks;
  meta.python_main_thread = eo.python_stacks && eo.python_main_thread;
  if (auto st = s->writer_->write_meta(meta); !st) return fail(st.error());
  s->meta_ = meta;
  if (opts.metrics_hz > 0) {
    s->sampler_ = gpumetrics::MetricsSampler::create(opts.metrics_hz, int64_t{opts.detail_interval_ms} * 1'000'000);
    for (const auto& st : s->sampler_->statuses())
      if (st.status != "ok") spdlog::debug("GPU metrics: {}: {}", st.source, st.status);
    // DRM clients' fdinfo at the same rate: the whole host for gpuobsd, the
    // recorded tree (the processes whose fork/exec records came) for record.
    auto scanner = std::make_unique<gpumetrics::DrmFdinfoScanner>();
    if (opts.only_tracked) {
      auto pids = s->drm_pids_;
      scanner->set_filter([pids](uint32_t pid) { return pids->contains(pid); });
    }
    s->sampler_->set_drm_scanner(std::move(scanner));
    if (auto st = s->writer_->write_gpus(s->sampler_->gpus(), s->sampler_->statuses(), opts.metrics_hz); !st)
      return fail(st.error());
  }
  s->create_library_watch(opts);
  s->nccl_watch_ = std::make_unique<NcclWatch>(int64_t{opts.nccl_stall_s} * 1000000000);
  if (auto st = s->attach_plan(opts, parse_nvidia_version(host.nvidia_driver)); !st) return fail(st.error());
  s->start_library_watch();

  Session* self = s.get();
  // Through writer_, not a copy of it: rotate() replaces the writer.
  s->stacks_ = std::make_unique<StackResolver>(StackResolver::Sink{
      // In the consumer's batch, before the events that use them.
      [self](const ModuleDef& m) {
        self->out_.push_back({m, 0});
      },
      [self](const FrameDef& f) {
        self->out_.push_back({f, 0});
      },
      [self](const StackDef& st) {
        self->out_.push_back({st, 0});
      },
  });
  s->stacks_->set_max_frames(opts.stack_depth);
  s->stack_depth_ = opts.stack_depth;
  s->python_on_ = eo.python_stacks;
  if (Engine* eng = s->engine_.get(); eng->unwind_rows())
    s->stacks_->enable_bpf_unwind(eng->unwind_rows(), eng->unwind_rows_capacity(),
                                  [eng](uint32_t tgid, const gpuobs_unwind_proc* proc) {
                                    if (proc) {
                                      if (auto st = eng->set_unwind_proc(tgid, *proc); !st)
                                        spdlog::warn("{}", st.error().message);
                                    } else {
                                      eng->drop_unwind_proc(tgid);
                                    }
                                  });
  if (auto st = s->engine_->start([self](const void* d, size_t n) { self->on_record(d, n); }); !st)
    return fail(st.error());
  s->writer_->start();
  if (s->sampler_) s->sampler_->start();
  return s;
}

void Session::flush_gpu_samples() {
  if (!sampler_) return;
  sampler_->take(gpu_batch_);
  writer_->push_gpu_samples(gpu_batch_);
}

void Session::hand_over() { writer_->push_many(out_); }

void Session::on_record(const void* data, size_t size) {
  RawStack& raw = raw_;  // reused: its vectors keep their capacity
  Event ev = decoder_.decode(data, size, &raw);
  if (std::holds_alternative<std::monostate>(ev)) return;
  ++records_;
  record_bytes_ += size;
  if (auto* p = std::get_if<ProcEvent>(&ev);
      p && p->type == GPUOBS_EV_LIB_MAP && p->filename.rfind("libpython3", 0) == 0) {
    // The interpreter's library, mapped just now by ld.so: describe it to
    // BPF before the program runs (a process looked at before it had one
    // is looked at again).
    if (python_on_ && !stacks_->python(p->hdr.tgid)) check_python(p->hdr.tgid);
    return;
  }
  if (auto* p = std::get_if<ProcEvent>(&ev); p && p->type == GPUOBS_EV_LIB_MAP) {
    // A trigger, not an event of the capture: the process mapped a GPU
    // library just now (its mmap's entry time), and may be held until its
    // probes are live.
    if (watch_)
      watch_->on_map(MapNotice{p->hdr.tgid, p->comm, p->filename, p->lib_kdev, p->lib_ino, p->hold,
                               static_cast<int64_t>(p->hdr.ts_ns)});
    // Its mappings now, while it surely lives: one that launches a few
    // kernels and exits can be gone before its first stack is resolved.
    if (stack_depth_ > 0) stacks_->on_mapped(p->hdr.tgid);
    if (python_on_ && !py_checked_.count(p->hdr.tgid)) check_python(p->hdr.tgid);
    return;
  }
  if (uint64_t lost = writer_->definitions_lost(); lost != definitions_lost_seen_) {
    definitions_lost_seen_ = lost;
    stacks_->redefine_all();
  }
  int64_t stack_id = 0;
  const gpuobs_hdr* hdr = nullptr;
  if (auto* l = std::get_if<gpuobs_launch>(&ev)) hdr = &l->hdr;
  else if (auto* i = std::get_if<IoctlEvent>(&ev)) hdr = &i->hdr;
  else if (auto* c = std::get_if<ApiCallEvent>(&ev)) hdr = &c->hdr;
  // Consecutive records mostly come from one process: only a different one
  // costs the set lookup on this path.
  if (hdr && python_on_ && raw.present && hdr->tgid != py_last_tgid_) {
    if (!py_checked_.count(hdr->tgid)) check_python(hdr->tgid);
    if (py_checked_.count(hdr->tgid)) py_last_tgid_ = hdr->tgid;
  }
  if (hdr) stack_id = stacks_->resolve(hdr->tgid, raw, hdr->ts_ns);
  if (auto* p = std::get_if<ProcEvent>(&ev)) {
    if (p->type == GPUOBS_EV_PROC_EXIT) drm_pids_->remove(p->hdr.tgid);
    else drm_pids_->add(p->hdr.tgid);
    if (p->type == GPUOBS_EV_PROC_FORK) {
      stacks_->on_fork(p->ppid, p->hdr.tgid);
      // A forked interpreter is the same one at the same addresses.
      if (const PythonProcess* py = python_on_ ? stacks_->python(p->hdr.tgid) : nullptr) {
        py_checked_.insert(p->hdr.tgid);
        if (auto st = engine_->set_python_proc(p->hdr.tgid, py->bpf()); !st) spdlog::warn("{}", st.error().message);
      }
    } else if (p->type == GPUOBS_EV_PROC_EXEC || p->type == GPUOBS_EV_PROC_EXIT) {
      if (p->type == GPUOBS_EV_PROC_EXEC) stacks_->on_exec(p->hdr.tgid);
      else stacks_->on_exit(p->hdr.tgid);
      if (py_checked_.erase(p->hdr.tgid)) engine_->drop_python_proc(p->hdr.tgid);
      py_unreadable_tries_.erase(p->hdr.tgid);
      if (py_last_tgid_ == p->hdr.tgid) py_last_tgid_ = 0;
      // A new program: an interpreter linked into the executable is there
      // now, before it runs any Python (one in libpython shows when mapped).
      if (p->type == GPUOBS_EV_PROC_EXEC && python_on_) check_python(p->hdr.tgid);
    }
  }
  if (auto* c = std::get_if<ApiCallEvent>(&ev)) {
    if (const ApiSpec* spec = api_by_id(c->api); spec && spec->family == Family::collective)
      nccl_watch_->on_call(*c, *spec);
  } else if (auto* p = std::get_if<ProcEvent>(&ev); p && p->type == GPUOBS_EV_PROC_EXIT) {
    nccl_watch_->on_exit(p->hdr.tgid);
  }
  if (auto* j = std::get_if<GpuJobEvent>(&ev); j && j->event == GPUOBS_GPU_TP_QUEUE) {
    std::lock_guard lk(ring_jobs_mu_);
    ++ring_jobs_[{j->device, j->ring}];
  }
  if (observer_) observer_(ev);
  if (watch_) note_for_library_watch(ev);
  note_origin(ev);
  out_.push_back({std::move(ev), stack_id});
  if (out_.size() >= kHandOverEvents) hand_over();
}

void Session::check_python(uint32_t tgid) {
  PythonFound f = find_python(tgid);
  // Unreadable (racing the loader, a process going): looked at again at its
  // next GPU-library mapping or record, three times at most; the other
  // answers are final.
  if (f.status != PythonFind::unreadable || ++py_unreadable_tries_[tgid] >= 3) {
    py_checked_.insert(tgid);
    py_unreadable_tries_.erase(tgid);
  }
  switch (f.status) {
    case PythonFind::none: return;
    case PythonFind::unreadable: ++py_unreadable_; return;
    case PythonFind::unknown_version:
      ++py_unknown_version_;
      // Named in the capture's counters (gpuobs report capture): which version.
      ++extra_counters_["python_unknown_version_" + std::to_string(f.version >> 8) + "." +
                        std::to_string(f.version & 0xff)];
      spdlog::warn(
          "process {} runs CPython {}.{} ({}): gpuobs has no layout for it, its stacks keep native frames only", tgid,
          f.version >> 8, f.version & 0xff, f.file);
      return;
    case PythonFind::found: break;
  }
  if (auto st = engine_->set_python_proc(tgid, f.proc->bpf()); !st) {
    spdlog::warn("{}", st.error().message);
    ++py_unreadable_;
    return;
  }
  ++py_interpreters_;
  spdlog::debug("process {}: CPython {}.{} in {}", tgid, f.version >> 8, f.version & 0xff, f.file);
  stacks_->set_python(tgid, std::move(f.proc));
}

Status Session::attach_plan(const SessionOptions& opts, const NvidiaVersion& nvidia) {
  std::vector<ProbeRow> rows;
  // One vendor's runtime: the paths given, or the ones found on the host.
  auto attach_vendor = [&](const std::vector<std::string>& paths, std::vector<LibraryFile> (*discover)(),
                           std::span<const ApiSpec> table, const char* soname, const char* flag) -> Result<int> {
    std::vector<LibraryFile> libs;
    for (const auto& p : paths) {
      auto f = library_file(p);
      if (!f) return make_error(f.error().message, std::string("pass the path of ") + soname + " with " + flag, 2);
      if (auto st = check_api_library(f->realpath, table, flag); !st) return st.error();
      add_unique(libs, *f);
    }
    if (paths.empty()) libs = discover();
    for (const auto& p : opts.preload_libraries)
      if (api_table_for_library(p).data() == table.data())
        if (auto f = library_file(p)) add_unique(libs, *f);
    for (const auto& lib : libs) {
      auto results = engine_->attach_api(lib, table);
      if (watch_) watch_->add_known(lib, results);
      int64_t attached_ns = mono_now_ns();
      for (auto& r : results) {
        if (r.status == ProbeStatus::failed ||
            (r.status == ProbeStatus::missing && table.data() == cuda_api_table().data()))
          spdlog::warn("probe {} on {}: {} ({})", r.symbol, lib.realpath, to_string(r.status), r.error);
        rows.push_back(ProbeRow{r.library.realpath, r.library.dev, r.library.ino, r.symbol, r.program, r.status,
                                r.error, "startup", 0, 0, attached_ns});
        probes_.push_back(std::move(r));
      }
    }
    return static_cast<int>(libs.size());
  };
  auto ncuda = attach_vendor(opts.libcuda_paths, discover_libcuda, cuda_api_table(), "libcuda.so.1", "--libcuda");
  if (!ncuda) return ncuda.error();
  if (*ncuda == 0 && watch_) {
    // Not an error: a libcuda reached through LD_LIBRARY_PATH (CUDA compat,
    // /usr/local/nvidia/lib64 in containers) is attached when it is mapped.
    spdlog::info("libcuda.so.1 is not in the system's directories: it is attached where processes map it");
    rows.push_back(ProbeRow{"libcuda.so.1", 0, 0, "*", "", ProbeStatus::missing,
                            "not in the system's directories: attached where "
                            "processes map it",
                            "startup", 0, 0, 0});
  } else if (*ncuda == 0) {
    spdlog::warn(
        "libcuda.so.1 not found: CUDA calls will not be captured ({} probes missing, "
        "cuLaunchKernel among them); pass --libcuda PATH",
        cuda_api_table().size());
    for (const ApiSpec& spec : cuda_api_table())
      rows.push_back(ProbeRow{"libcuda.so.1", 0, 0, std::string(spec.symbol), "", ProbeStatus::missing,
                              "library not found", "startup", 0, 0, 0});
  }
  // HIP is optional on most hosts: its absence is one row, not 73.
  auto nhip = attach_vendor(opts.libhip_paths, discover_libhip, hip_api_table(), "libamdhip64.so", "--libhip");
  if (!nhip) return nhip.error();
  if (*nhip == 0) {
    spdlog::info("libamdhip64.so not found: HIP calls will not be captured (pass --libhip PATH)");
    rows.push_back(
        ProbeRow{"libamdhip64.so", 0, 0, "*", "", ProbeStatus::missing, "library not found", "startup", 0, 0, 0});
  }
  // The Level Zero loader, like HIP: optional, found in the system's
  // directories now, or wherever a process maps it.
  static const std::vector<std::string> kNoPaths;
  auto nze = attach_vendor(kNoPaths, discover_libze, level_zero_api_table(), "libze_loader.so.1", "");
  if (!nze) return nze.error();
  if (*nze == 0) {
    spdlog::info("libze_loader.so.1 not found: Level Zero calls are captured where processes map it");
    rows.push_back(
        ProbeRow{"libze_loader.so.1", 0, 0, "*", "", ProbeStatus::missing, "library not found", "startup", 0, 0, 0});
  }
  // NCCL/RCCL have no search of their own (attached where processes map
  // them), but those the command's LD_LIBRARY_PATH names are attached now,
  // like libcuda's: its first communicator is seen whatever the attach latency.
  for (const auto& p : opts.preload_libraries) {
    if (api_table_for_library(p).data() != nccl_api_table().data()) continue;
    auto f = library_file(p);
    if (!f) continue;
    auto results = engine_->attach_api(*f, nccl_api_table());
    if (watch_) watch_->add_known(*f, results);
    int64_t attached_ns = mono_now_ns();
    for (auto& r : results) {
      rows.push_back(ProbeRow{r.library.realpath, r.library.dev, r.library.ino, r.symbol, r.program, r.status, r.error,
                              "startup", 0, 0, attached_ns});
      probes_.push_back(std::move(r));
    }
  }
  // The GPU job tracepoints (bpf/gpu_sched.bpf.h): a row each, attached or
  // why not, in the same attach report as the library probes.
  for (const auto& tp : engine_->gpu_tracepoints()) {
    rows.push_back(ProbeRow{"tracefs:" + tp.system, 0, 0, tp.system + "/" + tp.event, tp.program, tp.status, tp.error,
                            "startup", 0, 0, tp.status == ProbeStatus::attached ? mono_now_ns() : 0});
    if (tp.status != ProbeStatus::attached) {
      ++gpu_tracepoints_missing_;
      spdlog::debug("GPU jobs: {}/{} not attached: {}", tp.system, tp.event, tp.error);
    }
  }
  if (auto st = writer_->write_probes(rows); !st) return st;
  probe_rows_ = rows;

  std::vector<DeviceMatch> devs;
  std::vector<DeviceMatch> host = gpu_devices_on_host();
  if (opts.gpu_devices) devs = host;
  for (const auto& spec : opts.device_specs) {
    auto d = parse_device_spec(spec);
    if (!d) return make_error(d.error().message, d.error().hint, 2);
    // "--watch-dev /dev/nvidia0" must not turn a GPU node into an undecoded
    // one: a spec without DRIVER= takes its major's driver, or its node's
    // (DRM nodes of one major belong to different drivers).
    if (d->driver == GPUOBS_DRV_OTHER)
      for (const auto& h : host)
        if (h.major == d->major && (!h.minor || !d->minor || *h.minor == *d->minor)) d->driver = h.driver;
    devs.push_back(*d);
  }
  for (const auto& d : devs) {
    if (auto st = engine_->watch_device(d); !st) return st;
    if (auto st = writer_->write_watched_device(d.major, d.minor, d.name, d.driver); !st) return st;
  }
  devices_ = devs;
  if (auto st = engine_->set_ioctl_rules(ioctl_rules(nvidia)); !st) return st;
  int attached = 0;
  for (auto& p : probes_) attached += p.status == ProbeStatus::attached;
  spdlog::info("attached {}/{} library probes on {} file(s); watching {} device(s)", attached, probes_.size(),
               *ncuda + *nhip, devs.size());
  return {};
}

std::map<std::pair<std::string, std::string>, uint64_t> Session::gpu_ring_jobs() const {
  std::lock_guard lk(ring_jobs_mu_);
  return ring_jobs_;
}

Status Session::track_root(uint32_t tgid) {
  if (auto st = engine_->track(tgid); !st) return st;
  drm_pids_->add(tgid);
  return writer_->add_root_process(tgid);
}

void Session::poll(int timeout_ms) {
  // The ring consumer ahead of ordinary work (common/thread_priority.h): once,
  // on the thread that polls, after record has started its command.
  if (!priority_raised_) {
    priority_raised_ = true;
    if (!raise_capture_thread_priority()) spdlog::debug("capture: the ring consumer runs at the caller's priority");
  }
  // BPF submits without waking the consumer: a process's first GPU ioctl is
  // seen up to one poll timeout late, and its library must be attached
  // within 100 ms of it.
  if (watch_) timeout_ms = std::min(timeout_ms, kLibraryWatchPollMs);
  int n = engine_->poll(timeout_ms);
  hand_over();
  if (watch_) flush_library_watch();
  stacks_->tick();
  check_nccl_stalls();
  flush_gpu_samples();
  // The losses counted so far reach the file with the next batch (at most
  // ~200 ms later): a capture cut short still says what it lost.
  if (auto now = std::chrono::steady_clock::now(); now - counters_pushed_ >= kCountersPushInterval) {
    counters_pushed_ = now;
    writer_->set_counters(counters());
  }
  if (n < 0) spdlog::warn("ring buffer poll failed: {}", std::strerror(-n));
}

void Session::check_nccl_stalls() {
  auto now = std::chrono::steady_clock::now();
  if (!nccl_watch_->watching() || now - nccl_checked_ < std::chrono::seconds(1)) return;
  nccl_checked_ = now;
  const auto table = nccl_api_table();
  auto inflight = engine_->inflight_calls_between(table.front().id, table.back().id);
  spdlog::debug("NCCL watch: check at {} ns, {} calls in flight", monotonic_now_ns(), inflight.size());
  for (auto& s : nccl_watch_->check(monotonic_now_ns(), inflight)) {
    spdlog::warn("NCCL stall: communicator {:016x} collective {} ({}) {}: ranks in [{}], missing [{}], waited {:.1f} s",
                 s.comm_hash, s.seq, s.op.empty() ? "?" : s.op,
                 s.kind == "missing" ? "not entered by every rank" : "not returned from", s.ranks_in, s.ranks_missing,
                 static_cast<double>(s.waited_ns) / 1e9);
    writer_->push_stall(std::move(s));
  }
}

std::map<std::string, std::pair<uint64_t, std::string>> Session::counters() const {
  std::map<std::string, std::pair<uint64_t, std::string>> out;
  Counters c = engine_->counters();
  for (int i = 0; i < GPUOBS_CNT__COUNT; ++i) out[counter_name(i)] = {c[i], "bpf"};
  const DecodeStats& d = decoder_.stats();
  // What the ring carried (records are sized to what they hold, ABI 6):
  // divided by the records, the ring bytes an event takes.
  out["ring_records"] = {records_, "userspace"};
  out["nccl_stalls"] = {nccl_stalls(), "userspace"};
  if (sampler_) {
    gpumetrics::SamplerStats g = sampler_->stats();
    out["gpu_metric_ticks"] = {g.ticks, "userspace"};
    out["gpu_metric_ticks_late"] = {g.late_ticks, "userspace"};
    out["gpu_metric_query_errors"] = {g.query_errors, "userspace"};
    out["gpu_metric_dropped"] = {g.dropped, "userspace"};
    out["gpu_sampler_cpu_ns"] = {g.cpu_ns, "userspace"};
    out["drm_fdinfo_scans"] = {g.drm.scans, "userspace"};
    out["drm_fdinfo_samples"] = {g.drm.samples, "userspace"};
    out["drm_fdinfo_unreadable"] = {g.drm.unreadable, "userspace"};
    out["drm_fdinfo_without_stats"] = {g.drm.not_drm_stats, "userspace"};
    out["drm_fdinfo_bad_lines"] = {g.drm.bad_lines, "userspace"};
  }
  out["ring_record_bytes"] = {record_bytes_, "userspace"};
  out["decode_short_records"] = {d.short_records, "userspace"};
  out["decode_unknown_types"] = {d.unknown_types, "userspace"};
  out["decode_size_mismatch"] = {d.size_mismatch, "userspace"};
  out["decode_bad_stacks"] = {d.bad_stacks, "userspace"};
  out["decode_gpu_trace_rejected"] = {d.gpu_trace_rejected, "userspace"};
  out["decode_gpu_trace_strings_cut"] = {d.gpu_trace_strings_cut, "userspace"};
  out["gpu_tracepoints_not_attached"] = {gpu_tracepoints_missing_, "userspace"};
  const StackStats& ss = stacks_->stats();
  out["stack_events"] = {ss.with_stack, "userspace"};
  out["stack_empty"] = {ss.empty, "userspace"};
  out["stack_distinct"] = {ss.stacks, "userspace"};
  out["stack_frames_distinct"] = {ss.frames, "userspace"};
  out["stack_modules"] = {ss.modules, "userspace"};
  out["stack_maps_reads"] = {ss.maps_reads, "userspace"};
  out["stack_maps_unreadable"] = {ss.maps_unreadable, "userspace"};
  out["stack_walks_broken"] = {ss.walks_broken, "userspace"};
  out["stack_sp_frames_dropped"] = {ss.sp_frames_dropped, "userspace"};
  out["stack_files_unopened"] = {ss.files_unopened, "userspace"};
  out["python_interpreters"] = {py_interpreters_, "userspace"};
  out["python_unknown_version"] = {py_unknown_version_, "userspace"};
  out["python_interpreter_unreadable"] = {py_unreadable_, "userspace"};
  out["python_stacks"] = {ss.py_stacks, "userspace"};
  out["python_frames_distinct"] = {ss.py_frames, "userspace"};
  out["python_frames_torn"] = {ss.py_torn, "userspace"};
  out["python_frames_process_gone"] = {ss.py_gone, "userspace"};
  out["python_frames_after_native"] = {ss.py_placed_outer, "userspace"};
  const UnwindStats& us = stacks_->unwind_stats();
  out["dwarf_unwound"] = {us.unwound, "userspace"};
  out["dwarf_copy_end"] = {us.copy_end, "userspace"};
  out["dwarf_frames_without_cfi"] = {us.no_cfi, "userspace"};
  out["dwarf_frames_bad_rule"] = {us.bad_rule, "userspace"};
  out["bpf_unwound"] = {ss.bpf_unwound, "userspace"};
  out["unwind_table_rows"] = {ss.table_rows, "userspace"};
  out["unwind_table_files"] = {ss.table_files, "userspace"};
  out["unwind_table_failed"] = {ss.table_failed, "userspace"};
  WriterStats w = writer_->stats();
  out["stored_launch"] = {w.launches, "userspace"};
  out["stored_ioctl"] = {w.ioctls, "userspace"};
  out["stored_api_call"] = {w.api_calls, "userspace"};
  out["kernel_name_unreadable"] = {w.unreadable_names, "userspace"};
  out["stored_process_events"] = {w.process_events, "userspace"};
  out["stored_gpu_jobs"] = {w.gpu_jobs.jobs, "userspace"};
  out["gpu_jobs_unfinished"] = {w.gpu_jobs_open, "userspace"};
  out["gpu_job_events_without_queue"] = {w.gpu_jobs.without_queue, "userspace"};
  out["gpu_jobs_replaced"] = {w.gpu_jobs.replaced, "userspace"};
  out["gpu_job_events_unkeyed"] = {w.gpu_jobs.unkeyed, "userspace"};
  out["stored_dma_fence_signals"] = {w.gpu_jobs.fence_signals, "userspace"};
  out["dma_fence_signals_of_jobs"] = {w.gpu_jobs.fences_of_jobs, "userspace"};
  out["drm_fdinfo_rows_failed"] = {w.drm_rows_failed, "userspace"};
  out["store_failed_rows"] = {w.failed_rows, "userspace"};
  out["store_failed_batches"] = {w.failed_batches, "userspace"};
  out["store_lost_disk_full"] = {w.full_lost, "userspace"};
  out["store_failed_launches"] = {w.failed_launches, "userspace"};
  out["dropped_store_backlog"] = {w.backlog_dropped, "userspace"};
  out["frames_unsymbolized"] = {w.symbols.unsymbolized, "userspace"};
  out["modules_without_symbols"] = {w.symbols.modules_no_symbols, "userspace"};
  int failed = 0;
  for (auto& p : probes_) failed += p.status != ProbeStatus::attached;
  out["probes_not_attached"] = {static_cast<uint64_t>(failed), "userspace"};
  if (watch_) {
    LibraryWatchStats ls = watch_->stats();
    out["library_maps_scans"] = {ls.scans, "userspace"};
    out["library_maps_unreadable"] = {ls.maps_unreadable, "userspace"};
    out["library_unresolved"] = {ls.unresolved, "userspace"};
    out["library_attached_runtime"] = {ls.attached, "userspace"};
    out["library_attach_failed"] = {ls.attach_failed, "userspace"};
    out["library_probes_failed"] = {ls.probes_failed, "userspace"};
    out["library_probes_attached"] = {ls.probes_attached, "userspace"};
    out["library_detached"] = {ls.detached, "userspace"};
    out["library_detach_kept"] = {ls.detach_kept, "userspace"};
    out["library_refused_total_cap"] = {ls.refused_total_cap, "userspace"};
    out["library_refused_user_cap"] = {ls.refused_user_cap, "userspace"};
    out["library_maps"] = {ls.maps, "userspace"};
    out["library_calls_before_attach"] = {ls.calls_before_attach, "userspace"};
    out["library_holds"] = {ls.holds, "userspace"};
    out["library_hold_timeouts"] = {ls.hold_timeouts, "userspace"};
    out["library_holds_adopted"] = {ls.holds_adopted, "userspace"};
    out["library_hold_ns_total"] = {ls.hold_ns_total, "userspace"};
    out["library_hold_ns_max"] = {ls.hold_ns_max, "userspace"};
  }
  for (const auto& [name, value] : extra_counters_) out[name] = {value, "userspace"};
  return out;
}

uint64_t Session::dropped() const {
  Counters c = engine_->counters();
  // Every record lost in BPF: ring full, in-flight map full, or an entry
  // replaced because its exit never came (that call is lost too); and those
  // a writer too far behind dropped (every segment's).
  return c[GPUOBS_CNT_DROP_LAUNCH] + c[GPUOBS_CNT_DROP_IOCTL] + c[GPUOBS_CNT_DROP_PROC] +
         c[GPUOBS_CNT_IOCTL_ENTRY_FULL] + c[GPUOBS_CNT_DROP_API] + c[GPUOBS_CNT_API_ENTRY_FULL] +
         c[GPUOBS_CNT_API_STALE] + c[GPUOBS_CNT_IOCTL_STALE] + c[GPUOBS_CNT_DROP_SCRATCH_BUSY] +
         c[GPUOBS_CNT_DROP_GPU_TRACE] + backlog_dropped_before_ + writer_->stats().backlog_dropped;
}

WriterStats Session::writer_stats() const { return writer_->stats(); }

Status Session::rotate(const std::string& path, int64_t segment) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) return make_error("segment " + path + " already exists");
  auto next = CaptureWriter::create(path, false, [](uint32_t tgid) { return read_proc_info(tgid); });
  if (!next) {
    // A full disk fails after the file was made: no empty file stays behind
    // to be listed as a segment or to block the next try.
    remove_capture_files(path);
    return next.error();
  }
  std::unique_ptr<CaptureWriter> w = std::move(next.value());
  auto abandon = [&](Error e) -> Status {
    w.reset();
    remove_capture_files(path);
    return e;
  };
  CaptureMeta meta = meta_;
  meta.start_mono_ns = mono_now_ns();
  meta.clock_offset_ns = realtime_offset_ns();
  if (auto st = w->write_meta(meta); !st) return abandon(st.error());
  if (auto st = w->write_segment(segment); !st) return abandon(st.error());
  if (auto st = w->write_probes(probe_rows_); !st) return abandon(st.error());
  for (const auto& d : devices_)
    if (auto st = w->write_watched_device(d.major, d.minor, d.name, d.driver); !st) return abandon(st.error());

  // processes.cgroup / container_id keep coming from the session's origins
  // (the carried live processes included).
  w->set_origin_lookup([this](uint32_t tgid) { return take_origin(tgid); });

  // The old file is finished like any capture (every event pushed so far is
  // in it), then the new one takes over its live state.
  hand_over();
  flush_gpu_samples();
  if (watch_) flush_library_watch();
  writer_->stop();
  if (auto st = writer_->write_end(mono_now_ns(), std::nullopt, counters(), capture_state()); !st)
    spdlog::warn("segment {}: {}", output_, st.error().message);
  coverage_misses_segment_ = 0;
  first_coverage_miss_segment_.clear();
  dropped_before_segment_ = dropped();
  attach_failures_before_segment_ = attach_failures();
  if (auto st = w->continue_from(*writer_); !st) spdlog::warn("segment {}: {}", path, st.error().message);
  failed_batches_finished_ += writer_->stats().failed_batches;
  backlog_dropped_before_ += writer_->stats().backlog_dropped;
  writer_ = std::move(w);
  output_ = path;
  definitions_lost_seen_ = 0;
  stacks_->redefine_all();  // stack ids stay valid: their rows are written again here
  writer_->start();
  return {};
}

Result<SessionSummary> Session::finish(std::optional<int> exit_status) {
  // Its rows go through the writer, which stops below.
  if (watch_) {
    watch_->stop();
    flush_library_watch();
  }
  // Records submitted before the processes exited are all in the ring now.
  auto drain_end = std::chrono::steady_clock::now() + drain_budget_;
  while (engine_->poll(0) > 0 && std::chrono::steady_clock::now() < drain_end) {}
  if (watch_) {
    // A process held since the watch stopped is resumed here (its mapping's
    // row says so); the tracepoints go with the engine.
    for (auto [tgid, ns] : engine_->held_processes()) {
      engine_->unheld(tgid);
      ::kill(static_cast<pid_t>(tgid), SIGCONT);
    }
    flush_library_watch();
  }
  hand_over();
  if (sampler_) sampler_->stop();
  flush_gpu_samples();
  writer_->stop();
  const std::string state = capture_state();
  if (auto st = writer_->write_end(mono_now_ns(), exit_status, counters(), state); !st) {
    Error e = st.error();
    e.message += "; the capture is marked incomplete";
    return e;
  }

  SessionSummary s;
  WriterStats w = writer_->stats();
  s.launches = w.launches;
  s.ioctls = w.ioctls;
  s.process_events = w.process_events;
  s.store_failed = w.failed_rows;
  s.dropped = dropped();
  s.api_calls = w.api_calls;
  const DecodeStats& d = decoder_.stats();
  s.decode_errors = d.short_records + d.unknown_types + d.size_mismatch + d.gpu_trace_rejected;
  s.processes = static_cast<uint64_t>(writer_->active_processes());
  s.stacks = stacks_->stats().stacks;
  s.with_stack = stacks_->stats().with_stack;
  s.probes_planned = static_cast<int>(probes_.size());
  for (auto& p : probes_) {
    s.probes_attached += p.status == ProbeStatus::attached;
    s.probes_failed += p.status == ProbeStatus::failed;
  }
  s.disk_full = w.disk_full;
  s.state = state;
  if (sampler_) {
    gpumetrics::SamplerStats g = sampler_->stats();
    s.gpu_metrics = sampler_->summary();
    if (!sampler_->gpus().empty())
      s.gpu_metrics +=
          ": " + std::to_string(g.ticks) + " samples, " + std::to_string(g.query_errors) + " failed queries";
    // Every source's status says why it has nothing as "no ..." when the
    // thing is simply not there (gpu_metrics/gpu_sample.h).
    s.gpu_metrics_absent = sampler_->gpus().empty();
    for (const auto& st : sampler_->statuses())
      if (st.status.rfind("no ", 0) != 0) s.gpu_metrics_absent = false;
  }
  if (watch_) {
    // Libraries found where processes mapped them count too (record's
    // summary would say "0/0" for a libcuda found through LD_LIBRARY_PATH).
    LibraryWatchStats ls = watch_->stats();
    s.probes_attached += static_cast<int>(ls.probes_attached);
    s.probes_planned += static_cast<int>(ls.probes_attached + ls.probes_failed);
    s.probes_failed += static_cast<int>(ls.probes_failed);
  }
  return s;
}

}  // namespace gpuobs

namespace gpuobs {

void Session::create_library_watch(const SessionOptions& opts) {
  if (!opts.watch_libraries && opts.mode != CaptureMode::daemon) return;
  uint32_t rescan_ms = opts.library_rescan_ms;
  if (const char* env = std::getenv("GPUOBS_LIBRARY_RESCAN_MS"))
    if (unsigned long v = std::strtoul(env, nullptr, 10); v > 0) rescan_ms = static_cast<uint32_t>(v);
  Engine* eng = engine_.get();
  LibraryWatch::Hooks hooks{
      [eng](const LibraryFile& f, std::span<const ApiSpec> table) { return eng->attach_api(f, table); },
      [eng](uint64_t dev, uint64_t ino) { eng->detach_library(dev, ino); },
      [this](std::vector<ProbeRow> rows) {
        std::lock_guard lk(watch_out_mu_);
        for (auto& r : rows) watch_rows_.push_back(std::move(r));
      },
      [this](uint64_t dev, uint64_t ino, int64_t ns) {
        std::lock_guard lk(watch_out_mu_);
        watch_detached_.emplace_back(dev, ino, ns);
      },
      [eng](uint32_t kdev, uint64_t ino, uint32_t value) {
        if (!value) {
          eng->forget_library(kdev, ino);
        } else if (auto st = eng->set_library_known(kdev, ino, value); !st) {
          // Not fatal: the next mapping of the file is held, for nothing.
          spdlog::warn("{}", st.error().message);
        }
      },
      [eng](uint32_t tgid) {
        eng->unheld(tgid);
        ::kill(static_cast<pid_t>(tgid), SIGCONT);
      },
      [eng] { return eng->held_processes(); },
      [this](LibraryMapRow row) {
        std::lock_guard lk(watch_out_mu_);
        watch_maps_.push_back(std::move(row));
      },
  };
  LibraryWatchLimits limits;
  limits.max_files = opts.library_max_files;
  limits.max_files_per_user = opts.library_max_files_per_user;
  limits.host_wide = !opts.only_tracked;
  limits.hold_max_ms = opts.library_hold_ms;
  watch_host_wide_ = limits.host_wide;
  watch_ = std::make_unique<LibraryWatch>(std::move(hooks), std::chrono::milliseconds(rescan_ms), limits);
}

void Session::start_library_watch() {
  if (!watch_) return;
  // record: the command starts after this; only its tree is watched.
  if (!watch_host_wide_) {
    watch_->start();
    return;
  }
  // Synchronous: processes running now are attached before the daemon says
  // it is capturing.
  int64_t t0 = mono_now_ns();
  watch_->scan_all("startup");
  // What ran before the daemon: its first calls were not seen.
  watch_->report_running_mappers();
  LibraryWatchStats ls = watch_->stats();
  spdlog::info("startup scan: {} processes' maps read, {} libraries attached from them, in {:.1f} ms", ls.scans,
               ls.attached, static_cast<double>(mono_now_ns() - t0) / 1e6);
  watch_->start();
}

void Session::note_for_library_watch(const Event& ev) {
  if (auto* p = std::get_if<ProcEvent>(&ev)) {
    if (p->type == GPUOBS_EV_PROC_EXEC) {
      gpu_ioctl_seen_.erase(p->hdr.tgid);  // a new image: its first GPU ioctl is a new trigger
      // At exec only the program and ld.so are mapped: with the mmap
      // tracepoints each library is seen as ld.so maps it, without them a
      // scan here is the best early guess.
      if (!engine_->lib_map_attached()) watch_->request(p->hdr.tgid, "exec", static_cast<int64_t>(p->hdr.ts_ns));
    } else if (p->type == GPUOBS_EV_PROC_EXIT) {
      gpu_ioctl_seen_.erase(p->hdr.tgid);
      watch_->process_exited(p->hdr.tgid);
    }
  } else if (auto* i = std::get_if<IoctlEvent>(&ev)) {
    if (i->driver != GPUOBS_DRV_OTHER && gpu_ioctl_seen_.insert(i->hdr.tgid).second)
      watch_->request(i->hdr.tgid, "first_ioctl", static_cast<int64_t>(i->hdr.ts_ns));
  }
}

void Session::prime_origins() {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    char* end = nullptr;
    unsigned long pid = std::strtoul(name.c_str(), &end, 10);
    if (!end || *end || !pid) continue;
    if (auto o = read_process_origin(static_cast<uint32_t>(pid))) {
      std::lock_guard lk(origin_mu_);
      origins_[static_cast<uint32_t>(pid)] = *o;
    }
  }
}

void Session::note_origin(const Event& ev) {
  uint32_t tgid = 0;
  std::visit(
      [&](const auto& e) {
        if constexpr (requires { e.hdr.tgid; }) tgid = e.hdr.tgid;
      },
      ev);
  if (!tgid) return;
  auto* p = std::get_if<ProcEvent>(&ev);
  if (p && p->type == GPUOBS_EV_PROC_EXIT) {
    origin_seen_.erase(tgid);  // the pid may be reused
    last_origin_tgid_ = 0;
    return;
  }
  // Runs of one process's records skip the set.
  if (tgid == last_origin_tgid_) return;
  last_origin_tgid_ = tgid;
  if (!origin_seen_.insert(tgid).second) return;
  if (auto o = read_process_origin(tgid)) {
    std::lock_guard lk(origin_mu_);
    origins_[tgid] = *o;
  }
}

std::optional<ProcessOrigin> Session::take_origin(uint32_t tgid) {
  {
    std::lock_guard lk(origin_mu_);
    auto it = origins_.find(tgid);
    if (it != origins_.end()) {
      ProcessOrigin o = std::move(it->second);
      origins_.erase(it);
      return o;
    }
  }
  return read_process_origin(tgid);
}

void Session::flush_library_watch() {
  std::vector<ProbeRow> rows;
  std::vector<std::tuple<uint64_t, uint64_t, int64_t>> detached;
  std::vector<LibraryMapRow> maps;
  {
    std::lock_guard lk(watch_out_mu_);
    rows.swap(watch_rows_);
    detached.swap(watch_detached_);
    maps.swap(watch_maps_);
  }
  for (auto& m : maps) {
    if (m.calls_before_attach) {
      std::string what = "pid " + std::to_string(m.tgid) + " " + m.library + ": " + m.reason;
      if (!coverage_misses_segment_++) first_coverage_miss_segment_ = what;
      if (!coverage_misses_total_++) first_coverage_miss_ = what;
    }
    writer_->push_library_map(std::move(m));
  }
  if (rows.empty() && detached.empty()) return;
  probe_rows_.insert(probe_rows_.end(), rows.begin(), rows.end());
  writer_->push_probes(std::move(rows));
  for (auto& [dev, ino, ns] : detached) {
    writer_->push_library_detached(dev, ino, ns);
    // A new segment lists the probes in place when it starts.
    // Copies, not [&]: clang 14 (clang-tidy, scripts/tidy-changed.sh) cannot capture structured bindings.
    std::erase_if(probe_rows_, [d = dev, i = ino](const ProbeRow& r) { return r.dev == d && r.inode == i; });
  }
}

std::vector<WatchedLibrary> Session::libraries() const {
  if (watch_) return watch_->libraries();
  std::vector<WatchedLibrary> out;
  for (const auto& p : probes_) {
    WatchedLibrary* w = nullptr;
    for (auto& o : out)
      if (o.file.dev == p.library.dev && o.file.ino == p.library.ino) w = &o;
    if (!w) {
      out.push_back(WatchedLibrary{});
      out.back().file = p.library;
      out.back().reason = "startup";
      w = &out.back();
    }
    w->probes_attached += p.status == ProbeStatus::attached;
    w->probes_failed += p.status == ProbeStatus::failed;
  }
  return out;
}

std::string Session::capture_state() const {
  std::string why;
  auto add = [&](const std::string& s) { why += (why.empty() ? "" : "; ") + s; };
  if (coverage_misses_segment_)
    add(std::to_string(coverage_misses_segment_) +
        (coverage_misses_segment_ == 1 ? " library mapping" : " library mappings") +
        " could call a GPU library before its probes were live (" + first_coverage_miss_segment_ +
        (coverage_misses_segment_ > 1 ? ", ..." : "") + "; report coverage)");
  if (uint64_t d = dropped() - dropped_before_segment_; d)
    add(std::to_string(d) + " events dropped (report capture: counter.dropped_*)");
  if (uint64_t f = attach_failures() - attach_failures_before_segment_; f)
    add(std::to_string(f) + " probes failed to attach (report probes)");
  if (WriterStats w = writer_->stats(); w.failed_rows)
    add(std::to_string(w.failed_rows) + " events not stored (" +
        (w.disk_full ? "the disk was full" : "store errors: counter.store_failed_rows") + ")");
  return why.empty() ? std::string(kStateComplete) : "incomplete (" + why + ")";
}

uint64_t Session::attach_failures() const {
  uint64_t n = 0;
  for (const auto& p : probes_) n += p.status == ProbeStatus::failed;
  if (watch_) n += watch_->stats().probes_failed;
  return n;
}

}  // namespace gpuobs
