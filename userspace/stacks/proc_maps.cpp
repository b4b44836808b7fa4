#include "stacks/proc_maps.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace gpuobs {
namespace {

bool hex(std::string_view s, uint64_t& out) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), out, 16);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// Splits off the next space-separated field.
std::string_view field(std::string_view& rest) {
  size_t b = rest.find_first_not_of(' ');
  if (b == std::string_view::npos) {
    rest = {};
    return {};
  }
  rest.remove_prefix(b);
  size_t e = rest.find(' ');
  std::string_view f = rest.substr(0, e);
  rest = e == std::string_view::npos ? std::string_view{} : rest.substr(e);
  return f;
}

}  // namespace

// "start-end perms offset major:minor inode   path"
std::optional<Mapping> parse_maps_line(std::string_view line) {
  Mapping m;
  std::string_view rest = line;
  std::string_view range = field(rest), perms = field(rest), off = field(rest), dev = field(rest), ino = field(rest);
  size_t dash = range.find('-'), colon = dev.find(':');
  uint64_t major = 0, minor = 0;
  if (dash == std::string_view::npos || colon == std::string_view::npos || perms.size() < 3) return std::nullopt;
  if (!hex(range.substr(0, dash), m.start) || !hex(range.substr(dash + 1), m.end) || !hex(off, m.offset) ||
      !hex(dev.substr(0, colon), major) || !hex(dev.substr(colon + 1), minor))
    return std::nullopt;
  auto r = std::from_chars(ino.data(), ino.data() + ino.size(), m.inode);
  if (r.ec != std::errc()) return std::nullopt;
  m.exec = perms[2] == 'x';
  m.dev = m.inode ? makedev(major, minor) : 0;
  size_t b = rest.find_first_not_of(' ');
  if (b != std::string_view::npos) m.path = std::string(rest.substr(b));
  constexpr std::string_view kDeleted = " (deleted)";
  if (m.path.size() > kDeleted.size() && m.path.ends_with(kDeleted)) {
    m.deleted = true;
    m.path.resize(m.path.size() - kDeleted.size());
  }
  return m;
}

Result<std::vector<Mapping>> read_proc_maps(uint32_t pid, const std::string& proc_root) {
  std::string path = proc_root + "/" + std::to_string(pid) + "/maps";
  std::ifstream in(path);
  if (!in) return make_error("cannot read " + path + ": " + std::strerror(errno));
  std::vector<Mapping> out;
  std::string line;
  while (std::getline(in, line))
    if (auto m = parse_maps_line(line)) out.push_back(std::move(*m));
  // A zombie or an exited process reads as empty.
  if (out.empty()) return make_error(path + " is empty: the process has exited");
  std::sort(out.begin(), out.end(), [](const Mapping& a, const Mapping& b) { return a.start < b.start; });
  return out;
}

int open_mapped_file(uint32_t pid, const Mapping& m, const std::string& proc_root) {
  char name[64];
  std::snprintf(name, sizeof name, "/%u/map_files/%lx-%lx", pid, static_cast<unsigned long>(m.start),
                static_cast<unsigned long>(m.end));
  int fd = ::open((proc_root + name).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) return fd;
  fd = ::open((proc_root + "/" + std::to_string(pid) + "/root" + m.path).c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd >= 0 && (::fstat(fd, &st) != 0 || st.st_ino != m.inode || st.st_dev != m.dev)) {
    ::close(fd);
    fd = -1;
  }
  return fd;
}

}  // namespace gpuobs
