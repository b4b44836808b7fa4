// The shipper's RowBinary encoding, byte for byte: each integer at its
// column's width little-endian, Nullable's flag byte, strings behind their
// LEB128 length (a length of 128 or more takes two bytes), doubles bit for
// bit, a NULL into a column that is not Nullable as the default value.
#include "fleet/row_binary.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstring>
#include <string>

using namespace gpuobs::fleet;

namespace {

// The bytes of column 0 of "SELECT <value>" encoded as type.
std::string encode(const std::string& value, const std::string& type) {
  sqlite3* db = nullptr;
  sqlite3_open(":memory:", &db);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, ("SELECT " + value).c_str(), -1, &st, nullptr);
  EXPECT_EQ(sqlite3_step(st), SQLITE_ROW) << value;
  auto t = parse_binary_type(type);
  EXPECT_TRUE(t.ok()) << type;
  std::string out;
  if (t.ok()) append_binary(out, st, 0, *t);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s += static_cast<char>(c);
  return s;
}

}  // namespace

TEST(RowBinary, IntegersTakeTheirColumnsWidthLittleEndian) {
  EXPECT_EQ(encode("258", "UInt32"), bytes({2, 1, 0, 0}));
  EXPECT_EQ(encode("258", "UInt16"), bytes({2, 1}));
  EXPECT_EQ(encode("1", "UInt8"), bytes({1}));
  EXPECT_EQ(encode("-2", "Int64"), bytes({0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}));
  EXPECT_EQ(encode("-2", "Int32"), bytes({0xfe, 0xff, 0xff, 0xff}));
  // A handle above 2^63 is stored by SQLite as a negative int64: the same
  // 64 bits in a UInt64 column.
  EXPECT_EQ(encode("-1", "UInt64"), bytes({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}));
  EXPECT_EQ(encode("3.9", "Int64"), bytes({3, 0, 0, 0, 0, 0, 0, 0}));  // a REAL truncated, as CAST
  // Out of range or not a number: clamped, 0 (never undefined behaviour).
  EXPECT_EQ(encode("1e300", "Int64"), bytes({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}));
  EXPECT_EQ(encode("-1e300", "Int64"), bytes({0, 0, 0, 0, 0, 0, 0, 0x80}));
  EXPECT_EQ(encode("0.0 / 0.0", "Int64"), bytes({0, 0, 0, 0, 0, 0, 0, 0}));  // SQLite: NULL -> default
}

TEST(RowBinary, NullableHasAFlagByteAndNullIntoAPlainColumnIsTheDefault) {
  EXPECT_EQ(encode("NULL", "Nullable(Int64)"), bytes({1}));
  EXPECT_EQ(encode("7", "Nullable(Int64)"), bytes({0, 7, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(encode("NULL", "Int32"), bytes({0, 0, 0, 0}));
  EXPECT_EQ(encode("NULL", "String"), bytes({0}));
  EXPECT_EQ(encode("NULL", "Nullable(String)"), bytes({1}));
  EXPECT_EQ(encode("'ab'", "Nullable(String)"), bytes({0, 2, 'a', 'b'}));
}

TEST(RowBinary, StringsCarryTheirLengthAsLeb128AndAnyByte) {
  EXPECT_EQ(encode("''", "String"), bytes({0}));
  // Tabs, newlines and backslashes go as they are: nothing is escaped.
  EXPECT_EQ(encode("'a' || char(9) || '\\' || char(10)", "String"), bytes({4, 'a', 9, '\\', 10}));
  std::string long_value = encode("printf('%.300c', 'x')", "String");
  ASSERT_EQ(long_value.size(), 2u + 300u);
  EXPECT_EQ(long_value.substr(0, 2), bytes({0xac, 0x02}));  // 300 = 0b10_0101100
  EXPECT_EQ(long_value.substr(2), std::string(300, 'x'));
  // A number in a String column is its text.
  EXPECT_EQ(encode("42", "String"), bytes({2, '4', '2'}));
}

TEST(RowBinary, DoublesGoBitForBit) {
  std::string out = encode("0.1", "Float64");
  ASSERT_EQ(out.size(), 8u);
  double back = 0;
  std::memcpy(&back, out.data(), 8);
  EXPECT_EQ(back, 0.1);
  out = encode("4e-7", "Nullable(Float64)");
  ASSERT_EQ(out.size(), 9u);
  std::memcpy(&back, out.data() + 1, 8);
  EXPECT_EQ(back, 4e-7);
  EXPECT_EQ(encode("2", "Float64").size(), 8u);  // an integer into a Float64 column
}

TEST(RowBinary, TypesItCannotSendAreRefusedByName) {
  auto t = parse_binary_type("Array(UInt32)");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("Array(UInt32)"), std::string::npos);
  EXPECT_FALSE(parse_binary_type("Nullable(Decimal(9, 2))").ok());
  auto d = parse_binary_type("Date");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->kind, BinaryType::date);
  EXPECT_FALSE(d->nullable);
}
