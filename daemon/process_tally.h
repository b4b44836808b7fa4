// Per-process numbers for the health snapshot (launches, bytes copied, live
// device memory), counted on the polling thread as events are decoded: a
// hash lookup per event, no SQL. Reset when a new segment opens, so they
// describe the current segment (its processes).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "daemon_state/health.h"
#include "decode/decoder.h"

namespace gpuobs::daemon {

class ProcessTally {
 public:
  void on_event(const Event& ev);
  // Processes with GPU activity, by tgid (comm read from /proc when unknown).
  std::vector<ProcessHealth> snapshot();
  void reset_counts();  // new segment: launches and bytes start over; live memory does not

 private:
  struct Tally {
    std::string comm;
    std::string container_id;  // read from /proc/PID/cgroup once (origin_read)
    bool origin_read = false;
    uint64_t launches = 0, bytes_copied = 0;
    int64_t device_bytes_live = 0;
  };
  std::unordered_map<uint32_t, Tally> procs_;
  // (tgid, address) -> bytes of a device allocation (cuMemAlloc*, hipMalloc*
  // of kind device/pitch/async/pool) not freed yet.
  std::map<std::pair<uint32_t, uint64_t>, uint64_t> live_;
};

}  // namespace gpuobs::daemon
