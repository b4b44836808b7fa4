// One row of call-frame information, reduced to what an x86-64 unwinder
// needs: where the canonical frame address (CFA) is, where the return address
// and the caller's rbp were saved. Shared by the user-space unwinder
// (cfi_unwinder.cpp) and the tables built for the BPF one (unwind_table.cpp).
#pragma once

#include <elfutils/libdw.h>

#include <cstdint>

namespace gpuobs {

constexpr int kDwarfRbp = 6, kDwarfRsp = 7;  // DWARF x86-64 register numbers

struct CfiRule {
  // cfi: follow it; none: no CFI covers the address; unsupported: a rule this
  // unwinder does not follow (CFA expressions); outermost: the return address
  // is undefined (_start, a thread's start routine): the walk is complete.
  enum class Kind : uint8_t { cfi, none, unsupported, outermost } kind = Kind::none;
  uint8_t cfa_reg = kDwarfRsp;  // CFA = cfa_reg + cfa_off
  int64_t cfa_off = 0;
  int64_t ra_off = -8;  // return address at CFA + ra_off
  enum class Bp : uint8_t { same, at, undefined } bp = Bp::same;
  int64_t bp_off = 0;  // saved rbp at CFA + bp_off
};

// The rule of a frame state returned by dwarf_cfi_addrframe.
CfiRule cfi_rule(Dwarf_Frame* frame);

}  // namespace gpuobs
