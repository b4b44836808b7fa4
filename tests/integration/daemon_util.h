// Helpers for tests that run the real gpuobsd binary (daemon_service_test.cpp,
// daemon_limits_test.cpp): the daemon as a child process, its arguments, and
// the launch workload in the background.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "run_util.h"
#include "store/schema.h"
#include "unit/test_util.h"

namespace gpuobs::testing {

// Runs gpuobsd with args (stderr to log, extra environment); killed if the test ends first.
struct Daemon {
  pid_t pid = -1;
  Daemon(const std::vector<std::string>& args, const std::string& log, std::vector<std::string> env = {}) {
    pid = ::fork();
    if (pid == 0) {
      if (!std::freopen(log.c_str(), "w", stderr)) ::_exit(126);
      for (auto& e : env) ::putenv(e.data());
      std::vector<char*> argv{const_cast<char*>(GPUOBSD_BIN)};
      for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(GPUOBSD_BIN, argv.data());
      ::_exit(127);
    }
  }
  ~Daemon() {
    if (pid > 0 && ::kill(pid, SIGKILL) == 0) ::waitpid(pid, nullptr, 0);
  }
  bool wait_log(const std::string& log, const std::string& text, int ms = 10000) {
    for (int i = 0; i < ms / 50; ++i) {
      if (read_file(log).find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  // SIGTERM; returns seconds to exit and sets status.
  double stop(int& status) {
    auto t0 = std::chrono::steady_clock::now();
    ::kill(pid, SIGTERM);
    ::waitpid(pid, &status, 0);
    pid = -1;
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
};

// conf: an existing file (an explicit --config that is missing is an error).
inline std::vector<std::string> base_args(const std::string& conf, const std::string& state,
                                          const std::string& status) {
  { std::ofstream touch(conf, std::ios::app); }
  return {"--config",         conf,        "--state-dir", state, "--status-file", status, "--libcuda", FAKE_LIBCUDA,
          "--no-gpu-devices", "--ring-mb", "64"};
}

// stdout of a shell command line.
inline std::string output_of(const std::string& cmd) {
  std::string out;
  if (FILE* f = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
    ::pclose(f);
  }
  return out;
}

inline int64_t mono_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

// launch_workload in the background (fork + exec: its pid is the tgid).
inline pid_t start_workload(const std::vector<std::string>& args) {
  pid_t w = ::fork();
  if (w == 0) {
    std::vector<char*> argv{const_cast<char*>(LAUNCH_WORKLOAD), const_cast<char*>("--lib"),
                            const_cast<char*>(FAKE_LIBCUDA)};
    for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(LAUNCH_WORKLOAD, argv.data());
    ::_exit(127);
  }
  return w;
}

// Stored launches of one process in a capture file (-1: it does not open).
inline int64_t launches_of(const std::string& path, int64_t tgid) {
  auto db = open_capture_readonly(path);
  if (!db.ok()) return -1;
  return scalar(*db, "SELECT count(*) FROM kernel_launches WHERE tgid = " + std::to_string(tgid));
}

}  // namespace gpuobs::testing
