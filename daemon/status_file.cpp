#include "daemon/status_file.h"

#include "common/private_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace gpuobs::daemon {

Status write_atomically(const std::string& path, const std::string& text, mode_t mode) {
  // Outside the unit (no RuntimeDirectory=) the directory is made 0750,
  // group gpuobs, like the unit's.
  if (auto s = create_private_dirs(std::filesystem::path(path).parent_path()); !s) return s;
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return make_error("cannot write " + tmp + ": " + std::strerror(errno));
  make_private(fd, mode);  // group gpuobs; the umask must not widen or narrow the mode
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return make_error("cannot write " + tmp + ": " + std::strerror(e));
    }
    off += static_cast<size_t>(n);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return make_error("cannot replace " + path + ": " + std::strerror(e));
  }
  return {};
}

}  // namespace gpuobs::daemon
