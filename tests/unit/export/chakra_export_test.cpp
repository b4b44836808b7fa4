// The Chakra export (export/chakra_writer.h) of a schedule whose truth is
// known: two streams of one process and an event between them, a copy, a
// memset, a stream sync and a context sync on one thread. The file is read
// back in protobuf's delimited form with the generated classes, and its
// first node decoded by protoc itself through the schema the build compiled.
#include <gtest/gtest.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <fstream>
#include <map>
#include <set>

#include "chakra_et_subset.pb.h"
#include "export/chakra_writer.h"
#include "test_util.h"

namespace gpuobs {
namespace {

namespace pb = gpuobs::chakra;
using replay::ExecStep;
using replay::StepKind;

ExecStep step(int64_t i, StepKind k, int32_t stream, int64_t at) {
  ExecStep s;
  s.index = i, s.kind = k, s.stream = stream, s.at_ns = at, s.thread = 0, s.gap_ns = 100 * i;
  return s;
}

//   0 kernel A on s0 (2500 ns)     1 record e0 on s0     2 wait e0 on s1
//   3 kernel B on s1 (1000 ns)     4 copy HtoD 4096 on s1 (async)
//   5 stream sync s1               6 kernel C on s0      7 memset 512 on s1
//   8 context sync
replay::Schedule known() {
  replay::Schedule s;
  s.streams = {{0, 1, 9, 900, "created", "stream#1", true, -2}, {1, 2, 9, 900, "legacy", "", false, 0}};
  s.threads = {{0, 9, 901}};
  s.events = 1;
  auto a = step(0, StepKind::kernel, 0, 1000);
  a.gpu_ns = 2500, a.name = "A", a.gpu_from = replay::DurationSource::measured;
  auto rec = step(1, StepKind::event_record, 0, 2000);
  rec.event = 0;
  auto wait = step(2, StepKind::event_wait, 1, 3000);
  wait.event = 0;
  auto b = step(3, StepKind::kernel, 1, 4000);
  b.gpu_ns = 1000, b.name = "B", b.gpu_from = replay::DurationSource::window;
  auto cp = step(4, StepKind::copy, 1, 5000);
  cp.bytes = 4096, cp.direction = "HtoD", cp.async = true, cp.name = "cuMemcpyHtoDAsync_v2";
  auto sync = step(5, StepKind::stream_sync, 1, 6000);
  sync.host_ns = 7777, sync.name = "cuStreamSynchronize";
  auto c = step(6, StepKind::kernel, 0, 20000);
  c.gpu_ns = 10, c.name = "C";
  auto ms = step(7, StepKind::memset, 1, 21000);
  ms.bytes = 512, ms.name = "cuMemsetD8Async";
  auto ctx = step(8, StepKind::context_sync, -1, 22000);
  ctx.name = "cuCtxSynchronize";
  s.steps = {a, rec, wait, b, cp, sync, c, ms, ctx};
  return s;
}

struct Read {
  pb::GlobalMetadata meta;
  std::vector<pb::Node> nodes;
  std::vector<std::string> raw;  // each message's bytes
};

Read read_back(const std::string& bytes) {
  Read r;
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream in(&raw);
  uint32_t n = 0;
  bool first = true;
  while (in.ReadVarint32(&n)) {
    std::string msg;
    EXPECT_TRUE(in.ReadString(&msg, static_cast<int>(n)));
    r.raw.push_back(msg);
    if (first) EXPECT_TRUE(r.meta.ParseFromString(msg));
    else EXPECT_TRUE(r.nodes.emplace_back().ParseFromString(msg));
    first = false;
  }
  return r;
}

std::map<std::string, const pb::AttributeProto*> attrs(const pb::Node& n) {
  std::map<std::string, const pb::AttributeProto*> m;
  for (const auto& a : n.attr()) m[a.name()] = &a;
  return m;
}

std::set<uint64_t> ids(const google::protobuf::RepeatedField<uint64_t>& f) { return {f.begin(), f.end()}; }

}  // namespace

TEST(ChakraExport, NodesCarryTheScheduleDependenciesAndStreams) {
  auto bytes = exporter::chakra_trace(known(), "known.gpuobs");
  ASSERT_TRUE(bytes.ok()) << bytes.error().message;
  Read r = read_back(*bytes);
  EXPECT_EQ(r.meta.version(), "0.0.4");
  ASSERT_EQ(r.nodes.size(), 7u) << "records and waits are dependencies, not nodes";
  std::map<uint64_t, const pb::Node*> by;
  for (const auto& n : r.nodes) by[n.id()] = &n;
  ASSERT_EQ(by.size(), 7u);
  for (uint64_t gone : {1, 2}) EXPECT_FALSE(by.count(gone));

  const pb::Node& a = *by[0];
  EXPECT_EQ(a.name(), "A");
  EXPECT_EQ(a.type(), pb::COMP_NODE);
  EXPECT_EQ(a.duration_micros(), 3u) << "2500 ns rounds up";
  EXPECT_EQ(a.start_time_micros(), 1u);
  EXPECT_TRUE(a.ctrl_deps().empty() && a.data_deps().empty());
  auto aa = attrs(a);
  EXPECT_EQ(aa["stream"]->int64_val(), 0);
  EXPECT_EQ(aa["stream_label"]->string_val(), "stream#1");
  EXPECT_EQ(aa["stream_priority"]->int64_val(), -2);
  EXPECT_TRUE(aa["stream_non_blocking"]->bool_val());
  EXPECT_FALSE(aa["is_cpu_op"]->bool_val());
  EXPECT_EQ(aa["gpu_ns"]->int64_val(), 2500);
  EXPECT_EQ(aa["gpu_ns_source"]->string_val(), "measured");
  EXPECT_EQ(aa["tid"]->uint64_val(), 901u);

  // B waits for A through the event: a data edge; the first op on its stream has no control edge.
  EXPECT_EQ(ids(by[3]->data_deps()), (std::set<uint64_t>{0}));
  EXPECT_TRUE(by[3]->ctrl_deps().empty());
  EXPECT_EQ(attrs(*by[3])["stream_label"]->string_val(), "legacy");
  // The copy follows B on its stream.
  const pb::Node& cp = *by[4];
  EXPECT_EQ(cp.type(), pb::MEM_LOAD_NODE);
  EXPECT_EQ(ids(cp.ctrl_deps()), (std::set<uint64_t>{3}));
  EXPECT_EQ(attrs(cp)["tensor_size"]->uint64_val(), 4096u);
  EXPECT_EQ(attrs(cp)["copy_direction"]->string_val(), "HtoD");
  EXPECT_TRUE(attrs(cp)["async"]->bool_val());
  // The sync waits for the copy (the stream's last op); a CPU node of length 0, its blocked time kept.
  const pb::Node& sync = *by[5];
  EXPECT_EQ(ids(sync.data_deps()), (std::set<uint64_t>{4}));
  EXPECT_TRUE(attrs(sync)["is_cpu_op"]->bool_val());
  EXPECT_EQ(sync.duration_micros(), 0u);
  EXPECT_EQ(attrs(sync)["blocked_ns"]->int64_val(), 7777);
  // C: after A on its stream, and after the sync its thread returned from.
  EXPECT_EQ(ids(by[6]->ctrl_deps()), (std::set<uint64_t>{0, 5}));
  EXPECT_EQ(by[6]->duration_micros(), 1u);
  // The memset after the copy and the sync.
  EXPECT_EQ(ids(by[7]->ctrl_deps()), (std::set<uint64_t>{4, 5}));
  EXPECT_EQ(by[7]->type(), pb::COMP_NODE);
  EXPECT_EQ(attrs(*by[7])["tensor_size"]->uint64_val(), 512u);
  // The context sync waits for the last op of both streams.
  EXPECT_EQ(ids(by[8]->data_deps()), (std::set<uint64_t>{6, 7}));
  EXPECT_EQ(ids(by[8]->ctrl_deps()), (std::set<uint64_t>{5}));

  // protoc reads the node through the schema compiled into the build.
  gpuobs::testing::TempDir dir;
  std::ofstream(dir.file("n.bin"), std::ios::binary) << r.raw[3];  // the metadata, A, B, then the copy
  auto [rc, out] = gpuobs::testing::run_output(std::string("protoc --proto_path=") + CHAKRA_PROTO_DIR +
                                               " --decode gpuobs.chakra.Node chakra_et_subset.proto < " +
                                               dir.file("n.bin") + " 2>&1");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("type: MEM_LOAD_NODE"), std::string::npos) << out;
  EXPECT_NE(out.find("ctrl_deps: 3"), std::string::npos) << out;
  EXPECT_NE(out.find("uint64_val: 4096"), std::string::npos) << out;
}

}  // namespace gpuobs
