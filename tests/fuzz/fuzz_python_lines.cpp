// CPython line tables (userspace/stacks/python_lines.cpp): bytes read from
// another process's memory, so untrusted. Input (tests/fuzz/README.md):
//   u8 format (bit 0: 3.10's PEP 626 pairs, else the 3.11+ location table),
//   i32 firstlineno, then the table. Every code unit up to 4 per table byte
//   (and a few past the end) is looked up; besides ASan/UBSan, checks that a
//   unit past every entry has no line.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "stacks/python_lines.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 5) return 0;
  auto format = (data[0] & 1) ? gpuobs::PyLineTable::pep626 : gpuobs::PyLineTable::pep657;
  int32_t first = 0;
  std::memcpy(&first, data + 1, 4);
  std::string_view table(reinterpret_cast<const char*>(data + 5), size - 5);
  // 3.11+ entries cover at most 8 units; 3.10 pairs at most 255 bytes.
  uint32_t limit = static_cast<uint32_t>(table.size()) * 128 + 16;
  for (uint32_t unit = 0; unit < table.size() * 4 + 8; ++unit) gpuobs::python_line(format, table, first, unit);
  if (gpuobs::python_line(format, table, first, limit) != -1) std::abort();
  return 0;
}
