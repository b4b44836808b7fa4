#include "stacks/symbolizer.h"

#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "common/demangle.h"

namespace gpuobs {

namespace {

const Dwfl_Callbacks kCallbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = nullptr,
};

bool has_section(Elf* elf, const char* wanted) {
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return false;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) continue;
    const char* name = elf_strptr(elf, shstrndx, sh.sh_name);
    if (name && std::strcmp(name, wanted) == 0) return true;
  }
  return false;
}

}  // namespace

struct Symbolizer::Module {
  Dwfl* dwfl = nullptr;
  Dwfl_Module* mod = nullptr;
  Elf* elf = nullptr;  // owned by dwfl
  GElf_Addr bias = 0;
  ~Module() {
    if (dwfl) dwfl_end(dwfl);
  }

  // File offset -> address in the module's ELF space, through PT_LOAD.
  std::optional<GElf_Addr> address_of(uint64_t offset) const {
    size_t n = 0;
    if (elf_getphdrnum(elf, &n) != 0) return std::nullopt;
    for (size_t i = 0; i < n; ++i) {
      GElf_Phdr ph;
      if (!gelf_getphdr(elf, static_cast<int>(i), &ph) || ph.p_type != PT_LOAD) continue;
      if (offset >= ph.p_offset && offset < ph.p_offset + ph.p_filesz) return offset - ph.p_offset + ph.p_vaddr + bias;
    }
    return std::nullopt;
  }
};

Symbolizer::Symbolizer() { elf_version(EV_CURRENT); }
Symbolizer::~Symbolizer() = default;

ModuleInfo Symbolizer::add(const ModuleDef& m) {
  ModuleInfo info{"", "none", false};
  if (auto it = infos_.find(m.id); it != infos_.end()) return it->second;  // a definition sent again
  if (!m.file) return info;
  auto mod = std::make_unique<Module>();
  mod->dwfl = dwfl_begin(&kCallbacks);
  int fd = mod->dwfl ? ::dup(m.file->fd()) : -1;  // libdwfl closes what it is given
  if (fd >= 0) {
    dwfl_report_begin(mod->dwfl);
    mod->mod = dwfl_report_offline(mod->dwfl, m.path.c_str(), m.path.c_str(), fd);
    if (!mod->mod) ::close(fd);  // libdwfl keeps the descriptor only on success
    dwfl_report_end(mod->dwfl, nullptr, nullptr);
  }
  if (mod->mod) mod->elf = dwfl_module_getelf(mod->mod, &mod->bias);
  if (!mod->elf) {
    modules_.emplace(m.id, nullptr);
    infos_.emplace(m.id, info);
    return info;
  }
  const unsigned char* bits = nullptr;
  GElf_Addr vaddr = 0;
  int len = dwfl_module_build_id(mod->mod, &bits, &vaddr);
  static const char* hex = "0123456789abcdef";
  for (int i = 0; i < len; ++i) {
    info.build_id += hex[bits[i] >> 4];
    info.build_id += hex[bits[i] & 15];
  }
  // The symbol table elfutils will use: the file's own, else MiniDebugInfo,
  // else the dynamic one.
  if (has_section(mod->elf, ".symtab")) info.symbols = "symtab";
  else if (has_section(mod->elf, ".gnu_debugdata")) info.symbols = "minidebuginfo";
  else if (has_section(mod->elf, ".dynsym")) info.symbols = "dynsym";
  Dwarf_Addr dbias = 0;
  info.debug_info = dwfl_module_getdwarf(mod->mod, &dbias) != nullptr;
  if (dwfl_module_getsymtab(mod->mod) <= 0) info.symbols = "none";
  modules_.emplace(m.id, std::move(mod));
  infos_.emplace(m.id, info);
  return info;
}

std::optional<FrameSymbol> Symbolizer::symbolize(int64_t module_id, uint64_t offset) {
  auto it = modules_.find(module_id);
  if (it == modules_.end() || !it->second || offset == 0) return std::nullopt;
  Module& m = *it->second;
  auto addr = m.address_of(offset - 1);
  if (!addr) return std::nullopt;
  FrameSymbol out;
  GElf_Off off = 0;
  GElf_Sym sym;
  const char* name = dwfl_module_addrinfo(m.mod, *addr, &off, &sym, nullptr, nullptr, nullptr);
  if (name) {
    out.mangled = name;
    out.name = demangle(out.mangled);
    out.symbol_offset = off + 1;  // of the return address, as a debugger shows it
  }
  if (Dwfl_Line* line = dwfl_module_getsrc(m.mod, *addr)) {
    int lineno = 0;
    if (const char* file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr)) {
      out.file = file;
      out.line = lineno;
    }
  }
  if (out.name.empty() && out.file.empty()) return std::nullopt;
  return out;
}

}  // namespace gpuobs
