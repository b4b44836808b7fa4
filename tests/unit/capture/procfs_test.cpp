// /proc parsers behind process attribution and library discovery: cgroup
// files as systemd, Docker, containerd, CRI-O, Podman and Kubernetes write
// them, and maps lines of GPU libraries (pip copies, deleted files).
#include <gtest/gtest.h>

#include "capture/procfs.h"

using namespace gpuobs;

namespace {
const std::string kId = "3f4e9c2a1b0d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f";
}

TEST(Cgroup, V2LineIsThePath) {
  EXPECT_EQ(cgroup_path_from_file("0::/user.slice/user-1000.slice/session-3.scope\n"),
            "/user.slice/user-1000.slice/session-3.scope");
  // Hybrid host: v1 lines first, the unified line last.
  EXPECT_EQ(cgroup_path_from_file("12:memory:/docker/" + kId + "\n1:name=systemd:/docker/" + kId + "\n0::/docker/" +
                                  kId + "\n"),
            "/docker/" + kId);
  // v1 only: the name=systemd hierarchy.
  EXPECT_EQ(cgroup_path_from_file("4:cpu,cpuacct:/a\n1:name=systemd:/system.slice/x.service\n"),
            "/system.slice/x.service");
  EXPECT_EQ(cgroup_path_from_file(""), "");
  EXPECT_EQ(cgroup_path_from_file("garbage without colons\n"), "");
}

TEST(Cgroup, ContainerIdFromEveryRuntimeLayout) {
  EXPECT_EQ(container_id_from_cgroup("/system.slice/docker-" + kId + ".scope"), kId);
  EXPECT_EQ(container_id_from_cgroup("/docker/" + kId), kId);
  EXPECT_EQ(
      container_id_from_cgroup("/kubepods.slice/kubepods-burstable.slice/"
                               "kubepods-burstable-pod1b2c3d4e_5f60_7182_93a4_b5c6d7e8f901.slice/cri-containerd-" +
                               kId + ".scope"),
      kId);
  EXPECT_EQ(container_id_from_cgroup("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podx.slice/crio-" +
                                     kId + ".scope"),
            kId);
  EXPECT_EQ(container_id_from_cgroup("/machine.slice/libpod-" + kId + ".scope/container"), kId);
  EXPECT_EQ(container_id_from_cgroup("/kubepods/burstable/pod1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901/" + kId), kId);
  // Not containers: a user session, a service, a short or upper-case id, conmon's scope.
  EXPECT_EQ(container_id_from_cgroup("/user.slice/user-1000.slice/session-3.scope"), "");
  EXPECT_EQ(container_id_from_cgroup("/system.slice/docker.service"), "");
  EXPECT_EQ(container_id_from_cgroup("/docker/" + kId.substr(1)), "");
  std::string upper = kId;
  for (auto& c : upper) c = static_cast<char>(std::toupper(c));
  EXPECT_EQ(container_id_from_cgroup("/docker/" + upper), "");
  EXPECT_EQ(container_id_from_cgroup("/machine.slice/libpod-conmon-" + kId + ".scope"), "");
  EXPECT_EQ(container_id_from_cgroup("/"), "");
  // Nested: the innermost container.
  std::string inner(64, 'a');
  EXPECT_EQ(container_id_from_cgroup("/docker/" + kId + "/docker/" + inner), inner);
}

TEST(Maps, GpuRuntimeNames) {
  EXPECT_TRUE(is_gpu_runtime_name("/usr/lib/x86_64-linux-gnu/libcuda.so.1"));
  EXPECT_TRUE(is_gpu_runtime_name("/usr/lib/x86_64-linux-gnu/libcuda.so.580.65.06"));
  EXPECT_TRUE(is_gpu_runtime_name("/opt/conda/lib/python3.11/site-packages/nvidia/lib/libcuda.so"));
  EXPECT_TRUE(is_gpu_runtime_name("/opt/rocm/lib/libamdhip64.so.6"));
  EXPECT_TRUE(is_gpu_runtime_name("/usr/lib/x86_64-linux-gnu/libze_loader.so.1.8.0"));
  EXPECT_FALSE(is_gpu_runtime_name("/usr/lib/x86_64-linux-gnu/libze_tracing_layer.so.1"));
  EXPECT_FALSE(is_gpu_runtime_name("/usr/lib/x86_64-linux-gnu/libcudart.so.12"));
  EXPECT_FALSE(is_gpu_runtime_name("/usr/lib/libcuda.so.1.bak"));
  EXPECT_FALSE(is_gpu_runtime_name("/usr/lib/libcudadebugger.so.1"));
}

TEST(Maps, OneEntryPerFileWithRangeDeviceInodeAndDeletedFlag) {
  std::string maps =
      "55d0c0a00000-55d0c0a01000 r--p 00000000 fd:01 1234 /usr/bin/python3.11\n"
      "7f1200000000-7f1200200000 r--p 00000000 fd:01 98765 "
      "/home/u/.venv/lib/python3.11/site-packages/torch/lib/libcuda.so.1\n"
      "7f1200200000-7f1200900000 r-xp 00200000 fd:01 98765 "
      "/home/u/.venv/lib/python3.11/site-packages/torch/lib/libcuda.so.1\n"
      "7f1300000000-7f1300100000 r-xp 00000000 00:2d 555 /tmp/copy/libcuda.so.1 (deleted)\n"
      "7f1400000000-7f1400100000 r-xp 00000000 103:02 777 /opt/rocm-6.1.0/lib/libamdhip64.so.6.1.60100\n"
      "7f1500000000-7f1500001000 rw-p 00000000 00:00 0 \n"
      "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n";
  auto libs = gpu_libraries_in_maps(maps);
  ASSERT_EQ(libs.size(), 3u);
  EXPECT_EQ(libs[0].range, "7f1200000000-7f1200200000");
  EXPECT_EQ(libs[0].dev_major, 0xfdu);
  EXPECT_EQ(libs[0].dev_minor, 1u);
  EXPECT_EQ(libs[0].inode, 98765u);
  EXPECT_EQ(libs[0].path, "/home/u/.venv/lib/python3.11/site-packages/torch/lib/libcuda.so.1");
  EXPECT_FALSE(libs[0].deleted);
  EXPECT_EQ(libs[1].path, "/tmp/copy/libcuda.so.1");
  EXPECT_TRUE(libs[1].deleted);
  EXPECT_EQ(libs[1].dev_major, 0u);
  EXPECT_EQ(libs[1].dev_minor, 0x2du);
  EXPECT_EQ(libs[2].dev_major, 0x103u);
  EXPECT_EQ(libs[2].inode, 777u);
  EXPECT_TRUE(gpu_libraries_in_maps("").empty());
  EXPECT_TRUE(gpu_libraries_in_maps("not a maps line\n7f-7g r x y z\n").empty());
}

TEST(Origin, ThisProcess) {
  auto o = read_process_origin(static_cast<uint32_t>(::getpid()));
  ASSERT_TRUE(o.has_value());
  EXPECT_FALSE(o->cgroup.empty());
  EXPECT_EQ(o->cgroup[0], '/');
  EXPECT_FALSE(read_process_origin(0x7ffffff0u).has_value());
}
