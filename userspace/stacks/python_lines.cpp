#include "stacks/python_lines.h"

#include <cstdint>

namespace gpuobs {
namespace {

// 3.10 (Objects/lnotab_notes.txt of 3.10): pairs (bytes of bytecode, signed
// line delta); a delta of -128 says "no line" for its range. The delta
// applies before the range it starts.
// A line as returned: 64-bit sums of untrusted deltas, -1 outside int.
int as_line(int64_t line) { return line >= 0 && line <= INT32_MAX ? static_cast<int>(line) : -1; }

int line_pep626(std::string_view t, int firstlineno, uint32_t unit) {
  uint64_t target = uint64_t{unit} * 2, addr = 0;
  int64_t line = firstlineno;
  for (size_t i = 0; i + 1 < t.size(); i += 2) {
    auto sdelta = static_cast<uint8_t>(t[i]);
    auto ldelta = static_cast<int8_t>(t[i + 1]);
    int64_t range_line = -1;
    if (ldelta != -128) {
      line += ldelta;
      range_line = line;
    }
    uint64_t end = addr + sdelta;
    if (target >= addr && target < end) return as_line(range_line);
    addr = end;
  }
  return -1;
}

// 3.11+ (Objects/locations.md): entries of one start byte (bit 7 set; bits
// 3..6 the code; bits 0..2 the length in code units minus one) and the
// code's bytes. Varints are 6 bits a byte, bit 6 says another follows; a
// signed varint keeps its sign in bit 0.
class Reader {
 public:
  explicit Reader(std::string_view t) : t_(t) {}
  bool more() const { return i_ < t_.size(); }
  int byte() { return i_ < t_.size() ? static_cast<uint8_t>(t_[i_++]) : -1; }
  // False when the table ends inside the varint.
  bool varint(uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 6) {
      int b = byte();
      if (b < 0) return false;
      v |= uint64_t(b & 63) << shift;
      if (!(b & 64)) return true;
    }
    return false;
  }
  // Deltas past +-2^40 are no line table's: refused, so sums stay far
  // from overflow.
  bool svarint(int64_t& v) {
    uint64_t u = 0;
    if (!varint(u) || (u >> 41)) return false;
    v = (u & 1) ? -static_cast<int64_t>(u >> 1) : static_cast<int64_t>(u >> 1);
    return true;
  }
  bool skip(size_t n) {
    if (t_.size() - i_ < n) return false;
    i_ += n;
    return true;
  }
  // The next byte is an entry's start (bit 7): a malformed table stops here.
  bool at_start() const { return i_ < t_.size() && (static_cast<uint8_t>(t_[i_]) & 0x80); }

 private:
  std::string_view t_;
  size_t i_ = 0;
};

int line_pep657(std::string_view t, int firstlineno, uint32_t unit) {
  Reader r(t);
  int64_t line = firstlineno;
  uint64_t addr = 0;
  while (r.at_start()) {
    int b = r.byte();
    int code = (b >> 3) & 15;
    uint64_t length = uint64_t(b & 7) + 1;
    bool has_line = true;
    uint64_t u = 0;
    int64_t d = 0;
    switch (code) {
      case 15:  // no location
        has_line = false;
        break;
      case 14:  // long form: line delta, end line delta, column + 1, end column + 1
        if (!r.svarint(d) || !r.varint(u) || !r.varint(u) || !r.varint(u)) return -1;
        line += d;
        break;
      case 13:  // no column: line delta
        if (!r.svarint(d)) return -1;
        line += d;
        break;
      case 10:
      case 11:
      case 12:  // one-line forms: line delta 0..2, then start and end columns
        line += code - 10;
        if (!r.skip(2)) return -1;
        break;
      default:  // short forms 0..9: same line, one byte of columns
        if (!r.skip(1)) return -1;
        break;
    }
    if (unit >= addr && unit < addr + length) return has_line ? as_line(line) : -1;
    addr += length;
  }
  return -1;
}

}  // namespace

int python_line(PyLineTable format, std::string_view table, int firstlineno, uint32_t unit) {
  return format == PyLineTable::pep626 ? line_pep626(table, firstlineno, unit) : line_pep657(table, firstlineno, unit);
}

}  // namespace gpuobs
