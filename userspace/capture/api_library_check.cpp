#include "capture/api_library_check.h"

#include <elf.h>

#include <cstring>
#include <fstream>

#include "loader/elf_symbols.h"

namespace gpuobs {

Status check_api_library(const std::string& path, std::span<const ApiSpec> table, const char* flag) {
  const std::string hint = std::string("pass the vendor's runtime library with ") + flag;
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("cannot read " + path + ": " + std::strerror(errno), hint, 2);
  Elf64_Ehdr h{};
  in.read(reinterpret_cast<char*>(&h), sizeof h);
  if (in.gcount() != sizeof h || std::memcmp(h.e_ident, ELFMAG, SELFMAG) != 0)
    return make_error(path + " is not an ELF file", hint, 2);
  if (h.e_ident[EI_CLASS] != ELFCLASS64 || h.e_machine != EM_X86_64)
    return make_error(path + " is not a 64-bit x86 ELF file", hint, 2);
  if (h.e_type != ET_DYN)
    return make_error(path + " is not a shared library (ELF type " + std::to_string(h.e_type) + ")", hint, 2);
  auto syms = read_function_symbols(path);
  if (!syms) return make_error("cannot read the symbols of " + path + ": " + syms.error().message, hint, 2);
  for (const ApiSpec& s : table)
    if (syms->count(std::string(s.symbol))) return {};
  return make_error(path + " defines none of the " + std::to_string(table.size()) + " functions gpuobs probes there (" +
                        std::string(table.front().symbol) + ", ...)",
                    hint, 2);
}

}  // namespace gpuobs
