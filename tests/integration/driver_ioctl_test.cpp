// The driver decoders end to end with real BPF: NVIDIA RM, UVM and KFD
// requests with real argument structs, issued on stand-in devices gpuobs is
// told to decode as those drivers (nvidia=/dev/null, nvidia-uvm=/dev/zero,
// kfd=/dev/full). Checks the names, the fields BPF copied (the struct, the
// class parameter block behind RM_ALLOC, the fields past the head of UVM's
// 9 KiB structs, a block cut by an unmapped page). The stand-ins answer
// ENOTTY, so no status is reported (the driver never wrote one); statuses
// and object pairing are tested on recorded bytes and through the writer
// (unit/decode/driver_ioctl_test.cpp, unit/store/driver_store_test.cpp).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "recorded_suite.h"
#include "run_util.h"
#include "store/schema.h"
#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::testing;
using json = nlohmann::json;

namespace {

class DriverIoctls : public RecordedSuite<DriverIoctls> {
 public:
  static constexpr const char* kCapture = "drv.gpuobs";
  static std::string record_args(const std::string& truth) {
    return std::string(
               "--no-gpu-devices --watch-dev nvidia=/dev/null --watch-dev nvidia-uvm=/dev/zero"
               " --watch-dev kfd=/dev/full -- ") +
           DRIVER_IOCTL_WORKLOAD + " --nvidia /dev/null --uvm /dev/zero --kfd /dev/full --truth " + truth;
  }

 protected:
  // The ioctls in issue order: (driver, request, args, status, status_name, failed, args_complete, class_name,
  // control_name).
  std::vector<json> rows() {
    std::vector<json> out;
    Stmt st(db_.get(),
            "SELECT driver, request, coalesce(args, '{}'), status, status_name, failed, args_complete, class_name,"
            " control_name, cmd, ret FROM ioctls ORDER BY ts_mono_ns, id");
    auto text = [&](int i) -> json {
      if (sqlite3_column_type(st.get(), i) == SQLITE_NULL) return nullptr;
      return std::string(reinterpret_cast<const char*>(sqlite3_column_text(st.get(), i)));
    };
    auto num = [&](int i) -> json {
      if (sqlite3_column_type(st.get(), i) == SQLITE_NULL) return nullptr;
      return sqlite3_column_int64(st.get(), i);
    };
    while (st.step() == SQLITE_ROW)
      out.push_back({{"driver", text(0)},
                     {"request", text(1)},
                     {"args", json::parse(text(2).get<std::string>())},
                     {"status", num(3)},
                     {"status_name", text(4)},
                     {"failed", num(5)},
                     {"complete", num(6)},
                     {"class", text(7)},
                     {"control", text(8)},
                     {"cmd", num(9)},
                     {"ret", num(10)}});
    return out;
  }
};

}  // namespace

TEST_F(DriverIoctls, EveryRequestNamedInIssueOrder) {
  auto got = rows();
  ASSERT_EQ(got.size(), truth_->size());
  for (size_t i = 0; i < got.size(); ++i) {
    const json& want = (*truth_)[i];
    EXPECT_EQ(got[i]["driver"], want["driver"]) << i;
    EXPECT_EQ(got[i]["request"], want["request"]) << i;
    EXPECT_EQ(got[i]["cmd"], want["cmd"]) << i;
    EXPECT_EQ(got[i]["ret"], want["ret"]) << i;
    EXPECT_EQ(got[i]["ret"], -25) << "the stand-ins answer ENOTTY";
    EXPECT_EQ(got[i]["failed"], 1) << i;
  }
  EXPECT_EQ(scalar(db_, "SELECT count(*) FROM watched_devices WHERE driver IN ('nvidia', 'nvidia-uvm', 'kfd')"), 3);
  EXPECT_EQ(scalar(db_, "SELECT sum(value) FROM counters WHERE name LIKE 'dropped_%'"), 0);
  // Calls the stand-in refused created nothing.
  EXPECT_EQ(scalar(db_, "SELECT count(*) FROM driver_objects"), 0);
}

TEST_F(DriverIoctls, RmAllocCarriesItsClassParameters) {
  auto got = rows();
  ASSERT_GE(got.size(), 14u);
  // Rows 0..8: root, device, channel group, 2 channels, 3 memory, the failed memory.
  EXPECT_EQ(got[0]["class"], "NV01_ROOT");
  EXPECT_EQ(got[0]["args"]["hObjectNew"], 0xc1d00040u);
  EXPECT_EQ(got[1]["class"], "NV01_DEVICE_0");
  EXPECT_EQ(got[2]["class"], "KEPLER_CHANNEL_GROUP_A");
  EXPECT_EQ(got[3]["class"], "HOPPER_CHANNEL_GPFIFO_A");
  EXPECT_EQ(got[4]["args"]["hObjectNew"], 0x5c000004u);
  for (int i = 5; i < 8; ++i) {
    EXPECT_EQ(got[i]["class"], "NV01_MEMORY_LOCAL_USER") << i;
    EXPECT_EQ(got[i]["args"]["size"], 2u << 20) << "the size is in the block pAllocParms points to";
    EXPECT_EQ(got[i]["status"], nullptr) << "ENOTTY: the driver wrote no status";
    EXPECT_EQ(got[i]["complete"], 1);
  }
  EXPECT_EQ(got[8]["args"]["size"], 1ull << 40);
  EXPECT_EQ(got[8]["status"], nullptr);  // status decoding: unit/decode/driver_ioctl_test.cpp
  // The subdevice's 4-byte block ends a page: the copy keeps what is readable.
  EXPECT_EQ(got[13]["class"], "NV20_SUBDEVICE_0");
  EXPECT_EQ(got[13]["args"]["subDeviceId"], 1);
}

TEST_F(DriverIoctls, ControlsFreesAndWrappedCalls) {
  auto got = rows();
  ASSERT_GE(got.size(), 13u);
  EXPECT_EQ(got[9]["control"], "NV503C_CTRL_CMD_REGISTER_VIDMEM");
  EXPECT_EQ(got[9]["class"], "NV50_THIRD_PARTY_P2P");
  EXPECT_EQ(got[10]["args"]["hObjectOld"], 0x5c000010u);
  EXPECT_EQ(got[11]["args"]["hObjectOld"], 0x5c000011u);
  // NV_ESC_IOCTL_XFER_CMD: decoded as the control it carries, with its status.
  EXPECT_EQ(got[12]["control"], "NV2080_CTRL_CMD_GPU_GET_INFO_V2");
  EXPECT_EQ(got[12]["args"]["xfer"], true);
  EXPECT_EQ(got[12]["class"], "NV20_SUBDEVICE_0");
}

TEST_F(DriverIoctls, UvmAndKfdFields) {
  auto got = rows();
  ASSERT_EQ(got.size(), 24u);
  EXPECT_EQ(got[15]["request"], "UVM_REGISTER_GPU");
  EXPECT_EQ(got[15]["args"]["gpu_uuid"], "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf");
  EXPECT_EQ(got[15]["args"]["rmCtrlFd"], 9);
  EXPECT_EQ(got[16]["args"]["length"], 2u << 20);
  // UVM_MAP_EXTERNAL_ALLOCATION is 9264 bytes: its status 9260 bytes in.
  EXPECT_EQ(got[17]["args"]["hMemory"], 0x5c000012u);
  EXPECT_EQ(got[17]["args"]["rmCtrlFd"], 9);
  EXPECT_EQ(got[18]["args"]["minor_version"], 17);
  EXPECT_EQ(got[19]["args"]["queue_type_name"], "COMPUTE_AQL");
  EXPECT_EQ(got[19]["args"]["ring_size"], 4096);
  EXPECT_EQ(got[19]["args"]["gpu_id"], 0x1234);
  EXPECT_EQ(got[20]["args"]["size"], 1ull << 30);
  EXPECT_EQ(got[20]["args"]["flag_names"], json({"VRAM", "WRITABLE"}));
  EXPECT_EQ(got[21]["args"]["wait_result"], 1);
  EXPECT_EQ(got[21]["args"]["timeout"], 100);
  EXPECT_EQ(got[23]["args"]["queue_id"], 5);
}

TEST_F(DriverIoctls, ReportsNameTheRequests) {
  std::string out = tmp_.file("sum.json");
  ASSERT_EQ(run(std::string(GPUOBS_BIN) + " report ioctl_sum " + out_ + " --format json > " + out), 0);
  json sum = read_json(out);
  int64_t rm_alloc = -1;
  for (const auto& r : sum)
    if (r["request"] == "NV_ESC_RM_ALLOC") rm_alloc = r["calls"];
  EXPECT_EQ(rm_alloc, 10);
  ASSERT_EQ(run(std::string(GPUOBS_BIN) + " report gpu_procs " + out_ + " --format json > " + out), 0);
  json procs = read_json(out);
  ASSERT_EQ(procs.size(), 1u);
  EXPECT_EQ(procs[0]["ioctls"], 24);
  EXPECT_EQ(procs[0]["failed"], 24);
  EXPECT_EQ(procs[0]["drivers"].get<std::string>().find("kfd") != std::string::npos, true);
}
