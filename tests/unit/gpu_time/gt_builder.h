// Synthetic GPU time files and activities for the gpu_time tests: the slots
// of userspace/gpu_time/activity_format.h, built field by field.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_time/activity_file.h"
#include "gpu_time/activity_format.h"

namespace gpuobs::gpu_time::testing {

class FileBuilder {
 public:
  FileBuilder& header(uint32_t pid, uint32_t clock_kind = kGtClockMonotonic, uint64_t mono = 0, uint64_t cupti = 0,
                      uint32_t version = kGtFormatVersion, uint32_t tid_kind = kGtTidSystem) {
    GtFileHeader h{};
    h.magic = kGtMagic;
    h.version = version;
    h.slot_size = kGtSlotSize;
    h.pid = pid;
    h.clock_kind = clock_kind;
    h.tid_kind = tid_kind;
    h.cupti_version = 130001;
    h.clock_mono_ns = mono;
    h.clock_cupti_ns = cupti;
    h.realtime_ns = 1'700'000'000'000'000'000ull;
    h.flags = kGtEnabledKernel | kGtEnabledMemcpy | kGtEnabledMemset | kGtEnabledDriver;
    return slot(h);
  }
  FileBuilder& record(const GtRecord& r) { return slot(r); }
  FileBuilder& name(uint32_t pid, const std::string& text) {
    uint64_t hash = gt_name_hash(text.data(), text.size());
    for (size_t off = 0; off < text.size(); off += kGtNameChunkBytes) chunk(pid, hash, text, off);
    return *this;
  }
  FileBuilder& chunk(uint32_t pid, uint64_t hash, const std::string& text, size_t off) {
    GtNameChunk c{};
    c.type = kGtName;
    c.pid = pid;
    c.name_hash = hash;
    c.name_len = static_cast<uint32_t>(text.size());
    c.offset = static_cast<uint32_t>(off);
    std::memcpy(c.text, text.data() + off, std::min<size_t>(kGtNameChunkBytes, text.size() - off));
    return slot(c);
  }
  FileBuilder& stats(uint32_t pid, uint64_t dropped, uint64_t written, bool final) {
    GtStats s{};
    s.type = kGtStats;
    s.pid = pid;
    s.cupti_dropped = dropped;
    s.records_written = written;
    s.final = final ? 1 : 0;
    return slot(s);
  }
  FileBuilder& raw(const std::vector<uint8_t>& b) {
    bytes.insert(bytes.end(), b.begin(), b.end());
    return *this;
  }
  template <class T>
  FileBuilder& slot(const T& v) {
    static_assert(sizeof(T) == kGtSlotSize);
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    bytes.insert(bytes.end(), p, p + sizeof v);
    return *this;
  }
  std::vector<uint8_t> bytes;
};

inline GtRecord gt_record(uint32_t type, uint32_t pid, uint32_t corr, uint64_t start, uint64_t end) {
  GtRecord r{};
  r.type = type;
  r.pid = pid;
  r.correlation_id = corr;
  r.start_ns = start;
  r.end_ns = end;
  return r;
}

// Activities as the reader returns them.
inline Activity gpu(ActivityKind kind, uint32_t pid, uint32_t corr, uint64_t start, uint64_t end, uint32_t stream = 7) {
  Activity a;
  a.kind = kind;
  a.pid = pid;
  a.correlation_id = corr;
  a.start_ns = start;
  a.end_ns = end;
  a.device_id = 0;
  a.context_id = 1;
  a.stream_id = stream;
  return a;
}

inline Activity driver(uint32_t pid, uint32_t corr, uint32_t tid, uint64_t start, uint64_t end) {
  Activity a;
  a.kind = ActivityKind::driver_api;
  a.pid = pid;
  a.correlation_id = corr;
  a.tid = tid;
  a.start_ns = start;
  a.end_ns = end;
  return a;
}

}  // namespace gpuobs::gpu_time::testing
