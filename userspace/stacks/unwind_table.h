// Unwind tables for --unwind bpf: every CFI row of a code file's .eh_frame as
// a packed 8-byte row (bpf/events.h GPUOBS_UNWIND_ROW), sorted by address,
// for the BPF unwinder to binary-search. FDEs are found through the sorted
// table in .eh_frame_hdr; each FDE's rows come from elfutils.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "common/result.h"

namespace gpuobs {

struct UnwindTable {
  std::vector<uint64_t> rows;
  struct Load {
    uint64_t offset, vaddr, filesz;  // PT_LOAD: file range -> ELF addresses
    bool exec;
  };
  std::vector<Load> loads;
  uint64_t fdes = 0;
  uint64_t fp_rows = 0;  // rows whose rule the BPF unwinder cannot follow (frame-pointer rule instead)
};

// stop (optional): abandon the build when it becomes true.
Result<UnwindTable> build_unwind_table(int fd, const std::atomic<bool>* stop = nullptr);

}  // namespace gpuobs
