// Demangled C++ names cut to what a person reads, as `nsys stats` (its base
// names) and `perf report` show them: template arguments and parameter lists
// folded to "<...>" and "(...)", the return type dropped. A PyTorch kernel is
// ~300 characters demangled and a collective's call site 3,000:
//   void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>,
//       at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, ...)
// becomes at::native::vectorized_elementwise_kernel<...>(...). Tables and CSV
// show short names; --full-names and JSON keep the whole name.
#pragma once

#include <string>
#include <string_view>

namespace gpuobs {

std::string short_name(std::string_view name);

}  // namespace gpuobs
