#include "report/query.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

#include "capture/session.h"
#include "store/schema.h"
#include "store/writer.h"
#include "test_util.h"

using namespace gpuobs;

namespace {

QueryResult sample() {
  auto db = Db::open(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  auto r = run_query(*db, "SELECT 1 AS n, 2.5 AS x, 'a,\"b' AS s, NULL AS z, 12345678901234 AS big");
  return r.value();
}

}  // namespace

TEST(Query, JsonKeepsRawNumbersAndNulls) {
  std::ostringstream out;
  print_result(sample(), OutputFormat::json, out);
  auto j = nlohmann::json::parse(out.str());
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["n"], 1);
  EXPECT_DOUBLE_EQ(j[0]["x"].get<double>(), 2.5);
  EXPECT_EQ(j[0]["s"], "a,\"b");
  EXPECT_TRUE(j[0]["z"].is_null());
  EXPECT_EQ(j[0]["big"].get<int64_t>(), 12345678901234);
}

TEST(Query, CsvQuotesWhatNeedsIt) {
  std::ostringstream out;
  print_result(sample(), OutputFormat::csv, out);
  EXPECT_EQ(out.str(), "n,x,s,z,big\n1,2.5,\"a,\"\"b\",,12345678901234\n");
}

// Reals in CSV and tables are plain decimals: 1e+20 reads as text in a
// spreadsheet and as 1 in awk (issue 20). 12 significant digits, as before.
TEST(Query, RealsAreNeverInScientificNotation) {
  QueryResult r;
  r.columns = {"x"};
  for (double d : {1e20, 1.5e-7, 0.1, -2.5, 123456789.123456789, 0.0, -0.0, 3.0, 2.5e15}) r.rows.push_back({d});
  std::ostringstream csv, table;
  print_result(r, OutputFormat::csv, csv);
  EXPECT_EQ(csv.str(), "x\n100000000000000000000\n0.00000015\n0.1\n-2.5\n123456789.123\n0\n0\n3\n2500000000000000\n");
  print_result(r, OutputFormat::table, table);
  EXPECT_EQ(table.str().find('e'), std::string::npos) << table.str();
}

// A table narrowed to a width cuts the widest text column with "...", never
// a number and never below 8 characters; cut_cells off keeps long text whole.
// A CR in a traced name is quoted like a newline: RFC 4180 readers end a
// record at a bare CR too (the review of issue 20's CSV outputs).
TEST(Query, CsvQuotesACarriageReturn) {
  QueryResult r;
  r.columns = {"process", "n"};
  r.rows.push_back({std::string("x\ry"), int64_t{5}});
  std::ostringstream out;
  print_result(r, OutputFormat::csv, out);
  // Escaped as in tables (issue 38): the CR never reaches a terminal.
  EXPECT_EQ(out.str(), "process,n\nx\\ry,5\n");
}

TEST(Query, TablesNarrowTextColumnsNeverNumbers) {
  QueryResult r;
  r.columns = {"n", "name", "note"};
  r.rows.push_back({int64_t{123456789012345}, std::string(40, 'k'), std::string("short")});
  std::ostringstream narrow;
  set_table_layout(TableLayout{40, true});
  print_result(r, OutputFormat::table, narrow);
  std::istringstream lines(narrow.str());
  std::vector<std::string> got;
  for (std::string l; std::getline(lines, l);) got.push_back(l);
  ASSERT_EQ(got.size(), 3u) << narrow.str();
  for (const auto& l : got) EXPECT_LE(l.size(), 40u) << l;
  EXPECT_EQ(got[2].substr(0, 15), "123456789012345");
  EXPECT_NE(got[2].find("kkkkk...  short"), std::string::npos) << got[2];
  // Not even the minimum fits: the text keeps 8 characters, the row is wider.
  std::ostringstream tiny;
  set_table_layout(TableLayout{10, true});
  print_result(r, OutputFormat::table, tiny);
  EXPECT_NE(tiny.str().find("123456789012345  kkkkk...  short"), std::string::npos) << tiny.str();
  // A column mixing text and numbers (report capture's value): its numbers
  // are whole however narrow the terminal.
  QueryResult mixed;
  mixed.columns = {"key", "value"};
  mixed.rows.push_back({std::string("command"), std::string(40, 'c')});
  mixed.rows.push_back({std::string("ring_buffer_bytes"), int64_t{12345678901234}});
  std::ostringstream m;
  set_table_layout(TableLayout{12, true});
  print_result(mixed, OutputFormat::table, m);
  EXPECT_NE(m.str().find("12345678901234"), std::string::npos) << m.str();
  // --wide: a 200-character cell is printed whole.
  r.rows[0][1] = std::string(200, 'w');
  std::ostringstream wide;
  set_table_layout(TableLayout{0, false});
  print_result(r, OutputFormat::table, wide);
  EXPECT_NE(wide.str().find(std::string(200, 'w')), std::string::npos);
  set_table_layout(TableLayout{});
  std::ostringstream dflt;
  print_result(r, OutputFormat::table, dflt);
  EXPECT_EQ(dflt.str().find(std::string(97, 'w')), std::string::npos);  // cells at most 96 by default
  EXPECT_NE(dflt.str().find(std::string(93, 'w') + "..."), std::string::npos);
}

// --timeunit: every duration column (*_ns) converted and renamed, timestamps
// (*_mono_ns) and other columns untouched; unknown units refused (issue 20).
TEST(Query, TimeUnitConvertsDurationColumnsOnly) {
  QueryResult r;
  r.columns = {"api", "total_ns", "avg_ns", "ts_mono_ns", "calls"};
  r.rows.push_back({std::string("cuStreamSynchronize"), int64_t{2500000}, 1250000.5, int64_t{7}, int64_t{2}});
  r.rows.push_back({std::string("cuLaunchKernel"), Cell{}, Cell{}, int64_t{8}, int64_t{3}});
  std::string suffix;
  auto ms = time_unit_divisor("msec", &suffix);
  ASSERT_TRUE(ms.ok());
  EXPECT_EQ(*ms, 1e6);
  convert_time_unit(r, *ms, suffix);
  EXPECT_EQ(r.columns, (std::vector<std::string>{"api", "total_ms", "avg_ms", "ts_mono_ns", "calls"}));
  EXPECT_EQ(std::get<double>(r.rows[0][1]), 2.5);
  EXPECT_DOUBLE_EQ(std::get<double>(r.rows[0][2]), 1.2500005);
  EXPECT_EQ(std::get<int64_t>(r.rows[0][3]), 7);
  EXPECT_EQ(std::get<int64_t>(r.rows[0][4]), 2);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(r.rows[1][1]));
  EXPECT_EQ(*time_unit_divisor("s", &suffix), 1e9);
  EXPECT_EQ(suffix, "_s");
  EXPECT_EQ(*time_unit_divisor("ns", &suffix), 1);
  EXPECT_FALSE(time_unit_divisor("fortnights", &suffix).ok());
  // A table without --timeunit: one unit for every duration column (issue
  // 38: never total_ms beside avg_us), the one its median value reads best in.
  QueryResult t;
  t.columns = {"blocked_ns", "avg_ns", "tiny_ns", "ts_mono_ns"};
  t.rows.push_back({int64_t{434269}, 2500000000.0, int64_t{12}, int64_t{5000000}});
  t.rows.push_back({int64_t{1000}, Cell{}, int64_t{3}, int64_t{6000000}});
  convert_time_units_for_reading(t);
  EXPECT_EQ(t.columns, (std::vector<std::string>{"blocked_us", "avg_us", "tiny_us", "ts_mono_ns"}));
  EXPECT_DOUBLE_EQ(std::get<double>(t.rows[0][0]), 434.269);
  EXPECT_DOUBLE_EQ(std::get<double>(t.rows[1][0]), 1.0);
  EXPECT_DOUBLE_EQ(std::get<double>(t.rows[0][1]), 2500000.0);
  EXPECT_DOUBLE_EQ(std::get<double>(t.rows[0][2]), 0.012);
  EXPECT_EQ(std::get<int64_t>(t.rows[0][3]), 5000000);
  // Every report names its durations *_ns: no other time unit in any column.
  for (const auto& name : report_names()) {
    auto sql = report_sql(name);
    ASSERT_TRUE(sql.ok());
    for (const char* other : {" AS total_ms", " AS avg_us", " AS total_us", " AS max_us", "_ms,", "_us,"})
      EXPECT_EQ(sql->find(other), std::string_view::npos) << name << ": " << other;
  }
}

TEST(Query, EveryReportRunsAgainstTheSchema) {
  gpuobs::testing::TempDir dir;
  auto path = dir.file("r.gpuobs");
  {
    auto w = CaptureWriter::create(path, false, nullptr);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->write_meta(CaptureMeta{"t", CaptureMode::record, "c", "h", "k", "", 1, 0, 4096}).ok());
    ASSERT_TRUE((*w)->write_end(2, 0, {}).ok());
  }
  auto db = open_capture_readonly(path);
  ASSERT_TRUE(db.ok());
  ASSERT_GE(report_names().size(), 4u);
  for (const auto& name : report_names()) {
    auto sql = report_sql(name);
    ASSERT_TRUE(sql.ok());
    auto r = run_query(*db, *sql);
    EXPECT_TRUE(r.ok()) << name << ": " << (r.ok() ? "" : r.error().message);
  }
  EXPECT_FALSE(report_sql("nope").ok());
}

TEST(ShellQuote, QuotesOnlyWhatTheShellWouldSplit) {
  EXPECT_EQ(shell_quote({"python3", "-c", "print('hi')", "a b", "x=1"}), "python3 -c 'print('\\''hi'\\'')' 'a b' x=1");
}
