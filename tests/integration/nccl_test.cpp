// NCCL capture (issue 22) against the fake libnccl.so.2 (tests/fakes: the
// real NCCL 2.28 ABI) and nccl_rank_workload, one rank per process, under
// gpuobs record with real BPF: exact calls, counts, bytes and streams per
// rank, sequence numbers matched across ranks, a straggler found, and the
// stall watch's rows for a rank that never enters, one that dies inside a
// collective and a collective nobody returns from. Root.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "run_util.h"
#include "store/schema.h"
#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::testing;

namespace {

std::pair<int, std::string> gpuobs_cli(const std::string& args) {
  return run_output(std::string(GPUOBS_BIN) + " " + args + " 2>/dev/null");
}

// One rank: the workload's command line (its JSON truth to dir/out.R).
std::string rank_cmd(const TempDir& dir, int rank, int nranks, int iters, const std::string& extra,
                     const std::string& env = "", int start_ms = 300, const char* workload = NCCL_WORKLOAD) {
  // FAKE_NCCL_LIBCUDA: the fake launches through libcuda as NCCL does (a
  // probed cuStreamQuery inside the probed NCCL call); --start-ms: the
  // library is mapped that long before it is used.
  return env + " FAKE_NCCL_LIBCUDA=" + FAKE_LIBCUDA + " " + workload + " --start-ms " + std::to_string(start_ms) +
         " --rank " + std::to_string(rank) + " --nranks " + std::to_string(nranks) + " --id-file " + dir.file("id") +
         " --iters " + std::to_string(iters) + " " + extra + " > " + dir.file("out." + std::to_string(rank));
}

// gpuobs record of a shell script; returns its exit status. preload: the
// fake libnccl's directory in record's LD_LIBRARY_PATH, so it is attached
// before the command starts (else: where the ranks map it, within
// milliseconds of the mapping).
int record(const TempDir& dir, const std::string& script, const std::string& opts = "", bool preload = true) {
  std::string lib = FAKE_LIBNCCL;
  std::string env = preload ? "LD_LIBRARY_PATH=" + lib.substr(0, lib.rfind('/')) + " " : "";
  std::string cmd = env + GPUOBS_BIN + " record --libcuda " + FAKE_LIBCUDA + " " + opts + " -o " +
                    dir.file("c.gpuobs") + " -- sh -c '" + script + "' 2> " + dir.file("log");
  return run(cmd);
}

}  // namespace

TEST(Nccl, EveryCallOfThreeRanksWithCountsBytesStreamsAndSequence) {
  TempDir dir;
  // Rank 2 sleeps 100 ms before each of its 4 iterations: last at every
  // collective. The library is attached where the ranks map it (no
  // LD_LIBRARY_PATH), 1 s before they use it.
  std::string script;
  for (int r = 0; r < 3; ++r)
    script += rank_cmd(dir, r, 3, 4, r == 2 ? "--sleep-ms 100 --sleep-every 1" : "--linger-ms 200", "", 1000) + " & ";
  script += "wait";
  ASSERT_EQ(record(dir, script, "", false), 0) << read_file(dir.file("log"));
  auto db = open_capture_readonly(dir.file("c.gpuobs"));
  ASSERT_TRUE(db.ok()) << db.error().message;
  // Per op: 3 ranks x 4 iterations, and the bytes each call moves.
  struct Want {
    const char* op;
    int64_t calls, bytes;
  } want[] = {{"all_reduce", 12, 12 * 1024 * 4},
              {"broadcast", 12, 12 * 256 * 4},
              {"all_gather", 12, 12 * 128 * 2 * 3},
              {"reduce_scatter", 12, 12 * 64 * 2 * 3},
              {"send", 12, 12 * 32 * 8},
              {"recv", 12, 12 * 32 * 8},
              {"reduce", 12, 12 * 32 * 8},
              {"all_to_all", 12, 12 * 16 * 3},
              {"group_start", 12, 0},
              {"group_end", 12, 0},
              {"comm_init", 3, 0},
              {"comm_destroy", 3, 0}};
  for (const auto& w : want) {
    std::string where = std::string(" FROM nccl_calls WHERE op = '") + w.op + "'";
    EXPECT_EQ(scalar(*db, "SELECT count(*)" + where), w.calls) << w.op;
    EXPECT_EQ(scalar(*db, "SELECT coalesce(sum(bytes), 0)" + where), w.bytes) << w.op;
    EXPECT_EQ(scalar(*db, "SELECT count(*)" + where + " AND result <> 0"), 0) << w.op;
  }
  EXPECT_EQ(text(*db, "SELECT group_concat(DISTINCT datatype) FROM nccl_calls WHERE op = 'reduce_scatter'"),
            "bfloat16");
  EXPECT_EQ(text(*db, "SELECT group_concat(DISTINCT redop) FROM nccl_calls WHERE op = 'reduce_scatter'"), "max");
  EXPECT_EQ(text(*db, "SELECT group_concat(DISTINCT redop) FROM nccl_calls WHERE op = 'reduce'"), "prod");
  // Send goes to the next rank, recv comes from the previous one.
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM nccl_calls WHERE op = 'send' AND peer <> (rank + 1) % 3"), 0);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM nccl_calls WHERE op = 'recv' AND peer <> (rank + 2) % 3"), 0);
  // One communicator, three ranks, each on its own stream (0x5000 + rank),
  // with the handle and device the workload reports.
  EXPECT_EQ(scalar(*db, "SELECT count(DISTINCT comm_hash) FROM nccl_calls WHERE comm_hash IS NOT NULL"), 1);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM nccl_comms WHERE nranks = 3 AND device = rank"), 3);
  for (int r = 0; r < 3; ++r) {
    auto truth = read_json(dir.file("out." + std::to_string(r)));
    std::string of_rank = " FROM nccl_calls WHERE rank = " + std::to_string(r);
    EXPECT_EQ(text(*db, "SELECT printf('0x%x', comm) FROM nccl_comms WHERE rank = " + std::to_string(r)),
              truth["comm"].get<std::string>());
    EXPECT_EQ(scalar(*db, "SELECT tgid FROM nccl_comms WHERE rank = " + std::to_string(r)), truth["pid"].get<int>());
    EXPECT_EQ(text(*db, "SELECT group_concat(DISTINCT printf('0x%x', stream))" + of_rank + " AND stream IS NOT NULL"),
              truth["stream"].get<std::string>());
  }
  // Collectives numbered 1..24 on each rank, each seen in all 3 ranks.
  EXPECT_EQ(scalar(*db,
                   "SELECT count(*) FROM (SELECT seq FROM nccl_calls WHERE seq IS NOT NULL GROUP BY seq"
                   " HAVING count(DISTINCT rank) = 3 AND count(DISTINCT op) = 1)"),
            24);
  EXPECT_EQ(scalar(*db, "SELECT max(seq) FROM nccl_calls"), 24);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM nccl_calls WHERE op IN ('send', 'recv') AND seq IS NOT NULL"), 0);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM nccl_calls WHERE stack_id IS NULL"), 0);
  EXPECT_EQ(text(*db, "SELECT group_concat(DISTINCT reason) FROM probes WHERE library LIKE '%libnccl%'"), "mmap");
  // nccl_sum: every collective matched in 3 ranks, skew >= the 100 ms sleep.
  auto [src, sum] = gpuobs_cli("report nccl_sum --format csv " + dir.file("c.gpuobs"));
  ASSERT_EQ(src, 0) << sum;
  EXPECT_NE(sum.find(",all_reduce,3,3,12,49152,"), std::string::npos) << sum;
  EXPECT_GE(scalar(*db,
                   "SELECT min(m) FROM (SELECT max(ts_mono_ns) - min(ts_mono_ns) AS m FROM nccl_calls"
                   " WHERE seq IS NOT NULL GROUP BY seq)"),
            50000000);  // 100 ms less the other ranks' later start
  // nccl_ranks: rank 2 is the straggler, late at all 24, from the workload's code.
  auto [rrc, ranks] = gpuobs_cli("report nccl_ranks --format json " + dir.file("c.gpuobs"));
  ASSERT_EQ(rrc, 0) << ranks;
  auto rows = nlohmann::json::parse(ranks);
  ASSERT_EQ(rows.size(), 3u) << ranks;
  EXPECT_EQ(rows[0]["rank"], 2) << ranks;
  EXPECT_EQ(rows[0]["late"], 24) << ranks;
  EXPECT_EQ(rows[0]["waited_ns"], 0) << ranks;
  EXPECT_EQ(rows[1]["late"], 0) << ranks;
  EXPECT_FALSE(rows[0]["call_site"].is_null()) << ranks;
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM nccl_stalls"), 0);
  // Calls like the others: in api_calls (api_sum, errors, stacks).
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM api_calls WHERE family = 'collective' AND api = 'ncclAllReduce'"), 12);
  auto [arc, api_sum] = gpuobs_cli("report api_sum --format csv " + dir.file("c.gpuobs"));
  EXPECT_EQ(arc, 0) << api_sum;
  EXPECT_NE(api_sum.find("ncclAllReduce,12,12,"), std::string::npos) << api_sum;
  auto [src2, stacks] = gpuobs_cli("stacks --by calls --api ncclAllReduce " + dir.file("c.gpuobs"));
  EXPECT_EQ(src2, 0) << stacks;
  EXPECT_NE(stacks.find("ncclAllReduce"), std::string::npos) << stacks;
  EXPECT_NE(stacks.find("main"), std::string::npos) << stacks;
  // Perfetto/Chrome: each call on its thread with its communicator and
  // sequence number, and again on its rank's track under the communicator,
  // where a flow runs from rank to rank through each collective in the order
  // they entered it (3 ranks: 2 flows for each of the 24).
  std::string json = dir.file("t.json");
  ASSERT_EQ(gpuobs_cli("export chrome -o " + json + " " + dir.file("c.gpuobs")).first, 0);
  auto trace = read_json(json)["traceEvents"];
  int64_t comm_pid = -1;
  std::map<int64_t, std::string> rank_names;  // tid -> thread_name under the communicator
  for (const auto& e : trace)
    if (e.value("ph", "") == "M" && e.value("name", "") == "process_name" &&
        e["args"].value("name", "").rfind("NCCL comm ", 0) == 0) {
      EXPECT_EQ(comm_pid, -1) << "a second communicator: " << e.dump();
      comm_pid = e["pid"];
      EXPECT_NE(e["args"]["name"].get<std::string>().find(" (3 ranks)"), std::string::npos) << e.dump();
    }
  ASSERT_NE(comm_pid, -1);
  for (const auto& e : trace)
    if (e.value("ph", "") == "M" && e.value("name", "") == "thread_name" && e["pid"] == comm_pid)
      rank_names[e["tid"].get<int64_t>()] = e["args"]["name"];
  ASSERT_EQ(rank_names.size(), 3u);
  for (int r = 0; r < 3; ++r) {
    auto truth = read_json(dir.file("out." + std::to_string(r)));
    EXPECT_EQ(
        rank_names[r + 1].rfind("rank " + std::to_string(r) + " · pid " + std::to_string(truth["pid"].get<int>()), 0),
        0u)
        << rank_names[r + 1];
  }
  int on_threads = 0, on_ranks = 0, flows = 0, flows_on_ranks = 0;
  std::map<int64_t, std::map<int64_t, int64_t>> arrival;  // seq -> rank -> arrival
  for (const auto& e : trace) {
    if (e.value("ph", "") == "X" && e.value("name", "") == "ncclAllReduce") {
      EXPECT_TRUE(e["args"].contains("seq")) << e.dump();
      EXPECT_TRUE(e["args"].contains("comm")) << e.dump();
      EXPECT_EQ(e["args"].value("bytes", int64_t{0}), 4096) << e.dump();
      if (e["pid"] != comm_pid) {
        ++on_threads;
        continue;
      }
      ++on_ranks;
      EXPECT_EQ(e["tid"].get<int64_t>(), e["args"]["rank"].get<int64_t>() + 1) << e.dump();
      arrival[e["args"]["seq"]][e["args"]["rank"]] = e["args"]["arrival"];
      if (e["args"]["arrival"] == 3) { EXPECT_GE(e["args"]["after_first_ns"].get<int64_t>(), 50000000) << e.dump(); }
    }
    if (e.value("ph", "") == "s" && e.value("id", uint64_t{0}) >= (uint64_t{1} << 41)) {
      ++flows;
      if (e["pid"] == comm_pid) ++flows_on_ranks;
    }
  }
  EXPECT_EQ(on_threads, 12);
  EXPECT_EQ(on_ranks, 12);
  EXPECT_EQ(flows, 48);
  EXPECT_EQ(flows_on_ranks, 48);
  // Rank 2, the one that sleeps, enters every all-reduce last.
  ASSERT_EQ(arrival.size(), 4u);
  for (auto& [seq, ranks] : arrival) {
    ASSERT_EQ(ranks.size(), 3u) << seq;
    EXPECT_EQ(ranks[2], 3) << seq;
  }
  // The libcuda calls nested in them are there too, and lost nothing:
  // 3 ranks x 4 iterations x (6 collectives + 1 group end).
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM stream_ops WHERE api = 'cuStreamQuery'"), 84);
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'api_return_without_entry'"), 0);
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'api_entry_stale'"), 0);
}

TEST(Nccl, ARankThatNeverEntersIsAStallNamingIt) {
  TempDir dir;
  // Rank 1 stops before iteration 1 (collective 7) and is killed after the
  // others have waited 3 s; the watch's threshold is 1 s.
  std::string script = rank_cmd(dir, 0, 3, 2, "--linger-ms 3000") + " & " +
                       rank_cmd(dir, 1, 3, 2, "--stop-before-iter 1") + " & P=$!; " +
                       rank_cmd(dir, 2, 3, 2, "--linger-ms 3000") + " & sleep 3; kill $P; wait";
  ASSERT_EQ(record(dir, script, "--nccl-stall 1"), 0) << read_file(dir.file("log"));
  EXPECT_NE(read_file(dir.file("log")).find("NCCL stall"), std::string::npos) << read_file(dir.file("log"));
  auto db = open_capture_readonly(dir.file("c.gpuobs"));
  ASSERT_TRUE(db.ok()) << db.error().message;
  ASSERT_EQ(scalar(*db, "SELECT count(*) FROM nccl_stalls"), 1);
  EXPECT_EQ(text(*db,
                 "SELECT kind || ' ' || seq || ' ' || op || ' [' || ranks_in || '] [' || ranks_missing || ']'"
                 " FROM nccl_stalls"),
            "missing 7 all_reduce [0,2] [1]");
  EXPECT_GE(scalar(*db, "SELECT waited_ns FROM nccl_stalls"), 1000000000);
  EXPECT_EQ(text(*db,
                 "SELECT group_concat(rank || ':' || state || ':' || last_seq, ' ') FROM"
                 " (SELECT * FROM nccl_stall_ranks ORDER BY rank)"),
            "0:in:12 1:missing:6 2:in:12");
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'nccl_stalls'"), 1);
  auto [rc, out] = gpuobs_cli("report nccl_stalls --format csv " + dir.file("c.gpuobs"));
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find(",missing,"), std::string::npos) << out;
}

TEST(Nccl, ARankThatDiesInsideACollectiveIsReportedExited) {
  TempDir dir;
  // Rank 0 _exits inside its 8th collective (iteration 1's broadcast).
  std::string script = rank_cmd(dir, 0, 3, 2, "", "FAKE_NCCL_DIE_AT=8") + " & " +
                       rank_cmd(dir, 1, 3, 2, "--linger-ms 2500") + " & " + rank_cmd(dir, 2, 3, 2, "--linger-ms 2500") +
                       " & wait";
  ASSERT_EQ(record(dir, script, "--nccl-stall 1"), 0) << read_file(dir.file("log"));
  auto db = open_capture_readonly(dir.file("c.gpuobs"));
  ASSERT_TRUE(db.ok()) << db.error().message;
  ASSERT_EQ(scalar(*db, "SELECT count(*) FROM nccl_stalls"), 1);
  EXPECT_EQ(text(*db,
                 "SELECT kind || ' ' || seq || ' ' || op || ' [' || ranks_in || '] [' || ranks_missing || ']'"
                 " FROM nccl_stalls"),
            "missing 8 broadcast [1,2] [0]");
  EXPECT_EQ(text(*db,
                 "SELECT group_concat(rank || ':' || state || ':' || last_seq, ' ') FROM"
                 " (SELECT * FROM nccl_stall_ranks ORDER BY rank)"),
            "0:exited:7 1:in:12 2:in:12");
}

TEST(Nccl, ACollectiveNoRankReturnsFromIsNotReturned) {
  TempDir dir;
  // Every rank blocks inside its 3rd collective; killed after 2.5 s.
  std::string script = rank_cmd(dir, 0, 2, 2, "", "FAKE_NCCL_HANG_AT=3") + " & A=$!; " +
                       rank_cmd(dir, 1, 2, 2, "", "FAKE_NCCL_HANG_AT=3") + " & B=$!; sleep 2.5; kill $A $B; wait";
  ASSERT_EQ(record(dir, script, "--nccl-stall 1"), 0) << read_file(dir.file("log"));
  auto db = open_capture_readonly(dir.file("c.gpuobs"));
  ASSERT_TRUE(db.ok()) << db.error().message;
  ASSERT_EQ(scalar(*db, "SELECT count(*) FROM nccl_stalls"), 1);
  EXPECT_EQ(text(*db,
                 "SELECT kind || ' ' || seq || ' ' || op || ' [' || ranks_in || '] [' || ranks_missing || ']'"
                 " FROM nccl_stalls"),
            "not_returned 3 all_gather [0,1] []");
  EXPECT_EQ(text(*db,
                 "SELECT group_concat(rank || ':' || state || ':' || last_seq, ' ') FROM"
                 " (SELECT * FROM nccl_stall_ranks ORDER BY rank)"),
            "0:inside:2 1:inside:2");
}

// RCCL: the same API in librccl.so.1 (here the fake built under that name),
// found where the ranks map it; its ncclAllToAll spelling, NCCL 2.28's
// rooted ncclGather and ncclScatter, and ncclCommInitRankScalable, whose ids
// come by pointer: 2 ranks matched on one communicator all the same.
TEST(Nccl, RcclLibraryScalableInitGatherScatterAndAllToAll) {
  TempDir dir;
  std::string script;
  for (int r = 0; r < 2; ++r) script += rank_cmd(dir, r, 2, 3, "--rooted", "", 300, NCCL_RCCL_WORKLOAD) + " & ";
  script += "wait";
  ASSERT_EQ(record(dir, script, "", false), 0) << read_file(dir.file("log"));
  auto db = open_capture_readonly(dir.file("c.gpuobs"));
  ASSERT_TRUE(db.ok()) << db.error().message;
  EXPECT_EQ(text(*db, "SELECT group_concat(DISTINCT reason) FROM probes WHERE library LIKE '%librccl.so%'"), "mmap");
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM probes WHERE library LIKE '%libnccl%'"), 0);
  // 2 ranks x 3 iterations of each; gather and scatter move count x 4 x 2
  // bytes at the root (rank 0), count x 4 at rank 1.
  struct Want {
    const char* api;
    const char* op;
    int64_t calls, bytes;
  } want[] = {{"ncclGather", "gather", 6, 3 * 64 * 4 * 2 + 3 * 64 * 4},
              {"ncclScatter", "scatter", 6, 3 * 64 * 4 * 2 + 3 * 64 * 4},
              {"ncclAllToAll", "all_to_all", 6, 6 * 8 * 4 * 2},
              {"ncclCommInitRankScalable", "comm_init", 2, 0}};
  for (const auto& w : want) {
    std::string where = std::string(" FROM nccl_calls WHERE api = '") + w.api + "' AND op = '" + w.op + "'";
    EXPECT_EQ(scalar(*db, "SELECT count(*)" + where), w.calls) << w.api;
    EXPECT_EQ(scalar(*db, "SELECT coalesce(sum(bytes), 0)" + where), w.bytes) << w.api;
    EXPECT_EQ(scalar(*db, "SELECT count(*)" + where + " AND result <> 0"), 0) << w.api;
  }
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM nccl_calls WHERE op IN ('gather', 'scatter') AND peer <> 0"), 0);
  // The id read through its pointer: one communicator hash in both ranks,
  // with their ranks and size.
  EXPECT_EQ(scalar(*db, "SELECT count(DISTINCT comm_hash) FROM nccl_comms WHERE comm_hash IS NOT NULL"), 1);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM nccl_comms WHERE comm_hash IS NOT NULL AND nranks = 2"), 2);
  EXPECT_EQ(text(*db, "SELECT group_concat(rank) FROM (SELECT rank FROM nccl_comms ORDER BY rank)"), "0,1");
  // 9 collectives per rank, each matched in both.
  EXPECT_EQ(scalar(*db,
                   "SELECT count(*) FROM (SELECT seq FROM nccl_calls WHERE seq IS NOT NULL GROUP BY seq"
                   " HAVING count(DISTINCT rank) = 2 AND count(DISTINCT op) = 1)"),
            9);
  auto [src, sum] = gpuobs_cli("report nccl_sum --format csv " + dir.file("c.gpuobs"));
  ASSERT_EQ(src, 0) << sum;
  EXPECT_NE(sum.find(",gather,2,2,6,"), std::string::npos) << sum;
  EXPECT_NE(sum.find(",scatter,2,2,6,"), std::string::npos) << sum;
}
