// The shipped tables' one declaration (fleet/fleet_tables.cpp) against a
// fresh capture of this build's schema, without a ClickHouse server: every
// expression names columns the capture has (each table's SELECT prepares),
// every column of the table a declaration mirrors is shipped or listed as not
// shipped with its reason, and nothing is listed that does not exist or is
// shipped after all. A column added to a capture table without a decision for
// the fleet fails here.
#include "fleet/fleet_tables.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <set>
#include <string>

#include "store/db.h"
#include "store/schema.h"
#include "store/writer.h"
#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::fleet;
using namespace gpuobs::testing;

namespace {

std::string fresh_capture(const TempDir& dir) {
  std::string path = dir.file("c.gpuobs");
  auto w = CaptureWriter::create(path, false, nullptr);
  EXPECT_TRUE(w.ok()) << (w.ok() ? "" : w.error().message);
  CaptureMeta m{"test", CaptureMode::record, "cmd", "host", "kernel", "", 1000, 5, 4096};
  EXPECT_TRUE((*w)->write_meta(m).ok());
  (*w)->stop();
  return path;
}

std::string name_of(const char* unshipped) {
  std::string s = unshipped;
  return s.substr(0, s.find(':'));
}

}  // namespace

TEST(FleetTables, EveryExpressionNamesColumnsTheCaptureHas) {
  TempDir dir;
  auto db = open_capture_readonly(fresh_capture(dir));
  ASSERT_TRUE(db.ok()) << db.error().message;
  for (const ShippedTable& t : shipped_tables()) {
    Stmt st(db->get(), select_sql(t));
    EXPECT_TRUE(st.valid()) << t.name << ": " << sqlite3_errmsg(db->get()) << "\n" << select_sql(t);
    if (st.valid()) { EXPECT_EQ(sqlite3_column_count(st.get()), static_cast<int>(t.columns.size())) << t.name; }
  }
}

TEST(FleetTables, EveryColumnOfAMirroredTableIsShippedOrSaidWhyNot) {
  TempDir dir;
  auto db = open_capture_readonly(fresh_capture(dir));
  ASSERT_TRUE(db.ok()) << db.error().message;
  int mirrored = 0;
  for (const ShippedTable& t : shipped_tables()) {
    if (!*t.mirrors) continue;
    ++mirrored;
    auto local = column(*db, std::string("SELECT name FROM pragma_table_info('") + t.mirrors + "')");
    ASSERT_FALSE(local.empty()) << t.name << " mirrors " << t.mirrors << ", which the capture lacks";
    std::string exprs;
    for (const auto& c : t.columns) exprs += std::string(c.expr) + "\n";
    std::set<std::string> unshipped;
    for (const char* u : t.unshipped) {
      unshipped.insert(name_of(u));
      EXPECT_NE(std::string(u).find(": "), std::string::npos) << t.name << ": '" << u << "' gives no reason";
    }
    std::set<std::string> have(local.begin(), local.end());
    for (const auto& col : local) {
      bool shipped = std::regex_search(exprs, std::regex(std::string("\\b") + t.alias + "\\." + col + "\\b"));
      EXPECT_TRUE(shipped || unshipped.count(col))
          << t.name << ": the capture's " << t.mirrors << "." << col << " is neither shipped nor listed as not shipped";
      EXPECT_FALSE(shipped && unshipped.count(col)) << t.name << ": " << col << " is shipped and listed as not";
    }
    for (const auto& u : unshipped)
      EXPECT_TRUE(have.count(u)) << t.name << ": lists " << u << ", which " << t.mirrors << " lacks";
  }
  EXPECT_GE(mirrored, 15);
}

TEST(FleetTables, DdlColumnsAndSelectComeFromTheOneDeclaration) {
  const ShippedTable* syncs = shipped_table("syncs");
  ASSERT_NE(syncs, nullptr);
  std::string ddl = create_table_sql(*syncs);
  EXPECT_EQ(ddl.rfind("CREATE TABLE IF NOT EXISTS syncs (date Date DEFAULT toDate(intDiv(ts_ns, 1000000000)),"
                      " host String, host_id UInt64, segment UInt64, ts_ns Int64,",
                      0),
            0u)
      << ddl;
  EXPECT_NE(ddl.find(", vendor String, stack String) ENGINE = MergeTree() PARTITION BY toYYYYMM(date)"
                     " ORDER BY (date, host, api, ts_ns)"),
            std::string::npos)
      << ddl;
  auto names = column_names(*syncs);
  ASSERT_EQ(names.size(), syncs->columns.size() + 3);
  EXPECT_EQ(names[0], "host");
  EXPECT_EQ(names.back(), "stack");
  std::string sel = select_sql(*syncs);
  EXPECT_EQ(sel.rfind("SELECT s.ts_mono_ns + ?1, s.duration_ns,", 0), 0u) << sel;
  // Every table with a stack ships it last, as the shipper expects.
  for (const ShippedTable& t : shipped_tables())
    if (t.stack) { EXPECT_STREQ(t.columns.back().name, "stack") << t.name; }
  // The vendor of each call table reaches ClickHouse.
  for (const char* name : {"launches", "api_calls", "copies", "syncs", "memory_ops", "stream_ops"}) {
    auto n = column_names(*shipped_table(name));
    EXPECT_NE(std::find(n.begin(), n.end(), "vendor"), n.end()) << name;
  }
}
