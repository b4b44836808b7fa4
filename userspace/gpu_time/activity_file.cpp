#include "gpu_time/activity_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>

#include "gpu_time/activity_format.h"

namespace gpuobs::gpu_time {
namespace {

// A kernel name being put together from its chunks.
struct PartialName {
  uint32_t len = 0;
  std::string text;
  std::vector<bool> have;  // per chunk
  bool broken = false;
};

// The checks of one header slot; empty when it is good.
std::string header_problem(const GtFileHeader& h) {
  if (h.version > kGtFormatVersion)
    return "format version " + std::to_string(h.version) + " is newer than this gpuobs reads (" +
           std::to_string(kGtFormatVersion) + ")";
  if (h.version == 0) return "format version 0 is not a version";
  if (h.slot_size != kGtSlotSize)
    return "slot size " + std::to_string(h.slot_size) + " is not " + std::to_string(kGtSlotSize);
  if (h.clock_kind != kGtClockMonotonic && h.clock_kind != kGtClockCuptiPair)
    return "clock kind " + std::to_string(h.clock_kind) + " is unknown";
  return {};
}

ActivityProcess process_of(const GtFileHeader& h) {
  ActivityProcess p;
  p.pid = h.pid;
  p.version = h.version;
  p.clock_kind = h.clock_kind;
  p.tid_kind = h.tid_kind;
  p.cupti_version = h.cupti_version;
  p.enabled = h.flags;
  p.realtime_ns = h.realtime_ns;
  // Two clock readings from the file (untrusted): the difference in 128 bits,
  // kept only when it fits (else every time of the process is refused below).
  if (h.clock_kind == kGtClockCuptiPair) {
    __int128 d = static_cast<__int128>(h.clock_mono_ns) - static_cast<__int128>(h.clock_cupti_ns);
    p.to_monotonic_ns = d > std::numeric_limits<int64_t>::max() || d < std::numeric_limits<int64_t>::min()
                            ? std::numeric_limits<int64_t>::min()
                            : static_cast<int64_t>(d);
  }
  return p;
}

// A time of the file on CLOCK_MONOTONIC; false when it is 0 or falls outside it.
bool to_monotonic(uint64_t t, int64_t offset, uint64_t& out) {
  if (t == 0 || t > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
  // In 128 bits: a hostile header's offset must not overflow (fuzz_activity_file found it).
  __int128 v = static_cast<__int128>(t) + offset;
  if (v <= 0 || v > std::numeric_limits<int64_t>::max()) return false;
  out = static_cast<uint64_t>(v);
  return true;
}

class Parser {
 public:
  Parser(std::span<const uint8_t> bytes, std::string_view what) : bytes_(bytes), what_(what) {}

  Result<ActivityFile> run() {
    if (bytes_.empty()) return make_error(std::string(what_) + ": empty: no header");
    if (bytes_.size() < kGtSlotSize)
      return make_error(std::string(what_) + ": " + std::to_string(bytes_.size()) +
                        " bytes: shorter than its header (" + std::to_string(kGtSlotSize) + ")");
    uint64_t magic = 0;
    std::memcpy(&magic, bytes_.data(), sizeof magic);
    if (magic != kGtMagic)
      return make_error(std::string(what_) + ": not a gpuobs GPU time file (bad magic)",
                        "the file is written by gpuobs_cupti_inject (GPUOBS_GPU_TIME_FILE)");
    size_t whole = bytes_.size() / kGtSlotSize;
    out_.counts.truncated_tail_bytes = bytes_.size() % kGtSlotSize;
    for (size_t i = 0; i < whole; ++i) {
      const uint8_t* slot = bytes_.data() + i * kGtSlotSize;
      ++out_.counts.slots;
      std::memcpy(&magic, slot, sizeof magic);
      if (magic == kGtMagic) {
        if (auto st = header(slot, i); !st) return st.error();
        continue;
      }
      uint32_t type = 0;
      std::memcpy(&type, slot, sizeof type);
      switch (type) {
        case kGtKernel:
        case kGtMemcpy:
        case kGtMemset:
        case kGtDriverApi:
        case kGtRuntimeApi: record(slot); break;
        case kGtName: name(slot); break;
        case kGtStats: stats(slot); break;
        default: ++out_.counts.unknown_type; break;
      }
    }
    finish_names();
    return std::move(out_);
  }

 private:
  Status header(const uint8_t* slot, size_t index) {
    GtFileHeader h;
    std::memcpy(&h, slot, sizeof h);
    if (std::string why = header_problem(h); !why.empty())
      return make_error(std::string(what_) + ": header at byte " + std::to_string(index * kGtSlotSize) + " (pid " +
                            std::to_string(h.pid) + "): " + why,
                        h.version > kGtFormatVersion ? "read it with the gpuobs that recorded it, or a newer one" : "");
    ++out_.counts.headers;
    // A pid's later header (pid reuse, or the library started again) describes what follows it.
    auto [it, fresh] = pid_index_.try_emplace(h.pid, out_.processes.size());
    if (fresh) out_.processes.push_back(process_of(h));
    else out_.processes[it->second] = process_of(h);
    return {};
  }

  ActivityProcess* find(uint32_t pid) {
    auto it = pid_index_.find(pid);
    if (it == pid_index_.end()) {
      ++out_.counts.without_header;
      return nullptr;
    }
    return &out_.processes[it->second];
  }

  void record(const uint8_t* slot) {
    GtRecord r;
    std::memcpy(&r, slot, sizeof r);
    const ActivityProcess* p = find(r.pid);
    if (!p) return;
    Activity a;
    a.kind = r.type == kGtKernel      ? ActivityKind::kernel
             : r.type == kGtMemcpy    ? ActivityKind::memcpy
             : r.type == kGtMemset    ? ActivityKind::memset
             : r.type == kGtDriverApi ? ActivityKind::driver_api
                                      : ActivityKind::runtime_api;
    a.pid = r.pid;
    if (!to_monotonic(r.start_ns, p->to_monotonic_ns, a.start_ns) ||
        !to_monotonic(r.end_ns, p->to_monotonic_ns, a.end_ns) || a.end_ns < a.start_ns) {
      ++out_.counts.bad_times;
      return;
    }
    a.device_id = r.device_id;
    a.context_id = r.context_id;
    a.stream_id = r.stream_id;
    a.correlation_id = r.correlation_id;
    if (a.kind == ActivityKind::driver_api || a.kind == ActivityKind::runtime_api) {
      a.tid = p->tid_kind == kGtTidSystem ? r.tid : 0;
      a.cbid = r.cbid;
      a.result = r.result;
    }
    if (a.kind == ActivityKind::memcpy || a.kind == ActivityKind::memset) a.bytes = r.bytes;
    if (a.kind == ActivityKind::memcpy) {
      a.copy_kind = r.copy_kind;
      a.src_kind = r.src_kind;
      a.dst_kind = r.dst_kind;
    }
    if (a.kind == ActivityKind::kernel) {
      a.grid[0] = r.grid_x, a.grid[1] = r.grid_y, a.grid[2] = r.grid_z;
      a.block[0] = r.block_x, a.block[1] = r.block_y, a.block[2] = r.block_z;
      a.name_hash = r.name_hash;
    }
    out_.activities.push_back(a);
    ++out_.counts.activities;
  }

  void name(const uint8_t* slot) {
    GtNameChunk c;
    std::memcpy(&c, slot, sizeof c);
    if (!find(c.pid)) return;
    bool in_range = c.name_len <= kGtMaxNameBytes && c.offset % kGtNameChunkBytes == 0 &&
                    (c.offset < c.name_len || (c.offset == 0 && c.name_len == 0));
    if (!in_range) {
      ++out_.counts.bad_names;
      return;
    }
    // Names cost what their declared lengths say, before any text came: a
    // file (written by the traced program) may declare many long ones.
    // Past kMaxNameBytesInAll in all, new names are counted, not kept.
    if (!names_.count(c.name_hash)) {
      if (name_bytes_ + c.name_len > kMaxNameBytesInAll) {
        ++out_.counts.bad_names;
        return;
      }
      name_bytes_ += c.name_len;
    }
    PartialName& n = names_[c.name_hash];
    if (n.have.empty()) {
      n.len = c.name_len;
      n.text.assign(c.name_len, '\0');
      n.have.assign(c.name_len == 0 ? 1 : (c.name_len + kGtNameChunkBytes - 1) / kGtNameChunkBytes, false);
    } else if (n.len != c.name_len) {
      n.broken = true;
      return;
    }
    size_t used = std::min<size_t>(kGtNameChunkBytes, c.name_len - c.offset);
    size_t chunk = c.offset / kGtNameChunkBytes;
    if (n.have[chunk]) {  // written again (the writer's table was full): must say the same
      if (n.text.compare(c.offset, used, reinterpret_cast<const char*>(c.text), used) != 0) n.broken = true;
      return;
    }
    n.text.replace(c.offset, used, reinterpret_cast<const char*>(c.text), used);
    n.have[chunk] = true;
  }

  void stats(const uint8_t* slot) {
    GtStats s;
    std::memcpy(&s, slot, sizeof s);
    ActivityProcess* p = find(s.pid);
    if (!p) return;
    // Cumulative: the last one holds the totals.
    p->stats_seen = true;
    p->stats_final = s.final != 0;
    p->cupti_dropped = s.cupti_dropped;
    p->records_written = s.records_written;
    p->write_errors = s.write_errors;
    p->buffer_failures = s.buffer_failures;
    p->unknown_kinds = s.unknown_kinds;
  }

  void finish_names() {
    for (auto& [hash, n] : names_) {
      bool complete = !n.broken;
      for (bool h : n.have) complete = complete && h;
      if (!complete || gt_name_hash(n.text.data(), n.text.size()) != hash) {
        ++out_.counts.bad_names;
        continue;
      }
      out_.names.emplace(hash, std::move(n.text));
    }
  }

  std::span<const uint8_t> bytes_;
  std::string_view what_;
  ActivityFile out_;
  std::unordered_map<uint32_t, size_t> pid_index_;  // pid -> out_.processes
  std::unordered_map<uint64_t, PartialName> names_;
  // Bytes the names declared so far; a cap on what a file can make us hold.
  static constexpr uint64_t kMaxNameBytesInAll = 64ull << 20;
  uint64_t name_bytes_ = 0;
};

}  // namespace

const ActivityProcess* ActivityFile::process(uint32_t pid) const {
  for (const ActivityProcess& p : processes)
    if (p.pid == pid) return &p;
  return nullptr;
}

const std::string* ActivityFile::name_of(uint64_t hash) const {
  auto it = names.find(hash);
  return it == names.end() ? nullptr : &it->second;
}

Result<ActivityFile> parse_activity_file(std::span<const uint8_t> bytes, std::string_view what) {
  return Parser(bytes, what).run();
}

Result<ActivityFile> read_activity_file(const std::string& path, uint64_t max_bytes) {
  // The file is written by the traced program: never through a link, never
  // a FIFO or a device (which would block or never end), never more than max_bytes.
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return make_error("cannot open " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return make_error(path + " is not a regular file: not read");
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    return make_error(path + " is larger (" + std::to_string(st.st_size) + " bytes) than the " +
                          std::to_string(max_bytes) + " bytes gpuobs reads",
                      "");
  }
  std::vector<uint8_t> bytes(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < bytes.size()) {
    ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  int err = errno;
  ::close(fd);
  if (got < bytes.size() && got == 0 && !bytes.empty())
    return make_error("cannot read " + path + ": " + std::strerror(err));
  bytes.resize(got);
  return parse_activity_file(bytes, path);
}

}  // namespace gpuobs::gpu_time
