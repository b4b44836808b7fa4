#include "loader/elf_symbols.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

namespace gpuobs {

Result<std::unordered_map<std::string, FunctionSymbol>> read_function_symbols(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error("cannot open " + path + ": " + std::strerror(errno));
  elf_version(EV_CURRENT);
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  auto done = [&](auto r) {
    if (elf) elf_end(elf);
    ::close(fd);
    return r;
  };
  if (!elf || elf_kind(elf) != ELF_K_ELF)
    return done(Result<std::unordered_map<std::string, FunctionSymbol>>(make_error(path + " is not an ELF file")));

  size_t nphdr = 0;
  elf_getphdrnum(elf, &nphdr);
  std::vector<GElf_Phdr> loads;
  for (size_t i = 0; i < nphdr; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf, static_cast<int>(i), &ph) && ph.p_type == PT_LOAD) loads.push_back(ph);
  }
  std::unordered_map<std::string, FunctionSymbol> out;
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn))) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB)) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data || sh.sh_entsize == 0) continue;
    size_t n = sh.sh_size / sh.sh_entsize;
    for (size_t i = 0; i < n; ++i) {
      GElf_Sym sym;
      if (!gelf_getsym(data, static_cast<int>(i), &sym)) continue;
      int type = GELF_ST_TYPE(sym.st_info);
      if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF || sym.st_value == 0) continue;
      const char* name = elf_strptr(elf, sh.sh_link, sym.st_name);
      if (!name || !*name || out.count(name)) continue;
      for (const auto& ph : loads) {
        if (sym.st_value < ph.p_vaddr || sym.st_value >= ph.p_vaddr + ph.p_filesz) continue;
        FunctionSymbol fs;
        fs.file_offset = sym.st_value - ph.p_vaddr + ph.p_offset;
        if (::pread(fd, &fs.first_byte, 1, static_cast<off_t>(fs.file_offset)) != 1) fs.first_byte = 0;
        out.emplace(name, fs);
        break;
      }
    }
  }
  return done(Result<std::unordered_map<std::string, FunctionSymbol>>(std::move(out)));
}

std::string unprobeable_reason(uint8_t b) {
  switch (b) {
    case 0xf0: return "first instruction has a lock prefix: x86 uprobes cannot probe it";
    case 0x26:
    case 0x2e:
    case 0x36:
    case 0x3e:
    case 0x64:
    case 0x65: {
      char buf[96];
      std::snprintf(buf, sizeof buf, "first instruction has segment prefix 0x%02x: x86 uprobes cannot probe it", b);
      return buf;
    }
  }
  return {};
}

}  // namespace gpuobs
