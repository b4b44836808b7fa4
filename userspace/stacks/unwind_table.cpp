#include "stacks/unwind_table.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "events.h"
#include "stacks/cfi_rule.h"

namespace gpuobs {
namespace {

uint64_t row_of(uint64_t pc, const CfiRule& r, uint64_t& fp_rows) {
  if (r.kind == CfiRule::Kind::outermost) return GPUOBS_UNWIND_ROW(pc, GPUOBS_UNWIND_END, 0, 0);
  bool fits = r.kind == CfiRule::Kind::cfi && r.ra_off == -8 && r.cfa_off >= INT16_MIN && r.cfa_off <= INT16_MAX;
  int64_t slot = 0;
  if (fits && r.bp == CfiRule::Bp::at) {
    fits = r.bp_off % 8 == 0 && r.bp_off / 8 >= INT8_MIN && r.bp_off / 8 <= INT8_MAX && r.bp_off != 0;
    slot = r.bp_off / 8;
  }
  if (fits && r.bp == CfiRule::Bp::undefined) fits = false;
  if (!fits) {
    ++fp_rows;
    return GPUOBS_UNWIND_ROW(pc, GPUOBS_UNWIND_FP, 0, 0);
  }
  int type = r.cfa_reg == kDwarfRbp ? GPUOBS_UNWIND_RBP : GPUOBS_UNWIND_RSP;
  return GPUOBS_UNWIND_ROW(pc, type, r.cfa_off, slot);
}

}  // namespace

Result<UnwindTable> build_unwind_table(int fd, const std::atomic<bool>* stop) {
  UnwindTable t;
  elf_version(EV_CURRENT);  // libelf refuses every file until a version is set
  int own = ::dup(fd);
  // pread, not mmap: a file truncated under us must not SIGBUS the recorder.
  Elf* elf = own >= 0 ? elf_begin(own, ELF_C_READ, nullptr) : nullptr;
  if (!elf) {
    if (own >= 0) ::close(own);
    return make_error("not an ELF file");
  }
  struct Closer {
    Elf* e;
    int fd;
    Dwarf_CFI* cfi = nullptr;
    ~Closer() {
      if (cfi) dwarf_cfi_end(cfi);
      elf_end(e);
      ::close(fd);
    }
  } closer{elf, own};
  size_t n = 0;
  if (elf_getphdrnum(elf, &n) == 0)
    for (size_t i = 0; i < n; ++i) {
      GElf_Phdr ph;
      if (gelf_getphdr(elf, static_cast<int>(i), &ph) && ph.p_type == PT_LOAD)
        t.loads.push_back({ph.p_offset, ph.p_vaddr, ph.p_filesz, (ph.p_flags & PF_X) != 0});
    }
  // .eh_frame_hdr: version 1, encodings, eh_frame_ptr, fde_count, then a
  // sorted table of (initial location, FDE address), each relative to the
  // section's address (datarel sdata4: what every linker writes).
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return make_error("no section names");
  Elf_Data* hdr = nullptr;
  uint64_t hdr_addr = 0;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) continue;
    const char* name = elf_strptr(elf, shstrndx, sh.sh_name);
    if (name && std::strcmp(name, ".eh_frame_hdr") == 0 && sh.sh_type == SHT_PROGBITS) {
      hdr = elf_getdata(scn, nullptr);
      hdr_addr = sh.sh_addr;
    }
  }
  if (!hdr || !hdr->d_buf || hdr->d_size < 12) return make_error("no .eh_frame_hdr");
  const auto* h = static_cast<const uint8_t*>(hdr->d_buf);
  if (h[0] != 1 || h[1] != (DW_EH_PE_pcrel | DW_EH_PE_sdata4) || h[2] != DW_EH_PE_udata4 ||
      h[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4))
    return make_error(".eh_frame_hdr uses an encoding this reader does not know");
  uint32_t count;
  std::memcpy(&count, h + 8, 4);
  if (12 + uint64_t{count} * 8 > hdr->d_size) return make_error(".eh_frame_hdr is truncated");
  std::vector<uint64_t> starts(count);
  for (uint32_t i = 0; i < count; ++i) {
    int32_t loc;
    std::memcpy(&loc, h + 12 + uint64_t{i} * 8, 4);
    starts[i] = hdr_addr + static_cast<int64_t>(loc);
  }
  std::sort(starts.begin(), starts.end());
  closer.cfi = dwarf_getcfi_elf(elf);
  if (!closer.cfi) return make_error("no call-frame information");
  t.fdes = count;
  for (size_t i = 0; i < starts.size(); ++i) {
    if (stop && (i & 1023) == 0 && stop->load(std::memory_order_relaxed)) return make_error("stopped");
    uint64_t addr = starts[i], limit = i + 1 < starts.size() ? starts[i + 1] : UINT64_MAX;
    while (addr < limit) {
      Dwarf_Frame* frame = nullptr;
      if (dwarf_cfi_addrframe(closer.cfi, addr, &frame) != 0 || !frame) break;
      Dwarf_Addr start = 0, end = 0;
      dwarf_frame_info(frame, &start, &end, nullptr);
      uint64_t row = row_of(addr, cfi_rule(frame), t.fp_rows);
      std::free(frame);
      // Rows with the same rule as the previous one add nothing.
      if (t.rows.empty() || (t.rows.back() >> 32) != (row >> 32)) t.rows.push_back(row);
      if (end <= addr) break;
      addr = end;
    }
    // Past this FDE and before the next: no CFI (the frame-pointer rule).
    if (addr < limit) {
      uint64_t gap = GPUOBS_UNWIND_ROW(addr, GPUOBS_UNWIND_FP, 0, 0);
      if (t.rows.empty() || (t.rows.back() >> 32) != (gap >> 32)) t.rows.push_back(gap);
    }
  }
  return t;
}

}  // namespace gpuobs
