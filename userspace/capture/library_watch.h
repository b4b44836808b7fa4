// Finding GPU runtime libraries wherever processes load them from: pip and
// conda copies, container images in other mount namespaces, copies at any
// path. A library is a file (device, inode); each is attached once, through a
// path that resolves to that inode from here (/proc/PID/root/PATH or
// /proc/PID/map_files/RANGE), and detached when no process maps it and its
// path no longer names it.
//
// Scans run on a worker thread: reading a process's maps, an ELF symbol
// table and creating uprobe links take milliseconds to seconds, and the
// ring consumer must keep draining meanwhile (docs/design.md, "Finding
// libraries").
//
// A process that maps a file BPF does not know is held (SIGSTOP from the
// mmap tracepoint, bpf/library.bpf.h) until that file's probes are live, then
// resumed; every mapping is reported as a LibraryMapRow saying whether the
// process could have called the library unseen (docs/design.md, "Holding a
// process at its first mapping").
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "capture/procfs.h"
#include "catalogue/api_spec.h"
#include "loader/engine.h"
#include "store/writer.h"  // ProbeRow, LibraryMapRow

namespace gpuobs {

// One library file known to the watch.
struct WatchedLibrary {
  LibraryFile file;    // path: as its process names it; realpath: the path attached through
  std::string reason;  // startup, mmap, exec, first_ioctl, rescan
  // Root-owned, in directories only root can change (the system's driver,
  // a container image's /usr/lib): kept while its path names it, and not
  // counted against a user. Otherwise owner_uid's, counted against its cap
  // and released as soon as no process maps it.
  bool trusted = true;
  uint32_t owner_uid = 0;
  uint32_t trigger_tgid = 0;
  int64_t trigger_mono_ns = 0, attached_mono_ns = 0, detached_mono_ns = 0;
  int probes_attached = 0, probes_failed = 0;
  std::string error;     // first probe error when none attached
  bool pending = false;  // admitted, its probes not made yet (never detached then)
  // The keys BPF's lib_known has for this file (the kernel's dev_t, inode):
  // its own, and the one a held process's mapping carried when it differs
  // (an overlayfs file seen through its upper inode).
  std::set<std::pair<uint32_t, uint64_t>> bpf_keys;
};

// A process mapped a GPU runtime library's code (GPUOBS_EV_LIB_MAP).
struct MapNotice {
  uint32_t tgid = 0;
  std::string comm, name;  // name: the file's base name
  uint32_t kdev = 0;       // the kernel's dev_t of the mapped file
  uint64_t ino = 0;
  uint32_t hold = 0;  // GPUOBS_LIB_*
  int64_t mapped_mono_ns = 0;
};

struct LibraryWatchStats {
  uint64_t scans = 0;            // process maps read
  uint64_t maps_unreadable = 0;  // the process was gone or refused
  uint64_t unresolved = 0;       // a mapped library no path from here reached
  uint64_t attached = 0;         // libraries attached at run time (after startup)
  uint64_t attach_failed = 0;    // libraries with no probe attached
  uint64_t probes_failed = 0;    // probe rows 'failed' on libraries found in maps
  uint64_t probes_attached = 0;  // probes attached on libraries found in maps
  uint64_t detached = 0;
  // Files not attached because a cap was reached (each file counted once,
  // and logged once, while it stays refused).
  uint64_t refused_total_cap = 0;  // library_max_files
  uint64_t refused_user_cap = 0;   // library_max_files_per_user
  // Holds (a process stopped at its first mapping of an unknown file).
  uint64_t holds = 0;           // processes held
  uint64_t holds_released = 0;  // resumed (timed out ones included)
  uint64_t detach_kept = 0;     // a detach called off: a process mapped the file after the scan
  uint64_t hold_timeouts = 0;   // resumed after hold_max_ms without their probes
  uint64_t holds_adopted = 0;   // found in BPF's lib_held without their record (a full ring)
  uint64_t hold_ns_total = 0, hold_ns_max = 0;
  // Mappings after which a process could call its library unseen (rows
  // with calls_before_attach = 1), and the first one's reason.
  uint64_t maps = 0;
  uint64_t calls_before_attach = 0;
  std::string first_miss;
};

struct LibraryWatchLimits {
  uint32_t max_files = 64;          // library files with probes, in all
  uint32_t max_files_per_user = 8;  // of them, untrusted files of one owner
  // Daemon: every process on the host (a startup scan and rescans of /proc).
  // Record: only the processes that sent a trigger (the recorded tree).
  bool host_wide = true;
  // A held process is resumed after this long even without its probes (the
  // mapping is then reported calls_before_attach = 1, "hold timed out").
  uint32_t hold_max_ms = 2000;
};

class LibraryWatch {
 public:
  struct Hooks {
    std::function<std::vector<ProbeResult>(const LibraryFile&, std::span<const ApiSpec>)> attach;
    std::function<void(uint64_t dev, uint64_t ino)> detach;
    std::function<void(std::vector<ProbeRow>)> record;  // probe rows
    std::function<void(uint64_t dev, uint64_t ino, int64_t mono_ns)> record_detach;
    // BPF's lib_known: a file's probes are live (GPUOBS_KNOWN_ATTACHED), it
    // carries none (GPUOBS_KNOWN_UNPROBED), or it is forgotten (value 0).
    std::function<void(uint32_t kdev, uint64_t ino, uint32_t value)> known;
    // Resumes a held process (its lib_held entry deleted, then SIGCONT).
    std::function<void(uint32_t tgid)> resume;
    // BPF's lib_held: tgid -> the hold's CLOCK_MONOTONIC ns.
    std::function<std::vector<std::pair<uint32_t, int64_t>>()> held_in_bpf;
    std::function<void(LibraryMapRow)> mapped;  // a mapping's row
  };
  LibraryWatch(Hooks hooks, std::chrono::milliseconds rescan_every, LibraryWatchLimits limits = {},
               std::string proc_root = "/proc");
  ~LibraryWatch();

  // A library attached by the plan (system discovery or --libcuda): known, so
  // never attached twice; detached like any other when gone.
  void add_known(const LibraryFile& file, const std::vector<ProbeResult>& results);
  // Every process's maps, on the calling thread (at start, before capturing).
  void scan_all(const char* reason);
  void start();
  void stop();
  // Non-blocking: scan this process's maps soon (the worker coalesces).
  void request(uint32_t tgid, const char* reason, int64_t trigger_mono_ns);
  // A process that mapped a GPU library exited: rescan soon, so its library
  // is detached promptly when it was the last user of a file that is gone.
  void process_exited(uint32_t tgid);
  // A process mapped a GPU runtime's code: scanned (first, when BPF held
  // it, then resumed once what it maps carries probes), and its row reported.
  void on_map(const MapNotice& n);
  // The daemon's start-up: every process found mapping a GPU runtime before
  // it started could have called it unseen (one row each).
  void report_running_mappers();
  // Processes held now (tests, status).
  size_t held() const;

  std::vector<WatchedLibrary> libraries() const;
  LibraryWatchStats stats() const;

 private:
  struct Request {
    uint32_t tgid;
    const char* reason;
    int64_t trigger_mono_ns;
  };
  using Key = std::pair<uint64_t, uint64_t>;
  void run();
  // Attaches what this process maps that is not known yet; adds the keys it
  // maps to `mapped` when given.
  void scan_process(uint32_t tgid, const char* reason, int64_t trigger_mono_ns, std::set<Key>* mapped);
  // Holds (mu_ held by the caller where it says _locked).
  struct Held {
    MapNotice n;
    bool scanned = false;                            // its maps were read since the hold
    std::set<Key> awaiting;                          // files it maps whose probes are being made
    std::vector<std::pair<Key, std::string>> found;  // runtimes it maps: key, path
  };
  // After a scan of a held process: resumed unless a file it maps is pending.
  void settle_held(uint32_t tgid, std::vector<std::pair<Key, std::string>> found);
  // Resumes it and reports its row; `timeout` names why when not attached.
  void finish_hold_locked(std::map<uint32_t, Held>::iterator it, const std::string& timeout);
  void file_ready_locked(const Key& key);  // a pending file's probes are done
  void expire_holds();
  void adopt_orphans();  // holds whose record was lost
  void mark_known_locked(WatchedLibrary& w, uint32_t kdev, uint64_t ino, uint32_t value);
  void report_locked(LibraryMapRow row);
  void request_first(uint32_t tgid, const char* reason, int64_t trigger_mono_ns);
  // Whether any process maps this file's code now (/proc/*/maps): the
  // check between unmarking a file in BPF and taking its probes off.
  bool mapped_by_any_process(const Key& key);
  void detach_gone(const std::set<Key>& mapped);
  // Scans what is queued now (between the processes of a long rescan),
  // adding what those processes map to `mapped`.
  void serve_queued(std::set<Key>* mapped);
  // A file admitted by a scan, pinned by fd, waiting for its probes.
  struct PendingAttach {
    std::pair<uint64_t, uint64_t> key;
    WatchedLibrary lib;
    int fd = -1;
  };
  void attach_now(PendingAttach& job);  // makes the probes, closes the fd
  void run_attacher();
  // Room under the caps for one more file of this kind; logs and counts a
  // refusal (once per file) when there is none.
  bool admit(const Key& key, const LibraryFile& f, bool trusted, uint32_t owner, uint32_t tgid);

  Hooks hooks_;
  std::chrono::milliseconds rescan_every_;
  LibraryWatchLimits limits_;
  std::string proc_root_;
  uint32_t self_ = 0;

  mutable std::mutex mu_;  // libs_ and stats_ (read by the session's accessors)
  std::map<Key, WatchedLibrary> libs_;
  std::set<uint32_t> mappers_;  // processes seen mapping a GPU library
  // Of them, those that map a file released with its last process (not
  // trusted): only their exit makes a rescan worth its cost (every
  // process's maps); a trusted file stays while installed.
  std::set<uint32_t> untrusted_mappers_;
  std::set<uint32_t> triggered_;  // !host_wide: the processes rescans look at
  std::set<Key> refused_;         // files refused (counted and logged once)
  LibraryWatchStats stats_;
  std::map<uint32_t, Held> held_;  // processes BPF stopped, by tgid
  // lib_known entries marked unprobed (no file of libs_ owns them): forgotten
  // when a detach makes room, so the next mapping tries again.
  std::set<std::pair<uint32_t, uint64_t>> unprobed_keys_;
  std::map<std::pair<uint32_t, uint64_t>, std::string> unprobed_why_;
  int64_t orphans_checked_ns_ = 0;

  std::mutex queue_mu_;
  std::condition_variable cv_;
  std::deque<Request> queue_;
  bool stopping_ = false;
  std::unordered_set<uint32_t> queued_;  // the tgids in queue_
  // stopping_ without the lock, read inside long scans.
  std::atomic<bool> stop_flag_{false};
  bool stopping() const { return stop_flag_.load(std::memory_order_relaxed); }
  bool rescan_due_ = false;
  std::thread thread_;
  // Attaches run on their own thread: one can wait hundreds of ms in the
  // kernel on a busy host, while the scans must read the next short-lived
  // process's maps before it exits.
  bool async_attach_ = false;  // false until start(): the startup scan attaches inline
  std::mutex attach_mu_;
  std::condition_variable attach_cv_;
  std::deque<PendingAttach> attach_queue_;
  std::thread attacher_;
};

}  // namespace gpuobs
