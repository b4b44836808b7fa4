#include "stacks/cfi_unwinder.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <unistd.h>

#include <cstring>

#include "stacks/cfi_rule.h"
#include "stacks/stack_resolver.h"

namespace gpuobs {
constexpr int kRegRsp = kDwarfRsp;

// Where the caller's state is, relative to the canonical frame address.
struct CfiUnwinder::Rule : CfiRule {};

struct CfiUnwinder::Module {
  int fd = -1;
  Elf* elf = nullptr;
  Dwarf* dwarf = nullptr;   // for .debug_frame
  Dwarf_CFI* eh = nullptr;  // .eh_frame (owned by elf's CFI cache)
  Dwarf_CFI* debug = nullptr;
  std::vector<GElf_Phdr> loads;
  std::unordered_map<uint64_t, Rule> rules;  // file offset -> rule
  ~Module() {
    if (eh) dwarf_cfi_end(eh);
    if (dwarf) dwarf_end(dwarf);
    if (elf) elf_end(elf);
    if (fd >= 0) ::close(fd);
  }
  std::optional<uint64_t> vaddr_of(uint64_t offset) const {
    for (const auto& ph : loads)
      if (offset >= ph.p_offset && offset < ph.p_offset + ph.p_filesz) return offset - ph.p_offset + ph.p_vaddr;
    return std::nullopt;
  }
};

CfiUnwinder::CfiUnwinder() { elf_version(EV_CURRENT); }
CfiUnwinder::~CfiUnwinder() = default;

const CfiUnwinder::Rule* CfiUnwinder::rule_for(const ModuleDef& def, uint64_t offset) {
  auto& slot = modules_[def.id];
  if (!slot) {
    slot = std::make_unique<Module>();
    if (def.file) slot->fd = ::dup(def.file->fd());
    if (slot->fd >= 0) slot->elf = elf_begin(slot->fd, ELF_C_READ, nullptr);
    if (slot->elf) {
      size_t n = 0;
      if (elf_getphdrnum(slot->elf, &n) == 0)
        for (size_t i = 0; i < n; ++i) {
          GElf_Phdr ph;
          if (gelf_getphdr(slot->elf, static_cast<int>(i), &ph) && ph.p_type == PT_LOAD) slot->loads.push_back(ph);
        }
      slot->eh = dwarf_getcfi_elf(slot->elf);
      slot->dwarf = dwarf_begin_elf(slot->elf, DWARF_C_READ, nullptr);
      if (slot->dwarf) slot->debug = dwarf_getcfi(slot->dwarf);
    }
  }
  Module& m = *slot;
  auto [it, fresh] = m.rules.try_emplace(offset);
  if (!fresh) return &it->second;
  Rule& r = it->second;
  auto vaddr = m.vaddr_of(offset);
  if (!vaddr) return &r;
  for (Dwarf_CFI* cfi : {m.eh, m.debug}) {
    Dwarf_Frame* frame = nullptr;
    if (!cfi || dwarf_cfi_addrframe(cfi, *vaddr, &frame) != 0 || !frame) continue;
    static_cast<CfiRule&>(r) = cfi_rule(frame);
    free(frame);
    break;
  }
  return &r;
}

std::vector<uint64_t> CfiUnwinder::unwind(const RawStack& raw, const Locate& locate, size_t max_frames,
                                          bool& copy_end) {
  // One frame more than asked: the caller knows the walk went deeper.
  ++stats_.unwound;
  copy_end = false;
  const uint64_t lo = raw.sp, size = raw.copy.size();
  // Offsets, never addr + 8: a garbage rbp near 2^64 must not wrap past the check.
  auto read = [&](uint64_t addr, uint64_t& v) {
    if (addr < lo || size < 8 || addr - lo > size - 8) return false;
    std::memcpy(&v, raw.copy.data() + (addr - lo), 8);
    return true;
  };
  // Past the end of the copy (not below it, not wrapped): a larger copy would go on.
  auto beyond = [&](uint64_t addr) { return addr >= lo && addr - lo <= (uint64_t{1} << 32) && addr - lo > size - 8; };
  std::vector<uint64_t> out;
  uint64_t ip = raw.ip, sp = raw.sp, bp = raw.bp;
  out.push_back(ip);
  while (out.size() < max_frames) {
    auto loc = locate(ip);
    if (!loc) break;
    // Frame 0 is where the probe fired; the others are return addresses,
    // whose call instruction is the byte before.
    uint64_t at = out.size() == 1 ? loc->offset : loc->offset - 1;
    const Rule* r = rule_for(*loc->module, at);
    if (r->kind == Rule::Kind::outermost) break;
    uint64_t cfa, ra, next_bp = bp;
    if (r->kind == Rule::Kind::cfi) {
      cfa = (r->cfa_reg == kRegRsp ? sp : bp) + static_cast<uint64_t>(r->cfa_off);
      uint64_t ra_at = cfa + static_cast<uint64_t>(r->ra_off), bp_at = cfa + static_cast<uint64_t>(r->bp_off);
      if (!read(ra_at, ra)) {
        copy_end = beyond(ra_at);
        break;
      }
      if (r->bp == Rule::Bp::at && !read(bp_at, next_bp)) {
        copy_end = beyond(bp_at);
        break;
      }
      if (r->bp == Rule::Bp::undefined) next_bp = 0;
    } else {
      if (r->kind == Rule::Kind::unsupported) ++stats_.bad_rule;
      else ++stats_.no_cfi;
      // No usable CFI: the frame-pointer rule, [bp] = caller's bp, [bp+8] = return address.
      cfa = bp + 16;
      if (!read(bp + 8, ra) || !read(bp, next_bp)) {
        copy_end = beyond(bp + 8);
        break;
      }
    }
    if (cfa <= sp || ra == 0) break;  // no progress, or the outermost frame
    sp = cfa;
    bp = next_bp;
    ip = ra;
    out.push_back(ip);
  }
  if (copy_end) ++stats_.copy_end;
  return out;
}

}  // namespace gpuobs
