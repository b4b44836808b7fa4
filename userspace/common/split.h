// Splitting colon-separated lists (PATH, GPUOBS_LIBCUDA_SEARCH_PATH).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpuobs {

// Every element, empty ones included ("a::b" -> "a", "", "b"), as PATH has them.
inline std::vector<std::string> split_list(std::string_view s, char sep = ':') {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t end = s.find(sep, start);
    out.emplace_back(s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

}  // namespace gpuobs
