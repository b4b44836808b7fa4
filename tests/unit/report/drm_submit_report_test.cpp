// drm_submit_sum over a capture written by the real writer from synthetic
// DRM ioctl records that succeeded (the stand-in devices of the BPF suite
// refuse every call): the xe engine joined from the EXEC_QUEUE_CREATE that
// returned the queue id on the same file, and per-process rows.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>
#include <string>

#include "report/query.h"
#include "store/schema.h"
#include "store/writer.h"
#include "test_util.h"

using namespace gpuobs;
using json = nlohmann::json;

namespace {

constexpr uint64_t kT0 = 1'000'000'000;
constexpr uint32_t drm_cmd(uint32_t dir, uint32_t nr, uint32_t size) {
  return dir << 30 | size << 16 | 0x64u << 8 | nr;
}

std::string image(size_t size, std::initializer_list<std::pair<size_t, uint64_t>> fields, size_t width = 4) {
  std::string b(size, '\0');
  for (auto [off, v] : fields)
    for (size_t i = 0; i < width; ++i) b[off + i] = char((v >> (8 * i)) & 0xff);
  return b;
}

IoctlEvent ioctl(uint32_t tgid, uint64_t ts, uint32_t driver, int32_t fd, uint32_t cmd, std::string head,
                 std::string aux = {}, uint64_t latency = 1000) {
  IoctlEvent e;
  e.hdr = gpuobs_hdr{GPUOBS_EV_IOCTL, 0, ts, tgid, tgid};
  e.latency_ns = latency;
  e.cmd = cmd;
  e.dev_major = 226;
  e.dev_minor = 128;
  e.fd = fd;
  e.driver = driver;
  e.head = std::move(head);
  e.aux = std::move(aux);
  return e;
}

class DrmSubmitReport : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("d.gpuobs");
    auto w = CaptureWriter::create(path_, false, nullptr);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->write_meta(CaptureMeta{"t", CaptureMode::record, "c", "h", "k", "", kT0, 0, 4096}).ok());
    (*w)->start();
    auto push = [&](Event e) { (*w)->push(std::move(e)); };
    push(ProcEvent{GPUOBS_EV_PROC_FORK, gpuobs_hdr{GPUOBS_EV_PROC_FORK, 0, kT0, 100, 100}, 1, 1, 0, "game", ""});
    push(ProcEvent{GPUOBS_EV_PROC_FORK, gpuobs_hdr{GPUOBS_EV_PROC_FORK, 0, kT0, 200, 200}, 2, 1, 0, "infer", ""});
    // xe, process 100: queue 7 created on COMPUTE (fd 5), queue 8 on RENDER (fd 5), queue 7 also on
    // another file (fd 6) as COPY: execs join the queue of their own file.
    auto queue = [&](uint64_t ts, int32_t fd, uint32_t id, uint16_t cls) {
      std::string q = image(48, {{8, 1}, {10, 1}, {20, id}});
      push(ioctl(100, ts, GPUOBS_DRV_XE, fd, drm_cmd(3, 0x46, 48), q, image(8, {{0, cls}}, 2)));
    };
    queue(kT0 + 1, 5, 7, 4);
    queue(kT0 + 2, 5, 8, 0);
    queue(kT0 + 3, 6, 7, 1);
    auto exec = [&](uint64_t ts, int32_t fd, uint32_t id, uint64_t latency) {
      push(ioctl(100, ts, GPUOBS_DRV_XE, fd, drm_cmd(1, 0x49, 56), image(56, {{8, id}, {32, 1}}), {}, latency));
    };
    exec(kT0 + 10, 5, 7, 2000);
    exec(kT0 + 11, 5, 7, 4000);
    exec(kT0 + 12, 5, 8, 1000);
    exec(kT0 + 13, 6, 7, 500);
    exec(kT0 + 14, 5, 9, 700);  // no create seen for queue 9
    // amdgpu, process 200: a GFX CS that succeeded (its sequence number over the inputs).
    std::string cs = image(24, {{0, 0x55}, {8, 1}, {16, 0x7f0000001000}}, 8);
    std::string aux = image(56, {{0, 3}, {8, 1}, {12, 1}, {16, 1}, {20, 8}, {36, 0}});
    push(ioctl(200, kT0 + 20, GPUOBS_DRV_AMDGPU, 9, drm_cmd(3, 0x44, 24), cs, aux, 3000));
    (*w)->stop();
    ASSERT_TRUE((*w)->write_end(kT0 + 1'000'000, 0, {}).ok());
  }

  json report() {
    auto db = open_capture_readonly(path_);
    EXPECT_TRUE(db.ok());
    auto sql = report_sql("drm_submit_sum");
    EXPECT_TRUE(sql.ok());
    auto r = run_query(*db, *sql, {});
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    std::ostringstream out;
    print_result(*r, OutputFormat::json, out);
    return json::parse(out.str());
  }

  gpuobs::testing::TempDir dir_;
  std::string path_;
};

}  // namespace

TEST_F(DrmSubmitReport, XeEngineFromItsQueueOnTheSameFile) {
  json rows = report();
  ASSERT_EQ(rows.size(), 5u) << rows.dump();
  auto find = [&](int pid, const std::string& engine) -> json {
    for (const auto& r : rows)
      if (r["pid"] == pid && r["engine"] == engine) return r;
    ADD_FAILURE() << "no row " << pid << " " << engine << " in " << rows.dump();
    return json::object();
  };
  json compute = find(100, "COMPUTE");
  EXPECT_EQ(compute["submissions"], 2);
  EXPECT_EQ(compute["failed"], 0);
  EXPECT_EQ(compute["avg_ns"], 3000.0);
  EXPECT_EQ(compute["max_ns"], 4000);
  EXPECT_EQ(compute["batches"], 2);
  EXPECT_EQ(compute["process"], "game");
  EXPECT_EQ(find(100, "RENDER")["submissions"], 1);
  EXPECT_EQ(find(100, "COPY")["submissions"], 1) << "queue 7 of the other file";
  EXPECT_EQ(find(100, "exec_queue 9")["submissions"], 1);
  json gfx = find(200, "GFX");
  EXPECT_EQ(gfx["driver"], "amdgpu");
  EXPECT_EQ(gfx["process"], "infer");
  EXPECT_EQ(gfx["chunks"], 1);
  EXPECT_EQ(gfx["batches"], 1);
  EXPECT_EQ(gfx["incomplete"], 0);
}
