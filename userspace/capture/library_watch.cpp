#include "capture/library_watch.h"

#include <dirent.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "capture/host_info.h"

namespace gpuobs {
namespace {

std::string read_text(const std::string& path, bool* ok) {
  std::ifstream in(path);
  *ok = static_cast<bool>(in);
  if (!in) return {};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool stat_key(const std::string& path, uint64_t* dev, uint64_t* ino) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  *dev = static_cast<uint64_t>(st.st_dev);
  *ino = static_cast<uint64_t>(st.st_ino);
  return true;
}

std::span<const ApiSpec> table_for(const std::string& path) { return api_table_for_library(path); }

bool root_only(const struct stat& st) { return st.st_uid == 0 && !(st.st_mode & (S_IWGRP | S_IWOTH)); }

// A root-owned file that only root can replace: the file and every directory
// above it, up to the process's root, owned by root and writable by no one
// else (a sticky /tmp is writable by everyone: not a system location).
bool trusted_location(const struct stat& file, const std::string& root, const std::string& path) {
  if (!root_only(file)) return false;
  std::string dir = path;
  for (;;) {
    size_t slash = dir.rfind('/');
    if (slash == std::string::npos) return false;
    dir.resize(slash);
    struct stat st {};
    if (::stat((root + (dir.empty() ? "/" : dir)).c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || !root_only(st))
      return false;
    if (dir.empty()) return true;
  }
}

// Keeps the mapped file open while its probes are made: a process that lives
// 50 ms may be gone before the attach ends, and its /proc paths with it.
struct PinnedFile {
  int fd = -1;
  ~PinnedFile() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

LibraryWatch::LibraryWatch(Hooks hooks, std::chrono::milliseconds rescan_every, LibraryWatchLimits limits,
                           std::string proc_root)
    : hooks_(std::move(hooks)),
      rescan_every_(rescan_every),
      limits_(limits),
      proc_root_(std::move(proc_root)),
      self_(static_cast<uint32_t>(::getpid())) {}

LibraryWatch::~LibraryWatch() { stop(); }

void LibraryWatch::add_known(const LibraryFile& file, const std::vector<ProbeResult>& results) {
  WatchedLibrary w;
  w.file = file;
  w.reason = "startup";
  w.attached_mono_ns = mono_now_ns();
  for (const auto& r : results) {
    w.probes_attached += r.status == ProbeStatus::attached;
    w.probes_failed += r.status == ProbeStatus::failed;
  }
  std::lock_guard lk(mu_);
  auto [it, fresh] = libs_.emplace(Key{file.dev, file.ino}, std::move(w));
  if (fresh)
    mark_known_locked(it->second, kernel_dev(file.dev), file.ino,
                      it->second.probes_attached ? GPUOBS_KNOWN_ATTACHED : GPUOBS_KNOWN_UNPROBED);
}

void LibraryWatch::scan_process(uint32_t tgid, const char* reason, int64_t trigger_mono_ns, std::set<Key>* mapped) {
  if (tgid == self_) return;
  std::string dir = proc_root_ + "/" + std::to_string(tgid);
  bool ok = false;
  std::string maps = read_text(dir + "/maps", &ok);
  {
    std::lock_guard lk(mu_);
    ++stats_.scans;
    if (!ok) ++stats_.maps_unreadable;
  }
  std::vector<std::pair<Key, std::string>> runtimes;  // for a held process: what it maps
  if (!ok) {
    settle_held(tgid, std::move(runtimes));
    return;
  }
  auto found_libs = gpu_libraries_in_maps(maps);
  // Only code a process runs: ld.so maps a library's text executable (the
  // mmap trigger fires on that mapping); a file only read (another tool
  // parsing its ELF) neither needs probes nor keeps them alive.
  std::erase_if(found_libs, [](const MappedLibrary& m) { return !m.executable; });
  if (!found_libs.empty()) {
    std::lock_guard lk(mu_);
    mappers_.insert(tgid);
  }
  for (const MappedLibrary& m : found_libs) {
    if (stopping()) break;
    // Mapped, whether or not it can be opened below: a library whose file was
    // deleted (upgraded) is reachable only through map_files, which needs
    // CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE; failing that it must still
    // count as in use, or detach_gone would take its probes off a process
    // that still calls it.
    if (mapped) mapped->insert(Key{makedev(m.dev_major, m.dev_minor), m.inode});
    // Through the process's root the path means what it means to the process
    // (its mount namespace: container images, bind mounts); map_files names
    // the mapped file itself, also when deleted or replaced since.
    LibraryFile f;
    f.path = m.path;
    std::vector<std::string> via;
    if (!m.deleted) via.push_back(dir + "/root" + m.path);
    via.push_back(dir + "/map_files/" + m.range);
    bool found = false, via_root = false;
    for (const auto& p : via) {
      if (!stat_key(p, &f.dev, &f.ino)) continue;
      // The root path may name another file than the one mapped (replaced
      // since): the kernel's inode number must match.
      if (f.ino != m.inode && p != via.back()) continue;
      f.realpath = p;
      via_root = p != via.back();
      found = true;
      break;
    }
    if (!found) {
      std::lock_guard lk(mu_);
      ++stats_.unresolved;
      continue;
    }
    Key key{f.dev, f.ino};
    if (mapped) mapped->insert(key);
    runtimes.emplace_back(key, m.path);
    {
      std::lock_guard lk(mu_);
      if (auto l = libs_.find(key); l != libs_.end()) {
        if (!l->second.trusted) untrusted_mappers_.insert(tgid);
        continue;
      }
    }
    PinnedFile pin;
    pin.fd = ::open(f.realpath.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (pin.fd < 0 || ::fstat(pin.fd, &st) != 0 || static_cast<uint64_t>(st.st_dev) != f.dev ||
        static_cast<uint64_t>(st.st_ino) != f.ino) {
      std::lock_guard lk(mu_);
      ++stats_.unresolved;
      continue;
    }
    // Only a file reached by its path can be in a system location; a deleted
    // or replaced one (map_files) belongs to its owner.
    bool trusted = via_root && trusted_location(st, dir + "/root", m.path);
    uint32_t owner = static_cast<uint32_t>(st.st_uid);
    if (!trusted) {
      std::lock_guard lk(mu_);
      untrusted_mappers_.insert(tgid);
    }
    if (!admit(key, f, trusted, owner, tgid)) continue;
    WatchedLibrary w;
    w.file = f;
    w.trusted = trusted;
    w.owner_uid = owner;
    w.reason = reason;
    w.trigger_tgid = tgid;
    w.trigger_mono_ns = trigger_mono_ns ? trigger_mono_ns : mono_now_ns();
    w.pending = true;
    {
      // Known (and counted against the caps) from now on; its probes are
      // made by the attacher, so this scan goes on to the next process
      // while an attach waits for the kernel (RCU grace periods).
      std::lock_guard lk(mu_);
      libs_.emplace(key, w);
    }
    PendingAttach job{key, std::move(w), pin.fd};
    pin.fd = -1;  // the job owns it now
    if (!async_attach_) {
      attach_now(job);  // the startup scan: attached before capturing starts
      continue;
    }
    {
      std::lock_guard lk(attach_mu_);
      attach_queue_.push_back(std::move(job));
    }
    attach_cv_.notify_one();
  }
  settle_held(tgid, std::move(runtimes));
}

void LibraryWatch::attach_now(PendingAttach& job) {
  WatchedLibrary& w = job.lib;
  const LibraryFile& f = w.file;
  // Symbols and probes through the pinned descriptor: the same file
  // whatever happened to the process meanwhile.
  LibraryFile through = f;
  through.realpath = "/proc/self/fd/" + std::to_string(job.fd);
  auto results = hooks_.attach(through, table_for(f.path));
  ::close(job.fd);
  job.fd = -1;
  for (auto& r : results) r.library = f;
  w.attached_mono_ns = mono_now_ns();
  w.pending = false;
  std::vector<ProbeRow> rows;
  for (const auto& r : results) {
    w.probes_attached += r.status == ProbeStatus::attached;
    w.probes_failed += r.status == ProbeStatus::failed;
    if (r.status == ProbeStatus::failed && w.error.empty()) w.error = r.error;
    ProbeRow row;
    row.library = f.path;
    row.dev = f.dev;
    row.inode = f.ino;
    row.symbol = r.symbol;
    row.program = r.program;
    row.status = r.status;
    row.error = r.error;
    row.reason = w.reason;
    row.trigger_tgid = w.trigger_tgid;
    row.trigger_mono_ns = w.trigger_mono_ns;
    row.attached_mono_ns = w.attached_mono_ns;
    rows.push_back(std::move(row));
  }
  bool failed = w.probes_attached == 0;
  if (failed)
    spdlog::warn("library {} (pid {}, dev {} inode {}): no probe attached: {}", f.path, w.trigger_tgid, f.dev, f.ino,
                 w.error.empty() ? "no probed symbol in it" : w.error);
  else
    spdlog::info("attached {} probes on {} (pid {}, {}, dev {} inode {}, {}) {:.1f} ms after the trigger",
                 w.probes_attached, f.path, w.trigger_tgid, w.reason, f.dev, f.ino,
                 w.trusted ? std::string("trusted") : "uid " + std::to_string(w.owner_uid),
                 static_cast<double>(w.attached_mono_ns - w.trigger_mono_ns) / 1e6);
  {
    std::lock_guard lk(mu_);
    refused_.erase(job.key);
    ++stats_.attached;
    stats_.attach_failed += failed;
    stats_.probes_failed += static_cast<uint64_t>(w.probes_failed);
    stats_.probes_attached += static_cast<uint64_t>(w.probes_attached);
    WatchedLibrary& stored = libs_[job.key];
    w.bpf_keys = stored.bpf_keys;
    stored = w;
    // From now on a process mapping it is not held (or is, for nothing:
    // it carries no probes and says so).
    mark_known_locked(stored, kernel_dev(f.dev), f.ino, failed ? GPUOBS_KNOWN_UNPROBED : GPUOBS_KNOWN_ATTACHED);
    file_ready_locked(job.key);
  }
  hooks_.record(std::move(rows));
  // Its process may have exited while the probes were made (the rescan its
  // exit caused skipped a pending file): look again, so that a file nobody
  // maps is not kept until the periodic rescan.
  if (async_attach_ && ::access((proc_root_ + "/" + std::to_string(w.trigger_tgid)).c_str(), F_OK) != 0) {
    {
      std::lock_guard lk(queue_mu_);
      rescan_due_ = true;
    }
    cv_.notify_one();
  }
}

void LibraryWatch::run_attacher() {
  for (;;) {
    PendingAttach job;
    {
      std::unique_lock lk(attach_mu_);
      attach_cv_.wait(lk, [&] { return stopping() || !attach_queue_.empty(); });
      if (stopping()) {
        for (auto& j : attach_queue_) ::close(j.fd);
        attach_queue_.clear();
        return;
      }
      job = std::move(attach_queue_.front());
      attach_queue_.pop_front();
    }
    attach_now(job);
  }
}

bool LibraryWatch::admit(const Key& key, const LibraryFile& f, bool trusted, uint32_t owner, uint32_t tgid) {
  std::lock_guard lk(mu_);
  size_t total = 0, of_owner = 0;
  for (const auto& [k, w] : libs_) {
    ++total;
    of_owner += !w.trusted && w.owner_uid == owner;
  }
  bool over_total = total >= limits_.max_files;
  bool over_user = !over_total && !trusted && of_owner >= limits_.max_files_per_user;
  if (!over_total && !over_user) return true;
  const char* cap = over_total ? "library_max_files" : "library_max_files_per_user";
  // Counted and logged once per file: every scan of its process sees it again.
  if (refused_.size() >= 4096) refused_.clear();  // bounded; a file refused again is counted again
  if (!refused_.insert(key).second) return false;
  ++(over_total ? stats_.refused_total_cap : stats_.refused_user_cap);
  // Its next mappings are not held for an attach that will not come.
  if (hooks_.known) {
    std::pair<uint32_t, uint64_t> k{kernel_dev(f.dev), f.ino};
    hooks_.known(k.first, k.second, GPUOBS_KNOWN_UNPROBED);
    unprobed_keys_.insert(k);
    unprobed_why_[k] = std::string("refused: ") + cap + " reached";
  }
  spdlog::warn(
      "not attaching {} (pid {}, uid {}, dev {} inode {}): {} reached ({} files attached, {} of them uid {}'s)", f.path,
      tgid, owner, f.dev, f.ino, cap, total, of_owner, owner);
  return false;
}

void LibraryWatch::serve_queued(std::set<Key>* mapped) {
  for (;;) {
    Request req{};
    {
      std::lock_guard lk(queue_mu_);
      if (queue_.empty() || stopping_) return;
      req = queue_.front();
      queue_.pop_front();
      queued_.erase(req.tgid);
    }
    scan_process(req.tgid, req.reason, req.trigger_mono_ns, mapped);
  }
}

void LibraryWatch::scan_all(const char* reason) {
  std::set<Key> mapped;
  int64_t started = mono_now_ns();
  std::vector<uint32_t> pids;
  if (limits_.host_wide) {
    DIR* d = ::opendir(proc_root_.c_str());
    if (!d) {
      spdlog::warn("cannot list {}: libraries mapped by running processes are not attached", proc_root_);
      return;
    }
    while (dirent* e = ::readdir(d)) {
      char* end = nullptr;
      unsigned long pid = std::strtoul(e->d_name, &end, 10);
      if (end && *end == '\0' && pid > 0) pids.push_back(static_cast<uint32_t>(pid));
    }
    ::closedir(d);
  } else {
    std::lock_guard lk(mu_);
    pids.assign(triggered_.begin(), triggered_.end());
  }
  {
    std::lock_guard lk(mu_);
    mappers_.clear();  // refilled by the scans below
    untrusted_mappers_.clear();
  }
  for (uint32_t pid : pids) {
    if (stopping()) return;  // SIGTERM must not wait for a scan of every process
    // A process mapping its library now must not wait for the whole scan;
    // what it maps counts as mapped (it may have started after the listing).
    serve_queued(&mapped);
    scan_process(pid, reason, started, &mapped);
  }
  // A scan cut short knows too little to say what is gone.
  if (stopping()) return;
  serve_queued(&mapped);  // a process that just mapped a library keeps it
  detach_gone(mapped);
}

void LibraryWatch::detach_gone(const std::set<Key>& mapped) {
  std::vector<Key> gone;
  {
    std::lock_guard lk(mu_);
    for (const auto& [key, w] : libs_) {
      if (w.detached_mono_ns || w.pending || mapped.count(key)) continue;
      // A trusted file still installed where it was found (the system's
      // libcuda.so.1 with no CUDA process running): keep it, the next
      // process needs it. A user's file goes with its last process: it
      // counts against its owner's cap, and its probes pin the inode.
      uint64_t dev = 0, ino = 0;
      if (w.trusted && stat_key(w.file.path, &dev, &ino) && dev == key.first && ino == key.second) continue;
      gone.push_back(key);
    }
  }
  for (const Key& key : gone) {
    if (stopping()) return;
    // Unmarked first: from here every new mapping of the file is held, so
    // none can start calling it while its probes go. A process that mapped
    // it after the scan above and before this found it attached and was not
    // held: it keeps the probes (FirstCall.DaemonStoresEveryHipCallOfACopyOfTheRuntime
    // lost every call of 1 run in 6 to that window).
    std::set<std::pair<uint32_t, uint64_t>> bpf_keys;
    {
      std::lock_guard lk(mu_);
      bpf_keys = libs_.at(key).bpf_keys;
    }
    if (hooks_.known)
      for (const auto& [kdev, ino] : bpf_keys) hooks_.known(kdev, ino, 0);
    if (mapped_by_any_process(key)) {
      if (hooks_.known)
        for (const auto& [kdev, ino] : bpf_keys) hooks_.known(kdev, ino, GPUOBS_KNOWN_ATTACHED);
      std::lock_guard lk(mu_);
      ++stats_.detach_kept;
      continue;
    }
    hooks_.detach(key.first, key.second);
    int64_t now = mono_now_ns();
    hooks_.record_detach(key.first, key.second, now);
    std::lock_guard lk(mu_);
    auto& w = libs_.at(key);
    spdlog::info("detached {} (dev {} inode {}): no process maps it{}", w.file.path, key.first, key.second,
                 w.trusted ? " and its path no longer names it" : "");
    // Its next mapping is held again: unmarked above, before the detach.
    // Room under the caps: files refused before are tried again.
    if (hooks_.known)
      for (const auto& [kdev, ino] : unprobed_keys_) hooks_.known(kdev, ino, 0);
    unprobed_keys_.clear();
    unprobed_why_.clear();
    refused_.clear();
    // Forgotten, so that the same inode mapped again (a file restored) is
    // attached again; its rows keep the history.
    libs_.erase(key);
    ++stats_.detached;
  }
}

bool LibraryWatch::mapped_by_any_process(const Key& key) {
  std::vector<uint32_t> pids;
  if (DIR* d = ::opendir(proc_root_.c_str())) {
    while (dirent* e = ::readdir(d)) {
      char* end = nullptr;
      unsigned long pid = std::strtoul(e->d_name, &end, 10);
      if (end && *end == '\0' && pid > 0 && pid != self_) pids.push_back(static_cast<uint32_t>(pid));
    }
    ::closedir(d);
  }
  for (uint32_t pid : pids) {
    bool ok = false;
    std::string maps = read_text(proc_root_ + "/" + std::to_string(pid) + "/maps", &ok);
    if (!ok) continue;
    for (const MappedLibrary& m : gpu_libraries_in_maps(maps))
      if (m.executable && makedev(m.dev_major, m.dev_minor) == key.first && m.inode == key.second) return true;
  }
  return false;
}

void LibraryWatch::start() {
  async_attach_ = true;
  attacher_ = std::thread([this] { run_attacher(); });
  thread_ = std::thread([this] { run(); });
}

void LibraryWatch::stop() {
  {
    std::lock_guard lk(queue_mu_);
    stopping_ = true;
  }
  stop_flag_.store(true, std::memory_order_relaxed);
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  {
    std::lock_guard lk(attach_mu_);  // the attacher checks stopping() under it
  }
  attach_cv_.notify_all();
  if (attacher_.joinable()) attacher_.join();
  // Nothing stays stopped behind a capture that ends.
  std::lock_guard lk(mu_);
  while (!held_.empty()) finish_hold_locked(held_.begin(), "gpuobs stopped before its probes were made");
  if (hooks_.held_in_bpf)
    for (auto [tgid, ns] : hooks_.held_in_bpf()) hooks_.resume(tgid);
}

void LibraryWatch::request(uint32_t tgid, const char* reason, int64_t trigger_mono_ns) {
  if (!limits_.host_wide) {
    std::lock_guard lk(mu_);
    triggered_.insert(tgid);
  }
  {
    std::lock_guard lk(queue_mu_);
    if (!queued_.insert(tgid).second) return;  // already due: one scan answers both
    queue_.push_back(Request{tgid, reason, trigger_mono_ns});
  }
  cv_.notify_one();
}

void LibraryWatch::process_exited(uint32_t tgid) {
  {
    std::lock_guard lk(mu_);
    if (auto h = held_.find(tgid); h != held_.end()) {
      // Killed while held (SIGKILL ends a stopped process): nothing ran unseen.
      LibraryMapRow row;
      row.tgid = tgid;
      row.comm = h->second.n.comm;
      row.library = h->second.n.name;
      row.dev = user_dev(h->second.n.kdev);
      row.inode = h->second.n.ino;
      row.mapped_mono_ns = h->second.n.mapped_mono_ns;
      row.hold = "held";
      row.held_ns = mono_now_ns() - h->second.n.mapped_mono_ns;
      row.reason = "exited while held";
      held_.erase(h);
      ++stats_.holds_released;
      report_locked(std::move(row));
    }
    triggered_.erase(tgid);
    mappers_.erase(tgid);
    // A process of trusted files only releases nothing: no rescan of every
    // process's maps at each exit of a short CUDA program (the next one
    // starting would compete with it for the CPU).
    if (untrusted_mappers_.erase(tgid) == 0) return;
  }
  {
    std::lock_guard lk(queue_mu_);
    rescan_due_ = true;
  }
  cv_.notify_one();
}

void LibraryWatch::run() {
  auto next_rescan = std::chrono::steady_clock::now() + rescan_every_;
  for (;;) {
    Request req{};
    bool have = false, rescan = false;
    expire_holds();
    adopt_orphans();
    // Holds are checked every 10 ms (their bound) and BPF's table of them
    // every 100 ms (a hold whose record was lost).
    auto wake = std::min(next_rescan, std::chrono::steady_clock::now() + std::chrono::milliseconds(held() ? 10 : 100));
    {
      std::unique_lock lk(queue_mu_);
      cv_.wait_until(lk, wake, [&] { return stopping_ || !queue_.empty() || rescan_due_; });
      if (stopping_) return;
      // Requests first: they are what the 100 ms budget is about. A rescan
      // that is due runs anyway, between two requests: a steady stream of
      // new processes must not starve it (it finds what requests miss and
      // detaches what is gone).
      if (!queue_.empty()) {
        req = queue_.front();
        queue_.pop_front();
        queued_.erase(req.tgid);
        have = true;
      }
      if (rescan_due_ || std::chrono::steady_clock::now() >= next_rescan) {
        rescan = true;
        rescan_due_ = false;
      }
    }
    if (have) scan_process(req.tgid, req.reason, req.trigger_mono_ns, nullptr);
    if (rescan) {
      scan_all("rescan");
      next_rescan = std::chrono::steady_clock::now() + rescan_every_;
    }
  }
}

void LibraryWatch::request_first(uint32_t tgid, const char* reason, int64_t trigger_mono_ns) {
  if (!limits_.host_wide) {
    std::lock_guard lk(mu_);
    triggered_.insert(tgid);
  }
  {
    std::lock_guard lk(queue_mu_);
    // A held process goes before every other scan: it waits, stopped.
    if (queued_.insert(tgid).second) {
      queue_.push_front(Request{tgid, reason, trigger_mono_ns});
    } else {
      auto it = std::find_if(queue_.begin(), queue_.end(), [&](const Request& r) { return r.tgid == tgid; });
      if (it != queue_.end()) {
        Request r = *it;
        queue_.erase(it);
        queue_.push_front(r);
      }
    }
  }
  cv_.notify_one();
}

namespace {

const char* not_held_why(uint32_t hold) {
  switch (hold) {
    case GPUOBS_LIB_HOLD_OFF: return "not held: holding off";
    case GPUOBS_LIB_TRACED: return "not held: ptraced";
    case GPUOBS_LIB_JOB: return "not held: a job of a job-control shell";
    case GPUOBS_LIB_SIGNAL_FAILED: return "not held: SIGSTOP failed";
    default: return "not held";
  }
}

LibraryMapRow row_of(const MapNotice& n) {
  LibraryMapRow row;
  row.tgid = n.tgid;
  row.comm = n.comm;
  row.library = n.name;
  row.dev = n.kdev ? user_dev(n.kdev) : 0;
  row.inode = n.ino;
  row.mapped_mono_ns = n.mapped_mono_ns;
  return row;
}

std::string base_name(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

void LibraryWatch::on_map(const MapNotice& n) {
  if (n.hold == GPUOBS_LIB_HELD && stopping()) {
    // No scan will come: resumed now, and reported as unseen.
    if (hooks_.resume) hooks_.resume(n.tgid);
    LibraryMapRow row = row_of(n);
    row.hold = "held";
    row.calls_before_attach = true;
    row.reason = "gpuobs stopped before its probes were made";
    std::lock_guard lk(mu_);
    report_locked(std::move(row));
    return;
  }
  if (n.hold == GPUOBS_LIB_HELD) {
    {
      std::lock_guard lk(mu_);
      auto [it, fresh] = held_.try_emplace(n.tgid);
      if (fresh) ++stats_.holds;
      // An adopted hold (its record came late) gets its details now.
      it->second.n = n;
    }
    request_first(n.tgid, "mmap", n.mapped_mono_ns);
    return;
  }
  request(n.tgid, "mmap", n.mapped_mono_ns);
  LibraryMapRow row = row_of(n);
  std::lock_guard lk(mu_);
  std::pair<uint32_t, uint64_t> bkey{n.kdev, n.ino};
  const WatchedLibrary* w = nullptr;
  for (const auto& [k, lib] : libs_)
    if (lib.bpf_keys.count(bkey)) w = &lib;
  if (n.hold == GPUOBS_LIB_ATTACHED) {
    row.hold = "attached before";
    row.attached_mono_ns = w ? w->attached_mono_ns : 0;
  } else if (n.hold == GPUOBS_LIB_UNPROBED) {
    row.hold = "unprobed";
    row.calls_before_attach = true;
    if (auto why = unprobed_why_.find(bkey); why != unprobed_why_.end()) row.reason = why->second;
    else if (w)
      row.reason = "no probe attached: " + (w->error.empty() ? std::string("no probed symbol in it") : w->error);
    else row.reason = "the file carries no probes";
  } else {
    row.hold = not_held_why(n.hold);
    row.calls_before_attach = true;
    row.reason = "its probes were made while it ran (" + row.hold + ")";
  }
  report_locked(std::move(row));
}

void LibraryWatch::report_locked(LibraryMapRow row) {
  ++stats_.maps;
  if (row.calls_before_attach) {
    ++stats_.calls_before_attach;
    std::string what = "pid " + std::to_string(row.tgid) + " (" + row.comm + ") " + row.library + ": " + row.reason;
    if (stats_.first_miss.empty()) stats_.first_miss = what;
    spdlog::warn("capture incomplete: {} could call {} before its probes were live: {}",
                 "pid " + std::to_string(row.tgid) + " (" + row.comm + ")", row.library, row.reason);
  }
  if (hooks_.mapped) hooks_.mapped(std::move(row));
}

void LibraryWatch::mark_known_locked(WatchedLibrary& w, uint32_t kdev, uint64_t ino, uint32_t value) {
  if (!hooks_.known) return;
  hooks_.known(kdev, ino, value);
  w.bpf_keys.emplace(kdev, ino);
  unprobed_keys_.erase({kdev, ino});
  unprobed_why_.erase({kdev, ino});
}

void LibraryWatch::settle_held(uint32_t tgid, std::vector<std::pair<Key, std::string>> found) {
  std::lock_guard lk(mu_);
  auto it = held_.find(tgid);
  if (it == held_.end()) return;
  Held& h = it->second;
  h.scanned = true;
  h.awaiting.clear();
  for (const auto& [key, path] : found)
    if (auto l = libs_.find(key); l != libs_.end() && l->second.pending) h.awaiting.insert(key);
  h.found = std::move(found);
  if (h.awaiting.empty()) finish_hold_locked(it, "");
}

void LibraryWatch::file_ready_locked(const Key& key) {
  for (auto it = held_.begin(); it != held_.end();) {
    auto next = std::next(it);
    if (it->second.awaiting.erase(key) && it->second.awaiting.empty() && it->second.scanned) finish_hold_locked(it, "");
    it = next;
  }
}

void LibraryWatch::finish_hold_locked(std::map<uint32_t, Held>::iterator it, const std::string& timeout) {
  Held& h = it->second;
  const int64_t now = mono_now_ns();
  // The file of the hold: the one BPF named (its key converted), or else
  // what the process maps under that name (the keys differ on overlayfs).
  WatchedLibrary* w = nullptr;
  if (auto l = libs_.find(Key{user_dev(h.n.kdev), h.n.ino}); l != libs_.end()) w = &l->second;
  for (const auto& [key, path] : h.found)
    if (!w && (base_name(path) == h.n.name || h.n.name.empty()))
      if (auto l = libs_.find(key); l != libs_.end()) w = &l->second;
  if (h.n.name.empty() && w) {
    // Adopted (its record was lost): what it maps names the file, and every
    // runtime it maps must carry probes.
    h.n.name = base_name(w->file.path);
    for (const auto& [key, path] : h.found)
      if (auto l = libs_.find(key); l == libs_.end() || l->second.pending || !l->second.probes_attached) w = nullptr;
  }
  LibraryMapRow row = row_of(h.n);
  row.hold = "held";
  row.held_ns = h.n.mapped_mono_ns ? now - h.n.mapped_mono_ns : 0;
  if (w && !w->pending && w->probes_attached > 0) {
    row.attached_mono_ns = w->attached_mono_ns;
    if (h.n.kdev) mark_known_locked(*w, h.n.kdev, h.n.ino, GPUOBS_KNOWN_ATTACHED);
  } else {
    row.calls_before_attach = true;
    if (!timeout.empty()) row.reason = timeout;
    else if (w && !w->pending)
      row.reason = "no probe attached: " + (w->error.empty() ? std::string("no probed symbol in it") : w->error);
    else if (auto why = unprobed_why_.find({h.n.kdev, h.n.ino}); why != unprobed_why_.end()) row.reason = why->second;
    else if (h.n.name.empty()) row.reason = "its mapping's record was lost (a full ring)";
    else row.reason = "the mapped file could not be reached from gpuobs (counter library_unresolved)";
    // Not held again for a file that cannot be attached (a timeout may
    // still end in probes: the attach goes on).
    if (timeout.empty() && h.n.kdev && hooks_.known && !(w && w->pending)) {
      hooks_.known(h.n.kdev, h.n.ino, GPUOBS_KNOWN_UNPROBED);
      unprobed_keys_.insert({h.n.kdev, h.n.ino});
      unprobed_why_.emplace(std::pair{h.n.kdev, h.n.ino}, row.reason);
    }
  }
  ++stats_.holds_released;
  stats_.hold_ns_total += static_cast<uint64_t>(std::max<int64_t>(row.held_ns, 0));
  stats_.hold_ns_max = std::max(stats_.hold_ns_max, static_cast<uint64_t>(std::max<int64_t>(row.held_ns, 0)));
  const uint32_t tgid = it->first;
  spdlog::debug("resuming pid {} after {:.2f} ms ({})", tgid, static_cast<double>(row.held_ns) / 1e6,
                row.calls_before_attach ? row.reason : std::string("probes live"));
  held_.erase(it);
  // The row first (a cheap push): whoever sees the process run finds it.
  report_locked(std::move(row));
  if (hooks_.resume) hooks_.resume(tgid);
}

void LibraryWatch::expire_holds() {
  std::lock_guard lk(mu_);
  const int64_t now = mono_now_ns(), bound = int64_t{limits_.hold_max_ms} * 1'000'000;
  for (auto it = held_.begin(); it != held_.end();) {
    auto next = std::next(it);
    int64_t since = it->second.n.mapped_mono_ns;
    if (since && now - since > bound) {
      ++stats_.hold_timeouts;
      finish_hold_locked(it, "hold timed out after " + std::to_string(limits_.hold_max_ms) +
                                 " ms (library_hold_ms) before its probes were made");
    }
    it = next;
  }
}

void LibraryWatch::adopt_orphans() {
  if (!hooks_.held_in_bpf) return;
  const int64_t now = mono_now_ns();
  if (now - orphans_checked_ns_ < 100'000'000) return;
  orphans_checked_ns_ = now;
  std::vector<uint32_t> adopt;
  {
    std::lock_guard lk(mu_);
    // Read under the lock: a hold finished meanwhile is gone from both.
    for (auto [tgid, ns] : hooks_.held_in_bpf())
      if (!held_.count(tgid) && now - ns > 100'000'000) adopt.push_back(tgid);
    for (uint32_t tgid : adopt) {
      Held& h = held_[tgid];
      h.n.tgid = tgid;
      h.n.mapped_mono_ns = now;
      ++stats_.holds;
      ++stats_.holds_adopted;
    }
  }
  for (uint32_t tgid : adopt) {
    spdlog::warn("pid {} is held without its mapping's record (a full ring?): scanning it", tgid);
    request_first(tgid, "mmap", now);
  }
}

void LibraryWatch::report_running_mappers() {
  std::set<uint32_t> pids;
  {
    std::lock_guard lk(mu_);
    pids = mappers_;
  }
  for (uint32_t tgid : pids) {
    bool ok = false;
    std::string maps = read_text(proc_root_ + "/" + std::to_string(tgid) + "/maps", &ok);
    std::string comm = read_text(proc_root_ + "/" + std::to_string(tgid) + "/comm", &ok);
    if (!comm.empty() && comm.back() == '\n') comm.pop_back();
    std::set<std::string> names;
    for (const MappedLibrary& m : gpu_libraries_in_maps(maps))
      if (m.executable) names.insert(base_name(m.path));
    std::lock_guard lk(mu_);
    for (const auto& name : names) {
      LibraryMapRow row;
      row.tgid = tgid;
      row.comm = comm;
      row.library = name;
      row.hold = "before start";
      row.calls_before_attach = true;
      row.reason = "mapped before gpuobs started";
      report_locked(std::move(row));
    }
  }
}

size_t LibraryWatch::held() const {
  std::lock_guard lk(mu_);
  return held_.size();
}

std::vector<WatchedLibrary> LibraryWatch::libraries() const {
  std::lock_guard lk(mu_);
  std::vector<WatchedLibrary> out;
  for (const auto& [k, w] : libs_) out.push_back(w);
  return out;
}

LibraryWatchStats LibraryWatch::stats() const {
  std::lock_guard lk(mu_);
  return stats_;
}

}  // namespace gpuobs
