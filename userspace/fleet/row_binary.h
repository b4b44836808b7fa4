// ClickHouse's RowBinary input format, for the shipper: each row's values
// one after the other, integers and floats little-endian at their column's
// width, strings as a LEB128 length and their bytes, a Nullable value as one
// byte (1: NULL, then nothing; 0: the value follows). Nothing is escaped or
// printed, so a row costs the client a few copies and the server no parsing
// of text (a launch: 230 bytes against TabSeparated's 273, most of either
// the stack's text; docs/performance.md, "Fleet, second round").
// The column types are the database's (system.columns), so a value is
// written at the width the table expects whatever build made the table.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace gpuobs::fleet {

struct BinaryType {
  enum Kind : uint8_t { i8, i16, i32, i64, u8, u16, u32, u64, f32, f64, string, date } kind = i64;
  bool nullable = false;
};

// "Nullable(UInt32)" -> {u32, nullable}; an error for a type the shipper
// does not send (arrays, tuples, ...).
Result<BinaryType> parse_binary_type(std::string_view type);

// Appends column col of the current row of st as type t. A NULL into a
// column that is not Nullable is written as the type's default (0, ""):
// ClickHouse would do the same for an omitted value.
void append_binary(std::string& out, sqlite3_stmt* st, int col, BinaryType t);
// Appends a string value (or NULL when s is null) as type t (String or
// Nullable(String)).
void append_binary_string(std::string& out, const char* s, size_t n, BinaryType t);

}  // namespace gpuobs::fleet
