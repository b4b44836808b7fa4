// The shipped tables, each declared once: per column its ClickHouse name and
// type and the capture's SQL expression that fills it. From the one
// declaration come the ClickHouse DDL (`gpuobs clickhouse init`, which also
// adds the columns an older database lacks), the column list the shipper
// sends and the SELECT it reads the capture with. Each table also names the
// capture's table or view it mirrors and the columns of it that are not
// shipped, with the reason: a test (tests/unit/fleet/fleet_tables_test.cpp)
// fails when the capture has a column the declaration neither ships nor
// lists, or when an expression names a column the capture lacks.
#pragma once

#include <string>
#include <vector>

namespace gpuobs::fleet {

struct FleetColumn {
  const char* name;
  const char* type;  // ClickHouse 18.16
  const char* expr;  // over the table's FROM; ?1 is the capture's CLOCK_MONOTONIC -> wall clock offset
};

struct ShippedTable {
  const char* name;
  // After date, host, host_id and segment, which every table has first. With
  // `stack`, the last column is the stack's text and its expr the stack id.
  std::vector<FleetColumn> columns;
  const char* from;     // "FROM copies x LEFT JOIN ..." (and ORDER BY, where rows go in an order)
  const char* with;     // a WITH clause the SELECT starts with, or ""
  const char* date;     // the column `date` is computed from (nanoseconds)
  const char* order;    // the MergeTree sort key after date
  bool stack;           // the last column is the stack text of the stack id its expr gives
  const char* mirrors;  // the capture's table or view whose rows these are ("" none)
  const char* alias;    // its alias in `from`, through which the exprs name its columns
  // Its columns not shipped, "name: why" each (the check reads the name).
  std::vector<const char*> unshipped;
};

// Every shipped table, in shipping order.
const std::vector<ShippedTable>& shipped_tables();
const ShippedTable* shipped_table(const std::string& name);

// CREATE TABLE IF NOT EXISTS for ClickHouse 18.16.
std::string create_table_sql(const ShippedTable& t);
// "host, host_id, segment, a, b, ...": the columns in shipping order.
std::vector<std::string> column_names(const ShippedTable& t);
// The capture's rows of t: its exprs after the three tags, in column order.
std::string select_sql(const ShippedTable& t);

}  // namespace gpuobs::fleet
