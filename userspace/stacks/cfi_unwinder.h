// DWARF unwinding of a copied user stack (--unwind dwarf): from the registers
// where the probe fired, each frame's canonical frame address and return
// address come from the call-frame information of the file the code is in
// (.eh_frame, else .debug_frame), read with elfutils. Code without CFI (JIT,
// some assembly) falls back to the frame-pointer rule. Rules are cached per
// (module, offset): a hot call path costs a hash lookup per frame.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "stacks/stack_types.h"

namespace gpuobs {

struct RawStack;

struct UnwindStats {
  uint64_t unwound = 0;   // stacks unwound from a copy
  uint64_t copy_end = 0;  // ... that ran off the end of the copied stack
  uint64_t no_cfi = 0;    // frames without CFI, followed by frame pointer
  uint64_t bad_rule = 0;  // a CFI rule this unwinder does not follow (expressions)
};

class CfiUnwinder {
 public:
  CfiUnwinder();
  ~CfiUnwinder();
  CfiUnwinder(const CfiUnwinder&) = delete;
  CfiUnwinder& operator=(const CfiUnwinder&) = delete;

  // Where an address is: (module id, file offset), if in a known code mapping.
  struct Location {
    const ModuleDef* module;
    uint64_t offset;
  };
  using Locate = std::function<std::optional<Location>(uint64_t)>;

  // Return addresses, innermost first; frame 0 is the probe's ip. Sets
  // copy_end when the walk stopped because the copied stack ended.
  std::vector<uint64_t> unwind(const RawStack& raw, const Locate& locate, size_t max_frames, bool& copy_end);
  const UnwindStats& stats() const { return stats_; }

 private:
  struct Rule;
  struct Module;
  const Rule* rule_for(const ModuleDef& m, uint64_t offset);

  std::unordered_map<int64_t, std::unique_ptr<Module>> modules_;
  UnwindStats stats_;
};

}  // namespace gpuobs
