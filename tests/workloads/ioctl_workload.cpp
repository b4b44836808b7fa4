// Test workload for the ioctl layer: issues known ioctl request numbers on
// stand-in character devices and writes what the kernel returned as JSON.
//   /dev/null: every request fails with ENOTTY;
//   /dev/ptmx: TIOCGPTN succeeds (returns 0), an NVIDIA request fails.
// usage: ioctl_workload --repeat N --truth FILE
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

int main(int argc, char** argv) {
  int repeat = 10;
  std::string truth_path;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--repeat") repeat = std::stoi(argv[i + 1]);
    else if (k == "--truth") truth_path = argv[i + 1];
  }
  nlohmann::json truth = nlohmann::json::array();
  auto issue = [&](const char* dev, int fd, unsigned long cmd, void* arg) {
    for (int i = 0; i < repeat; ++i) {
      long r = ::ioctl(fd, cmd, arg);
      long ret = r < 0 ? -errno : r;
      truth.push_back({{"device", dev}, {"fd", fd}, {"cmd", static_cast<uint32_t>(cmd)}, {"ret", ret}});
    }
  };
  int null_fd = ::open("/dev/null", O_RDWR);
  int ptmx_fd = ::open("/dev/ptmx", O_RDWR | O_NOCTTY);
  if (null_fd < 0 || ptmx_fd < 0) return 1;
  unsigned char buf[64] = {};
  issue("/dev/null", null_fd, 0xC030462Bul, buf);  // NV_ESC_RM_ALLOC's number
  issue("/dev/null", null_fd, 0x30000001ul, buf);  // UVM_INITIALIZE's number
  unsigned int ptn = 0;
  issue("/dev/ptmx", ptmx_fd, TIOCGPTN, &ptn);
  issue("/dev/ptmx", ptmx_fd, 0xC020462Aul, buf);  // NV_ESC_RM_CONTROL's number
  std::ofstream(truth_path) << truth.dump(2);
  return 0;
}
