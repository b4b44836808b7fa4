// CLI11 validators for numeric options whose messages a person can read.
// CLI11's own Range says "Value abc not in range 1 to 1024" for a word that
// is not a number, and PositiveNumber prints DBL_MAX in full (309 digits):
// these say what was wrong ("not a number", "out of range") and the range in
// the option's own terms. One set for gpuobs, gpuobsd and the config file.
#pragma once

#include <CLI/CLI.hpp>

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>

namespace gpuobs {

// The kernel's largest pid (PID_MAX_LIMIT on 64-bit): --pid's range.
inline constexpr uint64_t kPidMaxLimit = 4194304;

// A whole number from lo to hi (hi at the type's maximum reads "lo or more").
inline CLI::Validator whole_number(uint64_t lo, uint64_t hi = std::numeric_limits<uint64_t>::max()) {
  std::string range = hi == std::numeric_limits<uint64_t>::max()
                          ? "a whole number, " + std::to_string(lo) + " or more"
                          : "a whole number from " + std::to_string(lo) + " to " + std::to_string(hi);
  return CLI::Validator(
      [lo, hi, range](std::string& v) -> std::string {
        uint64_t n = 0;
        const char* end = v.data() + v.size();
        auto [p, ec] = std::from_chars(v.data(), end, n);
        if (v.empty() || v[0] == '-' || (ec != std::errc{} && ec != std::errc::result_out_of_range) || p != end)
          return "'" + v + "' is not a number (" + range + ")";
        if (ec == std::errc::result_out_of_range || n < lo || n > hi) return v + " is out of range (" + range + ")";
        return {};
      },
      "UINT");
}

// A number (decimals allowed) from lo to hi.
inline CLI::Validator decimal_number(double lo, double hi) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "a number from %g to %g", lo, hi);
  std::string range = buf;
  return CLI::Validator(
      [lo, hi, range](std::string& v) -> std::string {
        double d = 0;
        const char* end = v.data() + v.size();
        auto [p, ec] = std::from_chars(v.data(), end, d);
        if (v.empty() || ec != std::errc{} || p != end) return "'" + v + "' is not a number (" + range + ")";
        if (!(d >= lo && d <= hi)) return v + " is out of range (" + range + ")";
        return {};
      },
      "NUMBER");
}

}  // namespace gpuobs
