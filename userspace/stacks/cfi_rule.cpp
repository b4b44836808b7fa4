#include "stacks/cfi_rule.h"

#include <dwarf.h>

namespace gpuobs {

CfiRule cfi_rule(Dwarf_Frame* frame) {
  CfiRule r;
  r.kind = CfiRule::Kind::unsupported;
  Dwarf_Op* ops = nullptr;
  size_t nops = 0;
  // CFA = register + offset (DW_OP_bregx); an expression is not followed.
  if (dwarf_frame_cfa(frame, &ops, &nops) != 0 || nops != 1 || ops[0].atom != DW_OP_bregx ||
      (ops[0].number != kDwarfRsp && ops[0].number != kDwarfRbp))
    return r;
  r.cfa_reg = static_cast<uint8_t>(ops[0].number);
  r.cfa_off = static_cast<int64_t>(ops[0].number2);
  // 1 saved at CFA + off (DW_OP_call_frame_cfa [DW_OP_plus_uconst N]),
  // 0 same value, 2 undefined, -1 anything else
  auto saved_at = [&](int reg, int64_t& off) -> int {
    Dwarf_Op mem[3];
    Dwarf_Op* rops = nullptr;
    size_t rn = 0;
    if (dwarf_frame_register(frame, reg, mem, &rops, &rn) != 0) return -1;
    if (rn == 0) return rops == nullptr ? 0 : 2;
    if (rops[0].atom != DW_OP_call_frame_cfa) return -1;
    if (rn == 1) {
      off = 0;
      return 1;
    }
    if (rn == 2 && rops[1].atom == DW_OP_plus_uconst) {
      off = static_cast<int64_t>(rops[1].number);
      return 1;
    }
    return -1;
  };
  int ra_reg = dwarf_frame_info(frame, nullptr, nullptr, nullptr);
  int64_t ra = 0, bp = 0;
  int ra_kind = saved_at(ra_reg, ra);
  int bp_kind = saved_at(kDwarfRbp, bp);
  if (ra_kind == 1) {
    r.kind = CfiRule::Kind::cfi;
    r.ra_off = ra;
    r.bp = bp_kind == 1 ? CfiRule::Bp::at : bp_kind == 0 ? CfiRule::Bp::same : CfiRule::Bp::undefined;
    r.bp_off = bp;
  } else if (ra_kind == 2) {
    r.kind = CfiRule::Kind::outermost;
  }
  return r;
}

}  // namespace gpuobs
