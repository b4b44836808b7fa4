// What a DRM file says of its client in /proc/PID/fdinfo/FD: the driver,
// the device, the client id, per-engine busy time and cycles and per-region
// memory (the kernel's Documentation/gpu/drm-usage-stats.rst). i915, xe,
// amdgpu, msm, panfrost, v3d... print it for their render and card nodes;
// no vendor library is involved.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace gpuobs::gpumetrics {

// One engine's keys (drm-engine-<e>, drm-engine-capacity-<e>, drm-cycles-<e>,
// drm-total-cycles-<e>); a key the driver does not print is absent.
struct DrmEngineUsage {
  std::string engine;                    // "render", "gfx", "rcs", "video", "compute", ...
  std::optional<uint64_t> busy_ns;       // drm-engine-<e>: time the client's work was busy on it
  std::optional<uint64_t> capacity;      // drm-engine-capacity-<e>: engines of the kind (busy_ns can reach it * wall)
  std::optional<uint64_t> cycles;        // drm-cycles-<e>: GPU cycles the client's work used (xe)
  std::optional<uint64_t> total_cycles;  // drm-total-cycles-<e>: cycles elapsed on the engine (the denominator)
};

// One memory region's keys (drm-total-<r>, drm-shared-<r>, drm-resident-<r>,
// drm-purgeable-<r>, drm-active-<r>, and the older drm-memory-<r>), in bytes.
struct DrmMemoryUsage {
  std::string region;  // "system", "vram", "gtt", "local0", "stolen-system", ...
  std::optional<uint64_t> total, shared, resident, purgeable, active;
  std::optional<uint64_t> memory;  // drm-memory-<r> (amdgpu, before drm-resident-)
};

struct DrmFdinfo {
  std::string driver;                   // drm-driver (mandatory: its absence means "not a DRM file")
  std::string pdev;                     // drm-pdev: the PCI address ("0000:03:00.0")
  std::optional<uint64_t> client_id;    // drm-client-id: one per open DRM file, system-wide
  std::string client_name;              // drm-client-name (set by the client, 6.15+)
  std::vector<DrmEngineUsage> engines;  // in the order first seen
  std::vector<DrmMemoryUsage> memory;
  uint32_t bad_lines = 0;  // drm-* lines whose value did not parse (kept out)
};

// Parses the text of one fdinfo file. An error when it has no drm-driver
// key (not a DRM file, or a kernel without usage stats).
Result<DrmFdinfo> parse_drm_fdinfo(std::string_view text);

// One DRM client as sampled.
struct DrmClientSample {
  int64_t mono_ns = 0;
  uint32_t pid = 0;
  int32_t fd = 0;
  DrmFdinfo info;
};

struct DrmScanStats {
  uint64_t scans = 0;          // looks through the processes' fds
  uint64_t samples = 0;        // fdinfo files read and parsed
  uint64_t unreadable = 0;     // fdinfo files that could not be read (the fd closed, the process gone)
  uint64_t not_drm_stats = 0;  // DRM fds whose fdinfo has no drm-driver (a driver without usage stats)
  uint64_t bad_lines = 0;      // drm-* lines that did not parse
};

// Finds the DRM files processes hold (an fd whose /proc/PID/fd link names a
// node under dri_prefix, /dev/dri/ for real) and reads their fdinfo. A look
// for new fds every rescan_ns; the known ones are read at every sample.
// The /proc root and the prefix are inputs so that tests run on a fake tree.
class DrmFdinfoScanner {
 public:
  explicit DrmFdinfoScanner(std::string proc_root = "/proc", std::string dri_prefix = "/dev/dri/",
                            int64_t rescan_ns = 1'000'000'000);
  // Only these processes (record mode: the recorded tree); all when unset.
  void set_filter(std::function<bool(uint32_t)> wanted) { wanted_ = std::move(wanted); }
  // One sample of every DRM client known at now_ns; a client open on
  // several fds (dup, fork) is read once per process.
  std::vector<DrmClientSample> sample(int64_t now_ns);
  const DrmScanStats& stats() const { return stats_; }

 private:
  void rescan();
  std::string proc_root_, dri_prefix_;
  int64_t rescan_ns_;
  int64_t last_scan_ns_ = INT64_MIN;
  std::function<bool(uint32_t)> wanted_;
  std::set<std::pair<uint32_t, int32_t>> fds_;  // (pid, fd)
  DrmScanStats stats_;
};

}  // namespace gpuobs::gpumetrics
