// The DRM decoders end to end with real BPF: i915, xe and amdgpu requests
// with real argument structs (tests/workloads/drm_ioctl_workload.c), issued
// on stand-in devices gpuobs is told to decode as those drivers
// (i915=/dev/null, xe=/dev/zero, amdgpu=/dev/full). Checks the names, the
// fields BPF copied: the struct, xe's binds behind vector_of_binds and the
// engines behind instances, the amdgpu CS chunk chain (three levels of
// pointers, cut at 6 chunks), and the drm_submit_sum report. The stand-ins
// answer ENOTTY: every call failed, so only inputs are decoded; outputs
// and the union inputs a success overwrites are tested on recorded bytes
// (unit/decode/drm_ioctl_test.cpp).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <tuple>
#include <vector>

#include "recorded_suite.h"
#include "run_util.h"
#include "store/schema.h"
#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::testing;
using json = nlohmann::json;

namespace {

class DrmIoctls : public RecordedSuite<DrmIoctls> {
 public:
  static constexpr const char* kCapture = "drm.gpuobs";
  static std::string record_args(const std::string& truth) {
    return std::string(
               "--no-gpu-devices --watch-dev i915=/dev/null --watch-dev xe=/dev/zero --watch-dev amdgpu=/dev/full "
               "-- ") +
           DRM_IOCTL_WORKLOAD + " --i915 /dev/null --xe /dev/zero --amdgpu /dev/full --truth " + truth;
  }

 protected:
  // The ioctls in issue order.
  std::vector<json> rows() {
    std::vector<json> out;
    Stmt st(db_.get(),
            "SELECT driver, request, coalesce(args, '{}'), failed, args_complete, cmd, ret FROM ioctls"
            " ORDER BY ts_mono_ns, id");
    while (st.step() == SQLITE_ROW) {
      auto text = [&](int i) { return std::string(reinterpret_cast<const char*>(sqlite3_column_text(st.get(), i))); };
      out.push_back({{"driver", text(0)},
                     {"request", sqlite3_column_type(st.get(), 1) == SQLITE_NULL ? json(nullptr) : json(text(1))},
                     {"args", json::parse(text(2))},
                     {"failed", sqlite3_column_int64(st.get(), 3)},
                     {"complete", sqlite3_column_int64(st.get(), 4)},
                     {"cmd", sqlite3_column_int64(st.get(), 5)},
                     {"ret", sqlite3_column_int64(st.get(), 6)}});
    }
    return out;
  }
};

}  // namespace

TEST_F(DrmIoctls, EveryRequestNamedInIssueOrder) {
  auto got = rows();
  ASSERT_EQ(got.size(), truth_->size());
  ASSERT_EQ(got.size(), 19u);
  for (size_t i = 0; i < got.size(); ++i) {
    const json& want = (*truth_)[i];
    EXPECT_EQ(got[i]["driver"], want["driver"]) << i;
    EXPECT_EQ(got[i]["request"], want["request"]) << i;
    EXPECT_EQ(got[i]["cmd"], want["cmd"]) << i;
    EXPECT_EQ(got[i]["ret"], -25) << i << ": the stand-ins answer ENOTTY";
    EXPECT_EQ(got[i]["failed"], 1) << i;
    // Only the CS whose chunks were cut at the BPF bound is incomplete.
    EXPECT_EQ(got[i]["complete"], i == 16 ? 0 : 1) << i << " " << got[i]["request"];
  }
  EXPECT_EQ(q("SELECT count(*) FROM watched_devices WHERE driver IN ('i915', 'xe', 'amdgpu')"), 3);
  EXPECT_EQ(q("SELECT sum(value) FROM counters WHERE name LIKE 'dropped_%'"), 0);
}

TEST_F(DrmIoctls, I915ExecbuffersOnRenderAndBlitter) {
  auto got = rows();
  ASSERT_EQ(got.size(), 19u);
  EXPECT_EQ(got[0]["args"], json({{"size", 65536}})) << "no handle: the call failed";
  for (int i : {2, 3}) {
    EXPECT_EQ(got[i]["args"]["engine"], "render") << i;
    EXPECT_EQ(got[i]["args"]["ring"], 1) << i;
    EXPECT_EQ(got[i]["args"]["ctx_id"], 5) << i;
    EXPECT_EQ(got[i]["args"]["batch_len"], 4096) << i;
    EXPECT_EQ(got[i]["args"]["flag_names"], json({"NO_RELOC"})) << i;
  }
  EXPECT_EQ(got[2]["args"]["buffer_count"], 3);
  EXPECT_EQ(got[3]["args"]["buffer_count"], 2);
  EXPECT_EQ(got[4]["args"]["engine"], "blt");
  EXPECT_EQ(got[4]["args"]["fence_in_fd"], 4);
  EXPECT_EQ(got[4]["args"]["flag_names"], json({"FENCE_IN"}));
  EXPECT_EQ(got[5]["args"], json({{"flags", 0}}));
  EXPECT_EQ(got[6]["args"], json({{"ctx_id", 5}}));
}

TEST_F(DrmIoctls, XeBindsAndQueueEngines) {
  auto got = rows();
  ASSERT_EQ(got.size(), 19u);
  EXPECT_EQ(got[8]["args"]["engine"], "COMPUTE") << "the class behind instances";
  EXPECT_EQ(
      got[8]["args"]["engines"],
      json::array({{{"engine_class", 4}, {"engine_class_name", "COMPUTE"}, {"engine_instance", 0}, {"gt_id", 0}}}));
  EXPECT_EQ(got[8]["args"]["width"], 1);
  const json& bind = got[9]["args"];
  EXPECT_EQ(bind["num_binds"], 2);
  EXPECT_EQ(bind["vm_id"], 1);
  ASSERT_EQ(bind["binds"].size(), 2u) << "both binds read through vector_of_binds";
  EXPECT_EQ(bind["binds"][0]["op_name"], "MAP");
  EXPECT_EQ(bind["binds"][0]["obj"], 4);
  EXPECT_EQ(bind["binds"][0]["addr"], 0x200000);
  EXPECT_EQ(bind["binds"][0]["range"], 0x10000);
  EXPECT_EQ(bind["binds"][1]["op_name"], "UNMAP");
  EXPECT_EQ(bind["binds"][1]["addr"], 0x400000);
  EXPECT_EQ(
      got[10]["args"],
      json({{"exec_queue_id", 3}, {"num_syncs", 0}, {"syncs", 0}, {"address", 0x1a0000}, {"num_batch_buffer", 1}}));
  EXPECT_EQ(got[11]["args"], json({{"exec_queue_id", 3}}));
}

TEST_F(DrmIoctls, AmdgpuCsChunksComputeGfxAndCut) {
  auto got = rows();
  ASSERT_EQ(got.size(), 19u);
  EXPECT_EQ(got[12]["args"]["op_name"], "ALLOC_CTX");
  EXPECT_EQ(got[13]["args"]["bo_size"], 1 << 20) << "from the entry image";
  EXPECT_EQ(got[13]["args"]["domain_names"], json({"VRAM"}));
  const json& compute = got[14]["args"];
  EXPECT_EQ(compute["engine"], "COMPUTE");
  EXPECT_EQ(compute["ctx_id"], 1);
  EXPECT_EQ(compute["num_chunks"], 3);
  EXPECT_EQ(compute["ibs"], 1);
  EXPECT_EQ(compute["fences"], 1);
  EXPECT_EQ(compute["syncobj_out"], 1);
  ASSERT_EQ(compute["chunk_list"].size(), 3u);
  EXPECT_EQ(compute["chunk_list"][0]["ib_bytes"], 256);
  EXPECT_EQ(compute["chunk_list"][0]["va_start"], 0x800000000);
  EXPECT_EQ(compute["chunk_list"][2]["chunk_name"], "SYNCOBJ_OUT");
  const json& gfx = got[15]["args"];
  EXPECT_EQ(gfx["engine"], "GFX");
  EXPECT_EQ(gfx["dependencies"], 1);
  EXPECT_EQ(gfx["chunk_list"][0]["ib_bytes"], 512);
  // 8 DMA IBs: the first 6 kept, 2 counted as cut, the call incomplete.
  const json& dma = got[16]["args"];
  EXPECT_EQ(dma["engine"], "DMA");
  EXPECT_EQ(dma["num_chunks"], 8);
  EXPECT_EQ(dma["ibs"], 6);
  EXPECT_EQ(dma["chunks_cut"], 2);
  EXPECT_EQ(dma["chunk_list"].size(), 6u);
  const json& wait = got[17]["args"];
  EXPECT_EQ(wait["handle"], 0x55);
  EXPECT_EQ(wait["ip_type_name"], "GFX");
  EXPECT_EQ(wait["ctx_id"], 1);
  EXPECT_EQ(wait["timeout"], 1000000000);
  EXPECT_EQ(got[17]["failed"], 1);
  EXPECT_EQ(got[18]["args"]["op_name"], "CREATE");
  EXPECT_EQ(got[18]["args"]["ip_type_name"], "COMPUTE");
  EXPECT_EQ(got[18]["args"]["queue_size"], 1 << 16);
  EXPECT_FALSE(got[18]["args"].contains("queue_id")) << "CREATE: queue_id is an output";
}

// Graphics and compute submissions, per process and engine.
TEST_F(DrmIoctls, SubmitSumPerEngine) {
  std::string out = tmp_.file("submit.json");
  ASSERT_EQ(run(std::string(GPUOBS_BIN) + " report drm_submit_sum " + out_ + " --format json > " + out), 0);
  json sum = read_json(out);
  ASSERT_EQ(sum.size(), 6u) << sum.dump();
  std::vector<std::tuple<std::string, std::string, int64_t, json, json, json, int64_t>> want = {
      // driver, engine, submissions, batches, buffers, chunks, incomplete
      {"amdgpu", "COMPUTE", 1, 1, nullptr, 3, 0},
      {"amdgpu", "DMA", 1, 6, nullptr, 8, 1},
      {"amdgpu", "GFX", 1, 1, nullptr, 2, 0},
      {"i915", "render", 2, 2, 5, nullptr, 0},
      {"i915", "blt", 1, 1, 1, nullptr, 0},
      // The queue's create failed on the stand-in: no class to join, its id.
      {"xe", "exec_queue 3", 1, 1, nullptr, nullptr, 0},
  };
  for (size_t i = 0; i < want.size(); ++i) {
    auto [driver, engine, n, batches, buffers, chunks, incomplete] = want[i];
    EXPECT_EQ(sum[i]["driver"], driver) << i;
    EXPECT_EQ(sum[i]["engine"], engine) << i;
    EXPECT_EQ(sum[i]["submissions"], n) << i;
    EXPECT_EQ(sum[i]["failed"], n) << i;
    EXPECT_EQ(sum[i]["batches"], batches) << i;
    EXPECT_EQ(sum[i]["buffers"], buffers) << i;
    EXPECT_EQ(sum[i]["chunks"], chunks) << i;
    EXPECT_EQ(sum[i]["incomplete"], incomplete) << i;
    EXPECT_EQ(sum[i]["process"], "drm_ioctl_workl") << i;
  }
  std::string table = tmp_.file("submit.txt");
  ASSERT_EQ(run(std::string(GPUOBS_BIN) + " report drm_submit_sum " + out_ + " > " + table), 0);
  std::string text = read_file(table);
  for (const char* e : {"COMPUTE", "GFX", "render", "blt"}) EXPECT_NE(text.find(e), std::string::npos) << e;
}
