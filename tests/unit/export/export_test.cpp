// The exporters against a capture written by the real writer from synthetic
// events whose truth is known, plus a replay result built by hand (the
// engine's own output is checked end to end in ExportEndToEnd). Every file is
// decoded back (the generated protobuf classes, zlib, nlohmann) and its
// tracks, slices, flows, counters and samples compared exactly.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "catalogue/api_spec.h"
#include "common/gzip.h"
#include "export/chrome_writer.h"
#include "export/perfetto_writer.h"
#include "export/pprof_writer.h"
#include "export/timeline_source.h"
#include "export/trace_layout.h"
#include "gunzip_util.h"
#include "perfetto_decode.h"
#include "perfetto_trace_subset.pb.h"
#include "pprof_profile.pb.h"
#include "replay/replay.h"
#include "store/schema.h"
#include "store/writer.h"
#include "test_util.h"

using namespace gpuobs;
using json = nlohmann::json;
namespace pb = gpuobs::perfetto;
using gpuobs::testing::decode_perfetto;
using gpuobs::testing::Decoded;
using gpuobs::testing::DecodedSlice;

namespace {

constexpr int64_t kT = 1'000'000'000;  // capture start (monotonic ns)
constexpr int64_t kEnd = kT + 10'000;  // capture end
constexpr int64_t kMiB = 1 << 20;

uint32_t api_id(std::string_view symbol) {
  const ApiSpec* s = api_by_symbol(symbol);
  if (!s) ADD_FAILURE() << "no API " << symbol;
  return s ? s->id : 0;
}

gpuobs_hdr hdr(uint32_t type, uint32_t tgid, uint32_t tid, int64_t ts) {
  return gpuobs_hdr{type, 0, static_cast<uint64_t>(ts), tgid, tid};
}

ApiCallEvent call(uint32_t tgid, uint32_t tid, int64_t ts, std::string_view api, std::vector<uint64_t> args,
                  uint64_t dur, uint64_t out = 0, std::string blob = {}) {
  ApiCallEvent e{hdr(GPUOBS_EV_API_CALL, tgid, tid, ts),
                 {},
                 0,
                 dur,
                 out,
                 api_id(api),
                 GPUOBS_CALL_F_RETURNED | (out ? GPUOBS_CALL_F_OUT_READ : 0u),
                 blob.empty() ? 0u : static_cast<uint32_t>(GPUOBS_BLOB_STRING),
                 std::move(blob)};
  for (size_t i = 0; i < args.size() && i < 8; ++i) e.args[i] = args[i];
  return e;
}

gpuobs_launch launch(uint32_t tgid, int64_t ts, uint64_t fn, uint64_t stream) {
  gpuobs_launch l{};
  l.hdr = hdr(GPUOBS_EV_LAUNCH, tgid, tgid, ts);
  l.function = fn;
  l.grid_x = l.grid_y = l.grid_z = 1;
  l.block_x = l.block_y = l.block_z = 1;
  l.stream = stream;
  l.api = GPUOBS_API_CU_LAUNCH_KERNEL;
  return l;
}

// The capture: trainer (pid 100; threads 100 and 101) and infer (pid 200).
//   tid 100: cuModuleGetFunction, 2 launches of gemm on stream 0x10 (stack 1),
//            cuMemAlloc 1 MiB (an ioctl inside it), cuMemAlloc 2 MiB,
//            cuStreamWaitEvent(0x10, 0xE1), cuStreamSynchronize(0x10) 300 ns (stack 2), cuMemFree (1 MiB)
//   tid 101: cuEventRecord(0xE1, 0x20)
//   tid 200: a launch of an unnamed function on the legacy stream
void write_capture(const std::string& path) {
  auto w = CaptureWriter::create(path, false, nullptr);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->write_meta(CaptureMeta{"t", CaptureMode::record, "c", "h", "k", "", kT, 0, 4096}).ok());
  ASSERT_TRUE((*w)->write_watched_device(195, std::nullopt, "nvidia").ok());
  (*w)->start();
  auto push = [&](Event e, int64_t stack = 0) { (*w)->push(std::move(e), stack); };
  push(ProcEvent{GPUOBS_EV_PROC_FORK, hdr(GPUOBS_EV_PROC_FORK, 100, 100, kT), 1, 1, 0, "trainer", ""});
  push(ProcEvent{GPUOBS_EV_PROC_FORK, hdr(GPUOBS_EV_PROC_FORK, 200, 200, kT), 2, 1, 0, "infer", ""});
  push(ModuleDef{1, "[anon]", 0, 0, nullptr});
  push(FrameDef{1, 1, 0x1234});
  push(FrameDef{2, 1, 0x5678});
  push(StackDef{1, 0, {1}});
  push(StackDef{2, 0, {2, 1}});
  push(call(100, 100, kT + 100, "cuModuleGetFunction", {0, 0xD0, 0}, 40, 0xF1, std::string("_Z4gemmv\0", 9)));
  push(launch(100, kT + 1000, 0xF1, 0x10), 1);
  push(launch(100, kT + 1010, 0xF1, 0x10), 1);
  push(call(100, 100, kT + 2000, "cuMemAlloc_v2", {0, uint64_t(kMiB)}, 100, 0xA0));
  push(IoctlEvent{hdr(GPUOBS_EV_IOCTL, 100, 100, kT + 2010),
                  20,
                  0,
                  0,
                  0xC0104629,
                  195,
                  0,
                  5,
                  GPUOBS_DRV_OTHER,
                  0,
                  std::string(16, '\0'),
                  {}});
  push(call(100, 100, kT + 3000, "cuMemAlloc_v2", {0, uint64_t(2 * kMiB)}, 10, 0xB0));
  push(call(100, 101, kT + 3050, "cuEventRecord", {0xE1, 0x20}, 3));
  push(call(100, 100, kT + 3100, "cuStreamWaitEvent", {0x10, 0xE1, 0}, 5));
  push(call(100, 100, kT + 4000, "cuStreamSynchronize", {0x10}, 300), 2);
  push(call(100, 100, kT + 5000, "cuMemFree_v2", {0xA0}, 8));
  push(launch(200, kT + 6000, 0xF2, 0));
  (*w)->stop();
  ASSERT_TRUE((*w)->write_end(kEnd, 0, {}).ok());
}

int64_t row_id(Db& db, const std::string& sql) {
  auto v = db.scalar(sql);
  EXPECT_TRUE(v.ok()) << sql;
  return v.ok() ? *v : -1;
}

// What the replay would say about that capture (written by hand: the
// exporters' tests must not depend on the engine's choices).
replay::Result hand_replay(Db& db) {
  replay::Result r;
  r.end_ns = kEnd;
  r.queues = {{1, 1, 100, "created", 0x10, {}, false, {}, {}, 3, 3},
              {2, 1, 100, "created", 0x20, {}, false, {}, {}, 1, 1},
              {3, 2, 200, "legacy", 0, {}, false, {}, {}, 1, 1}};
  int64_t l1 = row_id(db, "SELECT id FROM kernel_launches WHERE ts_mono_ns = 1000001000");
  int64_t l2 = row_id(db, "SELECT id FROM kernel_launches WHERE ts_mono_ns = 1000001010");
  int64_t l3 = row_id(db, "SELECT id FROM kernel_launches WHERE tgid = 200");
  int64_t rec = row_id(db, "SELECT id FROM stream_ops WHERE api = 'cuEventRecord'");
  int64_t wait = row_id(db, "SELECT id FROM stream_ops WHERE api = 'cuStreamWaitEvent'");
  auto op = [](int64_t id, int64_t q, int64_t seq, std::string kind, std::string name, std::string api,
               std::string table, int64_t src, uint32_t tid, int64_t start, std::optional<int64_t> end) {
    replay::Op o;
    o.id = id, o.queue_id = q, o.seq = seq, o.kind = kind, o.name = name, o.api = api, o.source_table = table;
    o.source_id = src, o.tid = tid, o.enqueue_ns = start, o.earliest_start_ns = start, o.latest_end_ns = end;
    if (end) o.bound_by = 1;
    return o;
  };
  r.ops = {op(1, 1, 1, "launch", "gemm()", "cuLaunchKernel", "kernel_launches", l1, 100, kT + 1000, kT + 4300),
           op(2, 1, 2, "launch", "gemm()", "cuLaunchKernel", "kernel_launches", l2, 100, kT + 1010, kT + 4300),
           op(3, 2, 1, "event_record", "cuEventRecord", "cuEventRecord", "stream_ops", rec, 101, kT + 3100, kT + 3200),
           op(4, 1, 3, "wait_event", "cuStreamWaitEvent", "cuStreamWaitEvent", "stream_ops", wait, 100, kT + 3100,
              kT + 4300),
           op(5, 3, 1, "launch", "function 0xf2", "cuLaunchKernel", "kernel_launches", l3, 200, kT + 6000, {})};
  // Stream 0x20 was busy: the record's window starts at the wait's enqueue,
  // the wait's at the same instant (it waits for the record), and it ends later.
  r.ops[2].enqueue_ns = kT + 3050;
  r.ops[2].event = r.ops[3].event = 0xE1;
  r.deps = {{4, 3, "event"}, {2, 1, "legacy"}};  // a legacy edge draws no flow
  replay::Observation o;
  o.id = 1, o.process_id = 1, o.tid = 100, o.kind = "stream_sync", o.api = "cuStreamSynchronize";
  o.start_ns = kT + 4000, o.end_ns = kT + 4300, o.queue_id = 1, o.ops_completed = 3;
  r.observations = {o};
  r.depth = {{1, kT + 1000, 1}, {1, kT + 1010, 2}, {1, kT + 3100, 3}, {1, kT + 4300, 0}, {2, kT + 3050, 1}};
  return r;
}

class Export : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("e.gpuobs");
    write_capture(path_);
    auto db = open_capture_readonly(path_);
    ASSERT_TRUE(db.ok());
    db_ = std::move(*db);
  }

  exporter::TraceLayout layout() {
    auto t = exporter::load_timeline(db_);
    EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
    return exporter::build_layout(std::move(*t), hand_replay(db_));
  }

  // uuid of the one track of this kind matching the predicate.
  static std::vector<uint64_t> find(const Decoded& d, const std::function<bool(const pb::TrackDescriptor&)>& f) {
    std::vector<uint64_t> out;
    for (auto& [uuid, t] : d.tracks)
      if (f(t)) out.push_back(uuid);
    return out;
  }
  static uint64_t thread(const Decoded& d, int pid, int tid) {
    auto v = find(d, [&](auto& t) { return t.has_thread() && t.thread().pid() == pid && t.thread().tid() == tid; });
    EXPECT_EQ(v.size(), 1u) << "thread " << pid << "/" << tid;
    return v.empty() ? 0 : v[0];
  }
  static std::vector<uint64_t> children(const Decoded& d, uint64_t parent) {
    return find(d, [&](auto& t) { return t.parent_uuid() == parent && !t.has_counter(); });
  }
  static size_t slices_on(const Decoded& d, uint64_t track) {
    size_t n = 0;
    for (auto& s : d.slices) n += s.track == track;
    return n;
  }

  gpuobs::testing::TempDir dir_;
  std::string path_;
  Db db_;
};

TEST_F(Export, PerfettoTracksSlicesFlowsAndCounters) {
  std::ostringstream out;
  ASSERT_TRUE(exporter::write_perfetto(layout(), out).ok());
  Decoded d = decode_perfetto(out.str());

  // Interning and clock: the first event clears the incremental state, the
  // others need it; every timestamp is CLOCK_MONOTONIC.
  EXPECT_EQ(d.first_flags, 3u);
  EXPECT_EQ(d.other_flags_not_2, 0u);
  EXPECT_EQ(d.no_clock, 0u);

  // Processes and threads.
  auto procs = find(d, [](auto& t) { return t.has_process(); });
  ASSERT_EQ(procs.size(), 2u);
  std::map<int, std::string> proc_names;
  for (auto u : procs) proc_names[d.tracks[u].process().pid()] = d.tracks[u].process().process_name();
  EXPECT_EQ(proc_names, (std::map<int, std::string>{{100, "trainer"}, {200, "infer"}}));
  EXPECT_EQ(find(d, [](auto& t) { return t.has_thread(); }).size(), 3u);
  uint64_t t100 = thread(d, 100, 100), t101 = thread(d, 100, 101), t200 = thread(d, 200, 200);
  EXPECT_EQ(d.tracks[t100].thread().thread_name(), "trainer");

  // Host slices: every call, launches as instants; the ioctl nests in cuMemAlloc.
  EXPECT_EQ(slices_on(d, t100), 9u);
  EXPECT_EQ(slices_on(d, t101), 1u);
  EXPECT_EQ(slices_on(d, t200), 1u);
  size_t instants = 0;
  for (auto& s : d.slices)
    if (s.track == t100 && s.instant) {
      ++instants;
      EXPECT_EQ(s.name, "cuLaunchKernel");
      EXPECT_EQ(s.args["kernel"], "gemm()");
    }
  EXPECT_EQ(instants, 2u);
  DecodedSlice* ioctl = nullptr;
  for (auto& s : d.slices)
    if (s.name == "ioctl 0xc0104629") ioctl = &s;
  ASSERT_NE(ioctl, nullptr);
  EXPECT_EQ(ioctl->track, t100);
  EXPECT_EQ(ioctl->depth, 1);
  EXPECT_EQ(ioctl->start, kT + 2010);
  EXPECT_EQ(ioctl->end, kT + 2030);

  // Streams: a parent per queue under its process, windows packed into lanes
  // of the same name (stream 0x10: op 1, op 2 and op 4 all overlap: 3 lanes).
  auto streams = find(d, [&](auto& t) {
    return !t.has_counter() && d.tracks.count(t.parent_uuid()) && d.tracks[t.parent_uuid()].has_process();
  });
  ASSERT_EQ(streams.size(), 3u);
  std::map<std::string, std::vector<uint64_t>> lanes;
  for (auto u : streams) lanes[d.tracks[u].name()] = children(d, u);
  ASSERT_EQ(lanes.size(), 3u);
  ASSERT_EQ(lanes["Stream 0x10 (pid 100)"].size(), 3u);
  ASSERT_EQ(lanes["Stream 0x20 (pid 100)"].size(), 1u);
  ASSERT_EQ(lanes["Stream legacy (pid 200)"].size(), 1u);
  for (auto& [name, ls] : lanes)
    for (auto u : ls) {
      EXPECT_EQ(d.tracks[u].name(), name);
      EXPECT_EQ(slices_on(d, u), 1u) << name;
    }
  DecodedSlice* op1 = nullptr;
  for (auto& s : d.slices)
    if (s.track == lanes["Stream 0x10 (pid 100)"][0]) op1 = &s;
  ASSERT_NE(op1, nullptr);
  EXPECT_EQ(op1->name, "gemm()");
  EXPECT_EQ(op1->start, kT + 1000);
  EXPECT_EQ(op1->end, kT + 4300);
  EXPECT_EQ(op1->args.at("bound_by"), "cuStreamSynchronize (stream_sync, observation 1)");
  EXPECT_EQ(op1->args.at("bounds"),
            "estimated: earliest start / latest end derived from host observations, not measured");
  // Never proven complete: one marker per stream to the capture's end, which says so.
  size_t open_ops = 0;
  for (auto& s : d.slices)
    if (s.args.count("open")) {
      ++open_ops;
      EXPECT_EQ(s.name, "1 operation never proven complete");
      EXPECT_EQ(s.start, kT + 6000);
      EXPECT_EQ(s.end, kEnd) << s.name;
      EXPECT_EQ(s.args["open"],
                "never proven complete: folded into one marker per stream, from the first such operation's earliest "
                "start to the capture's end");
      EXPECT_EQ(s.args["op_ids"], "5");
      EXPECT_EQ(s.args["kinds"], "launch 1");
    }
  EXPECT_EQ(open_ops, 1u);  // op 5

  // Flows: each enqueuing call to its operation; the event record to the wait.
  ASSERT_EQ(d.flow_out.size(), 6u);
  for (uint64_t id = 1; id <= 5; ++id) {
    ASSERT_EQ(d.flow_out[id].size(), 1u) << id;
    ASSERT_EQ(d.flow_in[id].size(), 1u) << id;
    const DecodedSlice &from = d.slices[d.flow_out[id][0]], &to = d.slices[d.flow_in[id][0]];
    EXPECT_TRUE(d.tracks[from.track].has_thread()) << id;
    EXPECT_FALSE(d.tracks[to.track].has_thread()) << id;
    EXPECT_LE(from.start, to.start);
  }
  EXPECT_EQ(d.slices[d.flow_out[1][0]].start, kT + 1000);
  EXPECT_EQ(d.slices[d.flow_out[1][0]].name, "cuLaunchKernel");
  EXPECT_EQ(d.slices[d.flow_out[3][0]].track, t101);
  uint64_t dep = exporter::kDependencyFlowBase + 0;
  ASSERT_EQ(d.flow_out[dep].size(), 1u);
  ASSERT_EQ(d.flow_in[dep].size(), 1u);
  EXPECT_EQ(d.slices[d.flow_out[dep][0]].track, lanes["Stream 0x20 (pid 100)"][0]);
  EXPECT_EQ(d.slices[d.flow_in[dep][0]].name, "cuStreamWaitEvent");
  EXPECT_EQ(d.slices[d.flow_in[dep][0]].track, lanes["Stream 0x10 (pid 100)"][2]);
  EXPECT_EQ(d.flow_out.count(exporter::kDependencyFlowBase + 1), 0u);  // the legacy edge

  // Counters: device memory of trainer, and the depth of two streams.
  auto mem =
      find(d, [](auto& t) { return t.has_counter() && t.counter().unit() == pb::CounterDescriptor::UNIT_SIZE_BYTES; });
  ASSERT_EQ(mem.size(), 1u);
  EXPECT_EQ(d.tracks[d.tracks[mem[0]].parent_uuid()].process().pid(), 100);
  EXPECT_EQ(d.counters[mem[0]], (std::vector<std::pair<int64_t, int64_t>>{
                                    {kT + 2000, kMiB}, {kT + 3000, 3 * kMiB}, {kT + 5000, 2 * kMiB}}));
  auto depth =
      find(d, [](auto& t) { return t.has_counter() && t.counter().unit() == pb::CounterDescriptor::UNIT_COUNT; });
  ASSERT_EQ(depth.size(), 2u);
  for (auto u : depth) {
    const std::string& stream = d.tracks[d.tracks[u].parent_uuid()].name();
    if (stream == "Stream 0x10 (pid 100)")
      EXPECT_EQ(d.counters[u], (std::vector<std::pair<int64_t, int64_t>>{
                                   {kT + 1000, 1}, {kT + 1010, 2}, {kT + 3100, 3}, {kT + 4300, 0}}));
    else EXPECT_EQ(stream, "Stream 0x20 (pid 100)");
  }
}

TEST_F(Export, ChromeJsonHasTheSameSlicesFlowsAndCounters) {
  std::ostringstream out;
  ASSERT_TRUE(exporter::write_chrome_json(layout(), out).ok());
  json j = json::parse(out.str());
  ASSERT_TRUE(j["traceEvents"].is_array());
  std::map<std::pair<int, uint32_t>, int> x;  // (pid, tid) -> complete events
  std::map<std::string, std::set<uint32_t>> lane_tids;
  std::map<uint64_t, int> starts, finishes;
  std::vector<std::pair<int64_t, int64_t>> memory;
  std::map<int, std::string> proc_names;
  for (auto& e : j["traceEvents"]) {
    std::string ph = e["ph"];
    if (ph == "X") {
      ++x[{e["pid"].get<int>(), e["tid"].get<uint32_t>()}];
      EXPECT_GE(e["dur"].get<double>(), 0.0);
    } else if (ph == "M" && e["name"] == "thread_name" && e["tid"].get<uint32_t>() >= exporter::kLaneTidBase) {
      lane_tids[e["args"]["name"]].insert(e["tid"].get<uint32_t>());
    } else if (ph == "M" && e["name"] == "process_name") {
      proc_names[e["pid"]] = e["args"]["name"];
    } else if (ph == "s") {
      ++starts[e["id"].get<uint64_t>()];
    } else if (ph == "f") {
      EXPECT_EQ(e["bp"], "e");
      ++finishes[e["id"].get<uint64_t>()];
    } else if (ph == "C" && e["name"] == "device memory") {
      memory.emplace_back(std::llround(e["ts"].get<double>() * 1000), e["args"]["bytes"].get<int64_t>());
    }
  }
  EXPECT_EQ(proc_names, (std::map<int, std::string>{{100, "trainer"}, {200, "infer"}}));
  EXPECT_EQ((x[{100, 100}]), 9);
  EXPECT_EQ((x[{100, 101}]), 1);
  EXPECT_EQ((x[{200, 200}]), 1);
  EXPECT_EQ(lane_tids["Stream 0x10 (pid 100)"].size(), 3u);
  EXPECT_EQ(lane_tids["Stream 0x20 (pid 100)"].size(), 1u);
  EXPECT_EQ(lane_tids["Stream legacy (pid 200)"].size(), 1u);
  for (auto& [name, tids] : lane_tids)
    for (uint32_t tid : tids) EXPECT_EQ((x[{name.find("200") != std::string::npos ? 200 : 100, tid}]), 1) << name;
  std::map<uint64_t, int> want{{1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}, {exporter::kDependencyFlowBase, 1}};
  EXPECT_EQ(starts, want);
  EXPECT_EQ(finishes, want);
  EXPECT_EQ(memory, (std::vector<std::pair<int64_t, int64_t>>{
                        {kT + 2000, kMiB}, {kT + 3000, 3 * kMiB}, {kT + 5000, 2 * kMiB}}));
  // Times keep their nanoseconds: the second launch at 1000001.010 us.
  EXPECT_NE(out.str().find("\"ts\":1000001.010,\"dur\":0.000"), std::string::npos);
}

using gpuobs::testing::gunzip;

TEST_F(Export, PprofSamplesPerStackAndLeaf) {
  auto bytes = exporter::pprof_profile(db_, StackMeasure::blocked, {});
  ASSERT_TRUE(bytes.ok()) << bytes.error().message;
  auto gz = gzip(*bytes);
  ASSERT_TRUE(gz.ok());
  ASSERT_GE(gz->size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>((*gz)[0]), 0x1f);  // gzip magic
  EXPECT_EQ(static_cast<unsigned char>((*gz)[1]), 0x8b);
  gpuobs::pprof::Profile p;
  ASSERT_TRUE(p.ParseFromString(gunzip(*gz)));
  ASSERT_GT(p.string_table_size(), 0);
  EXPECT_EQ(p.string_table(0), "");
  auto s = [&](int64_t i) { return p.string_table(static_cast<int>(i)); };
  std::vector<std::string> types;
  for (auto& t : p.sample_type()) types.push_back(s(t.type()) + "/" + s(t.unit()));
  EXPECT_EQ(types, (std::vector<std::string>{"launches/count", "calls/count", "copied/bytes", "allocated/bytes",
                                             "blocked/nanoseconds", "ioctls/count"}));
  EXPECT_EQ(s(p.default_sample_type()), "blocked");
  std::map<uint64_t, std::string> fn;
  for (auto& f : p.function()) {
    EXPECT_NE(f.id(), 0u);
    fn[f.id()] = s(f.name());
  }
  std::map<uint64_t, const gpuobs::pprof::Location*> loc;
  for (auto& l : p.location()) {
    EXPECT_NE(l.id(), 0u);
    loc[l.id()] = &l;
  }
  for (auto& m : p.mapping()) EXPECT_NE(m.id(), 0u);
  // (leaf, frames leaf first) -> values
  std::map<std::vector<std::string>, std::vector<int64_t>> got;
  for (auto& smp : p.sample()) {
    std::vector<std::string> names;
    for (uint64_t id : smp.location_id()) names.push_back(fn[loc.at(id)->line(0).function_id()]);
    got[names] = std::vector<int64_t>(smp.value().begin(), smp.value().end());
  }
  std::map<std::vector<std::string>, std::vector<int64_t>> want{
      {{"gemm()", "[anon]+0x1234"}, {2, 0, 0, 0, 0, 0}},
      {{"cuLaunchKernel", "[anon]+0x1234"}, {0, 2, 0, 0, 0, 0}},
      {{"cuStreamSynchronize", "[anon]+0x5678", "[anon]+0x1234"}, {0, 1, 0, 0, 300, 0}}};
  EXPECT_EQ(got, want);
}

TEST_F(Export, PprofKernelFilterFitsLaunchesOnly) {
  auto ok = exporter::pprof_profile(db_, StackMeasure::launches, StackFilter{std::nullopt, "gemm", ""});
  ASSERT_TRUE(ok.ok());
  gpuobs::pprof::Profile p;
  ASSERT_TRUE(p.ParseFromString(*ok));
  ASSERT_EQ(p.sample_size(), 1);
  EXPECT_EQ(p.sample(0).value(0), 2);
  auto bad = exporter::pprof_profile(db_, StackMeasure::blocked, StackFilter{std::nullopt, "gemm", ""});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().exit_code, 2);
}

// --by-process: the same stack in two processes stays two samples (two
// folded lines), each rooted at its command and pid (issue 20).
TEST(ExportByProcess, TheSameStackInTwoProcessesNeverMerges) {
  gpuobs::testing::TempDir dir;
  std::string path = dir.file("two.gpuobs");
  {
    auto w = CaptureWriter::create(path, false, nullptr);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->write_meta(CaptureMeta{"t", CaptureMode::record, "c", "h", "k", "", kT, 0, 4096}).ok());
    (*w)->start();
    auto push = [&](Event e, int64_t stack = 0) { (*w)->push(std::move(e), stack); };
    push(ProcEvent{GPUOBS_EV_PROC_FORK, hdr(GPUOBS_EV_PROC_FORK, 100, 100, kT), 1, 1, 0, "trainer", ""});
    push(ProcEvent{GPUOBS_EV_PROC_FORK, hdr(GPUOBS_EV_PROC_FORK, 200, 200, kT), 2, 1, 0, "trainer", ""});
    push(ModuleDef{1, "[anon]", 0, 0, nullptr});
    push(FrameDef{1, 1, 0x1234});
    push(StackDef{1, 0, {1}});
    push(launch(100, kT + 1000, 0xF1, 0), 1);
    push(launch(100, kT + 1010, 0xF1, 0), 1);
    push(launch(200, kT + 2000, 0xF1, 0), 1);
    (*w)->stop();
    ASSERT_TRUE((*w)->write_end(kEnd, 0, {}).ok());
  }
  auto db = open_capture_readonly(path);
  ASSERT_TRUE(db.ok());
  StackFilter by_process;
  by_process.by_process = true;
  auto bytes = exporter::pprof_profile(*db, StackMeasure::launches, by_process);
  ASSERT_TRUE(bytes.ok()) << bytes.error().message;
  gpuobs::pprof::Profile p;
  ASSERT_TRUE(p.ParseFromString(*bytes));
  auto s = [&](int64_t i) { return p.string_table(static_cast<int>(i)); };
  std::map<uint64_t, std::string> fn;
  for (auto& f : p.function()) fn[f.id()] = s(f.name());
  std::map<uint64_t, std::string> loc;
  for (auto& l : p.location()) loc[l.id()] = fn[l.line(0).function_id()];
  std::map<std::vector<std::string>, int64_t> launches;  // frames, leaf first -> launches
  for (auto& smp : p.sample()) {
    std::vector<std::string> names;
    for (uint64_t id : smp.location_id()) names.push_back(loc.at(id));
    launches[names] += smp.value(0);
    std::map<std::string, std::string> labels;
    for (auto& l : smp.label()) labels[s(l.key())] = l.str() ? s(l.str()) : std::to_string(l.num());
    EXPECT_EQ(labels["comm"], "trainer");
    EXPECT_EQ("pid " + labels["pid"], names[names.size() - 2]);
  }
  // The kernel has no name in this capture: its leaf is the function handle.
  // (The calls measure adds cuLaunchKernel samples: 0 launches each.)
  std::map<std::vector<std::string>, int64_t> want{{{"function 0xf1", "[anon]+0x1234", "pid 100", "trainer"}, 2},
                                                   {{"function 0xf1", "[anon]+0x1234", "pid 200", "trainer"}, 1},
                                                   {{"cuLaunchKernel", "[anon]+0x1234", "pid 100", "trainer"}, 0},
                                                   {{"cuLaunchKernel", "[anon]+0x1234", "pid 200", "trainer"}, 0}};
  EXPECT_EQ(launches, want);
  // Without it, the processes merge: one launch sample of 3.
  auto merged = exporter::pprof_profile(*db, StackMeasure::launches, {});
  ASSERT_TRUE(merged.ok());
  gpuobs::pprof::Profile m;
  ASSERT_TRUE(m.ParseFromString(*merged));
  std::vector<int64_t> launch_values;
  for (auto& smp : m.sample())
    if (smp.value(0)) launch_values.push_back(smp.value(0));
  EXPECT_EQ(launch_values, std::vector<int64_t>{3});
  // The folded export, through the CLI.
  std::string folded = dir.file("f.folded");
  ASSERT_EQ(std::system((std::string(GPUOBS_BIN) + " export folded --by-process " + path + " -o " + folded).c_str()),
            0);
  std::string text = gpuobs::testing::file_bytes(folded);
  EXPECT_NE(text.find("trainer;pid 100;[anon]+0x1234;[function 0xf1] 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("trainer;pid 200;[anon]+0x1234;[function 0xf1] 1\n"), std::string::npos) << text;
}

TEST(ExportErrors, NotACaptureIsAnError) {
  gpuobs::testing::TempDir dir;
  auto db = Db::open(dir.file("empty.db"), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  ASSERT_TRUE(db.ok());
  auto t = exporter::load_timeline(*db);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("cannot read"), std::string::npos);
}

}  // namespace

// The real engine on the same capture, then the CLI: what a user runs.
namespace {

TEST_F(Export, EndToEndWithTheReplayEngine) {
  auto replayed = replay::run(db_);
  ASSERT_TRUE(replayed.ok()) << replayed.error().message;
  const replay::Result& r = *replayed;
  auto t = exporter::load_timeline(db_);
  ASSERT_TRUE(t.ok());
  std::ostringstream out;
  ASSERT_TRUE(exporter::write_perfetto(exporter::build_layout(std::move(*t), r), out).ok());
  Decoded d = decode_perfetto(out.str());

  // One stream track per replayed queue, named after it, under its process.
  auto streams = find(d, [&](auto& t) {
    return !t.has_counter() && d.tracks.count(t.parent_uuid()) && d.tracks[t.parent_uuid()].has_process();
  });
  std::set<std::string> names;
  for (auto u : streams) names.insert(d.tracks[u].name());
  EXPECT_EQ(streams.size(), r.queues.size());
  // The label of stream_names, as reports and diff name the stream, then the handle.
  EXPECT_TRUE(names.count("Stream stream#1 0x10 (pid 100)")) << [&] {
    std::string all;
    for (const auto& n : names) all += n + "; ";
    return all;
  }();
  EXPECT_TRUE(names.count("Stream stream#2 0x20 (pid 100)"));
  // Every replayed operation proven complete is one slice on its stream's
  // lanes; those never proven are one marker per stream listing them; each
  // has a flow from the call that enqueued it.
  size_t op_slices = 0, proven = 0;
  for (auto& s : d.slices) op_slices += s.args.count("op_id");
  for (const replay::Op& op : r.ops) proven += op.latest_end_ns.has_value();
  EXPECT_EQ(op_slices, proven);
  EXPECT_LT(proven, r.ops.size());  // the unnamed launch of pid 200 is never synchronized
  for (const replay::Op& op : r.ops) {
    auto id = static_cast<uint64_t>(op.id);
    ASSERT_EQ(d.flow_out[id].size(), 1u) << op.id;
    ASSERT_EQ(d.flow_in[id].size(), 1u) << op.id;
    EXPECT_EQ(d.slices[d.flow_out[id][0]].start, op.enqueue_ns);
    const DecodedSlice& to = d.slices[d.flow_in[id][0]];
    if (op.latest_end_ns) EXPECT_EQ(to.args.at("op_id"), std::to_string(op.id));
    else EXPECT_NE((", " + to.args.at("op_ids") + ",").find(", " + std::to_string(op.id) + ","), std::string::npos);
  }
  // The engine's event edge (cuEventRecord on 0x20 -> cuStreamWaitEvent on 0x10) is a flow.
  size_t event_deps = 0;
  for (size_t i = 0; i < r.deps.size(); ++i) {
    if (r.deps[i].kind != "event") continue;
    ++event_deps;
    uint64_t f = exporter::kDependencyFlowBase + i;
    ASSERT_EQ(d.flow_out[f].size(), 1u);
    ASSERT_EQ(d.flow_in[f].size(), 1u);
    EXPECT_EQ(d.slices[d.flow_out[f][0]].args["kind"], "event_record");
    EXPECT_EQ(d.slices[d.flow_in[f][0]].args["kind"], "wait_event");
  }
  EXPECT_EQ(event_deps, 1u);
}

int run(const std::string& cmd) {
  int rc = std::system((cmd + " >/dev/null 2>&1").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST_F(Export, CliWritesFilesThatDecode) {
  std::string bin = GPUOBS_BIN;
  std::string pf = dir_.file("t.pftrace"), js = dir_.file("t.json"), pp = dir_.file("p.pb.gz");
  ASSERT_EQ(run(bin + " export perfetto " + path_ + " -o " + pf), 0);
  Decoded d = decode_perfetto(gpuobs::testing::file_bytes(pf));
  EXPECT_EQ(find(d, [](auto& t) { return t.has_process(); }).size(), 2u);
  EXPECT_EQ(find(d, [](auto& t) { return t.has_thread(); }).size(), 3u);
  ASSERT_EQ(run(bin + " export chrome " + path_ + " -o " + js), 0);
  json j = json::parse(gpuobs::testing::file_bytes(js));
  size_t host = 0;
  for (auto& e : j["traceEvents"]) host += e["ph"] == "X" && e["cat"] == "host";
  EXPECT_EQ(host, 11u);
  ASSERT_EQ(run(bin + " export pprof " + path_ + " --by launches -o " + pp), 0);
  gpuobs::pprof::Profile p;
  ASSERT_TRUE(p.ParseFromString(gunzip(gpuobs::testing::file_bytes(pp))));
  EXPECT_EQ(p.string_table(static_cast<int>(p.default_sample_type())), "launches");
  EXPECT_EQ(p.sample_size(), 3);
  // Errors: exit status 2 and no file left behind.
  std::string bad = dir_.file("bad.pftrace");
  EXPECT_EQ(run(bin + " export perfetto " + dir_.file("missing.gpuobs") + " -o " + bad), 2);
  EXPECT_FALSE(std::filesystem::exists(bad));
  EXPECT_FALSE(std::filesystem::exists(bad + ".tmp"));
  EXPECT_EQ(run(bin + " export pprof " + path_ + " --by nonsense -o " + bad), 2);
  EXPECT_FALSE(std::filesystem::exists(bad));
}

// An existing output is replaced only with --force, like `record -o`; a device
// is written in place, never replaced by a file; a directory is refused
// (issue 20, and the -o /dev/null defect of issue 15 in the exports).
TEST_F(Export, AnExistingOutputIsReplacedOnlyWithForceAndADeviceNever) {
  std::string bin = GPUOBS_BIN;
  for (std::string kind : {"perfetto", "chrome", "pprof", "folded", "html"}) {
    SCOPED_TRACE(kind);
    std::string out = dir_.file("existing." + kind);
    { std::ofstream(out) << "keep me"; }
    EXPECT_EQ(run(bin + " export " + kind + " " + path_ + " -o " + out), 2);
    EXPECT_EQ(gpuobs::testing::file_bytes(out), "keep me");
    EXPECT_EQ(run(bin + " export " + kind + " " + path_ + " --force -o " + out), 0);
    EXPECT_NE(gpuobs::testing::file_bytes(out), "keep me");
    EXPECT_GT(std::filesystem::file_size(out), 10u);
    EXPECT_EQ(run(bin + " export " + kind + " " + path_ + " -f -o /dev/null"), 0);
    struct stat st {};
    ASSERT_EQ(::stat("/dev/null", &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode)) << "/dev/null was replaced";
    EXPECT_EQ(run(bin + " export " + kind + " " + path_ + " -f -o " + dir_.path()), 2);
    EXPECT_TRUE(std::filesystem::is_directory(dir_.path()));
    // -o /dev/stdout with stdout redirected into a file: the output lands in
    // that file and the link stays a link (with -f it was renamed over; a
    // copy of the link, not /dev/stdout itself, so a regression harms nothing).
    std::string link = dir_.file("stdout-" + kind), sink = dir_.file("sink-" + kind);
    ASSERT_EQ(::symlink("/proc/self/fd/1", link.c_str()), 0);
    for (const char* force : {"", "-f "}) {
      EXPECT_EQ(
          std::system((bin + " export " + kind + " " + path_ + " " + force + "-o " + link + " > " + sink).c_str()), 0)
          << force;
      EXPECT_TRUE(std::filesystem::is_symlink(link)) << force;
      EXPECT_GT(std::filesystem::file_size(sink), 10u) << force;
    }
    // A file of the user's at OUT.tmp is not ours to truncate or remove.
    std::string mine = dir_.file("existing." + kind + ".tmp");
    { std::ofstream(mine) << "mine"; }
    EXPECT_EQ(run(bin + " export " + kind + " " + path_ + " -f -o " + out), 0);
    EXPECT_EQ(gpuobs::testing::file_bytes(mine), "mine");
  }
  // export html --since past the end: an empty window, not the whole capture.
  std::string html = dir_.file("late.html");
  ASSERT_EQ(run(bin + " export html " + path_ + " --since 1e300 -o " + html), 0);
  EXPECT_NE(gpuobs::testing::file_bytes(html).find("\"slices_kept\":0"), std::string::npos);
}

}  // namespace
