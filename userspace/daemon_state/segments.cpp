#include "daemon_state/segments.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "store/capture_file.h"

namespace gpuobs::segments {
namespace {

namespace fs = std::filesystem;

// capture-YYYYMMDDTHHMMSS-SEQ.gpuobs -> SEQ, or -1.
int64_t seq_of(const std::string& name) {
  constexpr std::string_view prefix = "capture-", suffix = ".gpuobs";
  if (name.size() < prefix.size() + 15 + 2 + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return -1;
  size_t dash = prefix.size() + 15;
  if (name[prefix.size() + 8] != 'T' || name[dash] != '-') return -1;
  int64_t seq = -1;
  const char* b = name.data() + dash + 1;
  const char* e = name.data() + name.size() - suffix.size();
  auto [p, ec] = std::from_chars(b, e, seq);
  return ec == std::errc() && p == e && seq > 0 ? seq : -1;
}

uint64_t size_of(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

}  // namespace

std::string segment_name(int64_t seq, int64_t unix_s) {
  time_t t = static_cast<time_t>(unix_s);
  struct tm tm {};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%S", &tm);
  return "capture-" + std::string(buf) + "-" + std::to_string(seq) + ".gpuobs";
}

std::vector<SegmentFile> list(const std::string& dir) {
  std::vector<SegmentFile> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    int64_t seq = seq_of(name);
    if (seq < 0) continue;
    struct stat st {};
    std::string path = e.path().string();
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    out.push_back(SegmentFile{path, seq, static_cast<uint64_t>(st.st_size) + size_of(path + "-wal"),
                              static_cast<int64_t>(st.st_mtime)});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.seq < b.seq; });
  return out;
}

int64_t next_seq(const std::string& dir) {
  auto all = list(dir);
  return all.empty() ? 1 : all.back().seq + 1;
}

Status set_current(const std::string& dir, const std::string& path) {
  // Relative: the link stays right when the directory is seen through
  // another mount (a container, /proc/PID/root).
  std::string target = fs::path(path).filename().string();
  std::string tmp = dir + "/.current.tmp";
  ::unlink(tmp.c_str());
  if (::symlink(target.c_str(), tmp.c_str()) != 0)
    return make_error("cannot create " + tmp + ": " + std::strerror(errno));
  if (::rename(tmp.c_str(), (dir + "/current").c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return make_error("cannot update " + dir + "/current: " + std::strerror(e));
  }
  return {};
}

Result<std::string> current(const std::string& dir) {
  std::string link = dir + "/current";
  char buf[4096];
  ssize_t n = ::readlink(link.c_str(), buf, sizeof buf - 1);
  if (n < 0)
    return make_error("no current capture: cannot read " + link + ": " + std::strerror(errno),
                      "is gpuobsd running? `gpuobs segments` lists the segments kept", 2);
  std::string target(buf, static_cast<size_t>(n));
  return target.front() == '/' ? target : dir + "/" + target;
}

std::vector<std::string> enforce(const std::string& dir, const Retention& r, const std::string& current_path,
                                 int64_t now_unix_s) {
  std::vector<std::string> deleted;
  auto all = list(dir);
  uint64_t total = 0;
  for (const auto& s : all) total += s.bytes;
  size_t count = all.size();
  for (const auto& s : all) {  // oldest first
    if (fs::path(s.path).filename() == fs::path(current_path).filename()) continue;
    bool too_many = r.keep_segments && count > r.keep_segments;
    bool too_big = r.keep_bytes && total > r.keep_bytes;
    bool too_old = r.max_age_s && now_unix_s - s.mtime_unix_s > static_cast<int64_t>(r.max_age_s);
    if (!too_many && !too_big && !too_old) continue;
    if (r.keep_unshipped && ::access((s.path + ".shipped").c_str(), F_OK) != 0) continue;
    if (!remove_capture_files(s.path)) continue;
    deleted.push_back(s.path);
    --count;
    total -= s.bytes;
  }
  return deleted;
}

Result<std::vector<std::string>> select(const std::string& dir, const std::string& spec) {
  auto all = list(dir);
  int64_t from = 0, to = 0;
  auto num = [](std::string_view s, int64_t& v) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && p == s.data() + s.size() && v > 0;
  };
  if (spec == "all") {
    from = 1;
    to = INT64_MAX;
  } else if (auto dots = spec.find(".."); dots != std::string::npos) {
    if (!num(std::string_view(spec).substr(0, dots), from) || !num(std::string_view(spec).substr(dots + 2), to) ||
        from > to)
      return make_error("bad --segment range '" + spec + "'", "use N, all or FROM..TO (sequence numbers)", 2);
  } else if (num(spec, from)) {
    to = from;
  } else {
    return make_error("bad --segment '" + spec + "'", "use N, all or FROM..TO (sequence numbers)", 2);
  }
  std::vector<std::string> out;
  for (const auto& s : all)
    if (s.seq >= from && s.seq <= to) out.push_back(s.path);
  if (out.empty())
    return make_error("no segment " + spec + " in " + dir, "`gpuobs segments` lists the segments kept", 2);
  return out;
}

}  // namespace gpuobs::segments
