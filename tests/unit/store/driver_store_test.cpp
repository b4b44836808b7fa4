// Driver ioctls through the real writer with successful returns (what the
// stand-in devices of the integration test cannot give): the objects the
// drivers created pair with their frees per process, driver memory over
// time, and the gpu_procs report, for NVIDIA RM and AMD KFD.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>

#include "report/query.h"
#include "store/schema.h"
#include "store/writer.h"
#include "test_util.h"

using namespace gpuobs;
using gpuobs::testing::scalar;
using gpuobs::testing::TempDir;

namespace {

struct Bytes {
  std::string b;
  explicit Bytes(size_t n) : b(n, '\0') {}
  template <class T>
  Bytes& put(size_t off, T v) {
    std::memcpy(b.data() + off, &v, sizeof v);
    return *this;
  }
};

uint64_t g_ts = 100;

IoctlEvent ioctl_ev(uint32_t tgid, uint32_t driver, uint32_t cmd, std::string head, std::string aux = {}) {
  IoctlEvent e{};
  e.hdr = {GPUOBS_EV_IOCTL, 0, g_ts += 10, tgid, tgid};
  e.latency_ns = 1000;
  e.driver = driver;
  e.cmd = cmd;
  e.dev_major = driver == GPUOBS_DRV_KFD ? 234 : 195;
  e.dev_minor = 255;
  e.head = std::move(head);
  e.aux = std::move(aux);
  return e;
}

constexpr uint32_t kClient = 0xc1d00040;

IoctlEvent rm_alloc(uint32_t tgid, uint32_t handle, uint32_t cls, uint64_t bytes = 0, uint32_t status = 0,
                    uint32_t parent = kClient) {
  Bytes h(48);
  h.put<uint32_t>(0, kClient)
      .put<uint32_t>(4, parent)
      .put<uint32_t>(8, handle)
      .put<uint32_t>(12, cls)
      .put<uint32_t>(40, status);
  Bytes params(128);
  params.put<uint64_t>(64, bytes);
  return ioctl_ev(tgid, GPUOBS_DRV_NVIDIA, 0xC030462B, h.b, params.b);
}

IoctlEvent rm_free(uint32_t tgid, uint32_t handle) {
  Bytes h(16);
  h.put<uint32_t>(0, kClient).put<uint32_t>(4, kClient).put<uint32_t>(8, handle);
  return ioctl_ev(tgid, GPUOBS_DRV_NVIDIA, 0xC0104629, h.b);
}

ProcEvent fork_ev(uint32_t tgid, const char* comm) {
  return ProcEvent{
      GPUOBS_EV_PROC_FORK, gpuobs_hdr{GPUOBS_EV_PROC_FORK, 0, g_ts += 10, tgid, tgid}, tgid, 1, 0, comm, ""};
}

}  // namespace

TEST(DriverStore, ObjectsPairWithTheirFreesPerProcess) {
  TempDir dir;
  auto path = dir.file("d.gpuobs");
  auto w = CaptureWriter::create(path, false, nullptr);
  ASSERT_TRUE(w.ok());
  CaptureMeta m{"test",   CaptureMode::record,
                "cmd",    "host",
                "kernel", "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04",
                0,        0,
                4096};
  ASSERT_TRUE((*w)->write_meta(m).ok());
  (*w)->start();
  (*w)->push(fork_ev(10, "cudaprog"));
  (*w)->push(fork_ev(20, "hipprog"));
  // NVIDIA, process 10: a TSG, 2 channels, 3 x 2 MiB (one freed twice: the
  // second free pairs with nothing), a failed 1 TiB alloc, one free.
  (*w)->push(rm_alloc(10, 0x5c000002, 0xA06C));
  (*w)->push(rm_alloc(10, 0x5c000003, 0xC86F));
  (*w)->push(rm_alloc(10, 0x5c000004, 0xC86F));
  for (uint32_t i = 0; i < 3; ++i) (*w)->push(rm_alloc(10, 0x5c000010 + i, 0x40, 2u << 20));
  (*w)->push(rm_alloc(10, 0x5c000020, 0x40, 1ull << 40, 0x51));
  (*w)->push(rm_free(10, 0x5c000010));
  (*w)->push(rm_free(10, 0x5c000011));
  (*w)->push(rm_free(10, 0x5c000011));  // freed twice: the second pairs with nothing
  // A device with 8 MiB under it, freed whole: RM frees the children too.
  (*w)->push(rm_alloc(10, 0x5c000050, 0x80));
  (*w)->push(rm_alloc(10, 0x5c000051, 0x40, 8u << 20, 0, 0x5c000050));
  (*w)->push(rm_free(10, 0x5c000050));
  // The same handle in another process is another object.
  (*w)->push(rm_alloc(30, 0x5c000010, 0x40, 4u << 20));
  // KFD, process 20: a queue and 1 GiB of VRAM, both destroyed; a failed alloc.
  Bytes q(96);
  q.put<uint32_t>(36, 0x1234).put<uint32_t>(40, 2).put<uint32_t>(52, 5);
  (*w)->push(ioctl_ev(20, GPUOBS_DRV_KFD, 0xC0604B02, q.b));
  Bytes mem(40);
  mem.put<uint64_t>(0, 0x7f0000000000)
      .put<uint64_t>(8, 1ull << 30)
      .put<uint64_t>(16, 0xabc)
      .put<uint32_t>(32, 0x1234)
      .put<uint32_t>(36, 1u | (1u << 31));
  (*w)->push(ioctl_ev(20, GPUOBS_DRV_KFD, 0xC0284B16, mem.b));
  auto failed = ioctl_ev(20, GPUOBS_DRV_KFD, 0xC0284B16, mem.b);
  failed.ret = -12;
  (*w)->push(failed);
  Bytes fr(8);
  fr.put<uint64_t>(0, 0xabc);
  (*w)->push(ioctl_ev(20, GPUOBS_DRV_KFD, 0x40084B17, fr.b));
  Bytes dq(8);
  dq.put<uint32_t>(0, 5);
  (*w)->push(ioctl_ev(20, GPUOBS_DRV_KFD, 0xC0084B03, dq.b));
  (*w)->stop();
  ASSERT_TRUE((*w)->write_end(100000, 0, {}).ok());

  auto db = open_capture_readonly(path);
  ASSERT_TRUE(db.ok());
  auto q10 = [&](const std::string& where) {
    return scalar(*db,
                  "SELECT count(*) FROM driver_objects d JOIN processes p ON p.id = d.process_id"
                  " WHERE p.tgid = 10 AND " +
                      where);
  };
  EXPECT_EQ(q10("op = 'alloc' AND kind = 'channel_group'"), 1);
  EXPECT_EQ(q10("op = 'alloc' AND kind = 'channel' AND class_name = 'HOPPER_CHANNEL_GPFIFO_A'"), 2);
  EXPECT_EQ(q10("op = 'alloc' AND kind = 'memory' AND bytes = 2097152"), 3);  // the failed one is not an object
  EXPECT_EQ(q10("op = 'free' AND alloc_id IS NOT NULL AND bytes = 2097152 AND kind = 'memory'"), 2);
  EXPECT_EQ(q10("op = 'free' AND alloc_id IS NULL AND kind = 'unknown' AND handle = 0x5c000011"), 1);
  EXPECT_EQ(q10("op = 'free' AND alloc_id IS NOT NULL AND kind = 'memory' AND bytes = 8388608"
                " AND handle = 0x5c000051"),
            1)
      << "freed with its device";
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM ioctls WHERE failed = 1 AND status_name = 'NV_ERR_NO_MEMORY'"), 1);
  // Each free points at its own process's alloc of that handle.
  EXPECT_EQ(scalar(*db,
                   "SELECT count(*) FROM driver_objects f JOIN driver_objects a ON a.id = f.alloc_id"
                   " WHERE f.op = 'free' AND (a.process_id != f.process_id OR a.handle != f.handle)"),
            0);
  EXPECT_EQ(scalar(*db,
                   "SELECT max(live_bytes) FROM driver_memory_timeline t JOIN processes p ON"
                   " p.id = t.process_id WHERE p.tgid = 10"),
            10 << 20);  // 3 x 2 MiB, two freed, then the device's 8 MiB
  EXPECT_EQ(scalar(*db,
                   "SELECT live_bytes FROM driver_memory_timeline t JOIN processes p ON p.id = t.process_id"
                   " WHERE p.tgid = 10 ORDER BY ts_mono_ns DESC LIMIT 1"),
            2 << 20);
  // KFD: queue and memory created and destroyed, paired by handle / queue id.
  EXPECT_EQ(scalar(*db,
                   "SELECT count(*) FROM driver_objects WHERE driver = 'kfd' AND op = 'free'"
                   " AND alloc_id IS NOT NULL"),
            2);
  EXPECT_EQ(scalar(*db, "SELECT bytes FROM driver_objects WHERE driver = 'kfd' AND op = 'free' AND kind = 'memory'"),
            1ll << 30);
  EXPECT_EQ(scalar(*db, "SELECT parent FROM driver_objects WHERE driver = 'kfd' AND kind = 'queue' AND op = 'alloc'"),
            0x1234);

  // gpu_procs: who used the GPUs and what the drivers gave them.
  auto sql = report_sql("gpu_procs");
  ASSERT_TRUE(sql.ok());
  auto r = run_query(*db, *sql, {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  std::ostringstream out;
  print_result(*r, OutputFormat::json, out);
  auto rows = nlohmann::json::parse(out.str());
  ASSERT_EQ(rows.size(), 3u);
  int seen = 0;
  for (const auto& row : rows) {
    if (row["pid"] == 10) {
      ++seen;
      EXPECT_EQ(row["channel_groups"], 1);
      EXPECT_EQ(row["channels"], 2);
      EXPECT_EQ(row["mem_alloc_bytes"], 14680064);
      EXPECT_EQ(row["mem_peak_bytes"], 10485760);
      EXPECT_EQ(row["mem_live_bytes"], 2097152);
      EXPECT_EQ(row["failed"], 1);
      EXPECT_EQ(row["process"], "cudaprog");
    } else if (row["pid"] == 20) {
      ++seen;
      EXPECT_EQ(row["queues"], 1);
      EXPECT_EQ(row["mem_peak_bytes"], 1ll << 30);
      EXPECT_EQ(row["mem_live_bytes"], 0);
      EXPECT_EQ(row["failed"], 1);
      EXPECT_EQ(row["drivers"], "kfd");
    }
  }
  EXPECT_EQ(seen, 2);
}
