// Fleet (issue 23): captures shipped to a real clickhouse-server on loopback
// (tests/integration/clickhouse_server.h) with gpuobs ship, then the reports
// run there. Two hosts (one capture, and a copy renamed to another host)
// give exactly the source rows and sums; kern_sum, api_sum and nccl_sum on
// ClickHouse equal the same reports on the SQLite capture; a second ship
// sends nothing; a crash's leftovers (a table complete but not in the
// ledger, a table half sent) and a kill -9 mid-shipment are repaired
// without a lost or doubled row; a server that is down, refuses the
// password or has no schema gives a clear error and ships nothing. Root
// (gpuobs record).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "clickhouse_server.h"
#include "daemon_state/segments.h"
#include "daemon_util.h"
#include "fleet/clickhouse_client.h"
#include "fleet/shipper.h"
#include "fleet_capture.h"
#include "run_util.h"
#include "shared_recordings.h"
#include "store/schema.h"
#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::testing;

namespace {

std::pair<int, std::string> gpuobs_cli(const std::string& args) {
  return run_output(std::string(GPUOBS_BIN) + " " + args + " 2>&1");
}

// The same capture as if another host had recorded it.
void copy_as_host(const std::string& from, const std::string& to, const std::string& host) {
  ASSERT_EQ(run("cp " + from + " " + to), 0);
  ASSERT_EQ(run("sqlite3 " + to + " \"UPDATE capture SET host = '" + host + "'\""), 0);
}

class Fleet : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.ok()) << server_.error();
    std::filesystem::create_directories(dir_.file("no-drm"));
    // Recorded once per ctest run (shared_recordings.h); shipping writes its
    // ledger into a capture, so each test ships copies of its own.
    static SharedRecordings recorded("fleet", [](const std::string& dir) {
      record_fleet_capture(dir, dir + "/a.gpuobs", 3000, 20, 3);
      add_gpu_times(dir + "/a.gpuobs");
      return !::testing::Test::HasFailure();
    });
    ASSERT_TRUE(recorded.ok()) << "the fleet capture was not recorded";
    ASSERT_EQ(run("cp " + recorded.file("a.gpuobs") + " " + a_), 0);
    copy_as_host(a_, b_, "host-b");
    auto [rc, out] = gpuobs_cli("clickhouse init '" + server_.url() + "'");
    ASSERT_EQ(rc, 0) << out;
  }
  // Records `sh -c script` with the fake libnccl found first (record's extra
  // options: opts), names its host and ships it; the capture's path.
  std::string record_and_ship(const std::string& name, const std::string& script, const std::string& host,
                              const std::string& opts = "") {
    const std::string lib = FAKE_LIBNCCL, cap = dir_.file(name + ".gpuobs"), log = dir_.file(name + ".log");
    EXPECT_EQ(run("LD_LIBRARY_PATH=" + lib.substr(0, lib.rfind('/')) + " " + GPUOBS_BIN + " record --libcuda " +
                  FAKE_LIBCUDA + " " + opts + " -o " + cap + " -- sh -c '" + script + "' 2> " + log),
              0)
        << read_file(log);
    EXPECT_EQ(run("sqlite3 " + cap + " \"UPDATE capture SET host = '" + host + "'\""), 0);
    ship(cap);
    return cap;
  }
  std::string ship(const std::string& files, int want_rc = 0) {
    auto [rc, out] = gpuobs_cli("ship --format csv --to '" + server_.url() + "' " + files);
    EXPECT_EQ(rc, want_rc) << out;
    return out;
  }
  // Rows and sums of each table in ClickHouse for one host, against the
  // capture it came from.
  void expect_same_rows(const std::string& host, const std::string& capture, bool with_calls = true) {
    auto ch = client(server_);
    auto db = open_capture_readonly(capture);
    ASSERT_TRUE(db.ok());
    std::string h = " WHERE host = '" + host + "'";
    EXPECT_EQ(ch_scalar(ch, "SELECT count() FROM launches" + h), scalar(*db, "SELECT count(*) FROM kernel_launches"));
    EXPECT_GT(ch_scalar(ch, "SELECT count() FROM launches" + h), 0);
    // Sums of each argument (their product overflows for launch_workload's
    // largest grids).
    EXPECT_EQ(
        ch_scalar(ch,
                  "SELECT sum(grid_x) + sum(grid_y) + sum(grid_z) + sum(block_x) + sum(shared_mem) FROM launches" + h),
        scalar(*db,
               "SELECT sum(grid_x) + sum(grid_y) + sum(grid_z) + sum(block_x) + sum(shared_mem_bytes)"
               " FROM kernel_launches"));
    EXPECT_EQ(ch_scalar(ch, "SELECT count() FROM api_calls" + h), scalar(*db, "SELECT count(*) FROM api_calls_timed"));
    // Each row's vendor, as the capture has it (fleet/fleet_tables.cpp ships it).
    EXPECT_EQ(ch_scalar(ch, "SELECT count() FROM launches" + h + " AND vendor = 'cuda'"),
              scalar(*db, "SELECT count(*) FROM kernel_launches WHERE vendor = 'cuda'"));
    EXPECT_EQ(ch_scalar(ch, "SELECT count() FROM api_calls" + h + " AND vendor = 'cuda'"),
              scalar(*db, "SELECT count(*) FROM api_calls_timed WHERE vendor = 'cuda'"));
    EXPECT_EQ(ch_scalar(ch, "SELECT ifNull(sum(duration_ns), 0) FROM api_calls" + h),
              scalar(*db, "SELECT coalesce(sum(duration_ns), 0) FROM api_calls_timed"));
    EXPECT_EQ(ch_scalar(ch, "SELECT count() FROM nccl_calls" + h), scalar(*db, "SELECT count(*) FROM nccl_calls"));
    if (with_calls) {
      EXPECT_GT(ch_scalar(ch, "SELECT count() FROM nccl_calls" + h), 0);
      EXPECT_GT(ch_scalar(ch, "SELECT count() FROM api_calls" + h), 0);
    }
    EXPECT_EQ(ch_scalar(ch, "SELECT ifNull(sum(bytes), 0) FROM nccl_calls" + h),
              scalar(*db, "SELECT coalesce(sum(bytes), 0) FROM nccl_calls"));
    EXPECT_EQ(ch_scalar(ch, "SELECT count() FROM processes" + h), scalar(*db, "SELECT count(*) FROM processes"));
    // Copies and memsets with their bytes; syncs with their blocked time.
    for (const char* kind : {"copy", "memset"}) {
      std::string k = std::string(" AND kind = '") + kind + "'";
      EXPECT_EQ(ch_scalar(ch, "SELECT count() FROM copies" + h + k),
                scalar(*db, std::string("SELECT count(*) FROM copies WHERE kind = '") + kind + "'"))
          << kind;
      EXPECT_EQ(ch_scalar(ch, "SELECT ifNull(sum(bytes), 0) FROM copies" + h + k),
                scalar(*db, std::string("SELECT coalesce(sum(bytes), 0) FROM copies WHERE kind = '") + kind + "'"))
          << kind;
      if (with_calls) { EXPECT_GT(ch_scalar(ch, "SELECT count() FROM copies" + h + k), 0) << kind; }
    }
    EXPECT_EQ(ch_scalar(ch, "SELECT count() FROM syncs" + h), scalar(*db, "SELECT count(*) FROM syncs"));
    EXPECT_EQ(ch_scalar(ch, "SELECT ifNull(sum(blocked_ns), 0) FROM syncs" + h),
              scalar(*db, "SELECT coalesce(sum(blocked_ns), 0) FROM syncs"));
    if (with_calls) { EXPECT_GT(ch_scalar(ch, "SELECT count() FROM syncs" + h), 0); }
    // The tables shipped since: each one's rows and a sum of its values.
    const std::pair<const char*, const char*> same[] = {
        {"SELECT count() FROM memory_ops", "SELECT count(*) FROM memory_ops"},
        {"SELECT ifNull(sum(bytes), 0) + countIf(isNotNull(alloc_id)) FROM memory_ops",
         "SELECT coalesce(sum(bytes), 0) + count(alloc_id) FROM memory_ops"},
        {"SELECT count() FROM stream_ops", "SELECT count(*) FROM stream_ops"},
        {"SELECT ifNull(sum(priority), 0) + countIf(isNotNull(event)) FROM stream_ops",
         "SELECT coalesce(sum(priority), 0) + count(event) FROM stream_ops"},
        {"SELECT count() FROM ioctls", "SELECT count(*) FROM ioctls"},
        {"SELECT sum(cmd) + sum(ret) + countIf(isNotNull(request)) + sum(length(ifNull(args, '')))"
         " FROM ioctls",
         "SELECT sum(cmd) + sum(ret) + count(request) + sum(length(coalesce(args, ''))) FROM ioctls"},
        {"SELECT count() FROM driver_objects", "SELECT count(*) FROM driver_objects"},
        {"SELECT ifNull(sum(bytes), 0) + sum(handle) FROM driver_objects",
         "SELECT coalesce(sum(bytes), 0) + coalesce(sum(handle), 0) FROM driver_objects"},
        {"SELECT count() FROM gpu_metrics", "SELECT count(*) FROM gpu_metrics"},
        {"SELECT toInt64(sum(value)) FROM gpu_metrics",
         "SELECT CAST(coalesce(sum(value), 0) AS INTEGER) FROM gpu_metrics"},
        {"SELECT count() FROM gpu_process_metrics", "SELECT count(*) FROM gpu_process_metrics"},
        {"SELECT count() FROM gpu_events", "SELECT count(*) FROM gpu_events"},
        {"SELECT count() FROM gpu_times", "SELECT count(*) FROM gpu_times"},
        {"SELECT sum(duration_ns) FROM gpu_times", "SELECT coalesce(sum(duration_ns), 0) FROM gpu_times"},
        {"SELECT count() FROM counters", "SELECT count(*) FROM counters"},
        {"SELECT sum(value) FROM counters", "SELECT sum(value) FROM counters"},
    };
    for (const auto& [remote, local] : same) {
      std::string r = remote;
      size_t from = r.find(" FROM ") + 6, end = r.find(' ', from);
      r.insert(end == std::string::npos ? r.size() : end, h);
      EXPECT_EQ(ch_scalar(ch, r), scalar(*db, local)) << r;
    }
    if (with_calls) {
      // Not driver_objects: the stand-in device nodes refuse every ioctl, so
      // nothing is created (bench/h100/run_issue23.sh ships real ones).
      for (const char* t : {"memory_ops", "stream_ops", "ioctls", "gpu_metrics", "gpu_process_metrics", "gpu_events",
                            "gpu_times", "counters"})
        EXPECT_GT(ch_scalar(ch, std::string("SELECT count() FROM ") + t + h), 0) << t;
      // Every value of the metrics as the capture holds it, to the last bit.
      EXPECT_EQ(ch_scalar(ch, "SELECT count() FROM gpu_metrics" + h + " AND value != toFloat64(value)"), 0);
      EXPECT_EQ(text(*db,
                     "SELECT group_concat(v, ',') FROM (SELECT printf('%.17g', value) AS v FROM gpu_metrics"
                     " ORDER BY ts_mono_ns, gpu_id, metric, value)"),
                [&] {
                  auto r = ch.query(
                      "SELECT arrayStringConcat(groupArray(v), ',') FROM (SELECT"
                      " toString(value) AS v FROM gpu_metrics" +
                      h + " ORDER BY ts_ns, gpu_id, metric, value)");
                  return r.ok() ? r->substr(0, r->find('\n')) : r.error().message;
                }());
      // The process's container and cgroup columns came along.
      EXPECT_EQ(ch_scalar(ch, "SELECT countIf(isNotNull(cgroup)) FROM processes" + h),
                scalar(*db, "SELECT count(cgroup) FROM processes"));
    }
  }

  TempDir dir_;
  ClickHouseServer server_{dir_};
  std::string a_ = dir_.file("a.gpuobs"), b_ = dir_.file("b.gpuobs");
};

}  // namespace

TEST_F(Fleet, TwoHostsShipExactlyTheirRowsAndTheReportsAgreeWithSqlite) {
  std::string out = ship(a_ + " " + b_);
  EXPECT_NE(out.find(",16,0,0\n"), std::string::npos) << out;  // each: 16 tables sent, none there, none repaired
  auto db = open_capture_readonly(a_);
  ASSERT_TRUE(db.ok());
  std::string host_a = text(*db, "SELECT host FROM capture");
  expect_same_rows(host_a, a_);
  expect_same_rows("host-b", b_);
  auto ch = client(server_);
  EXPECT_EQ(ch_scalar(ch, "SELECT uniqExact(host_id) FROM launches"), 2);
  EXPECT_EQ(ch_scalar(ch, "SELECT count() FROM segments"), 32);
  // Each report on ClickHouse for one host is the local report, column for
  // column; over both hosts the counts double.
  for (const char* r : {"kern_sum", "api_sum", "nccl_sum", "copy_sum", "memset_sum", "sync_sum", "ioctl_sum", "mem",
                        "launches", "calls", "nccl_ranks", "gpu_sum", "stream_sum"}) {
    auto [lrc, local] = gpuobs_cli(std::string("report --format csv ") + r + " " + a_);
    auto [crc, remote] =
        gpuobs_cli(std::string("report --format csv --clickhouse '") + server_.url() + "' --host " + host_a + " " + r);
    EXPECT_EQ(lrc, 0) << local;
    EXPECT_EQ(crc, 0) << remote;
    EXPECT_EQ(remote, local) << r;
    EXPECT_GT(std::count(local.begin(), local.end(), '\n'), 1) << r << ": no rows to compare\n" << local;
  }
  auto [rc, both] = run_output(std::string(GPUOBS_BIN) + " report --format json --clickhouse '" + server_.url() +
                               "' kern_sum 2>/dev/null");
  ASSERT_EQ(rc, 0) << both;
  int64_t local_launches = scalar(*db, "SELECT count(*) FROM kernel_launches");
  int64_t total = 0;
  for (auto& row : nlohmann::json::parse(both)) total += row["launches"].get<int64_t>();
  EXPECT_EQ(total, 2 * local_launches) << both;
  // NCCL across hosts: host-b's copy has the same communicator and sequence
  // numbers, so fleet-wide each collective is matched in 4 ranks.
  auto [nrc, nccl] = run_output(std::string(GPUOBS_BIN) + " report --format json --clickhouse '" + server_.url() +
                                "' nccl_sum 2>/dev/null");
  ASSERT_EQ(nrc, 0) << nccl;
  bool all_reduce = false;
  for (auto& row : nlohmann::json::parse(nccl))
    if (row["op"] == "all_reduce") {
      all_reduce = true;
      EXPECT_EQ(row["ranks"], 4) << row.dump();
      EXPECT_EQ(row["matched"], 3) << row.dump();  // the workload's 3 iterations
    }
  EXPECT_TRUE(all_reduce) << nccl;
  // launches: one row per process, API and kernel (the local report used to
  // fold every kernel of an API into one row: its GROUP BY kernel named
  // capture.kernel, the host's kernel release).
  {
    auto [rc2, local] = gpuobs_cli("report --format csv launches " + a_);
    ASSERT_EQ(rc2, 0) << local;
    EXPECT_EQ(static_cast<int64_t>(csv_rows(local).size()),
              scalar(*db,
                     "SELECT count(*) FROM (SELECT DISTINCT process_id, api, CASE WHEN coalesce(kernel_name, '')"
                     " != '' THEN kernel_name ELSE function END FROM kernel_launches)"))
        << local;
  }
  // kern_sum's GPU columns came from the shipped GPU times,
  {
    auto [rc2, local] = gpuobs_cli("report --format json kern_sum " + a_);
    ASSERT_EQ(rc2, 0) << local;
    int64_t gpu_launches = 0;
    for (auto& row : nlohmann::json::parse(local))
      if (!row["gpu_launches"].is_null()) gpu_launches += row["gpu_launches"].get<int64_t>();
    EXPECT_EQ(gpu_launches, scalar(*db, "SELECT count(*) FROM gpu_times WHERE call_table = 'kernel_launches'"))
        << local;
    EXPECT_GT(gpu_launches, 0);
    // and copy_sum's through copies.copy_id (compared column for column above).
    std::tie(rc2, local) = gpuobs_cli("report --format json copy_sum " + a_);
    ASSERT_EQ(rc2, 0) << local;
    int64_t gpu_copies = 0;
    for (auto& row : nlohmann::json::parse(local)) gpu_copies += row["gpu_copies"].get<int64_t>();
    EXPECT_EQ(gpu_copies, scalar(*db,
                                 "SELECT count(*) FROM gpu_times g JOIN copies x ON x.id = g.row_id"
                                 " WHERE g.call_table = 'copies' AND x.kind = 'copy'"))
        << local;
    EXPECT_GT(gpu_copies, 0);
  }
  // leaks and errors: the same rows, every column but stack_id (shipped
  // stacks have none); these stacks are native, so the shipped line's first
  // four frames are the local stack_heads' exactly.
  for (const char* r : {"leaks", "errors"}) {
    auto [lrc, local] = gpuobs_cli(std::string("report --format json ") + r + " " + a_);
    auto [crc, remote] =
        gpuobs_cli("report --format json --clickhouse '" + server_.url() + "' --host " + host_a + " " + r);
    ASSERT_EQ(lrc, 0) << local;
    ASSERT_EQ(crc, 0) << remote;
    auto l = nlohmann::json::parse(local), m = nlohmann::json::parse(remote);
    ASSERT_GT(l.size(), 0u) << r;
    for (auto& row : m) {
      EXPECT_TRUE(row["stack_id"].is_null()) << row.dump();
      row.erase("stack_id");
    }
    for (auto& row : l) row.erase("stack_id");
    EXPECT_EQ(m, l) << r;
  }
  // errors has both layers: the workload's failed API calls and the
  // driver's refused ioctls.
  {
    auto [rc2, errs] = gpuobs_cli("report --format csv --clickhouse '" + server_.url() + "' errors");
    EXPECT_NE(errs.find(",api,cuMemAlloc_v2,"), std::string::npos) << errs;
    EXPECT_NE(errs.find(",ioctl,"), std::string::npos) << errs;
  }
  // Shipped again: nothing sent, nothing doubled.
  out = ship(a_ + " " + b_);
  EXPECT_NE(out.find(",0,0,0,16,0\n"), std::string::npos) << out;
  expect_same_rows(host_a, a_);
  expect_same_rows("host-b", b_);
}

// A host name with quotes, a backslash, a newline, a comment and a
// statement of its own (the capture of host A under that name): every
// fleet report filtered to it gives exactly host A's rows, the name is in
// no statement sent (it travels as the table `filter`), and no table was
// dropped.
TEST_F(Fleet, AHostileHostNameIsBoundNeverPastedAndSelectsExactlyItsRows) {
  const std::string h = dir_.file("hostile.gpuobs");
  ASSERT_EQ(run("cp " + a_ + " " + h), 0);
  set_capture_host(h, kHostileHost);
  ship(a_ + " " + h);
  auto db = open_capture_readonly(a_);
  ASSERT_TRUE(db.ok());
  expect_hostile_host_bound(server_, "gpuobs", text(*db, "SELECT host FROM capture"),
                            scalar(*db, "SELECT count(*) FROM kernel_launches"));
  auto ch = client(server_);
  EXPECT_EQ(ch_scalar(ch, "SELECT uniqExact(host) FROM launches"), 2);
}

// nccl_ranks on ClickHouse: three Python ranks whose all-reduces run on
// native threads (tests/workloads/python_nccl_ranks.py, the one of
// PythonStacks.NcclStraggler...), rank 2 late to every step. The fleet's
// report equals the local one, the straggler's call site and Python line
// included (the shipper computes them per stack from the capture).
TEST_F(Fleet, NcclRanksNamesTheStragglerAndItsPythonLineOnClickHouse) {
  const std::string script = std::string(GPUOBS_SOURCE_DIR) + "/tests/workloads/python_nccl_ranks.py";
  std::string sh;
  for (int r = 0; r < 3; ++r)
    sh += "/usr/bin/python3.11 " + script + " " + FAKE_LIBNCCL + " " + NATIVE_THREAD_LAUNCHER + " " +
          std::to_string(r) + " 3 " + dir_.file("pyid") + " 5 60 > /dev/null & ";
  sh += "wait";
  const std::string cap = record_and_ship("py", sh, "host-py");
  ASSERT_FALSE(HasFailure());
  auto [lrc, local] = gpuobs_cli("report --format csv nccl_ranks " + cap);
  auto [crc, remote] = gpuobs_cli("report --format csv --clickhouse '" + server_.url() + "' --host host-py nccl_ranks");
  ASSERT_EQ(lrc, 0) << local;
  ASSERT_EQ(crc, 0) << remote;
  EXPECT_EQ(remote, local);
  auto rows = csv_rows(remote);
  ASSERT_EQ(rows.size(), 3u) << remote;
  EXPECT_EQ(rows[0].at("rank"), "2") << remote;
  EXPECT_EQ(rows[0].at("late"), "5") << remote;
  EXPECT_EQ(rows[0].at("call_site"), "run_allreduce") << remote;
  EXPECT_EQ(rows[0].at("python_site").rfind("reduce_grads (python_nccl_ranks.py:", 0), 0u) << remote;
}

// nccl_stalls on ClickHouse: rank 1 of 3 stops before its second
// iteration (the stall watch's threshold 1 s, as Nccl.ARankThatNeverEnters...);
// the shipped stall, one row per rank, gives the local report.
TEST_F(Fleet, NcclStallsShippedPerRankAsTheLocalReport) {
  auto rank = [&](int r, const std::string& extra) {
    return std::string("FAKE_NCCL_LIBCUDA=") + FAKE_LIBCUDA + " " + NCCL_WORKLOAD + " --start-ms 300 --rank " +
           std::to_string(r) + " --nranks 3 --id-file " + dir_.file("stall-id") + " --iters 2 " + extra +
           " > /dev/null";
  };
  const std::string script = rank(0, "--linger-ms 3000") + " & " + rank(1, "--stop-before-iter 1") + " & P=$!; " +
                             rank(2, "--linger-ms 3000") + " & sleep 3; kill $P; wait";
  const std::string cap = record_and_ship("stall", script, "host-stall", "--nccl-stall 1");
  ASSERT_FALSE(HasFailure());
  auto [lrc, local] = gpuobs_cli("report --format csv nccl_stalls " + cap);
  auto [crc, remote] =
      gpuobs_cli("report --format csv --clickhouse '" + server_.url() + "' --host host-stall nccl_stalls");
  ASSERT_EQ(lrc, 0) << local;
  ASSERT_EQ(crc, 0) << remote;
  EXPECT_EQ(remote, local);
  auto rows = csv_rows(remote);
  ASSERT_EQ(rows.size(), 3u) << remote;
  EXPECT_EQ(rows[0].at("rank") + ":" + rows[0].at("state") + ":" + rows[0].at("last_seq"), "1:missing:6") << remote;
  EXPECT_EQ(rows[0].at("seq") + " " + rows[0].at("op") + " " + rows[0].at("kind"), "7 all_reduce missing") << remote;
  EXPECT_EQ(rows[1].at("state"), "in") << remote;
}

// What a crash leaves, each state made by hand: a table whose rows all
// landed but whose ledger row did not, and a table half sent. The next ship
// writes the ledger for the first and sends the second again, whole.
TEST_F(Fleet, ACrashesLeftoversAreRepairedWithoutLossOrDuplicates) {
  ship(a_);
  auto ch = client(server_);
  auto id = fleet::capture_identity(a_);
  ASSERT_TRUE(id.ok());
  std::string seg = " WHERE segment = " + std::to_string(id->segment);
  ASSERT_TRUE(ch.query("ALTER TABLE segments DELETE" + seg + " AND table_name IN ('launches', 'api_calls')").ok());
  int64_t half = ch_scalar(ch, "SELECT intDiv(min(ts_ns) + max(ts_ns), 2) FROM launches" + seg);
  ASSERT_TRUE(ch.query("ALTER TABLE launches DELETE" + seg + " AND ts_ns > " + std::to_string(half)).ok());
  for (int i = 0; i < 100 && ch_scalar(ch, "SELECT count() FROM system.mutations WHERE is_done = 0") > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto st = fleet::ship_capture(ch, a_);
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_EQ(st->tables_repaired, 1u);       // launches
  EXPECT_EQ(st->tables_already_there, 1u);  // api_calls
  EXPECT_EQ(st->tables_skipped, 14u);       // the other 14
  expect_same_rows(id->host, a_);
  EXPECT_EQ(ch_scalar(ch, "SELECT count() FROM segments"), 16);
}

// kill -9 of gpuobs ship at some point of its work, wherever that falls:
// shipped again, every table holds each row once.
TEST_F(Fleet, AShipperKilledMidShipmentLosesAndDoublesNothing) {
  std::string big = dir_.file("big.gpuobs");
  ASSERT_EQ(run(std::string(GPUOBS_BIN) + " record --libcuda " + FAKE_LIBCUDA + " -o " + big + " -- " +
                LAUNCH_WORKLOAD + " --lib " + FAKE_LIBCUDA + " --threads 2 --launches 40000 2>/dev/null"),
            0);
  for (int delay_ms : {60, 250}) {
    HeldChild ship({GPUOBS_BIN, "ship", "--to", server_.url(), big});
    ASSERT_TRUE(ship.release());
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    ::kill(ship.pid(), SIGKILL);
    ship.wait();
    auto ch = client(server_);
    auto st = fleet::ship_capture(ch, big);
    ASSERT_TRUE(st.ok()) << st.error().message;
    auto id = fleet::capture_identity(big);
    expect_same_rows(id->host, big, false);
    ASSERT_TRUE(ch.query("ALTER TABLE launches DELETE WHERE segment = " + std::to_string(id->segment)).ok());
    ASSERT_TRUE(ch.query("ALTER TABLE segments DELETE WHERE segment = " + std::to_string(id->segment)).ok());
    for (int i = 0; i < 100 && ch_scalar(ch, "SELECT count() FROM system.mutations WHERE is_done = 0") > 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// A killed shipper's last insert still running on the server (made by hand
// here: the segment's processes rows, inserted under the shipper's query
// id, slowed by a 1 s sleep): the next shipper waits for it, finds the rows
// there and sends none again (counted before it lands, they were doubled).
TEST_F(Fleet, AnInsertOfAKilledShipperStillRunningIsWaitedForNotDoubled) {
  auto id = fleet::capture_identity(a_);
  ASSERT_TRUE(id.ok()) << id.error().message;
  auto db = open_capture_readonly(a_);
  ASSERT_TRUE(db.ok());
  const int64_t procs = scalar(*db, "SELECT count(*) FROM processes");
  const int64_t first = scalar(*db,
                               "SELECT min(coalesce(p.exec_mono_ns, p.fork_mono_ns, c.start_mono_ns))"
                               " + c.clock_offset_ns FROM processes p, capture c");
  const std::string insert =
      "INSERT INTO processes (host, host_id, segment, process_id, pid, comm, first_ns, last_ns) SELECT '" + id->host +
      "', " + std::to_string(id->host_id) + ", " + std::to_string(id->segment) + ", number + 1, 1, 'x', " +
      std::to_string(first) + ", " + std::to_string(first) + " FROM system.numbers WHERE sleep(1) = 0 LIMIT " +
      std::to_string(procs);
  const std::string qid = "gpuobs-" + std::to_string(id->segment) + "-processes-0";
  ASSERT_EQ(run("curl -sS '" + server_.url() + "&query_id=" + qid + "' --data-binary \"" + insert + "\" > " +
                dir_.file("slow.out") + " 2>&1 &"),
            0);
  auto ch = client(server_);
  for (int i = 0; i < 50 && ch_scalar(ch, "SELECT count() FROM system.processes WHERE query_id = '" + qid + "'") == 0;
       ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(ch_scalar(ch, "SELECT count() FROM system.processes WHERE query_id = '" + qid + "'"), 1)
      << read_file(dir_.file("slow.out"));
  auto st = fleet::ship_capture(ch, a_);
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_EQ(st->tables_already_there, 1u);  // processes: the slow insert's rows, counted after it ended
  EXPECT_EQ(ch_scalar(ch, "SELECT count() FROM processes"), procs);
  EXPECT_EQ(ch_scalar(ch, "SELECT count() FROM segments WHERE table_name = 'processes'"), 1);
}

// A segment's rows without any ledger row (a shipper that died in its
// first table): times after the segment's start are NULL, not Unix time.
TEST_F(Fleet, TimesOfASegmentWithoutLedgerRowsAreNull) {
  ship(a_);
  auto ch = client(server_);
  ASSERT_TRUE(ch.query("ALTER TABLE segments DELETE WHERE 1").ok());
  for (int i = 0; i < 100 && ch_scalar(ch, "SELECT count() FROM system.mutations WHERE is_done = 0") > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto [rc, out] = run_output(std::string(GPUOBS_BIN) + " report --format json --clickhouse '" + server_.url() +
                              "' launches 2>/dev/null");
  ASSERT_EQ(rc, 0) << out;
  auto rows = nlohmann::json::parse(out);
  ASSERT_FALSE(rows.empty()) << out;
  for (const auto& r : rows) {
    EXPECT_TRUE(r["first_s"].is_null()) << r.dump();
    EXPECT_TRUE(r["last_s"].is_null()) << r.dump();
    EXPECT_GT(r["launches"].get<int64_t>(), 0) << r.dump();
  }
}

// Refusals: each a clear error, exit status 1 (2 for our own bad input),
// and nothing shipped.
TEST_F(Fleet, RefusalsAreClearAndShipNothing) {
  // Down: nothing listens.
  std::string down = "http://127.0.0.1:" + std::to_string(free_port()) + "/?database=gpuobs";
  auto [rc, out] = gpuobs_cli("ship --to '" + down + "' " + a_);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("connect"), std::string::npos) << out;
  // Wrong password for the gpuobs user.
  std::string cred = dir_.file("cred");
  { std::ofstream(cred) << "# for the tests\nuser = gpuobs\npassword = wrong\n"; }
  ::chmod(cred.c_str(), 0600);
  std::tie(rc, out) = gpuobs_cli("ship --to '" + server_.url() + "' --credentials " + cred + " " + a_);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("Wrong password"), std::string::npos) << out;
  // The right one works.
  { std::ofstream(cred) << "user = gpuobs\npassword = " << kClickHousePassword << "\n"; }
  std::tie(rc, out) = gpuobs_cli("report --clickhouse '" + server_.url() + "' --credentials " + cred + " kern_sum");
  EXPECT_EQ(rc, 0) << out;
  // A credentials file others can read is refused before any request.
  ::chmod(cred.c_str(), 0644);
  std::tie(rc, out) = gpuobs_cli("ship --to '" + server_.url() + "' --credentials " + cred + " " + a_);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("can be read by others"), std::string::npos) << out;
  // --pid alone across the fleet: refused, a pid is per host.
  std::tie(rc, out) = gpuobs_cli("report --clickhouse '" + server_.url() + "' --pid 42 kern_sum");
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("--pid with --clickhouse needs --host"), std::string::npos) << out;
  // A password in the URL is refused (it would show in ps and logs).
  std::tie(rc, out) = gpuobs_cli("ship --to 'http://gpuobs:pw@127.0.0.1:1/' " + a_);
  EXPECT_EQ(rc, 2) << out;
  // No schema: the database was never initialized.
  std::tie(rc, out) = gpuobs_cli("ship --to '" + server_.url("other") + "' " + a_);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("gpuobs clickhouse init"), std::string::npos) << out;
  auto ch = client(server_);
  EXPECT_EQ(ch_scalar(ch, "SELECT count() FROM launches"), 0);
  EXPECT_EQ(ch_scalar(ch, "SELECT count() FROM segments"), 0);
  // A database made by a gpuobs that did not ship copies and syncs: the
  // tables it has are shipped, the others named; their reports say how to
  // add them; gpuobs clickhouse init adds them, and the next ship sends
  // only those.
  std::tie(rc, out) = gpuobs_cli("clickhouse init '" + server_.url("old") + "'");
  ASSERT_EQ(rc, 0) << out;
  auto old = client(server_, "old");
  for (const char* sql : {"DROP TABLE copies", "DROP TABLE syncs", "ALTER TABLE processes DROP COLUMN container_id",
                          "ALTER TABLE processes DROP COLUMN cgroup"})
    ASSERT_TRUE(old.query(sql).ok()) << sql;
  std::tie(rc, out) = gpuobs_cli("ship --format csv --to '" + server_.url("old") + "' " + a_);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("not sent: copies, syncs (the database has no such table"), std::string::npos) << out;
  EXPECT_NE(out.find("columns not sent: processes.cgroup, processes.container_id (the database's tables lack them"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(",14,0,0\n"), std::string::npos) << out;
  EXPECT_EQ(ch_scalar(old, "SELECT count() FROM segments"), 14);
  EXPECT_EQ(ch_scalar(old, "SELECT count() FROM processes"),
            scalar(*open_capture_readonly(a_), "SELECT count(*) FROM processes"));
  std::tie(rc, out) = gpuobs_cli("report --clickhouse '" + server_.url("old") + "' sync_sum");
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("has no table syncs"), std::string::npos) << out;
  EXPECT_NE(out.find("run gpuobs clickhouse init"), std::string::npos) << out;
  std::tie(rc, out) = gpuobs_cli("clickhouse init '" + server_.url("old") + "'");
  ASSERT_EQ(rc, 0) << out;
  std::tie(rc, out) = gpuobs_cli("ship --format csv --to '" + server_.url("old") + "' " + a_);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find(",2,14,0\n"), std::string::npos) << out;  // copies and syncs sent, the 14 others in the ledger
  EXPECT_EQ(out.find("columns not sent"), std::string::npos) << out;  // init added them back
  EXPECT_EQ(ch_scalar(old, "SELECT count() FROM segments"), 16);
  EXPECT_EQ(ch_scalar(old, "SELECT max(version) FROM schema_version"), 1);
  // copies without copy_id (a database from before it, its column dropped
  // here): copy_sum there has no GPU times to join, and says so as a
  // capture without --gpu-time would (gpu_copies 0, gpu_ns NULL); the rest
  // of each row is the local report's.
  ASSERT_TRUE(old.query("ALTER TABLE copies DROP COLUMN copy_id").ok());
  {
    auto [lrc, local] = gpuobs_cli("report --format json copy_sum " + a_);
    auto [crc, remote] = gpuobs_cli("report --format json --clickhouse '" + server_.url("old") + "' copy_sum");
    ASSERT_EQ(lrc, 0) << local;
    ASSERT_EQ(crc, 0) << remote;
    auto l = nlohmann::json::parse(local), m = nlohmann::json::parse(remote);
    ASSERT_EQ(l.size(), m.size()) << local << remote;
    for (size_t i = 0; i < l.size(); ++i) {
      EXPECT_EQ(m[i]["gpu_copies"], 0) << m[i].dump();
      EXPECT_TRUE(m[i]["gpu_ns"].is_null()) << m[i].dump();
      for (const char* c : {"direction", "mode", "copies", "bytes", "host_ns", "failed"})
        EXPECT_EQ(m[i][c], l[i][c]) << c;
    }
  }
  // gpuobsd's current segment is being written: --segment all leaves it.
  std::string sd = dir_.file("segments");
  std::filesystem::create_directories(sd);
  ASSERT_EQ(run("cp " + a_ + " " + sd + "/capture-20261127T000000-1.gpuobs && cp " + b_ + " " + sd +
                "/capture-20261127T000001-2.gpuobs && ln -s capture-20261127T000001-2.gpuobs " + sd + "/current"),
            0);
  std::tie(rc, out) = gpuobs_cli("ship --format csv --to '" + server_.url() + "' --segment all --state-dir " + sd);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("capture-20261127T000001-2.gpuobs is gpuobsd's current segment"), std::string::npos) << out;
  EXPECT_EQ(ch_scalar(ch, "SELECT uniqExact(host) FROM launches"), 1) << out;
  ASSERT_TRUE(ch.query("ALTER TABLE launches DELETE WHERE 1").ok());
  ASSERT_TRUE(ch.query("ALTER TABLE segments DELETE WHERE 1").ok());
  for (int i = 0; i < 100 && ch_scalar(ch, "SELECT count() FROM system.mutations WHERE is_done = 0") > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // Not a capture.
  std::string junk = dir_.file("junk.gpuobs");
  { std::ofstream(junk) << "not sqlite"; }
  std::tie(rc, out) = gpuobs_cli("ship --to '" + server_.url() + "' " + junk);
  EXPECT_EQ(rc, 2) << out;
}

// gpuobsd with ship_url: each finished segment shipped once; ClickHouse
// stopped: capture goes on, the backlog grows, retention keeps the
// unshipped segment (keep_segments 1 would delete it), gpuobs status and the
// status file say why; ClickHouse back: the backlog drains and the rows are
// exactly the launches made.
TEST_F(Fleet, GpuobsdShipsEverySegmentAndWaitsOutAnAbsentServer) {
  std::string state = dir_.file("state"), status = dir_.file("status.json"), log = dir_.file("gpuobsd.log");
  std::filesystem::create_directories(state);
  // A segment a full disk cut short (not a capture): passed over, marked,
  // and the others still ship.
  { std::ofstream(state + "/capture-20200101T000000-1.gpuobs") << "cut short"; }
  auto args = base_args(dir_.file("gpuobsd.conf"), state, status);
  for (const std::string& a :
       std::vector<std::string>{"--ship-url", server_.url(), "--ship-interval", "1", "--segment-max-age", "2",
                                "--keep-segments", "1", "--metrics-hz", "0"})
    args.push_back(a);
  Daemon d(args, log);
  ASSERT_TRUE(d.wait_log(log, "capturing to")) << read_file(log);
  EXPECT_TRUE(d.wait_log(log, "shipping finished segments to " + server_.url())) << read_file(log);
  auto ship_state = [&] {
    auto j = nlohmann::json::parse(read_file(status), nullptr, false);
    return j.is_object() && j.contains("ship") ? j["ship"] : nlohmann::json();
  };
  auto wait_for = [&](const std::function<bool(const nlohmann::json&)>& cond, int seconds) {
    for (int i = 0; i < seconds * 10; ++i) {
      auto sh = ship_state();
      if (sh.is_object() && cond(sh)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  };
  auto ch = client(server_);
  const int kLaunches = 2000;  // per run: 2 threads
  std::string workload = std::string(LAUNCH_WORKLOAD) + " --lib " + FAKE_LIBCUDA + " --threads 2 --launches " +
                         std::to_string(kLaunches) + " --truth " + dir_.file("t.json");
  // Run 1, then its segment rotates (2 s) and ships.
  ASSERT_EQ(run(workload), 0);
  ASSERT_TRUE(wait_for([](const nlohmann::json& sh) { return sh["segments"].get<int>() >= 1; }, 20))
      << ship_state().dump() << read_file(log);
  EXPECT_EQ(ch_scalar(ch, "SELECT count() FROM launches"), 2 * kLaunches);
  EXPECT_EQ(ship_state()["unshippable"], 1) << ship_state().dump();
  EXPECT_NE(read_file(log).find("capture-20200101T000000-1.gpuobs cannot be shipped"), std::string::npos)
      << read_file(log);

  // ClickHouse away: run 2's segment waits, kept by retention.
  server_.stop();
  ASSERT_EQ(run(workload), 0);
  ASSERT_TRUE(wait_for(
      [](const nlohmann::json& sh) { return sh["backlog_segments"].get<int>() >= 1 && sh["failures"].get<int>() >= 1; },
      20))
      << ship_state().dump() << read_file(log);
  auto sh = ship_state();
  // "Couldn't connect", or a connection cut as the server went away.
  EXPECT_EQ(sh["last_error"].get<std::string>().rfind("ClickHouse at " + server_.url(), 0), 0u) << sh.dump();
  EXPECT_GT(sh["backlog_bytes"].get<int64_t>(), 0);
  std::string st_text = output_of(std::string(GPUOBS_BIN) + " status --status-file " + status);
  EXPECT_NE(st_text.find("shipping:"), std::string::npos) << st_text;
  EXPECT_NE(st_text.find("last error:"), std::string::npos) << st_text;
  std::this_thread::sleep_for(std::chrono::seconds(3));  // retention runs at each rotation
  size_t unshipped = 0;
  for (const auto& seg : segments::list(state)) unshipped += !std::filesystem::exists(seg.path + ".shipped");
  EXPECT_GE(unshipped, 2u) << "the unshipped segment and the current one";
  EXPECT_NE(read_file(log).find("cannot ship segment"), std::string::npos) << read_file(log);

  // Back: the backlog drains (the backoff is at most a few seconds by now).
  server_.start();
  ASSERT_TRUE(server_.ok()) << server_.error();
  ASSERT_TRUE(wait_for(
      [](const nlohmann::json& sh) { return sh["backlog_segments"].get<int>() == 0 && sh["segments"].get<int>() >= 2; },
      40))
      << ship_state().dump() << read_file(log);
  EXPECT_EQ(ship_state()["last_error"], "");
  EXPECT_EQ(ch_scalar(ch, "SELECT count() FROM launches"), 4 * kLaunches)
      << ch.query("SELECT segment, count(), uniqExact(ts_ns, tid) FROM launches GROUP BY segment").value()
      << ch.query("SELECT segment, table_name, rows FROM segments WHERE table_name = 'launches'").value()
      << read_file(log);
  // Every segment in the ledger once per table (a run's launches may span a
  // rotation: two or more segments hold them).
  EXPECT_GE(ch_scalar(ch, "SELECT uniqExact(segment) FROM launches"), 2);
  EXPECT_EQ(ch_scalar(ch, "SELECT count() - uniqExact(segment, table_name) FROM segments"), 0);
  int st = 0;
  d.stop(st);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << read_file(log);
}
