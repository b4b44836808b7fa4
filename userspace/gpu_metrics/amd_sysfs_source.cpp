#include "gpu_metrics/amd_sysfs_source.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

namespace gpuobs::gpumetrics {
namespace {

namespace fs = std::filesystem;

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ' || line.back() == '\r')) line.pop_back();
  return line;
}

// uevent's PCI_SLOT_NAME (0000:03:00.0), or the device link's target name.
std::string pci_address(const std::string& device) {
  std::ifstream in(device + "/uevent");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("PCI_SLOT_NAME=", 0) == 0) return line.substr(14);
  std::error_code ec;
  auto target = fs::read_symlink(device, ec);
  return ec ? std::string() : target.filename().string();
}

}  // namespace

std::string AmdSysfsSource::default_root() {
  const char* env = std::getenv("GPUOBS_DRM_ROOT");
  return env && *env ? env : "/sys/class/drm";
}

AmdSysfsSource::AmdSysfsSource(std::string drm_root, uint32_t first_index) : root_(std::move(drm_root)) {
  std::error_code ec;
  std::vector<std::pair<int, std::string>> cards;
  static const std::regex card_re("card([0-9]+)");
  for (const auto& e : fs::directory_iterator(root_, ec)) {
    std::smatch m;
    std::string name = e.path().filename().string();
    if (!std::regex_match(name, m, card_re)) continue;  // cardN-DP-1 and the like are connectors
    cards.emplace_back(std::stoi(m[1].str()), e.path().string());
  }
  std::sort(cards.begin(), cards.end());
  for (const auto& [n, path] : cards) {
    std::string device = path + "/device";
    if (first_line(device + "/vendor") != "0x1002") continue;  // AMD's PCI vendor id
    Card c{device, {}};
    for (const auto& h : fs::directory_iterator(device + "/hwmon", ec))
      if (h.path().filename().string().rfind("hwmon", 0) == 0) {
        c.hwmon = h.path().string();
        break;
      }
    GpuInfo g;
    g.index = first_index + static_cast<uint32_t>(gpus_.size());
    g.vendor = "amd";
    g.pci_bus_id = pci_address(device);
    std::string unique = first_line(device + "/unique_id");
    g.uuid = unique.empty() ? g.pci_bus_id : unique;
    g.name = first_line(device + "/product_name");
    if (g.name.empty()) {
      std::string id = first_line(device + "/device");
      g.name = id.empty() ? "AMD GPU" : "AMD GPU " + id;
    }
    g.driver = first_line(device + "/driver/module/version");
    if (g.driver.empty()) g.driver = "amdgpu";
    double total = 0;
    if (read_number(device + "/mem_info_vram_total", total)) g.memory_total = static_cast<uint64_t>(total);
    gpus_.push_back(std::move(g));
    cards_.push_back(std::move(c));
  }
}

bool AmdSysfsSource::read_number(const std::string& path, double& v) {
  std::ifstream in(path);
  if (!in) return false;
  long double x = 0;
  if (!(in >> x)) {
    ++errors_;  // the file is there but holds no number: the driver refused (EBUSY, EINVAL)
    return false;
  }
  v = static_cast<double>(x);
  return true;
}

void AmdSysfsSource::sample(int64_t now_ns, SampleBatch& out) {
  for (size_t i = 0; i < cards_.size(); ++i) {
    const Card& c = cards_[i];
    uint32_t gpu = gpus_[i].index;
    auto put = [&](GpuMetric m, double v) { out.metrics.push_back(MetricSample{now_ns, gpu, m, v}); };
    double v = 0;
    if (read_number(c.device + "/gpu_busy_percent", v)) put(GpuMetric::gpu_util_pct, v);
    if (read_number(c.device + "/mem_busy_percent", v)) put(GpuMetric::mem_util_pct, v);
    if (read_number(c.device + "/mem_info_vram_used", v)) put(GpuMetric::mem_used_bytes, v);
    if (read_number(c.device + "/mem_info_vram_total", v)) put(GpuMetric::mem_total_bytes, v);
    if (c.hwmon.empty()) continue;
    // hwmon units: power in microwatts, temperature in millidegrees, clocks in Hz.
    if (read_number(c.hwmon + "/power1_average", v) || read_number(c.hwmon + "/power1_input", v))
      put(GpuMetric::power_mw, v / 1000);
    if (read_number(c.hwmon + "/temp1_input", v)) put(GpuMetric::temperature_c, v / 1000);
    if (read_number(c.hwmon + "/freq1_input", v)) put(GpuMetric::sm_clock_mhz, v / 1e6);
    if (read_number(c.hwmon + "/freq2_input", v)) put(GpuMetric::mem_clock_mhz, v / 1e6);
  }
}

SourceStatus AmdSysfsSource::status() const {
  return SourceStatus{"amd_sysfs", root_, gpus_.empty() ? "no AMD GPU" : "ok", static_cast<uint32_t>(gpus_.size())};
}

}  // namespace gpuobs::gpumetrics
