// Function symbols of a shared library -> file offsets (what a uprobe takes),
// read once per library with libelf instead of once per probe.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "common/result.h"

namespace gpuobs {

struct FunctionSymbol {
  uint64_t file_offset = 0;
  uint8_t first_byte = 0;  // to refuse probes the kernel would drop silently
};

// Defined STT_FUNC/STT_GNU_IFUNC symbols from .dynsym and .symtab.
Result<std::unordered_map<std::string, FunctionSymbol>> read_function_symbols(const std::string& path);

// Why a uprobe at an instruction starting with this byte cannot work, or empty.
// x86 uprobes refuse lock and segment-override prefixes (arch/x86/kernel/uprobes.c),
// and the kernel does so when the library is mapped, after attach succeeded.
std::string unprobeable_reason(uint8_t first_byte);

}  // namespace gpuobs
