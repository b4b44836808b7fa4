// Helpers for tests that run gpuobs and its workloads as real processes.
#pragma once

#include <sys/wait.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace gpuobs::testing {

// Runs a shell command line; returns its exit status (128+N if killed by N).
inline int run(const std::string& cmd) {
  int st = std::system(cmd.c_str());
  if (st == -1) return -1;
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return -1;
}

// Forks `argv` (with extra environment), held before exec until release() is
// called: a test can put the pid in the engine's tracked set first, exactly
// as gpuobs record does.
class HeldChild {
 public:
  explicit HeldChild(std::vector<std::string> argv, std::vector<std::string> env = {}) {
    int fds[2];
    if (::pipe(fds) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(fds[1]);
      char c;
      if (::read(fds[0], &c, 1) != 1) ::_exit(2);
      for (auto& e : env) ::putenv(e.data());
      std::vector<char*> args;
      for (auto& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    ::close(fds[0]);
    release_fd_ = fds[1];
  }
  pid_t pid() const { return pid_; }
  bool release() { return ::write(release_fd_, "g", 1) == 1 && ::close(release_fd_) == 0; }
  // The exit status, or -1.
  int wait() {
    int st = 0;
    if (::waitpid(pid_, &st, 0) != pid_) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }

 private:
  pid_t pid_ = -1;
  int release_fd_ = -1;
};

inline nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace gpuobs::testing
