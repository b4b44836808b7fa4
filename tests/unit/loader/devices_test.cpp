#include "loader/devices.h"

#include "common/split.h"

#include <gtest/gtest.h>

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
