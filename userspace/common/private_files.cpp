#include "common/private_files.h"

#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gpuobs {

std::optional<gid_t> gpuobs_group() {
  struct group gr {};
  struct group* found = nullptr;
  char buf[4096];
  if (::getgrnam_r("gpuobs", &gr, buf, sizeof buf, &found) != 0 || !found) return std::nullopt;
  return found->gr_gid;
}

void make_private(int fd, mode_t mode) {
  if (auto gid = gpuobs_group()) (void)!::fchown(fd, static_cast<uid_t>(-1), *gid);
  ::fchmod(fd, mode);  // after fchown, which may clear set-id bits; the umask must not widen it
}

Status create_private_dirs(const std::string& dir) {
  if (dir.empty()) return {};
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return {};
    return make_error("cannot create directory " + dir + ": a file of that name exists");
  }
  size_t slash = dir.find_last_of('/', dir.size() > 1 ? dir.size() - 2 : 0);
  if (slash != std::string::npos && slash > 0)
    if (auto s = create_private_dirs(dir.substr(0, slash)); !s) return s;
  if (::mkdir(dir.c_str(), kPrivateDirMode) != 0 && errno != EEXIST)
    return make_error("cannot create directory " + dir + ": " + std::strerror(errno));
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return make_error("cannot open directory " + dir + ": " + std::strerror(errno));
  make_private(fd, kPrivateDirMode);
  ::close(fd);
  return {};
}

}  // namespace gpuobs
