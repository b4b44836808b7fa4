#include "common/terminal_text.h"

#include <cstdint>
#include <cstdio>

namespace gpuobs {
namespace {

void hex_byte(std::string& out, unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02x", c);
  out += buf;
}

// Length of the valid UTF-8 sequence at s[i] (shortest form, no surrogates,
// <= U+10FFFF) and its code point; 0 when it is not one.
size_t utf8_sequence(std::string_view s, size_t i, uint32_t& cp) {
  auto c = static_cast<unsigned char>(s[i]);
  size_t n;
  uint32_t min;
  if (c >= 0xC2 && c <= 0xDF) n = 2, cp = c & 0x1F, min = 0x80;
  else if (c >= 0xE0 && c <= 0xEF) n = 3, cp = c & 0x0F, min = 0x800;
  else if (c >= 0xF0 && c <= 0xF4) n = 4, cp = c & 0x07, min = 0x10000;
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    auto t = static_cast<unsigned char>(s[i + k]);
    if ((t & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (t & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

}  // namespace

std::string terminal_safe(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    if (c < 0x80) {  // C0 controls and DEL
      switch (c) {
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case 0x1B: out += "\\e"; break;
        default: hex_byte(out, c);
      }
      ++i;
      continue;
    }
    uint32_t cp = 0;
    size_t n = utf8_sequence(s, i, cp);
    if (n == 0 || (cp >= 0x80 && cp <= 0x9F)) {  // not UTF-8, or a C1 control (0x9B is CSI)
      for (size_t k = 0; k < (n ? n : 1); ++k) hex_byte(out, static_cast<unsigned char>(s[i + k]));
      i += n ? n : 1;
      continue;
    }
    if ((cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069)) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "\\u{%04x}", cp);
      out += buf;
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  return out;
}

}  // namespace gpuobs
