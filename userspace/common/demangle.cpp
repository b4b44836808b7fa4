#include "common/demangle.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace gpuobs {

std::string demangle(std::string_view name) {
  if (!name.starts_with("_Z")) return std::string(name);
  std::string z(name);  // the demangler wants a NUL-terminated string
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> d(abi::__cxa_demangle(z.c_str(), nullptr, nullptr, &status), &std::free);
  if (status != 0 || !d) return z;
  return std::string(d.get());
}

}  // namespace gpuobs
