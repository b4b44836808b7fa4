// Fleet on a ClickHouse cluster (docs/operations.md, "Fleet", "A cluster"):
// two clickhouse-servers on loopback (clickhouse_server.h) are the two
// shards of cluster gpuobs_test, each an ordinary gpuobs database made by
// gpuobs clickhouse init; host A's capture is shipped to shard 1, host B's
// (another recording) to shard 2, and gpuobs clickhouse init --distributed
// makes server 1's database gpuobs_all one of Distributed tables over both.
// Each of its tables holds exactly the rows of the shards; every fleet
// report there equals, for one host, the report on that host's capture and,
// for both, the report on one server holding both; shipping into it is
// refused and sends nothing. Re-run after the shards gained a table or a
// column, init --distributed follows them; a shard without a table, an
// unknown cluster and a database of the wrong kind are refused with the fix.
// Root (gpuobs record).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "clickhouse_server.h"
#include "fleet/clickhouse_client.h"
#include "fleet/fleet_reports.h"
#include "fleet/shipper.h"
#include "fleet_capture.h"
#include "run_util.h"
#include "store/schema.h"
#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::testing;

namespace {

constexpr const char* kCluster = "gpuobs_test";

std::pair<int, std::string> gpuobs_cli(const std::string& args) {
  return run_output(std::string(GPUOBS_BIN) + " " + args + " 2>&1");
}
// stdout only (a report's rows), and the exit status.
std::pair<int, std::string> gpuobs_stdout(const std::string& args) {
  return run_output(std::string(GPUOBS_BIN) + " " + args + " 2>/dev/null");
}

// The shipped tables as the shard database has them (not a list of this
// test's: a table added to fleet_schema.cpp is checked too).
std::vector<std::string> shard_tables(const fleet::ClickHouse& shard) {
  auto r = shard.query(
      "SELECT name FROM system.tables WHERE database = currentDatabase() AND engine LIKE '%MergeTree' ORDER BY name");
  EXPECT_TRUE(r.ok()) << r.error().message;
  std::vector<std::string> out;
  if (r.ok())
    for (auto& row : fleet::parse_tsv(*r)) out.push_back(row[0]);
  return out;
}

// Two servers, each a shard of kCluster (both configs name both TCP ports),
// each with the shard database gpuobs.
class ClusterFleet : public ::testing::Test {
 protected:
  void SetUp() override {
    int p1 = free_port(), p2 = free_port();
    while (p2 == p1) p2 = free_port();
    for (int i : {0, 1}) {
      ClickHouseOptions o;
      o.name = "clickhouse" + std::to_string(i + 1);
      o.tcp_port = i == 0 ? p1 : p2;
      o.cluster = kCluster;
      o.shard_tcp_ports = {p1, p2};
      server_[i] = std::make_unique<ClickHouseServer>(dir_, o);
    }
    for (auto& s : server_) {
      ASSERT_TRUE(s->ok()) << s->error();
      auto [rc, out] = gpuobs_cli("clickhouse init '" + s->url() + "'");
      ASSERT_EQ(rc, 0) << out;
    }
  }
  std::pair<int, std::string> init_distributed(const std::string& extra = "") {
    return gpuobs_cli("clickhouse init '" + server_[0]->url("gpuobs_all") + "' --distributed " + kCluster + extra);
  }
  // The same table's rows through gpuobs_all and on each shard.
  void expect_sum_of_shards(const std::string& table) {
    auto all = client(*server_[0], "gpuobs_all");
    int64_t s1 = ch_scalar(client(*server_[0], "gpuobs"), "SELECT count() FROM " + table);
    int64_t s2 = ch_scalar(client(*server_[1], "gpuobs"), "SELECT count() FROM " + table);
    EXPECT_EQ(ch_scalar(all, "SELECT count() FROM " + table), s1 + s2) << table;
    // The stand-in device nodes refuse every ioctl: no driver object is
    // made on this machine (fleet_test.cpp says more).
    // Nor a stall (Fleet.NcclStallsShippedPerRank... records one: 3 s).
    if (table == "driver_objects" || table == "nccl_stalls") return;
    EXPECT_GT(s1, 0) << table;
    EXPECT_GT(s2, 0) << table;
  }

  // The query node first: while its pooled connections to shard 2 are
  // open, shard 2's shutdown waits for them (about 10 s).
  void TearDown() override {
    for (auto& s : server_)
      if (s) s->stop();
  }

  TempDir dir_;
  std::unique_ptr<ClickHouseServer> server_[2];
};

}  // namespace

TEST_F(ClusterFleet, TheDistributedDatabaseHoldsEveryShardAndItsReportsEqualTheLocalOnes) {
  const std::string a = dir_.file("a.gpuobs"), b = dir_.file("b.gpuobs");
  record_fleet_capture(dir_.path(), a, 3000, 20, 2);
  add_gpu_times(a);
  record_fleet_capture(dir_.path(), b, 1200, 30, 3);
  add_gpu_times(b);
  ASSERT_EQ(run("sqlite3 " + b + " \"UPDATE capture SET host = 'host-b'\""), 0);
  auto adb = open_capture_readonly(a);
  ASSERT_TRUE(adb.ok());
  const std::string host_a = text(*adb, "SELECT host FROM capture");
  ASSERT_NE(host_a, "host-b");

  // Host A to shard 1; host B and host C (A's capture as another host's,
  // named kHostileHost: the same NCCL communicators, so its collectives span
  // the shards) to shard 2. Then the query node's database.
  const std::string c = dir_.file("c.gpuobs");
  ASSERT_EQ(run("cp " + a + " " + c), 0);
  set_capture_host(c, kHostileHost);
  for (int i : {0, 1}) {
    auto [rc, out] = gpuobs_cli("ship --format csv --to '" + server_[i]->url() + "' " + (i == 0 ? a : b + " " + c));
    ASSERT_EQ(rc, 0) << out;
  }
  auto [rc, out] = init_distributed();
  ASSERT_EQ(rc, 0) << out;
  const auto tables = shard_tables(client(*server_[0], "gpuobs"));
  EXPECT_NE(out.find(std::to_string(tables.size()) + " Distributed tables over cluster gpuobs_test (2 shards"),
            std::string::npos)
      << out;

  // Every table: the sum of the shards' rows, each host's rows from its shard.
  auto all = client(*server_[0], "gpuobs_all");
  ASSERT_GE(tables.size(), 7u);  // segments and the six event tables at least
  for (const auto& t : tables) expect_sum_of_shards(t);
  EXPECT_EQ(ch_scalar(all, "SELECT count() FROM segments"), 3 * static_cast<int64_t>(tables.size() - 1));
  auto bdb = open_capture_readonly(b);
  ASSERT_TRUE(bdb.ok());
  for (const auto& [host, db] : {std::pair<std::string, Db*>{host_a, &*adb}, {"host-b", &*bdb}}) {
    std::string h = " WHERE host = '" + host + "'";
    EXPECT_EQ(ch_scalar(all, "SELECT count() FROM launches" + h), scalar(*db, "SELECT count(*) FROM kernel_launches"));
    EXPECT_EQ(ch_scalar(all, "SELECT count() FROM api_calls" + h), scalar(*db, "SELECT count(*) FROM api_calls_timed"));
    EXPECT_EQ(ch_scalar(all, "SELECT count() FROM nccl_calls" + h), scalar(*db, "SELECT count(*) FROM nccl_calls"));
    EXPECT_EQ(ch_scalar(all, "SELECT count() FROM copies" + h), scalar(*db, "SELECT count(*) FROM copies"));
    EXPECT_EQ(ch_scalar(all, "SELECT count() FROM syncs" + h), scalar(*db, "SELECT count(*) FROM syncs"));
    EXPECT_EQ(ch_scalar(all, "SELECT count() FROM processes" + h), scalar(*db, "SELECT count(*) FROM processes"));
  }
  EXPECT_NE(scalar(*adb, "SELECT count(*) FROM kernel_launches"), scalar(*bdb, "SELECT count(*) FROM kernel_launches"));

  // The reports: for one host, the local report on its capture; for every
  // host, the report on one ordinary database holding the three captures
  // (server 1's gpuobs_one, outside the cluster).
  std::tie(rc, out) = gpuobs_cli("clickhouse init '" + server_[0]->url("gpuobs_one") + "'");
  ASSERT_EQ(rc, 0) << out;
  std::tie(rc, out) = gpuobs_cli("ship --to '" + server_[0]->url("gpuobs_one") + "' " + a + " " + b + " " + c);
  ASSERT_EQ(rc, 0) << out;
  const std::string dist = " --clickhouse '" + server_[0]->url("gpuobs_all") + "' ";
  const std::string one = " --clickhouse '" + server_[0]->url("gpuobs_one") + "' ";
  for (const auto& r : fleet::fleet_report_names()) {
    for (const auto& [host, capture] : {std::pair<std::string, std::string>{host_a, a}, {"host-b", b}}) {
      auto [lrc, local] = gpuobs_stdout("report --format csv " + r + " " + capture);
      auto [crc, remote] = gpuobs_stdout("report --format csv" + dist + "--host " + host + " " + r);
      if (r == "leaks" || r == "errors") {  // shipped stacks have no id (fleet_test.cpp compares the text)
        auto l = csv_rows(local), m = csv_rows(remote);
        for (auto* rows : {&l, &m})
          for (auto& row : *rows) row.erase("stack_id");
        EXPECT_EQ(m, l) << r << " on " << host;
      } else {
        EXPECT_EQ(remote, local) << r << " on " << host;
      }
      if (r != "nccl_stalls") {  // no stall in these captures (see expect_sum_of_shards)
        EXPECT_GT(std::count(local.begin(), local.end(), '\n'), 1) << r << " on " << host << ": no rows\n" << local;
      }
    }
    auto [orc, on_one] = gpuobs_stdout("report --format csv" + one + r);
    auto [drc, on_cluster] = gpuobs_stdout("report --format csv" + dist + r);
    EXPECT_EQ(orc, 0) << r;
    EXPECT_EQ(drc, 0) << r;
    EXPECT_EQ(on_cluster, on_one) << r << " over every host";
  }
  // Host C's name, bound as the table `filter` (which the shards get too),
  // gives exactly A's rows through the Distributed tables, and is in no
  // statement sent.
  expect_hostile_host_bound(*server_[0], "gpuobs_all", host_a, scalar(*adb, "SELECT count(*) FROM kernel_launches"));
  // A's all-reduces, matched across the shards with the ranks of hosts A
  // and C; B's communicator has its own 2 ranks.
  auto [nrc, nccl] = gpuobs_stdout("report --format json" + dist + "nccl_sum");
  ASSERT_EQ(nrc, 0) << nccl;
  std::vector<std::pair<int, int>> all_reduce;  // (ranks, matched)
  for (auto& row : nlohmann::json::parse(nccl))
    if (row["op"] == "all_reduce") all_reduce.emplace_back(row["ranks"].get<int>(), row["matched"].get<int>());
  std::sort(all_reduce.begin(), all_reduce.end());
  EXPECT_EQ(all_reduce, (std::vector<std::pair<int, int>>{{2, 3}, {4, 2}})) << nccl;  // B: 3 iterations, A and C: 2

  // Shipping into the Distributed database: refused with the fix, and
  // nothing sent. gpuobsd's thread makes the library call and shows only
  // the message: the fix is in it, and exit code 1 (not 2, a file that is
  // no capture) keeps the segment for the next try.
  std::vector<int64_t> before;
  for (const auto& t : tables) before.push_back(ch_scalar(all, "SELECT count() FROM " + t));
  const std::string d = dir_.file("d.gpuobs");
  ASSERT_EQ(run("cp " + a + " " + d + " && sqlite3 " + d + " \"UPDATE capture SET host = 'host-d'\""), 0);
  std::tie(rc, out) = gpuobs_cli("ship --to '" + server_[0]->url("gpuobs_all") + "' " + d);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("database gpuobs_all at http://127.0.0.1:" + std::to_string(server_[0]->http_port()) +
                     "/ holds Distributed tables over cluster gpuobs_test"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("ship to database gpuobs on one shard of gpuobs_test"), std::string::npos) << out;
  auto st = fleet::ship_capture(all, d);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().exit_code, 1);
  EXPECT_NE(st.error().message.find("ship to database gpuobs on one shard of gpuobs_test"), std::string::npos)
      << st.error().message;
  for (size_t i = 0; i < tables.size(); ++i)
    EXPECT_EQ(ch_scalar(all, "SELECT count() FROM " + tables[i]), before[i]) << tables[i];
  // An INSERT of one's own through it: the server refuses (no sharding key).
  auto ins = all.query("INSERT INTO launches (host, ts_ns) VALUES ('host-d', 1)");
  ASSERT_FALSE(ins.ok());
  EXPECT_NE(ins.error().message.find("no sharding key"), std::string::npos) << ins.error().message;
}

// init --distributed on schemas that change, and its refusals. No capture:
// the shards' tables are enough.
TEST_F(ClusterFleet, InitDistributedFollowsTheShardsAndRefusesWithTheFix) {
  auto [rc, out] = init_distributed();
  ASSERT_EQ(rc, 0) << out;
  auto all = client(*server_[0], "gpuobs_all");
  EXPECT_EQ(ch_scalar(all, "SELECT max(version) FROM schema_version"), 1);
  EXPECT_EQ(
      ch_scalar(all, "SELECT count() FROM system.tables WHERE database = 'gpuobs_all' AND engine = 'Distributed'"),
      static_cast<int64_t>(shard_tables(client(*server_[0], "gpuobs")).size()));
  // Again: nothing changes, nothing is made again.
  std::tie(rc, out) = init_distributed();
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out.find("made again"), std::string::npos) << out;
  EXPECT_EQ(ch_scalar(all, "SELECT count() FROM schema_version"), 1);

  // A later gpuobs's shards: a new table and a new column on both. Run
  // again, init --distributed adds the one and remakes the other's table.
  for (auto& s : server_) {
    auto shard = client(*s, "gpuobs");
    ASSERT_TRUE(
        shard.query("CREATE TABLE later (date Date, host String) ENGINE = MergeTree() ORDER BY (date, host)").ok());
    ASSERT_TRUE(shard.query("ALTER TABLE syncs ADD COLUMN later_ns Nullable(Int64)").ok());
    ASSERT_TRUE(shard.query("INSERT INTO later VALUES (today(), 'h')").ok());
  }
  std::tie(rc, out) = init_distributed();
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("syncs made again: its columns or cluster had changed"), std::string::npos) << out;
  EXPECT_EQ(ch_scalar(all, "SELECT count() FROM later"), 2);
  EXPECT_EQ(ch_scalar(all, "SELECT count(later_ns) FROM syncs"), 0);
  std::tie(rc, out) = gpuobs_cli("report --clickhouse '" + server_[0]->url("gpuobs_all") + "' sync_sum");
  EXPECT_EQ(rc, 0) << out;

  // A table only shard 1 has: refused, naming shard 2 and the fix.
  ASSERT_TRUE(
      client(*server_[0], "gpuobs").query("CREATE TABLE only_one (x UInt8) ENGINE = MergeTree() ORDER BY x").ok());
  std::tie(rc, out) = init_distributed();
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("reading only_one over cluster gpuobs_test"), std::string::npos) << out;
  EXPECT_NE(out.find("There is no table gpuobs.only_one on server"), std::string::npos) << out;
  EXPECT_NE(out.find("run gpuobs clickhouse init 'http://SHARD:8123/?database=gpuobs' on every shard"),
            std::string::npos)
      << out;
  ASSERT_TRUE(client(*server_[0], "gpuobs").query("DROP TABLE only_one").ok());
  ASSERT_TRUE(all.query("DROP TABLE only_one").ok());

  // A cluster the config does not name.
  std::tie(rc, out) = gpuobs_cli("clickhouse init '" + server_[0]->url("gpuobs_x") + "' --distributed nowhere");
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("has no cluster nowhere"), std::string::npos) << out;
  EXPECT_NE(out.find("remote_servers"), std::string::npos) << out;
  // A shard database that was never initialized.
  std::tie(rc, out) = init_distributed(" --shard-database nothere");
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("no gpuobs schema in database nothere"), std::string::npos) << out;
  // The shard database itself, or a shard's database, as the query node's.
  std::tie(rc, out) = gpuobs_cli("clickhouse init '" + server_[0]->url() + "' --distributed " + kCluster);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("would replace the shard tables of database gpuobs"), std::string::npos) << out;
  std::tie(rc, out) = gpuobs_cli("clickhouse init '" + server_[0]->url("gpuobs_one") + "'");
  ASSERT_EQ(rc, 0) << out;
  std::tie(rc, out) = gpuobs_cli("clickhouse init '" + server_[0]->url("gpuobs_one") + "' --distributed " + kCluster);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("it is not a database of Distributed tables"), std::string::npos) << out;
  // The query node's database through a plain init: refused, naming
  // --distributed (it would make ordinary tables beside the Distributed ones).
  std::tie(rc, out) = gpuobs_cli("clickhouse init '" + server_[0]->url("gpuobs_all") + "'");
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("--distributed gpuobs_test --shard-database gpuobs brings it up to date"), std::string::npos)
      << out;
  // --shard-database alone is a usage error.
  std::tie(rc, out) = gpuobs_cli("clickhouse init '" + server_[0]->url("gpuobs_y") + "' --shard-database gpuobs");
  EXPECT_EQ(rc, 2) << out;
}
