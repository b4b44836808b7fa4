// One C++ demangler for every name gpuobs shows: symbols of stack frames
// (stacks/symbolizer.cpp) and kernel names the driver was given
// (store/api_rows.cpp).
#pragma once

#include <string>
#include <string_view>

namespace gpuobs {

// The demangled form of an Itanium-mangled name ("_Z..."); any other name, or
// one the demangler refuses, unchanged. Only "_Z" names are demangled: the
// demangler also reads bare type codes, so a C kernel named "i" or "f" would
// otherwise come back as "int" or "float".
std::string demangle(std::string_view name);

}  // namespace gpuobs
