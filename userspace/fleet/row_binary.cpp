#include "fleet/row_binary.h"

#include <cstring>
#include <limits>

namespace gpuobs::fleet {
namespace {

template <typename T>
void put(std::string& out, T v) {
  // x86-64 and arm64 are little-endian, as RowBinary is.
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}

void put_varint(std::string& out, uint64_t n) {
  while (n >= 0x80) {
    out += static_cast<char>((n & 0x7f) | 0x80);
    n >>= 7;
  }
  out += static_cast<char>(n);
}

void put_int(std::string& out, BinaryType::Kind k, int64_t v) {
  switch (k) {
    case BinaryType::i8: put(out, static_cast<int8_t>(v)); break;
    case BinaryType::i16: put(out, static_cast<int16_t>(v)); break;
    case BinaryType::i32: put(out, static_cast<int32_t>(v)); break;
    case BinaryType::u8: put(out, static_cast<uint8_t>(v)); break;
    case BinaryType::u16:
    case BinaryType::date: put(out, static_cast<uint16_t>(v)); break;
    case BinaryType::u32: put(out, static_cast<uint32_t>(v)); break;
    case BinaryType::u64: put(out, static_cast<uint64_t>(v)); break;
    default: put(out, v); break;
  }
}

}  // namespace

Result<BinaryType> parse_binary_type(std::string_view type) {
  BinaryType t;
  std::string_view inner = type;
  if (inner.starts_with("Nullable(") && inner.ends_with(")")) {
    t.nullable = true;
    inner = inner.substr(9, inner.size() - 10);
  }
  static constexpr struct {
    std::string_view name;
    BinaryType::Kind kind;
  } kTypes[] = {{"Int8", BinaryType::i8},     {"Int16", BinaryType::i16},     {"Int32", BinaryType::i32},
                {"Int64", BinaryType::i64},   {"UInt8", BinaryType::u8},      {"UInt16", BinaryType::u16},
                {"UInt32", BinaryType::u32},  {"UInt64", BinaryType::u64},    {"Float32", BinaryType::f32},
                {"Float64", BinaryType::f64}, {"String", BinaryType::string}, {"Date", BinaryType::date}};
  for (const auto& k : kTypes)
    if (inner == k.name) {
      t.kind = k.kind;
      return t;
    }
  return make_error("column type " + std::string(type) + " cannot be shipped");
}

void append_binary_string(std::string& out, const char* s, size_t n, BinaryType t) {
  if (t.nullable) {
    out += static_cast<char>(s == nullptr);
    if (s == nullptr) return;
  }
  put_varint(out, s ? n : 0);
  if (s) out.append(s, n);
}

void append_binary(std::string& out, sqlite3_stmt* st, int col, BinaryType t) {
  const int type = sqlite3_column_type(st, col);
  if (t.nullable) {
    out += static_cast<char>(type == SQLITE_NULL);
    if (type == SQLITE_NULL) return;
  }
  switch (t.kind) {
    case BinaryType::string: {
      const auto* s = reinterpret_cast<const char*>(sqlite3_column_text(st, col));
      const size_t n = static_cast<size_t>(sqlite3_column_bytes(st, col));
      put_varint(out, s ? n : 0);
      if (s) out.append(s, n);
      break;
    }
    case BinaryType::f64: put(out, sqlite3_column_double(st, col)); break;
    case BinaryType::f32: put(out, static_cast<float>(sqlite3_column_double(st, col))); break;
    default:
      // A REAL in an integer column is truncated toward zero, clamped to
      // int64 (NaN: 0): converting one out of range is undefined.
      if (type == SQLITE_FLOAT) {
        const double d = sqlite3_column_double(st, col);
        int64_t v = 0;
        if (d >= 9223372036854775807.0) v = std::numeric_limits<int64_t>::max();
        else if (d <= -9223372036854775808.0) v = std::numeric_limits<int64_t>::min();
        else if (d == d) v = static_cast<int64_t>(d);
        put_int(out, t.kind, v);
      } else {
        put_int(out, t.kind, sqlite3_column_int64(st, col));
      }
  }
}

}  // namespace gpuobs::fleet
