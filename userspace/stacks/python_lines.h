// A CPython code object's line table, read: the source line of one
// instruction. Two encodings: 3.10's (PEP 626) and 3.11+'s location table
// (PEP 657). Pure functions over bytes, so they are tested on tables the
// interpreters themselves produced (tests/unit/stacks/python_lines_test.cpp).
#pragma once

#include <cstdint>
#include <string_view>

#include "stacks/python_layout.h"

namespace gpuobs {

// The line of the instruction at unit (code units of 2 bytes from the first
// instruction); -1 when the table gives it no line or does not reach it.
int python_line(PyLineTable format, std::string_view table, int firstlineno, uint32_t unit);

}  // namespace gpuobs
