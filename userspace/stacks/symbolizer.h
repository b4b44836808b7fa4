// Symbols for (module, file offset) frames, with elfutils: function names from
// .symtab, .dynsym or MiniDebugInfo (.gnu_debugdata), file:line from DWARF in
// the file or in a separate debug file found by build id / debuglink. Each
// module is opened once, from the descriptor the resolver kept.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "stacks/stack_types.h"

namespace gpuobs {

struct ModuleInfo {
  std::string build_id;     // hex; empty: none
  std::string symbols;      // "symtab", "dynsym", "minidebuginfo", "none" (unreadable or no ELF)
  bool debug_info = false;  // DWARF found (file:line available)
};

struct FrameSymbol {
  std::string name;            // demangled; empty: unknown
  std::string mangled;         // as in the symbol table
  uint64_t symbol_offset = 0;  // pc - symbol start
  std::string file;            // empty: no line information
  int line = 0;
};

class Symbolizer {
 public:
  Symbolizer();
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // Opens a module (once); what can be had from it.
  ModuleInfo add(const ModuleDef& m);
  // offset is a return address's file offset: the call is at offset - 1.
  std::optional<FrameSymbol> symbolize(int64_t module_id, uint64_t offset);

 private:
  struct Module;
  std::map<int64_t, std::unique_ptr<Module>> modules_;
  std::map<int64_t, ModuleInfo> infos_;
};

}  // namespace gpuobs
