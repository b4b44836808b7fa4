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
