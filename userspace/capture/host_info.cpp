#include "capture/host_info.h"

#include <sys/utsname.h>
#include <time.h>

#include <fstream>
#include <limits>

#include "common/monotonic_clock.h"

namespace gpuobs {
namespace {

int64_t to_ns(const timespec& t) { return int64_t{t.tv_sec} * 1000000000 + t.tv_nsec; }

}  // namespace

HostInfo read_host_info() {
  HostInfo h;
  utsname u{};
  if (::uname(&u) == 0) {
    h.host = u.nodename;
    h.kernel = u.release;
  }
  std::ifstream nv("/proc/driver/nvidia/version");
  std::getline(nv, h.nvidia_driver);
  return h;
}

int64_t mono_now_ns() { return monotonic_now_ns(); }

int64_t realtime_offset_ns() {
  int64_t best_gap = std::numeric_limits<int64_t>::max(), offset = 0;
  for (int i = 0; i < 5; ++i) {
    timespec a{}, r{}, b{};
    ::clock_gettime(CLOCK_MONOTONIC, &a);
    ::clock_gettime(CLOCK_REALTIME, &r);
    ::clock_gettime(CLOCK_MONOTONIC, &b);
    int64_t gap = to_ns(b) - to_ns(a);
    if (gap < best_gap) {
      best_gap = gap;
      offset = to_ns(r) - (to_ns(a) + gap / 2);
    }
  }
  return offset;
}

}  // namespace gpuobs
