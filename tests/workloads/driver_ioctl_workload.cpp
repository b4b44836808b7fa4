// Test workload for the driver decoders: issues the real NVIDIA RM, UVM and
// KFD command numbers with real argument structs (layouts of driver 580 /
// KFD 1.17, docs/reference/abi-reference.md) on stand-in character devices that
// gpuobs is told to decode as those drivers. The stand-ins answer ENOTTY;
// the status fields a driver would write are preset here, so the decoded
// statuses are known. Writes the issued sequence as JSON.
//
// usage: driver_ioctl_workload --nvidia DEV --uvm DEV --kfd DEV --truth FILE
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

// An argument struct image: fields written at their offsets.
struct Image {
  std::vector<uint8_t> b;
  explicit Image(size_t n) : b(n, 0) {}
  template <class T>
  Image& put(size_t off, T v) {
    std::memcpy(b.data() + off, &v, sizeof v);
    return *this;
  }
  void* data() { return b.data(); }
};

constexpr uint32_t kClient = 0xc1d00040;
nlohmann::json g_truth = nlohmann::json::array();

long issue(int fd, const char* driver, uint32_t cmd, void* arg, const std::string& request) {
  long r = ::ioctl(fd, cmd, arg);
  long ret = r < 0 ? -errno : r;
  g_truth.push_back({{"driver", driver}, {"cmd", cmd}, {"request", request}, {"ret", ret}});
  return ret;
}

// NV_ESC_RM_ALLOC with NVOS64 (48 bytes, driver 535+): status at 40.
void rm_alloc(int fd, uint32_t parent, uint32_t handle, uint32_t cls, void* params, uint32_t status = 0) {
  Image p(48);
  p.put<uint32_t>(0, kClient)
      .put<uint32_t>(4, parent)
      .put<uint32_t>(8, handle)
      .put<uint32_t>(12, cls)
      .put<uint64_t>(16, reinterpret_cast<uint64_t>(params))
      .put<uint32_t>(40, status);
  issue(fd, "nvidia", 0xC030462B, p.data(), "NV_ESC_RM_ALLOC");
}

void nvidia(int fd) {
  Image root(120);
  root.put<uint32_t>(4, static_cast<uint32_t>(::getpid()));
  std::memcpy(root.b.data() + 8, "driver_ioctl_wo", 16);
  rm_alloc(fd, kClient, kClient, 0x0, root.data());  // NV01_ROOT: the client
  Image dev(56);
  rm_alloc(fd, kClient, 0x5c000001, 0x80, dev.data());  // NV01_DEVICE_0
  Image tsg(20);
  tsg.put<uint32_t>(12, 1);                                  // engineType
  rm_alloc(fd, 0x5c000001, 0x5c000002, 0xA06C, tsg.data());  // KEPLER_CHANNEL_GROUP_A
  for (uint32_t i = 0; i < 2; ++i) {
    Image ch(368);
    ch.put<uint32_t>(16, 1024).put<uint32_t>(128, 1);             // gpFifoEntries, engineType
    rm_alloc(fd, 0x5c000002, 0x5c000003 + i, 0xC86F, ch.data());  // HOPPER_CHANNEL_GPFIFO_A
  }
  for (uint32_t i = 0; i < 3; ++i) {
    Image mem(128);
    mem.put<uint32_t>(0, kClient).put<uint64_t>(64, 2u << 20);   // owner, size
    rm_alloc(fd, 0x5c000001, 0x5c000010 + i, 0x40, mem.data());  // NV01_MEMORY_LOCAL_USER
  }
  Image big(128);
  big.put<uint64_t>(64, 1ull << 40);
  rm_alloc(fd, 0x5c000001, 0x5c000020, 0x40, big.data(), 0x51);  // NV_ERR_NO_MEMORY

  Image ctrl(32);  // NVOS54: hClient, hObject, cmd, flags, params, paramsSize, status@28
  ctrl.put<uint32_t>(0, kClient).put<uint32_t>(4, 0x5c000010).put<uint32_t>(8, 0x503C0104).put<uint32_t>(24, 0);
  issue(fd, "nvidia", 0xC020462A, ctrl.data(), "NV_ESC_RM_CONTROL");
  for (uint32_t h : {0x5c000010u, 0x5c000011u}) {
    Image fr(16);  // NVOS00: hRoot, hObjectParent, hObjectOld, status
    fr.put<uint32_t>(0, kClient).put<uint32_t>(4, 0x5c000001).put<uint32_t>(8, h);
    issue(fd, "nvidia", 0xC0104629, fr.data(), "NV_ESC_RM_FREE");
  }
  // NV_ESC_IOCTL_XFER_CMD wrapping an RM control that failed.
  Image inner(32);
  inner.put<uint32_t>(0, kClient).put<uint32_t>(4, 0x5c000005).put<uint32_t>(8, 0x20800102).put<uint32_t>(28, 0x1F);
  Image xfer(16);
  xfer.put<uint32_t>(0, 0x2A).put<uint32_t>(4, 32).put<uint64_t>(8, reinterpret_cast<uint64_t>(inner.data()));
  issue(fd, "nvidia", 0xC01046D3, xfer.data(), "NV_ESC_RM_CONTROL");
  // A 4-byte class parameter block that ends a page, before an unmapped one:
  // BPF asks for more than that and must keep what is readable.
  long page = ::sysconf(_SC_PAGESIZE);
  auto* two =
      static_cast<uint8_t*>(::mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ::mprotect(two + page, page, PROT_NONE);
  uint32_t* sub = reinterpret_cast<uint32_t*>(two + page - 4);
  *sub = 1;                                           // subDeviceId
  rm_alloc(fd, 0x5c000001, 0x5c000030, 0x2080, sub);  // NV20_SUBDEVICE_0
}

void uvm(int fd) {
  Image init(16);
  issue(fd, "nvidia-uvm", 0x30000001, init.data(), "UVM_INITIALIZE");
  Image reg(40);  // gpu_uuid @0, numaEnabled @16, numaNodeId @20, rmCtrlFd @24, hClient @28, hSmcPartRef @32
  for (int i = 0; i < 16; ++i) reg.put<uint8_t>(i, static_cast<uint8_t>(0xa0 + i));
  reg.put<int32_t>(20, -1).put<int32_t>(24, 9).put<uint32_t>(28, kClient);
  issue(fd, "nvidia-uvm", 37, reg.data(), "UVM_REGISTER_GPU");
  Image range(24);
  range.put<uint64_t>(0, 0x7f0000000000).put<uint64_t>(8, 2u << 20);
  issue(fd, "nvidia-uvm", 73, range.data(), "UVM_CREATE_EXTERNAL_RANGE");
  Image map(9264);  // 256-GPU layout (550.40.53+): tail fields past the head
  map.put<uint64_t>(0, 0x7f0000000000)
      .put<uint64_t>(8, 2u << 20)
      .put<int32_t>(9248, 9)
      .put<uint32_t>(9252, kClient)
      .put<uint32_t>(9256, 0x5c000012)
      .put<uint32_t>(9260, 0x1F);
  issue(fd, "nvidia-uvm", 33, map.data(), "UVM_MAP_EXTERNAL_ALLOCATION");
}

void kfd(int fd) {
  Image ver(8);
  ver.put<uint32_t>(0, 1).put<uint32_t>(4, 17);
  issue(fd, "kfd", 0x80084B01, ver.data(), "AMDKFD_IOC_GET_VERSION");
  Image q(96);
  q.put<uint64_t>(0, 0x7f1000000000)
      .put<uint32_t>(32, 4096)
      .put<uint32_t>(36, 0x1234)
      .put<uint32_t>(40, 2)
      .put<uint32_t>(44, 100)
      .put<uint32_t>(48, 7)
      .put<uint32_t>(52, 5);
  issue(fd, "kfd", 0xC0604B02, q.data(), "AMDKFD_IOC_CREATE_QUEUE");
  Image mem(40);
  mem.put<uint64_t>(0, 0x7f2000000000)
      .put<uint64_t>(8, 1ull << 30)
      .put<uint64_t>(16, 0xabc)
      .put<uint32_t>(32, 0x1234)
      .put<uint32_t>(36, 1u | (1u << 31));  // VRAM | WRITABLE
  issue(fd, "kfd", 0xC0284B16, mem.data(), "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU");
  Image wait(24);
  wait.put<uint32_t>(8, 1).put<uint32_t>(16, 100).put<uint32_t>(20, 1);  // 1 event, 100 ms, TIMEOUT
  issue(fd, "kfd", 0xC0184B0C, wait.data(), "AMDKFD_IOC_WAIT_EVENTS");
  Image fr(8);
  fr.put<uint64_t>(0, 0xabc);
  issue(fd, "kfd", 0x40084B17, fr.data(), "AMDKFD_IOC_FREE_MEMORY_OF_GPU");
  Image dq(8);
  dq.put<uint32_t>(0, 5);
  issue(fd, "kfd", 0xC0084B03, dq.data(), "AMDKFD_IOC_DESTROY_QUEUE");
}

}  // namespace

int main(int argc, char** argv) {
  std::string nv, uv, kf, truth_path;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--nvidia") nv = argv[i + 1];
    else if (k == "--uvm") uv = argv[i + 1];
    else if (k == "--kfd") kf = argv[i + 1];
    else if (k == "--truth") truth_path = argv[i + 1];
  }
  int nfd = ::open(nv.c_str(), O_RDWR), ufd = ::open(uv.c_str(), O_RDWR), kfd_fd = ::open(kf.c_str(), O_RDWR);
  if (nfd < 0 || ufd < 0 || kfd_fd < 0) return 1;
  nvidia(nfd);
  uvm(ufd);
  kfd(kfd_fd);
  std::ofstream(truth_path) << g_truth.dump(2);
  return 0;
}
