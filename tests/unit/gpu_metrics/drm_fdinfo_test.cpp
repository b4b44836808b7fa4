// The fdinfo parser on text fixtures of i915, xe and amdgpu (old and new
// memory keys), and the scanner on a fake /proc tree.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gpu_metrics/drm_fdinfo.h"
#include "test_util.h"

using namespace gpuobs;
using namespace gpuobs::gpumetrics;

namespace drm_fdinfo_test {

std::string fixture(const std::string& name) {
  return gpuobs::testing::file_bytes(std::string(GPUOBS_SOURCE_DIR) + "/tests/fixtures/fdinfo/" + name);
}

DrmFdinfo parsed(const std::string& name) {
  auto f = parse_drm_fdinfo(fixture(name));
  EXPECT_TRUE(f.ok()) << name << ": " << (f.ok() ? "" : f.error().message);
  return f.ok() ? *f : DrmFdinfo{};
}

const DrmEngineUsage& engine(const DrmFdinfo& f, const std::string& name) {
  for (const auto& e : f.engines)
    if (e.engine == name) return e;
  ADD_FAILURE() << "no engine " << name;
  static DrmEngineUsage none;
  return none;
}

const DrmMemoryUsage& region(const DrmFdinfo& f, const std::string& name) {
  for (const auto& r : f.memory)
    if (r.region == name) return r;
  ADD_FAILURE() << "no region " << name;
  static DrmMemoryUsage none;
  return none;
}

}  // namespace drm_fdinfo_test

using namespace drm_fdinfo_test;

TEST(DrmFdinfo, I915) {
  DrmFdinfo f = parsed("i915.txt");
  EXPECT_EQ(f.driver, "i915");
  EXPECT_EQ(f.pdev, "0000:00:02.0");
  EXPECT_EQ(f.client_id, 7u);
  EXPECT_EQ(f.bad_lines, 0u);
  ASSERT_EQ(f.engines.size(), 4u);
  EXPECT_EQ(f.engines[0].engine, "render");
  EXPECT_EQ(engine(f, "render").busy_ns, 15204537u);
  EXPECT_EQ(engine(f, "copy").busy_ns, 0u);
  EXPECT_EQ(engine(f, "video").busy_ns, 3000000u);
  EXPECT_EQ(engine(f, "video").capacity, 2u);
  EXPECT_FALSE(engine(f, "render").capacity.has_value());
  EXPECT_EQ(engine(f, "video-enhance").busy_ns, 0u);
  EXPECT_FALSE(engine(f, "render").cycles.has_value());
  ASSERT_EQ(f.memory.size(), 2u);
  EXPECT_EQ(region(f, "system0").total, 10240u * 1024);
  EXPECT_EQ(region(f, "system0").resident, 10240u * 1024);
  EXPECT_EQ(region(f, "system0").purgeable, 512u * 1024);
  EXPECT_EQ(region(f, "system0").shared, 0u);
  EXPECT_EQ(region(f, "stolen-system0").total, 0u);
}

TEST(DrmFdinfo, XeCountsCycles) {
  DrmFdinfo f = parsed("xe.txt");
  EXPECT_EQ(f.driver, "xe");
  EXPECT_EQ(f.client_id, 42u);
  ASSERT_EQ(f.engines.size(), 5u);
  EXPECT_EQ(engine(f, "rcs").cycles, 28257900u);
  EXPECT_EQ(engine(f, "rcs").total_cycles, 7655183225u);
  EXPECT_FALSE(engine(f, "rcs").busy_ns.has_value());
  EXPECT_EQ(engine(f, "vcs").capacity, 2u);
  EXPECT_EQ(engine(f, "ccs").capacity, 4u);
  EXPECT_EQ(engine(f, "ccs").cycles, 1000000u);
  ASSERT_EQ(f.memory.size(), 3u);
  EXPECT_EQ(region(f, "vram0").total, 24u << 20);
  EXPECT_EQ(region(f, "vram0").active, 8192u * 1024);
  EXPECT_EQ(region(f, "gtt").resident, 4096u);
}

TEST(DrmFdinfo, AmdgpuSkipsItsPrivateKeys) {
  DrmFdinfo f = parsed("amdgpu.txt");
  EXPECT_EQ(f.driver, "amdgpu");
  EXPECT_EQ(f.client_id, 91u);
  EXPECT_EQ(f.client_name, "radv");
  EXPECT_EQ(f.pdev, "0000:03:00.0");
  ASSERT_EQ(f.engines.size(), 5u);
  EXPECT_EQ(engine(f, "gfx").busy_ns, 1095478163u);
  EXPECT_EQ(engine(f, "compute").busy_ns, 25094u);
  EXPECT_EQ(engine(f, "enc").busy_ns, 0u);
  ASSERT_EQ(f.memory.size(), 3u);  // cpu, gtt, vram; amd-* are not drm- keys
  EXPECT_EQ(region(f, "vram").total, 124548u * 1024);
  EXPECT_EQ(region(f, "vram").active, 4096u * 1024);
  EXPECT_EQ(region(f, "cpu").resident, 0u);

  DrmFdinfo old = parsed("amdgpu_6.1.txt");
  EXPECT_EQ(old.client_id, 18u);
  ASSERT_EQ(old.memory.size(), 3u);
  EXPECT_EQ(region(old, "vram").memory, 65536u * 1024);
  EXPECT_FALSE(region(old, "vram").resident.has_value());
  EXPECT_EQ(engine(old, "gfx").busy_ns, 500000000u);
}

TEST(DrmFdinfo, BadValuesAreCountedAndNotADrmFileIsAnError) {
  auto f = parse_drm_fdinfo(
      "drm-driver:\txe\ndrm-engine-rcs:\t12 ms\ndrm-cycles-rcs:\tmany\ndrm-total-vram0:\t3 TB\ndrm-engine-:\t5 ns\n");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->bad_lines, 4u);
  ASSERT_EQ(f->engines.size(), 1u);  // rcs (its cycles key made it); never an unnamed one
  EXPECT_FALSE(engine(*f, "rcs").busy_ns.has_value());
  auto not_drm = parse_drm_fdinfo("pos:\t0\nflags:\t02\nmnt_id:\t26\n");
  ASSERT_FALSE(not_drm.ok());
  EXPECT_NE(not_drm.error().message.find("no drm-driver"), std::string::npos);
}

// /proc/<pid>/fd/<n> links and /proc/<pid>/fdinfo/<n> files in a temporary
// tree; DRM nodes are files under <tree>/dev/dri/.
class FakeProc : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(dir_.file("dev/dri"));
    std::ofstream(dir_.file("dev/dri/renderD128")).put('x');
    std::ofstream(dir_.file("dev/dri/card0")).put('x');
  }
  void fd(uint32_t pid, int n, const std::string& target, const std::string& fdinfo) {
    std::string p = dir_.file("proc/" + std::to_string(pid));
    std::filesystem::create_directories(p + "/fd");
    std::filesystem::create_directories(p + "/fdinfo");
    std::filesystem::create_symlink(target, p + "/fd/" + std::to_string(n));
    std::ofstream(p + "/fdinfo/" + std::to_string(n)) << fdinfo;
  }
  std::string dri(const std::string& node) { return dir_.file("dev/dri/" + node); }
  gpuobs::testing::TempDir dir_;
};

TEST_F(FakeProc, SamplesTheDrmFilesOfTheWantedProcesses) {
  fd(100, 3, dri("renderD128"), fixture("i915.txt"));
  fd(100, 4, dri("renderD128"), fixture("i915.txt"));  // a dup: the same client id
  fd(100, 5, "/dev/null", "pos:\t0\n");
  fd(200, 3, dri("card0"), fixture("xe.txt"));
  fd(300, 7, dri("renderD128"), "pos:\t0\nflags:\t02\n");  // a driver without usage stats
  std::filesystem::create_directories(dir_.file("proc/self"));
  DrmFdinfoScanner scan(dir_.file("proc"), dir_.file("dev/dri/"), 10'000'000'000);
  scan.set_filter([](uint32_t pid) { return pid != 200; });
  auto first = scan.sample(1'000);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].pid, 100u);
  EXPECT_EQ(first[0].fd, 3);
  EXPECT_EQ(first[0].mono_ns, 1'000);
  EXPECT_EQ(first[0].info.driver, "i915");
  EXPECT_EQ(scan.stats().scans, 1u);
  EXPECT_EQ(scan.stats().not_drm_stats, 1u);
  EXPECT_EQ(scan.stats().samples, 1u);

  // fd 3 closed between two samples (no rescan yet): counted, and the dup
  // carries the client on.
  std::filesystem::remove(dir_.file("proc/100/fdinfo/3"));
  auto second = scan.sample(2'000);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].fd, 4);
  EXPECT_EQ(scan.stats().unreadable, 1u);
  EXPECT_EQ(scan.stats().scans, 1u);

  DrmFdinfoScanner all(dir_.file("proc"), dir_.file("dev/dri/"));
  auto every = all.sample(0);
  ASSERT_EQ(every.size(), 2u);
  EXPECT_EQ(every[0].pid, 100u);
  EXPECT_EQ(every[1].pid, 200u);
  EXPECT_EQ(every[1].info.driver, "xe");
}
