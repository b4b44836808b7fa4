#include "stacks/python_layout.h"

#include <algorithm>

namespace gpuobs {
namespace {

constexpr uint16_t kNone = GPUOBS_PY_NONE;

// One version's offsets, in the order of gpuobs_py_proc and PyLayout.
struct Row {
  uint32_t version;
  uint8_t frames, owner_cstack;
  uint16_t runtime_interp, interp_threads, tstate_next, tstate_thread_id, tstate_frame, cframe_current;
  uint16_t frame_code, frame_previous, frame_instr, frame_owner, frame_is_entry;
  uint16_t code_firstlineno, code_filename, code_name, code_linetable, code_adaptive;
  uint16_t str_ascii_size, str_compact_size;
};

// Sources: Include/internal/pycore_runtime.h, pycore_interp.h,
// pycore_frame.h, Include/cpython/pystate.h, code.h, unicodeobject.h,
// frameobject.h of each release (x86-64: pointers 8 bytes, int 4, natural
// alignment); every row measured on running interpreters (3.10.13, 3.11.2,
// 3.11.7, 3.12.1, 3.13.0) with scripts/python-layout-probe.py and checked
// against offsetof() on each version's internal headers (docs/python.md).
// 3.13 also publishes these in _Py_DebugOffsets at the start of
// _PyRuntime; the table agrees with it.
constexpr Row kRows[] = {
    // 3.10: PyFrameObject chain from tstate->frame; f_lasti counts code units.
    {0x030a,
     GPUOBS_PY_FRAMES_OBJECTS,
     0xff,
     /*runtime*/ 32,
     8,
     8,
     176,
     24,
     kNone,
     /*frame*/ 32,
     24,
     96,
     kNone,
     kNone,
     /*code*/ 40,
     104,
     112,
     120,
     0,
     /*str*/ 48,
     72},
    // 3.11: tstate->cframe->current_frame; is_entry marks a C call's first frame.
    {0x030b,
     GPUOBS_PY_FRAMES_INTERP,
     0xff,
     /*runtime*/ 40,
     16,
     8,
     152,
     56,
     8,
     /*frame*/ 32,
     48,
     56,
     69,
     68,
     /*code*/ 72,
     112,
     128,
     136,
     184,
     /*str*/ 48,
     72},
    // 3.12: tstate->cframe->current_frame; C calls push a shim frame owned by
    // the C stack (owner 3).
    {0x030c,
     GPUOBS_PY_FRAMES_INTERP,
     3,
     /*runtime*/ 40,
     72,
     8,
     136,
     56,
     0,
     /*frame*/ 0,
     8,
     56,
     70,
     kNone,
     /*code*/ 68,
     112,
     128,
     136,
     192,
     /*str*/ 40,
     56},
    // 3.13: tstate->current_frame; f_executable; instr_ptr.
    {0x030d,
     GPUOBS_PY_FRAMES_INTERP,
     3,
     /*runtime*/ 632,
     7344,
     8,
     152,
     72,
     kNone,
     /*frame*/ 0,
     8,
     56,
     70,
     kNone,
     /*code*/ 68,
     112,
     128,
     136,
     200,
     /*str*/ 40,
     56},
};

}  // namespace

std::optional<PyLayout> python_layout(uint32_t version) {
  for (const Row& r : kRows) {
    if (r.version != version) continue;
    PyLayout l;
    l.version = version;
    gpuobs_py_proc& b = l.bpf;
    b.version = version;
    b.frames = r.frames;
    b.owner_cstack = r.owner_cstack;
    b.runtime_interp = r.runtime_interp;
    b.interp_threads = r.interp_threads;
    b.tstate_next = r.tstate_next;
    b.tstate_thread_id = r.tstate_thread_id;
    b.tstate_frame = r.tstate_frame;
    b.cframe_current = r.cframe_current;
    b.frame_code = r.frame_code;
    b.frame_previous = r.frame_previous;
    b.frame_instr = r.frame_instr;
    b.frame_owner = r.frame_owner;
    b.frame_is_entry = r.frame_is_entry;
    // Read past the last frame field used (the BPF walk reads this much).
    uint16_t end = 0;
    for (uint16_t off : {r.frame_code, r.frame_previous, r.frame_instr})
      if (off != kNone && off + 8 > end) end = off + 8;
    for (uint16_t off : {r.frame_owner, r.frame_is_entry})
      if (off != kNone && off + 1 > end) end = off + 1;
    b.frame_read = static_cast<uint16_t>((end + 7) & ~7);
    uint16_t lo = std::min(r.tstate_frame, r.tstate_thread_id);
    b.tstate_lo = static_cast<uint16_t>(lo & ~7);
    b.tstate_len = static_cast<uint16_t>(std::max(r.tstate_frame, r.tstate_thread_id) + 8 - b.tstate_lo);
    l.code_firstlineno = r.code_firstlineno;
    l.code_filename = r.code_filename;
    l.code_name = r.code_name;
    l.code_linetable = r.code_linetable;
    l.code_adaptive = r.code_adaptive;
    uint16_t code_end = 0;
    for (uint16_t off : {r.code_filename, r.code_name, r.code_linetable})
      if (off + 8 > code_end) code_end = off + 8;
    if (r.code_firstlineno + 4 > code_end) code_end = r.code_firstlineno + 4;
    l.code_read = code_end;
    l.str_ascii_size = r.str_ascii_size;
    l.str_compact_size = r.str_compact_size;
    l.lines = r.frames == GPUOBS_PY_FRAMES_OBJECTS ? PyLineTable::pep626 : PyLineTable::pep657;
    l.instr_is_index = r.frames == GPUOBS_PY_FRAMES_OBJECTS;
    return l;
  }
  return std::nullopt;
}

}  // namespace gpuobs
