// systemd notification (sd_notify(3)) without a link-time libsystemd: Debian
// ships no static libsystemd and gpuobsd must run on hosts without it, so
// libsystemd.so.0 is opened at run time, only when NOTIFY_SOCKET is set.
#pragma once

#include <chrono>
#include <string>

namespace gpuobs::daemon {

class Notifier {
 public:
  // Reads NOTIFY_SOCKET and WATCHDOG_USEC; warns once if the socket is set
  // but libsystemd.so.0 cannot be loaded.
  Notifier();
  bool active() const { return fn_ != nullptr; }
  // Sends "KEY=VALUE\n..." lines; nothing when not active.
  void send(const std::string& state);
  // Half of WATCHDOG_USEC (zero: no watchdog).
  std::chrono::microseconds watchdog_interval() const { return watchdog_; }

 private:
  using SdNotify = int (*)(int, const char*);
  SdNotify fn_ = nullptr;
  std::chrono::microseconds watchdog_{0};
};

}  // namespace gpuobs::daemon
