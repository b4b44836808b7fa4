#include "loader/devices.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "catalogue/driver_catalogue.h"

namespace gpuobs {
namespace {

// Names the GPU drivers register (OGKM nv.c / uvm.c, amdkfd kfd_chardev.c).
constexpr std::array<std::string_view, 4> kGpuDriverNames = {"nvidia", "nvidiactl", "nvidia-uvm", "kfd"};

std::optional<uint32_t> parse_u32(std::string_view s) {
  uint32_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

std::vector<DeviceMatch> gpu_devices_from_proc_devices(std::string_view text) {
  std::vector<DeviceMatch> out;
  std::istringstream in{std::string(text)};
  std::string line;
  bool in_char = false;
  while (std::getline(in, line)) {
    if (line.rfind("Character devices:", 0) == 0) {
      in_char = true;
      continue;
    }
    if (line.rfind("Block devices:", 0) == 0) {
      in_char = false;
      continue;
    }
    if (!in_char) continue;
    std::istringstream ls(line);
    uint32_t major = 0;
    std::string name;
    if (!(ls >> major >> name)) continue;
    for (auto want : kGpuDriverNames) {
      if (name != want) continue;
      bool seen = false;
      for (auto& d : out) seen |= d.major == major;
      if (!seen) out.push_back(DeviceMatch{major, std::nullopt, name, driver_from_name(name)});
    }
  }
  return out;
}

static Result<DeviceMatch> parse_plain_spec(std::string_view spec);

std::vector<DeviceMatch> drm_devices_from_sysfs(std::string_view proc_devices, const std::string& sys_root) {
  std::optional<uint32_t> drm_major;
  std::istringstream in{std::string(proc_devices)};
  std::string line;
  bool in_char = false;
  while (std::getline(in, line) && !drm_major) {
    if (line.rfind("Character devices:", 0) == 0) in_char = true;
    else if (line.rfind("Block devices:", 0) == 0) in_char = false;
    std::istringstream ls(line);
    uint32_t major = 0;
    std::string name;
    if (in_char && ls >> major >> name && name == "drm") drm_major = major;
  }
  std::vector<DeviceMatch> out;
  if (!drm_major) return out;
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string prefix = std::to_string(*drm_major) + ":";
  for (const auto& entry : fs::directory_iterator(fs::path(sys_root) / "dev" / "char", ec)) {
    std::string key = entry.path().filename().string();
    if (key.rfind(prefix, 0) != 0) continue;
    auto minor = parse_u32(std::string_view(key).substr(prefix.size()));
    if (!minor) continue;
    // A node without a bound driver (being probed or unbound) has nothing to watch.
    fs::path driver = fs::read_symlink(entry.path() / "device" / "driver", ec);
    if (ec) continue;
    fs::path node = fs::read_symlink(entry.path(), ec);
    std::string node_name = ec ? key : node.filename().string();
    uint32_t kind = driver_from_name(driver.filename().string());
    if (kind != GPUOBS_DRV_I915 && kind != GPUOBS_DRV_XE && kind != GPUOBS_DRV_AMDGPU) kind = GPUOBS_DRV_DRM;
    out.push_back(DeviceMatch{*drm_major, *minor, "/dev/dri/" + node_name, kind});
  }
  ec.clear();
  // directory_iterator's order is the file system's: sort for a stable list.
  std::sort(out.begin(), out.end(), [](const DeviceMatch& a, const DeviceMatch& b) { return a.minor < b.minor; });
  return out;
}

std::vector<DeviceMatch> gpu_devices_on_host() {
  std::ifstream f("/proc/devices");
  std::stringstream ss;
  ss << f.rdbuf();
  std::vector<DeviceMatch> devs = gpu_devices_from_proc_devices(ss.str());
  for (auto& d : drm_devices_from_sysfs(ss.str(), "/sys")) devs.push_back(std::move(d));
  return devs;
}

Result<DeviceMatch> parse_device_spec(std::string_view full) {
  std::string_view spec = full;
  uint32_t driver = GPUOBS_DRV_OTHER;
  if (auto eq = spec.find('='); eq != std::string_view::npos) {
    driver = driver_from_name(spec.substr(0, eq));
    if (driver == GPUOBS_DRV_OTHER)
      return make_error(
          "unknown driver '" + std::string(spec.substr(0, eq)) + "' in device spec '" + std::string(full) + "'",
          "use nvidia=, nvidia-uvm=, kfd=, i915=, xe=, amdgpu= or drm= before the device", 2);
    spec = spec.substr(eq + 1);
  }
  auto m = parse_plain_spec(spec);
  if (m) {
    m->driver = driver;
    m->name = std::string(full);
  }
  return m;
}

static Result<DeviceMatch> parse_plain_spec(std::string_view spec) {
  if (!spec.empty() && spec.front() == '/') {
    struct stat st {};
    std::string path(spec);
    if (::stat(path.c_str(), &st) != 0) return make_error("cannot stat device " + path + ": " + std::strerror(errno));
    if (!S_ISCHR(st.st_mode)) return make_error(path + " is not a character device");
    return DeviceMatch{major(st.st_rdev), minor(st.st_rdev), path};
  }
  auto colon = spec.find(':');
  auto maj = parse_u32(spec.substr(0, colon));
  if (!maj) return make_error("bad device spec '" + std::string(spec) + "'", "use MAJOR, MAJOR:MINOR or a /dev path");
  DeviceMatch m{*maj, std::nullopt, std::string(spec)};
  if (colon != std::string_view::npos) {
    auto min = parse_u32(spec.substr(colon + 1));
    if (!min) return make_error("bad device spec '" + std::string(spec) + "'", "use MAJOR, MAJOR:MINOR or a /dev path");
    m.minor = *min;
  }
  return m;
}

}  // namespace gpuobs
