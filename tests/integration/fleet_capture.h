// What the fleet tests share (fleet_test.cpp, fleet_cluster_test.cpp): the
// captures they ship (real recordings of the test workloads on the fake
// libraries, with every table the shipper sends given rows, as far as a
// GPU-less machine can), a client of a test server and a scalar query.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "clickhouse_server.h"
#include "fleet/clickhouse_client.h"
#include "fleet/fleet_reports.h"
#include "run_util.h"
#include "unit/test_util.h"

namespace gpuobs::testing {

// One capture with launches, timed API calls (allocations, frees and a
// leak, streams, copies, syncs), NCCL calls of 2 ranks, the decoded ioctls
// of the driver workload on stand-in device nodes, and the fake NVML's two
// GPUs sampled at 20 Hz with an Xid event and the command's shell as a
// compute process.
inline void record_fleet_capture(const std::string& dir_path, const std::string& out, int launches, int iterations,
                                 int nccl_iters) {
  struct {
    const std::string& path;
    std::string file(const std::string& name) const { return path + "/" + name; }
  } dir{dir_path};
  const std::string tag = std::to_string(launches);
  std::string nccl;
  for (int r = 0; r < 2; ++r)
    nccl += std::string(" FAKE_NCCL_LIBCUDA=") + FAKE_LIBCUDA + " " + NCCL_WORKLOAD + " --rank " + std::to_string(r) +
            " --nranks 2 --id-file " + dir.file("id" + tag) + " --iters " + std::to_string(nccl_iters) +
            " > /dev/null &";
  // The shell lists itself as the fake NVML's compute process.
  const std::string pids = dir.file("nvml-pids" + tag);
  std::string script = "echo $$ > " + pids + "; " + LAUNCH_WORKLOAD + " --lib " + FAKE_LIBCUDA +
                       " --threads 2 --launches " + tag + " && " + API_WORKLOAD + " --lib " + FAKE_LIBCUDA +
                       " --threads 2 --iterations " + std::to_string(iterations) + " --truth " +
                       dir.file("api" + tag + ".json") + " && " + DRIVER_IOCTL_WORKLOAD +
                       " --nvidia /dev/null --uvm /dev/zero --kfd /dev/full --truth " +
                       dir.file("drv" + tag + ".json") + " && " + nccl + " wait; sleep 1.2";
  std::string lib = FAKE_LIBNCCL, nvml = FAKE_NVML;
  std::ofstream(pids).close();  // empty until the command writes its pid
  std::filesystem::create_directories(dir.file("no-drm"));
  const std::string log = dir.file("record" + tag + ".log");
  ASSERT_EQ(run("LD_LIBRARY_PATH=" + lib.substr(0, lib.rfind('/')) + ":" + nvml.substr(0, nvml.rfind('/')) +
                " GPUOBS_DRM_ROOT=" + dir.file("no-drm") + " FAKE_NVML_XID=79 FAKE_NVML_PIDS_FILE=" + pids + " " +
                GPUOBS_BIN + " record --libcuda " + FAKE_LIBCUDA +
                " --metrics-hz 20 --detail-interval-ms 100 --no-gpu-devices --watch-dev nvidia=/dev/null --watch-dev "
                "nvidia-uvm=/dev/zero"
                " --watch-dev kfd=/dev/full -o " +
                out + " -- sh -c '" + script + "' 2> " + log),
            0)
      << read_file(log);
}

// GPU times for every third launch with a kernel name and every other copy
// or memset, as `record --gpu-time` stores CUPTI's (this machine has no
// GPU: bench/h100/run_issue23.sh ships real ones), so the GPU columns of
// kern_sum, copy_sum and memset_sum have something to agree on.
inline void add_gpu_times(const std::string& capture) {
  ASSERT_EQ(run("sqlite3 " + capture +
                " \"INSERT INTO gpu_time_rows (call_table, row_id, process_id, name_id, start_ns, duration_ns, device,"
                " stream_id, correlation_id, activities, by_order) SELECT 0, k.id, k.process_id,"
                " (SELECT id FROM strings WHERE text = k.kernel_name), k.ts_mono_ns - c.start_mono_ns + 5000,"
                " 1000 + k.id % 997, 0, 7, k.id, 1, k.id % 2 FROM kernel_launches k, capture c"
                " WHERE k.kernel_name IS NOT NULL AND k.id % 3 = 0;"
                " INSERT INTO gpu_time_rows (call_table, row_id, process_id, name_id, start_ns, duration_ns, device,"
                " stream_id, correlation_id, activities, by_order) SELECT 1, x.id, x.process_id, NULL,"
                " x.ts_mono_ns - c.start_mono_ns + 3000, 700 + x.id % 13, 0, 7, x.id, 1, 0 FROM copies x, capture c"
                " WHERE x.id % 2 = 0\""),
            0);
}

inline fleet::ClickHouse client(const ClickHouseServer& s, const std::string& db = "gpuobs") {
  auto ep = fleet::parse_endpoint(s.url(db));
  EXPECT_TRUE(ep.ok());
  return fleet::ClickHouse(*ep);
}

inline int64_t ch_scalar(const fleet::ClickHouse& ch, const std::string& sql) {
  auto r = ch.query(sql);
  EXPECT_TRUE(r.ok()) << sql << ": " << r.error().message;
  return r.ok() ? std::strtoll(r->c_str(), nullptr, 10) : -1;
}

// A host name a filter must bind, never paste into SQL: quotes, a
// backslash, a newline, a tab, a comment and a statement of its own.
inline const std::string kHostileHost = "ev'il\\h\nx -- '; DROP TABLE launches; --\t\"t";

// Sets a capture's host to any text (as hex: no shell or SQL quoting).
inline void set_capture_host(const std::string& capture, const std::string& host) {
  std::string hex;
  char b[3];
  for (unsigned char c : host) {
    std::snprintf(b, sizeof b, "%02X", c);
    hex += b;
  }
  ASSERT_EQ(run("sqlite3 " + capture + " \"UPDATE capture SET host = CAST(X'" + hex + "' AS TEXT)\""), 0);
}

// Every fleet report in database db, filtered to kHostileHost (shipped
// from a copy of twin's capture, which has `launches` kernel launches):
// exactly the rows the same filter gives for twin, kern_sum counting its
// launches, and no statement sent holds the name or a piece of it.
inline void expect_hostile_host_bound(const ClickHouseServer& s, const std::string& db, const std::string& twin,
                                      int64_t launches) {
  auto ep = fleet::parse_endpoint(s.url(db));
  ASSERT_TRUE(ep.ok()) << ep.error().message;
  std::vector<std::string> sent;
  ep->on_statement = [&](const std::string& sql) { sent.push_back(sql); };
  fleet::ClickHouse ch(*ep);
  for (const auto& r : fleet::fleet_report_names()) {
    fleet::FleetFilter f;
    f.host = kHostileHost;
    sent.clear();
    auto hostile = fleet::run_fleet_report(ch, r, f);
    ASSERT_TRUE(hostile.ok()) << r << ": " << hostile.error().message;
    ASSERT_FALSE(sent.empty()) << r;
    for (const auto& sql : sent)
      for (const char* piece : {"ev'il", "ev\\'il", "DROP TABLE", "x -- '", "\"t"})
        EXPECT_EQ(sql.find(piece), std::string::npos) << r << " sent '" << piece << "' in:\n" << sql;
    f.host = twin;
    auto same = fleet::run_fleet_report(ch, r, f);
    ASSERT_TRUE(same.ok()) << r << ": " << same.error().message;
    EXPECT_EQ(hostile->columns, same->columns) << r;
    EXPECT_EQ(hostile->rows, same->rows) << r;
    if (r == "kern_sum") {
      int64_t n = 0;
      for (const auto& row : hostile->rows) n += std::get<int64_t>(row.at(1));
      EXPECT_EQ(n, launches);
    }
  }
  // Nothing ran but the reports: the table the name tries to drop is there.
  EXPECT_EQ(ch_scalar(ch, "SELECT count() FROM system.tables WHERE database = currentDatabase() AND name = 'launches'"),
            1);
}

}  // namespace gpuobs::testing
