#include "gpu_metrics/drm_fdinfo.h"

#include <dirent.h>
#include <unistd.h>

#include <climits>
#include <fstream>
#include <sstream>

namespace gpuobs::gpumetrics {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// "<digits>[ unit]"; the unit must be one of `units` (with its factor), or
// absent when allow_bare.
std::optional<uint64_t> value_with_unit(std::string_view v,
                                        std::initializer_list<std::pair<std::string_view, uint64_t>> units,
                                        bool allow_bare) {
  size_t n = 0;
  uint64_t x = 0;
  while (n < v.size() && v[n] >= '0' && v[n] <= '9') {
    uint64_t d = static_cast<uint64_t>(v[n] - '0');
    if (x > (UINT64_MAX - d) / 10) return std::nullopt;
    x = x * 10 + d;
    ++n;
  }
  if (n == 0) return std::nullopt;
  std::string_view unit = trim(v.substr(n));
  if (unit.empty()) {
    if (!allow_bare) return std::nullopt;
    return x;
  }
  for (const auto& [name, factor] : units)
    if (unit == name) {
      if (factor && x > UINT64_MAX / factor) return std::nullopt;
      return x * factor;
    }
  return std::nullopt;
}

std::optional<uint64_t> plain(std::string_view v) { return value_with_unit(v, {}, true); }

std::optional<uint64_t> bytes(std::string_view v) {
  return value_with_unit(v, {{"KiB", 1024}, {"MiB", 1024 * 1024}, {"GiB", 1024ull * 1024 * 1024}}, true);
}

DrmEngineUsage& engine(DrmFdinfo& f, std::string_view name) {
  for (auto& e : f.engines)
    if (e.engine == name) return e;
  f.engines.push_back(DrmEngineUsage{std::string(name), {}, {}, {}, {}});
  return f.engines.back();
}

DrmMemoryUsage& region(DrmFdinfo& f, std::string_view name) {
  for (auto& r : f.memory)
    if (r.region == name) return r;
  f.memory.push_back(DrmMemoryUsage{std::string(name), {}, {}, {}, {}, {}, {}});
  return f.memory.back();
}

bool starts(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

}  // namespace

Result<DrmFdinfo> parse_drm_fdinfo(std::string_view text) {
  DrmFdinfo f;
  bool have_driver = false;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    std::string_view line = text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    pos = end == std::string_view::npos ? text.size() : end + 1;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = trim(line.substr(0, colon));
    std::string_view val = trim(line.substr(colon + 1));
    if (!starts(key, "drm-")) continue;  // pos:, flags:, mnt_id:, ino: and driver-private keys
    // A per-engine or per-region key must name its engine or region.
    bool unnamed = false;
    for (std::string_view p :
         {"drm-engine-capacity-", "drm-engine-", "drm-total-cycles-", "drm-cycles-", "drm-maxfreq-", "drm-total-",
          "drm-shared-", "drm-resident-", "drm-purgeable-", "drm-active-", "drm-memory-"})
      if (starts(key, p)) {
        unnamed = key.size() == p.size();
        break;
      }
    if (unnamed) {
      ++f.bad_lines;
      continue;
    }
    std::optional<uint64_t> v;
    bool ok = true;
    // The longer prefixes first: drm-engine-capacity- before drm-engine-,
    // drm-total-cycles- before drm-total-.
    if (key == "drm-driver") {
      f.driver = std::string(val);
      have_driver = !val.empty();
    } else if (key == "drm-pdev") {
      f.pdev = std::string(val);
    } else if (key == "drm-client-id") {
      ok = (f.client_id = plain(val)).has_value();
    } else if (key == "drm-client-name") {
      f.client_name = std::string(val);
    } else if (starts(key, "drm-engine-capacity-")) {
      ok = (engine(f, key.substr(20)).capacity = plain(val)).has_value();
    } else if (starts(key, "drm-engine-")) {
      ok = (v = value_with_unit(val, {{"ns", 1}}, false)).has_value();
      if (ok) engine(f, key.substr(11)).busy_ns = v;
    } else if (starts(key, "drm-total-cycles-")) {
      ok = (engine(f, key.substr(17)).total_cycles = plain(val)).has_value();
    } else if (starts(key, "drm-cycles-")) {
      ok = (engine(f, key.substr(11)).cycles = plain(val)).has_value();
    } else if (starts(key, "drm-maxfreq-")) {
      // The engine's top frequency: not a use, not stored.
    } else if (starts(key, "drm-total-")) {
      ok = (region(f, key.substr(10)).total = bytes(val)).has_value();
    } else if (starts(key, "drm-shared-")) {
      ok = (region(f, key.substr(11)).shared = bytes(val)).has_value();
    } else if (starts(key, "drm-resident-")) {
      ok = (region(f, key.substr(13)).resident = bytes(val)).has_value();
    } else if (starts(key, "drm-purgeable-")) {
      ok = (region(f, key.substr(14)).purgeable = bytes(val)).has_value();
    } else if (starts(key, "drm-active-")) {
      ok = (region(f, key.substr(11)).active = bytes(val)).has_value();
    } else if (starts(key, "drm-memory-")) {
      ok = (region(f, key.substr(11)).memory = bytes(val)).has_value();
    }
    if (!ok) ++f.bad_lines;
  }
  if (!have_driver) return make_error("no drm-driver key: not a DRM client's fdinfo");
  return f;
}

DrmFdinfoScanner::DrmFdinfoScanner(std::string proc_root, std::string dri_prefix, int64_t rescan_ns)
    : proc_root_(std::move(proc_root)), dri_prefix_(std::move(dri_prefix)), rescan_ns_(rescan_ns) {}

void DrmFdinfoScanner::rescan() {
  ++stats_.scans;
  fds_.clear();
  DIR* proc = ::opendir(proc_root_.c_str());
  if (!proc) return;
  while (dirent* de = ::readdir(proc)) {
    char* endp = nullptr;
    unsigned long pid = std::strtoul(de->d_name, &endp, 10);
    if (!endp || *endp || pid == 0 || pid > UINT32_MAX) continue;
    if (wanted_ && !wanted_(static_cast<uint32_t>(pid))) continue;
    std::string fd_dir = proc_root_ + "/" + de->d_name + "/fd";
    DIR* fds = ::opendir(fd_dir.c_str());
    if (!fds) continue;  // gone, or not ours to read
    while (dirent* fe = ::readdir(fds)) {
      long fd = std::strtol(fe->d_name, &endp, 10);
      if (!endp || *endp || fe->d_name[0] == '.' || fd < 0 || fd > INT32_MAX) continue;
      char target[PATH_MAX];
      ssize_t n = ::readlink((fd_dir + "/" + fe->d_name).c_str(), target, sizeof target - 1);
      if (n <= 0) continue;
      if (std::string_view(target, static_cast<size_t>(n)).substr(0, dri_prefix_.size()) == dri_prefix_)
        fds_.insert({static_cast<uint32_t>(pid), static_cast<int32_t>(fd)});
    }
    ::closedir(fds);
  }
  ::closedir(proc);
}

std::vector<DrmClientSample> DrmFdinfoScanner::sample(int64_t now_ns) {
  if (last_scan_ns_ == INT64_MIN || now_ns - last_scan_ns_ >= rescan_ns_) {
    rescan();
    last_scan_ns_ = now_ns;
  }
  std::vector<DrmClientSample> out;
  std::set<std::pair<uint32_t, uint64_t>> seen;  // (pid, client id): one DRM file on several fds
  for (auto it = fds_.begin(); it != fds_.end();) {
    auto [pid, fd] = *it;
    std::ifstream in(proc_root_ + "/" + std::to_string(pid) + "/fdinfo/" + std::to_string(fd));
    std::stringstream ss;
    if (in) ss << in.rdbuf();
    if (!in) {
      ++stats_.unreadable;
      it = fds_.erase(it);  // closed or gone: the next rescan finds it again if it is back
      continue;
    }
    ++it;
    auto info = parse_drm_fdinfo(ss.str());
    if (!info) {
      ++stats_.not_drm_stats;
      continue;
    }
    stats_.bad_lines += info->bad_lines;
    if (info->client_id && !seen.insert({pid, *info->client_id}).second) continue;
    ++stats_.samples;
    out.push_back(DrmClientSample{now_ns, pid, fd, std::move(*info)});
  }
  return out;
}

}  // namespace gpuobs::gpumetrics
