#include "daemon/notify.h"

#include <dlfcn.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace gpuobs::daemon {

Notifier::Notifier() {
  const char* sock = std::getenv("NOTIFY_SOCKET");
  if (!sock || !*sock) return;
  // The library stays loaded for the life of the process.
  void* h = ::dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    spdlog::warn(
        "NOTIFY_SOCKET is set but libsystemd.so.0 cannot be loaded ({}): systemd will not be told "
        "that gpuobsd is ready",
        ::dlerror());
    return;
  }
  fn_ = reinterpret_cast<SdNotify>(::dlsym(h, "sd_notify"));
  if (!fn_) {
    spdlog::warn("libsystemd.so.0 has no sd_notify: systemd will not be told that gpuobsd is ready");
    return;
  }
  // WATCHDOG_PID, when set, names the process the watchdog is for.
  const char* wpid = std::getenv("WATCHDOG_PID");
  const char* usec = std::getenv("WATCHDOG_USEC");
  if (usec && (!wpid || std::strtol(wpid, nullptr, 10) == ::getpid())) {
    long long us = std::strtoll(usec, nullptr, 10);
    if (us > 0) watchdog_ = std::chrono::microseconds(us / 2);
  }
}

void Notifier::send(const std::string& state) {
  if (!fn_) return;
  if (int rc = fn_(0, state.c_str()); rc < 0)
    spdlog::debug("sd_notify({}): {}", state.substr(0, state.find('\n')), std::strerror(-rc));
}

}  // namespace gpuobs::daemon
