#include "capture/library_watch.h"

#include <dirent.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

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
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  *dev = static_cast<uint64_t>(st.st_dev);
  *ino = static_cast<uint64_t>(st.st_ino);
  return true;
}

std::span<const ApiSpec> table_for(const std::string& path) {
  return path.find("libamdhip64.so") != std::string::npos ? hip_api_table() : cuda_api_table();
}

}  // namespace

LibraryWatch::LibraryWatch(Hooks hooks, std::chrono::milliseconds rescan_every, std::string proc_root)
    : hooks_(std::move(hooks)), rescan_every_(rescan_every), proc_root_(std::move(proc_root)),
      self_(static_cast<uint32_t>(::getpid())) {}

LibraryWatch::~LibraryWatch() { stop(); }

void LibraryWatch::add_known(const LibraryFile& file, const std::vector<ProbeResult>& results) {
  WatchedLibrary w;
  w.file = file;
  w.reason = "startup";
  w.attached_mono_ns = mono_now_ns();
  for (const auto& r : results) {
    w.probes_attached += r.status == "attached";
    w.probes_failed += r.status == "failed";
  }
  std::lock_guard lk(mu_);
  libs_.emplace(Key{file.dev, file.ino}, std::move(w));
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
  if (!ok) return;
  auto found_libs = gpu_libraries_in_maps(maps);
  if (!found_libs.empty()) {
    std::lock_guard lk(mu_);
    mappers_.insert(tgid);
  }
  for (const MappedLibrary& m : found_libs) {
    if (stopping()) return;
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
    bool found = false;
    for (const auto& p : via) {
      if (!stat_key(p, &f.dev, &f.ino)) continue;
      // The root path may name another file than the one mapped (replaced
      // since): the kernel's inode number must match.
      if (f.ino != m.inode && p != via.back()) continue;
      f.realpath = p;
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
    {
      std::lock_guard lk(mu_);
      if (libs_.count(key)) continue;
    }
    auto results = hooks_.attach(f, table_for(f.path));
    WatchedLibrary w;
    w.file = f;
    w.reason = reason;
    w.trigger_tgid = tgid;
    w.trigger_mono_ns = trigger_mono_ns ? trigger_mono_ns : mono_now_ns();
    w.attached_mono_ns = mono_now_ns();
    std::vector<ProbeRow> rows;
    for (const auto& r : results) {
      w.probes_attached += r.status == "attached";
      w.probes_failed += r.status == "failed";
      if (r.status == "failed" && w.error.empty()) w.error = r.error;
      ProbeRow row;
      row.library = f.path;
      row.dev = f.dev;
      row.inode = f.ino;
      row.symbol = r.symbol;
      row.program = r.program;
      row.status = r.status;
      row.error = r.error;
      row.reason = reason;
      row.trigger_tgid = tgid;
      row.trigger_mono_ns = w.trigger_mono_ns;
      row.attached_mono_ns = w.attached_mono_ns;
      rows.push_back(std::move(row));
    }
    bool failed = w.probes_attached == 0;
    if (failed)
      spdlog::warn("library {} (pid {}, dev {} inode {}): no probe attached: {}", f.path, tgid, f.dev, f.ino,
                   w.error.empty() ? "no probed symbol in it" : w.error);
    else
      spdlog::info("attached {} probes on {} (pid {}, {}, dev {} inode {}) in {:.1f} ms", w.probes_attached, f.path,
                   tgid, reason, f.dev, f.ino, static_cast<double>(w.attached_mono_ns - w.trigger_mono_ns) / 1e6);
    {
      std::lock_guard lk(mu_);
      ++stats_.attached;
      stats_.attach_failed += failed;
      stats_.probes_failed += static_cast<uint64_t>(w.probes_failed);
      libs_.emplace(key, std::move(w));
    }
    hooks_.record(std::move(rows));
  }
}

void LibraryWatch::scan_all(const char* reason) {
  std::set<Key> mapped;
  int64_t started = mono_now_ns();
  DIR* d = ::opendir(proc_root_.c_str());
  if (!d) {
    spdlog::warn("cannot list {}: libraries mapped by running processes are not attached", proc_root_);
    return;
  }
  std::vector<uint32_t> pids;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    unsigned long pid = std::strtoul(e->d_name, &end, 10);
    if (end && *end == '\0' && pid > 0) pids.push_back(static_cast<uint32_t>(pid));
  }
  ::closedir(d);
  {
    std::lock_guard lk(mu_);
    mappers_.clear();  // refilled by the scans below
  }
  for (uint32_t pid : pids) {
    if (stopping()) return;  // SIGTERM must not wait for a scan of every process
    scan_process(pid, reason, started, &mapped);
  }
  // A scan cut short knows too little to say what is gone.
  if (!stopping()) detach_gone(mapped);
}

void LibraryWatch::detach_gone(const std::set<Key>& mapped) {
  std::vector<Key> gone;
  {
    std::lock_guard lk(mu_);
    for (const auto& [key, w] : libs_) {
      if (w.detached_mono_ns || mapped.count(key)) continue;
      // Still installed where it was found (the system's libcuda.so.1 with
      // no CUDA process running): keep it, the next process needs it.
      uint64_t dev = 0, ino = 0;
      if (stat_key(w.file.path, &dev, &ino) && dev == key.first && ino == key.second) continue;
      gone.push_back(key);
    }
  }
  for (const Key& key : gone) {
    if (stopping()) return;
    hooks_.detach(key.first, key.second);
    int64_t now = mono_now_ns();
    hooks_.record_detach(key.first, key.second, now);
    std::lock_guard lk(mu_);
    auto& w = libs_.at(key);
    spdlog::info("detached {} (dev {} inode {}): no process maps it and its path no longer names it", w.file.path,
                 key.first, key.second);
    // Forgotten, so that the same inode mapped again (a file restored) is
    // attached again; its rows keep the history.
    libs_.erase(key);
    ++stats_.detached;
  }
}

void LibraryWatch::start() { thread_ = std::thread([this] { run(); }); }

void LibraryWatch::stop() {
  {
    std::lock_guard lk(queue_mu_);
    stopping_ = true;
  }
  stop_flag_.store(true, std::memory_order_relaxed);
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void LibraryWatch::request(uint32_t tgid, const char* reason, int64_t trigger_mono_ns) {
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
    if (mappers_.erase(tgid) == 0) return;
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
    {
      std::unique_lock lk(queue_mu_);
      cv_.wait_until(lk, next_rescan, [&] { return stopping_ || !queue_.empty() || rescan_due_; });
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
