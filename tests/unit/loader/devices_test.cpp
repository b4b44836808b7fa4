#include "loader/devices.h"

#include "catalogue/driver_catalogue.h"
#include "common/split.h"
#include "unit/test_util.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <tuple>

using namespace gpuobs;

// /proc/devices as seen on the H100 host (abi-reference.md §1.1), plus kfd.
constexpr const char* kProcDevices = R"(Character devices:
  1 mem
  4 /dev/vc/0
  5 /dev/tty
195 nvidia
195 nvidiactl
238 nvidia-uvm
239 nvidia-nvswitch
241 nvidia-caps
510 kfd

Block devices:
  8 sd
195 nvidia
)";

TEST(Devices, FindsGpuDriverMajorsOnce) {
  auto devs = gpu_devices_from_proc_devices(kProcDevices);
  ASSERT_EQ(devs.size(), 3u);
  EXPECT_EQ(devs[0].major, 195u);
  EXPECT_EQ(devs[0].name, "nvidia");
  EXPECT_FALSE(devs[0].minor.has_value());
  EXPECT_EQ(devs[1].major, 238u);
  EXPECT_EQ(devs[1].name, "nvidia-uvm");
  EXPECT_EQ(devs[2].major, 510u);
  EXPECT_EQ(devs[2].name, "kfd");
}

TEST(Devices, NoGpuDriversNoDevices) {
  EXPECT_TRUE(gpu_devices_from_proc_devices("Character devices:\n  1 mem\n").empty());
}

TEST(Devices, ParsesSpecs) {
  auto a = parse_device_spec("195");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->major, 195u);
  EXPECT_FALSE(a->minor);
  auto b = parse_device_spec("238:1");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->major, 238u);
  EXPECT_EQ(*b->minor, 1u);
  auto c = parse_device_spec("/dev/null");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->major, 1u);
  EXPECT_EQ(*c->minor, 3u);
  EXPECT_FALSE(parse_device_spec("nvidia").ok());
  EXPECT_FALSE(parse_device_spec("1:x").ok());
  EXPECT_FALSE(parse_device_spec("/etc/passwd").ok());  // not a character device
}

TEST(SplitList, KeepsEmptyElementsLikePath) {
  EXPECT_EQ(split_list("/usr/bin::/bin"), (std::vector<std::string>{"/usr/bin", "", "/bin"}));
  EXPECT_EQ(split_list(""), (std::vector<std::string>{""}));
  EXPECT_EQ(split_list("a:"), (std::vector<std::string>{"a", ""}));
}

// A /sys fixture: /sys/dev/char/MAJOR:MINOR -> the node's directory, whose
// device/driver link names the driver (as on a host: .../drm/renderD128 ->
// device -> the PCI function -> driver -> .../drivers/i915).
namespace {
void drm_node(const std::string& root, const std::string& key, const std::string& node, const std::string& driver) {
  namespace fs = std::filesystem;
  fs::path pci = fs::path(root) / "devices" / ("pci-" + node);
  fs::path dir = pci / "drm" / node;
  fs::create_directories(dir);
  fs::create_directories(fs::path(root) / "dev" / "char");
  fs::create_directory_symlink(dir, fs::path(root) / "dev" / "char" / key);
  fs::create_directory_symlink(pci, dir / "device");
  if (!driver.empty()) {
    fs::create_directories(fs::path(root) / "bus" / "pci" / "drivers" / driver);
    fs::create_directory_symlink(fs::path(root) / "bus" / "pci" / "drivers" / driver, pci / "driver");
  }
}
}  // namespace

TEST(Devices, DrmNodesFromSysfs) {
  gpuobs::testing::TempDir t;
  drm_node(t.path(), "226:0", "card0", "i915");
  drm_node(t.path(), "226:128", "renderD128", "i915");
  drm_node(t.path(), "226:129", "renderD129", "amdgpu");
  drm_node(t.path(), "226:130", "renderD130", "xe");
  drm_node(t.path(), "226:1", "card1", "simpledrm");
  drm_node(t.path(), "226:131", "renderD131", "");  // no driver bound: not watched
  drm_node(t.path(), "1:3", "null", "mem");         // another major
  std::string proc = std::string(kProcDevices).replace(std::string(kProcDevices).find("195 nvidia\n"), 0, "226 drm\n");
  auto devs = drm_devices_from_sysfs(proc, t.path());
  ASSERT_EQ(devs.size(), 5u);
  auto at = [&](size_t i) { return std::make_tuple(devs[i].major, *devs[i].minor, devs[i].name, devs[i].driver); };
  EXPECT_EQ(at(0), std::make_tuple(226u, 0u, std::string("/dev/dri/card0"), uint32_t{GPUOBS_DRV_I915}));
  EXPECT_EQ(at(1), std::make_tuple(226u, 1u, std::string("/dev/dri/card1"), uint32_t{GPUOBS_DRV_DRM}));
  EXPECT_EQ(at(2), std::make_tuple(226u, 128u, std::string("/dev/dri/renderD128"), uint32_t{GPUOBS_DRV_I915}));
  EXPECT_EQ(at(3), std::make_tuple(226u, 129u, std::string("/dev/dri/renderD129"), uint32_t{GPUOBS_DRV_AMDGPU}));
  EXPECT_EQ(at(4), std::make_tuple(226u, 130u, std::string("/dev/dri/renderD130"), uint32_t{GPUOBS_DRV_XE}));
  // No drm major in /proc/devices (no DRM module loaded): nothing, whatever /sys holds.
  EXPECT_TRUE(drm_devices_from_sysfs(kProcDevices, t.path()).empty());
  // No /sys/dev/char: nothing, no error.
  EXPECT_TRUE(drm_devices_from_sysfs(proc, t.file("missing")).empty());
}

TEST(Devices, DrmDriverSpecs) {
  for (auto [spec, driver] :
       {std::pair{"i915=/dev/null", GPUOBS_DRV_I915}, std::pair{"xe=/dev/zero", GPUOBS_DRV_XE},
        std::pair{"amdgpu=/dev/full", GPUOBS_DRV_AMDGPU}, std::pair{"drm=/dev/null", GPUOBS_DRV_DRM}}) {
    auto d = parse_device_spec(spec);
    ASSERT_TRUE(d.ok()) << spec;
    EXPECT_EQ(d->driver, uint32_t(driver)) << spec;
  }
  EXPECT_EQ(driver_name(GPUOBS_DRV_AMDGPU), "amdgpu");
  EXPECT_EQ(driver_name(GPUOBS_DRV_DRM), "drm");
}
