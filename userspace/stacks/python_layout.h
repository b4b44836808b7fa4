// What gpuobs knows of each CPython version's memory layout (x86-64, the
// default build with the GIL): the field offsets the BPF walker needs
// (gpuobs_py_proc, bpf/events.h) and those user space needs to read a code
// object's name, file and line table. Facts from each version's headers,
// checked against running interpreters (docs/python.md says which and how:
// scripts/python-layout-probe.py). Free-threaded builds are not described.
#pragma once

#include <cstdint>
#include <optional>

#include "events.h"

namespace gpuobs {

enum class PyLineTable : uint8_t {
  pep626,  // 3.10: (bytecode delta, line delta) byte pairs
  pep657,  // 3.11+: the location table (Objects/locations.md)
};

struct PyLayout {
  uint32_t version = 0;  // PY_VERSION_HEX >> 16, e.g. 0x030c
  // For BPF; runtime is filled per process.
  gpuobs_py_proc bpf{};
  // PyCodeObject
  uint16_t code_firstlineno = 0;  // int
  uint16_t code_filename = 0;     // PyObject * (str)
  uint16_t code_name = 0;         // co_qualname (3.11+), co_name (3.10)
  uint16_t code_linetable = 0;    // PyObject * (bytes)
  uint16_t code_adaptive = 0;     // 3.11+: where the instructions start inline; 3.10: unused
  uint16_t code_read = 0;         // bytes of a code object to read (past every field above)
  // str: PyASCIIObject / PyCompactUnicodeObject
  uint16_t str_ascii_size = 0;    // sizeof(PyASCIIObject): ASCII data follows
  uint16_t str_compact_size = 0;  // sizeof(PyCompactUnicodeObject): other compact data follows
  PyLineTable lines = PyLineTable::pep657;
  // Instruction offsets are in code units of 2 bytes; 3.10's f_lasti counts units.
  bool instr_is_index = false;
};

// nullopt: a version gpuobs has no layout for (counted, never guessed).
std::optional<PyLayout> python_layout(uint32_t version);

}  // namespace gpuobs
