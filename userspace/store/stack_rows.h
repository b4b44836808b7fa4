// Rows of the stack tables (schema/migrations/003_stacks.sql): modules,
// symbols, frames (symbolized as they are written), stacks, stack_frames.
// Used only by the writer thread. Definitions may arrive twice (the resolver
// re-sends them after a rolled-back batch): every insert ignores duplicates.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <string>
#include <unordered_set>

#include "stacks/stack_types.h"
#include "stacks/symbolizer.h"
#include "store/db.h"

namespace gpuobs {

struct SymbolStats {
  uint64_t frames = 0;              // frames symbolized or attempted
  uint64_t unsymbolized = 0;        // frames in a file with no symbol covering them
  uint64_t modules_no_symbols = 0;  // files without a readable symbol table
};

class StackRowWriter {
 public:
  Status prepare(sqlite3* db);
  // Each returns the SQLite code of the last statement (SQLITE_DONE: ok).
  int write_module(const ModuleDef& m);
  int write_frame(const FrameDef& f);
  int write_stack(const StackDef& s);
  const SymbolStats& stats() const { return stats_; }

 private:
  Symbolizer symbolizer_;
  Stmt module_, symbol_, symbol_id_, frame_, py_frame_, stack_, stack_frame_;
  SymbolStats stats_;
  std::unordered_set<int64_t> root_frames_;  // frames in a thread's entry function
  std::unordered_set<int64_t> pseudo_modules_;
  std::unordered_set<int64_t> python_frames_;  // frame ids of Python frames
  std::map<int64_t, bool> module_has_symbols_;
};

}  // namespace gpuobs
