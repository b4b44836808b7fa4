// The fleet reports' SQL (schema/fleet_reports/, fleet/fleet_reports.h)
// without a server: every report is there with its header, its pieces in
// place in every variant of the database, and no piece unused; a filter
// value can reach a statement only through the table `filter`. The reports
// run against a real ClickHouse in tests/integration/fleet_test.cpp and
// fleet_cluster_test.cpp.
#include "fleet/fleet_reports.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "store/embedded_sql.h"

using namespace gpuobs;
using namespace gpuobs::fleet;

TEST(FleetReports, EveryReportIsAFileWithItsHeader) {
  EXPECT_EQ(fleet_report_names(),
            (std::vector<std::string>{"api_sum", "calls", "copy_sum", "errors", "gpu_sum", "ioctl_sum", "kern_sum",
                                      "launches", "leaks", "mem", "memset_sum", "nccl_ranks", "nccl_stalls", "nccl_sum",
                                      "stream_sum", "sync_sum"}));
  for (const auto& e : sql::fleet_reports()) {
    const std::string name(e.name), text(e.text);
    // As schema/reports/: "-- NAME: what it shows." first; a report names
    // its columns and filters.
    EXPECT_EQ(text.rfind("-- " + name + ": ", 0), 0u) << name << ".sql's first line";
    if (name[0] == '_') continue;
    EXPECT_NE(text.find("\n-- Columns: "), std::string::npos) << name;
    EXPECT_NE(text.find("\n-- Filters (the filter table): "), std::string::npos) << name;
  }
}

TEST(FleetReports, EveryPieceIsInPlaceAndUsed) {
  for (const auto& name : fleet_report_names())
    for (bool gpu_times : {true, false})
      for (bool copy_ids : {true, false}) {
        auto sql = fleet_report_sql(name, {gpu_times, copy_ids});
        ASSERT_TRUE(sql.ok()) << name << ": " << sql.error().message;
        EXPECT_EQ(sql->find("{{"), std::string::npos) << name;
        EXPECT_EQ(sql->find("}}"), std::string::npos) << name;
        // Every report filters, and only through the table `filter`.
        EXPECT_NE(sql->find("(SELECT host FROM filter)"), std::string::npos) << name;
        // The GPU times are joined only where the database has them.
        const bool joins = sql->find("FROM gpu_times") != std::string::npos;
        if (name == "kern_sum") { EXPECT_EQ(joins, gpu_times) << name; }
        if (name == "copy_sum" || name == "memset_sum") { EXPECT_EQ(joins, gpu_times && copy_ids) << name; }
      }
  // Each piece is included by a file, or is one fleet_reports.cpp puts in
  // place of one (a database without the GPU times).
  for (const auto& piece : sql::fleet_reports()) {
    if (piece.name[0] != '_') continue;
    bool used = piece.name == "_kern_gpu_times_none" || piece.name == "_copies_untimed";
    for (const auto& e : sql::fleet_reports())
      used = used || e.text.find("{{" + std::string(piece.name) + "}}") != std::string_view::npos;
    EXPECT_TRUE(used) << piece.name << ".sql is included by no file";
  }
}

TEST(FleetReports, AnUnknownNameOrAPieceIsNoReport) {
  for (const char* name : {"nope", "_host", "_where", ""}) {
    auto sql = fleet_report_sql(name);
    ASSERT_FALSE(sql.ok()) << name;
    EXPECT_EQ(sql.error().exit_code, 2) << name;
    EXPECT_NE(sql.error().message.find("no report '" + std::string(name) + "' on ClickHouse"), std::string::npos);
  }
}
