#include "common/thread_priority.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace gpuobs {

bool raise_capture_thread_priority() {
  const auto tid = static_cast<id_t>(::syscall(SYS_gettid));
  errno = 0;
  int now = ::getpriority(PRIO_PROCESS, tid);
  if (errno == 0 && now <= kCaptureNice) return true;
  return ::setpriority(PRIO_PROCESS, tid, kCaptureNice) == 0;
}

}  // namespace gpuobs
