#include "cli/output_file.h"

#include <fcntl.h>
#include <stdio.h>  // renameat2, RENAME_NOREPLACE
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>

namespace gpuobs::cli {
namespace {

enum class Target { absent, in_place, regular };

// The character devices a stream may go to: /dev/null and terminals (what
// /dev/stdout is on a console). Any other (/dev/nvidia0, /dev/mem, a disk's
// raw node) is refused, as `record` refuses every device.
// Told by the device numbers alone (Documentation/admin-guide/devices.txt):
// opening a device to ask has effects of its own (/dev/watchdog starts its
// timer).
bool stream_device(const struct stat& st) {
  const unsigned ma = major(st.st_rdev), mi = minor(st.st_rdev);
  if (ma == 1 && mi == 3) return true;               // /dev/null
  if (ma == 4 || (ma == 5 && mi != 2)) return true;  // consoles, serial ttys, /dev/tty, /dev/console (not ptmx)
  return ma >= 136 && ma <= 143;                     // pseudo-terminal slaves (/dev/pts/N)
}

// What is at path, following a link to what it names: a /proc/*/fd/N link
// (what /dev/stdout is) to a file is written in place as the shell's
// redirection set it up, not renamed over.
Result<Target> target_of(const std::string& path, std::string* real) {
  *real = path;
  struct stat lst {};
  if (::lstat(path.c_str(), &lst) != 0) {
    if (errno == ENOENT) return Target::absent;
    return make_error("cannot write " + path + ": " + std::strerror(errno), "", 1);
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT && S_ISLNK(lst.st_mode))
      return make_error(path + " is a link to nothing", "give a file name with -o", 2);
    return make_error("cannot write " + path + ": " + std::strerror(errno), "", 1);
  }
  if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) return Target::in_place;
  if (S_ISCHR(st.st_mode)) {
    if (stream_device(st)) return Target::in_place;
    return make_error(path + " is a device (character " + std::to_string(major(st.st_rdev)) + ":" +
                          std::to_string(minor(st.st_rdev)) + "); refusing to write it",
                      "gpuobs writes files, pipes, sockets, terminals, /dev/null or - (standard output)", 2);
  }
  if (S_ISBLK(st.st_mode))
    return make_error(path + " is a block device; refusing to write it",
                      "gpuobs writes files, pipes, sockets, terminals, /dev/null or - (standard output)", 2);
  if (!S_ISREG(st.st_mode))
    return make_error(path + " exists and is not a regular file", "give a file name with -o", 2);
  if (S_ISLNK(lst.st_mode)) {
    std::unique_ptr<char, decltype(&std::free)> resolved(::realpath(path.c_str(), nullptr), &std::free);
    if (!resolved) return make_error("cannot resolve " + path + ": " + std::strerror(errno), "", 1);
    std::string r(resolved.get());
    // An open file descriptor (the shell's redirection of stdout): in place.
    char link[64];
    ssize_t n = ::readlink(path.c_str(), link, sizeof link - 1);
    std::string to = n > 0 ? std::string(link, static_cast<size_t>(n)) : "";
    if (to.rfind("/proc/", 0) == 0 && to.find("/fd/") != std::string::npos) return Target::in_place;
    *real = r;  // replace what the link names, never the link
  }
  return Target::regular;
}

}  // namespace

Status check_output(const std::string& path, bool force) {
  if (path == kStdoutPath) return {};
  std::string real;
  auto t = target_of(path, &real);
  if (!t) return t.error();
  if (*t == Target::regular && !force)
    return make_error(path + " exists", "pass --force to replace it, or choose another name with -o", 2);
  return {};
}

Status write_output(const std::string& path, bool force, const std::function<Status(std::ostream&)>& write) {
  if (path == kStdoutPath) {  // as other tools take "-"
    if (Status s = write(std::cout); !s) return s;
    std::cout.flush();
    if (!std::cout) return make_error("cannot write to standard output");
    return {};
  }
  std::string real;
  auto target = target_of(path, &real);
  if (!target) return target.error();
  if (*target == Target::in_place) {
    std::ofstream out(path, std::ios::binary);
    if (!out) return make_error("cannot write " + path, "", 1);
    if (Status s = write(out); !s) return s;
    out.flush();
    if (!out) return make_error("cannot write " + path);
    return {};
  }
  if (*target == Target::regular && !force)
    return make_error(path + " exists", "pass --force to replace it, or choose another name with -o", 2);
  // A temporary file of our own beside the target: never one a user has, never
  // through a link planted there.
  std::string tmp = real + ".XXXXXX";
  int fd = ::mkstemp(tmp.data());
  if (fd < 0)
    return make_error("cannot create a file beside " + real + ": " + std::strerror(errno), "is the directory writable?",
                      1);
  mode_t mask = ::umask(0);  // the mode a plain create would give (mkstemp makes 0600)
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  ::close(fd);
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  Status s = out ? write(out) : make_error("cannot write " + tmp);
  out.close();
  if (!s || !out) {
    std::remove(tmp.c_str());
    return s ? make_error("cannot write " + path + " (disk full?)") : s.error();
  }
  // Without --force, a file that appeared at the target meanwhile is kept.
  if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, real.c_str(), force ? 0 : RENAME_NOREPLACE) != 0) {
    int e = errno;
    std::remove(tmp.c_str());
    if (e == EEXIST)
      return make_error(path + " exists", "pass --force to replace it, or choose another name with -o", 2);
    return make_error("cannot rename " + tmp + " to " + real + ": " + std::strerror(e));
  }
  return {};
}

}  // namespace gpuobs::cli
