#include "capture/procfs.h"

#include <unistd.h>

#include <climits>
#include <fstream>
#include <sstream>

namespace gpuobs {

std::optional<ProcessInfo> read_proc_info(uint32_t tgid, const std::string& proc_root) {
  std::string dir = proc_root + "/" + std::to_string(tgid);
  std::ifstream stat(dir + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return std::nullopt;
  ProcessInfo info;
  // comm is in parentheses and may contain spaces or ')': split at the last ')'.
  auto open = line.find('('), close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  info.comm = line.substr(open + 1, close - open - 1);
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  // Fields after comm start at 3 (state); ppid is 4, starttime is 22.
  for (int i = 3; i <= 22 && rest >> field; ++i) {
    if (i == 4) info.ppid = static_cast<uint32_t>(std::stoul(field));
    if (i == 22) {
      // starttime is in clock ticks of CLOCK_BOOTTIME (task->start_boottime).
      uint64_t ticks = std::stoull(field);
      info.start_boottime_ns = ticks * (1000000000ull / static_cast<uint64_t>(::sysconf(_SC_CLK_TCK)));
    }
  }
  char buf[PATH_MAX];
  ssize_t n = ::readlink((dir + "/exe").c_str(), buf, sizeof buf - 1);
  if (n > 0) info.exe.assign(buf, static_cast<size_t>(n));
  return info;
}

}  // namespace gpuobs

namespace gpuobs {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool is_hex64(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

}  // namespace

std::string cgroup_path_from_file(std::string_view text) {
  std::string v1_systemd;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    // hierarchy-ID:controller-list:path; the path may itself contain ':'.
    size_t c1 = line.find(':');
    if (c1 == std::string_view::npos) continue;
    size_t c2 = line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) continue;
    std::string_view id = line.substr(0, c1), ctl = line.substr(c1 + 1, c2 - c1 - 1), path = line.substr(c2 + 1);
    if (id == "0" && ctl.empty()) return std::string(path);
    if (ctl == "name=systemd" && v1_systemd.empty()) v1_systemd = std::string(path);
  }
  return v1_systemd;
}

std::string container_id_from_cgroup(std::string_view path) {
  // Innermost first: a container nested in another names the inner one last.
  while (!path.empty()) {
    size_t slash = path.rfind('/');
    std::string_view comp = slash == std::string_view::npos ? path : path.substr(slash + 1);
    path = slash == std::string_view::npos ? std::string_view{} : path.substr(0, slash);
    if (is_hex64(comp)) return std::string(comp);
    constexpr std::string_view kScope = ".scope";
    if (comp.size() > kScope.size() && comp.substr(comp.size() - kScope.size()) == kScope) {
      std::string_view stem = comp.substr(0, comp.size() - kScope.size());
      for (std::string_view prefix : {"docker-", "cri-containerd-", "crio-", "libpod-"})
        if (stem.substr(0, prefix.size()) == prefix && is_hex64(stem.substr(prefix.size())))
          return std::string(stem.substr(prefix.size()));
    }
  }
  return {};
}

std::optional<ProcessOrigin> read_process_origin(uint32_t tgid, const std::string& proc_root) {
  std::string text = slurp(proc_root + "/" + std::to_string(tgid) + "/cgroup");
  if (text.empty()) return std::nullopt;
  ProcessOrigin o;
  o.cgroup = cgroup_path_from_file(text);
  o.container_id = container_id_from_cgroup(o.cgroup);
  return o;
}

bool is_gpu_runtime_name(std::string_view path) {
  size_t slash = path.rfind('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  for (std::string_view stem : {"libcuda.so", "libamdhip64.so", "libnccl.so", "librccl.so", "libze_loader.so"}) {
    if (base.substr(0, stem.size()) != stem) continue;
    std::string_view rest = base.substr(stem.size());
    // "", or ".N[.N...]": not libcuda.so.1.bak-like names with letters.
    bool ok = true;
    for (char c : rest) ok = ok && (c == '.' || (c >= '0' && c <= '9'));
    if (ok && (rest.empty() || rest[0] == '.')) return true;
  }
  return false;
}

std::vector<MappedLibrary> gpu_libraries_in_maps(std::string_view maps) {
  std::vector<MappedLibrary> out;
  size_t pos = 0;
  while (pos < maps.size()) {
    size_t end = maps.find('\n', pos);
    if (end == std::string_view::npos) end = maps.size();
    std::string line(maps.substr(pos, end - pos));
    pos = end + 1;
    // START-END PERMS OFFSET MAJ:MIN INODE   PATH
    std::istringstream in(line);
    std::string range, perms, offset, dev;
    uint64_t inode = 0;
    if (!(in >> range >> perms >> offset >> dev >> inode) || inode == 0) continue;
    std::string path;
    std::getline(in >> std::ws, path);
    MappedLibrary m;
    constexpr std::string_view kDeleted = " (deleted)";
    if (path.size() > kDeleted.size() && path.compare(path.size() - kDeleted.size(), kDeleted.size(), kDeleted) == 0) {
      path.resize(path.size() - kDeleted.size());
      m.deleted = true;
    }
    if (path.empty() || path[0] != '/' || !is_gpu_runtime_name(path)) continue;
    size_t colon = dev.find(':');
    if (colon == std::string::npos) continue;
    try {
      m.dev_major = std::stoull(dev.substr(0, colon), nullptr, 16);
      m.dev_minor = std::stoull(dev.substr(colon + 1), nullptr, 16);
    } catch (...) { continue; }
    m.range = range;
    m.inode = inode;
    m.path = path;
    m.executable = perms.size() > 2 && perms[2] == 'x';
    bool seen = false;
    for (auto& o : out)
      if (o.dev_major == m.dev_major && o.dev_minor == m.dev_minor && o.inode == m.inode) {
        seen = true;
        o.executable = o.executable || m.executable;
      }
    if (!seen) out.push_back(std::move(m));
  }
  return out;
}

}  // namespace gpuobs
