#include "cli/output_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace gpuobs::cli {

Status write_output(const std::string& path, bool force, const std::function<Status(std::ostream&)>& write) {
  struct stat st {};
  bool exists = ::stat(path.c_str(), &st) == 0;
  if (!exists && errno != ENOENT) return make_error("cannot write " + path + ": " + std::strerror(errno), "", 1);
  if (exists && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
    // A device or a pipe: written in place, never renamed over.
    std::ofstream out(path, std::ios::binary);
    if (!out) return make_error("cannot write " + path, "", 1);
    if (Status s = write(out); !s) return s;
    out.flush();
    if (!out) return make_error("cannot write " + path);
    return {};
  }
  if (exists && !S_ISREG(st.st_mode))
    return make_error(path + " exists and is not a regular file", "give a file name with -o", 2);
  if (exists && !force)
    return make_error(path + " exists", "pass --force to replace it, or choose another name with -o", 2);
  std::string tmp = path + ".tmp";
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) return make_error("cannot write " + tmp, "is the directory writable?", 1);
  Status s = write(out);
  out.close();
  if (!s || !out) {
    std::remove(tmp.c_str());
    return s ? make_error("cannot write " + path + " (disk full?)") : s.error();
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return make_error("cannot rename " + tmp + " to " + path);
  }
  return {};
}

}  // namespace gpuobs::cli
