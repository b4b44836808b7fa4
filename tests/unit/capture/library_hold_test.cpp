// Holding a process at its first mapping of a GPU library (issue 37),
// without BPF: a fake /proc whose process 100 maps a copy of libcuda.so.1,
// the watch told of the mapping as BPF would (MapNotice), and stub hooks
// that record what the watch asks for (attach, lib_known, SIGCONT, the
// mapping's row). Each case checks when the process is resumed and what its
// library_maps row says.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "capture/host_info.h"
#include "capture/library_watch.h"
#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::testing;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

struct HoldFixture {
  TempDir dir;
  std::string lib;
  struct stat st {};
  std::mutex mu;
  std::vector<uint32_t> resumed;
  std::vector<LibraryMapRow> rows;
  std::vector<std::tuple<uint32_t, uint64_t, uint32_t>> known;
  std::vector<std::pair<uint32_t, int64_t>> bpf_held;  // what held_in_bpf answers
  std::chrono::milliseconds attach_takes{0};
  int attaches = 0;

  HoldFixture() {
    lib = dir.file("llp/libcuda.so.1");
    fs::create_directories(fs::path(lib).parent_path());
    std::ofstream(lib) << "not an ELF: the stub attach does not read it";
    ::stat(lib.c_str(), &st);
    fs::create_directories(dir.file("proc/100"));
    char line[512];
    std::snprintf(line, sizeof line, "7f0000000000-7f0000001000 r-xp 00001000 %02x:%02x %llu    %s\n", major(st.st_dev),
                  minor(st.st_dev), static_cast<unsigned long long>(st.st_ino), lib.c_str());
    std::ofstream(dir.file("proc/100/maps")) << line;
    std::ofstream(dir.file("proc/100/comm")) << "short_app\n";
    fs::create_directory_symlink("/", dir.file("proc/100/root"));
  }
  LibraryWatch::Hooks hooks() {
    return {
        [this](const LibraryFile& f, std::span<const ApiSpec>) {
          std::this_thread::sleep_for(attach_takes);
          std::lock_guard lk(mu);
          ++attaches;
          return std::vector<ProbeResult>{
              ProbeResult{f, "cuLaunchKernel", "cu_launch_kernel", ProbeStatus::attached, ""}};
        },
        [](uint64_t, uint64_t) {},
        [](std::vector<ProbeRow>) {},
        [](uint64_t, uint64_t, int64_t) {},
        [this](uint32_t kdev, uint64_t ino, uint32_t v) {
          std::lock_guard lk(mu);
          known.emplace_back(kdev, ino, v);
        },
        [this](uint32_t tgid) {
          std::lock_guard lk(mu);
          resumed.push_back(tgid);
          std::erase_if(bpf_held, [&](const auto& h) { return h.first == tgid; });
        },
        [this] {
          std::lock_guard lk(mu);
          return bpf_held;
        },
        [this](LibraryMapRow r) {
          std::lock_guard lk(mu);
          rows.push_back(std::move(r));
        },
    };
  }
  MapNotice notice(uint32_t hold) const {
    return MapNotice{100, "short_app", "libcuda.so.1", kernel_dev(st.st_dev), st.st_ino, hold, mono_now_ns()};
  }
  bool wait_resumed(std::chrono::milliseconds bound = 5s) {
    for (auto t = std::chrono::steady_clock::now(); std::chrono::steady_clock::now() - t < bound;) {
      {
        std::lock_guard lk(mu);
        if (!resumed.empty()) return true;
      }
      std::this_thread::sleep_for(1ms);
    }
    return false;
  }
};

}  // namespace

// The common case: an unknown file, held, attached, then resumed; the row
// says nothing could be missed, and BPF learns the file (no hold next time).
TEST(LibraryHold, HeldProcessIsResumedOnceItsLibraryCarriesProbes) {
  HoldFixture fx;
  fx.attach_takes = 30ms;  // resumed after the attach, not before it
  LibraryWatch w(fx.hooks(), std::chrono::hours(1), {}, fx.dir.file("proc"));
  w.start();
  const MapNotice n = fx.notice(GPUOBS_LIB_HELD);
  w.on_map(n);
  ASSERT_TRUE(fx.wait_resumed());
  std::lock_guard lk(fx.mu);
  EXPECT_EQ(fx.resumed, std::vector<uint32_t>{100});
  EXPECT_EQ(fx.attaches, 1);
  ASSERT_EQ(fx.rows.size(), 1u);
  const LibraryMapRow& r = fx.rows[0];
  EXPECT_EQ(r.tgid, 100u);
  EXPECT_EQ(r.hold, "held");
  EXPECT_FALSE(r.calls_before_attach) << r.reason;
  EXPECT_EQ(r.library, "libcuda.so.1");
  EXPECT_EQ(r.dev, static_cast<uint64_t>(fx.st.st_dev));
  EXPECT_EQ(r.inode, static_cast<uint64_t>(fx.st.st_ino));
  EXPECT_GE(r.held_ns, 30'000'000);  // the attach's time, at least
  EXPECT_GE(r.attached_mono_ns, n.mapped_mono_ns);
  ASSERT_FALSE(fx.known.empty());
  EXPECT_EQ(std::get<0>(fx.known.back()), kernel_dev(fx.st.st_dev));
  EXPECT_EQ(std::get<1>(fx.known.back()), static_cast<uint64_t>(fx.st.st_ino));
  EXPECT_EQ(std::get<2>(fx.known.back()), static_cast<uint32_t>(GPUOBS_KNOWN_ATTACHED));
  LibraryWatchStats s = w.stats();
  EXPECT_EQ(s.holds, 1u);
  EXPECT_EQ(s.holds_released, 1u);
  EXPECT_EQ(s.calls_before_attach, 0u);
  EXPECT_EQ(w.held(), 0u);
}

// A file the caps refuse is never attached: the process is resumed at once
// and its row says it could call the library unseen, and why.
TEST(LibraryHold, RefusedLibraryResumesAtOnceAndSaysWhy) {
  HoldFixture fx;
  LibraryWatchLimits limits;
  limits.max_files_per_user = 0;  // the test's copy is in /tmp: a user's file
  LibraryWatch w(fx.hooks(), std::chrono::hours(1), limits, fx.dir.file("proc"));
  w.start();
  w.on_map(fx.notice(GPUOBS_LIB_HELD));
  ASSERT_TRUE(fx.wait_resumed());
  std::lock_guard lk(fx.mu);
  EXPECT_EQ(fx.attaches, 0);
  ASSERT_EQ(fx.rows.size(), 1u);
  EXPECT_TRUE(fx.rows[0].calls_before_attach);
  EXPECT_NE(fx.rows[0].reason.find("library_max_files_per_user"), std::string::npos) << fx.rows[0].reason;
  ASSERT_FALSE(fx.known.empty());
  EXPECT_EQ(std::get<2>(fx.known.back()), static_cast<uint32_t>(GPUOBS_KNOWN_UNPROBED));
  EXPECT_EQ(w.stats().calls_before_attach, 1u);
  EXPECT_NE(w.stats().first_miss.find("pid 100"), std::string::npos);
}

// An attach slower than library_hold_ms: resumed at the bound, counted, and
// reported as a possible miss with the reason.
TEST(LibraryHold, HoldIsBoundedInTime) {
  HoldFixture fx;
  fx.attach_takes = 400ms;
  LibraryWatchLimits limits;
  limits.hold_max_ms = 50;
  LibraryWatch w(fx.hooks(), std::chrono::hours(1), limits, fx.dir.file("proc"));
  w.start();
  auto t0 = std::chrono::steady_clock::now();
  w.on_map(fx.notice(GPUOBS_LIB_HELD));
  ASSERT_TRUE(fx.wait_resumed());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 300ms);
  {
    std::lock_guard lk(fx.mu);
    ASSERT_EQ(fx.rows.size(), 1u);
    EXPECT_TRUE(fx.rows[0].calls_before_attach);
    EXPECT_NE(fx.rows[0].reason.find("timed out"), std::string::npos) << fx.rows[0].reason;
  }
  EXPECT_EQ(w.stats().hold_timeouts, 1u);
  w.stop();
}

// Mappings BPF did not hold: a file already attached is no miss; one that
// was not held (a shell's job, a traced process) is, with its reason.
TEST(LibraryHold, UnheldMappingsAreReportedHonestly) {
  HoldFixture fx;
  LibraryWatch w(fx.hooks(), std::chrono::hours(1), {}, fx.dir.file("proc"));
  w.on_map(fx.notice(GPUOBS_LIB_ATTACHED));
  w.on_map(fx.notice(GPUOBS_LIB_JOB));
  w.on_map(fx.notice(GPUOBS_LIB_TRACED));
  std::lock_guard lk(fx.mu);
  ASSERT_EQ(fx.rows.size(), 3u);
  EXPECT_EQ(fx.rows[0].hold, "attached before");
  EXPECT_FALSE(fx.rows[0].calls_before_attach);
  EXPECT_EQ(fx.rows[1].hold, "not held: a job of a job-control shell");
  EXPECT_TRUE(fx.rows[1].calls_before_attach);
  EXPECT_EQ(fx.rows[2].hold, "not held: ptraced");
  EXPECT_TRUE(fx.rows[2].calls_before_attach);
  EXPECT_TRUE(fx.resumed.empty());  // none of them was stopped
}

// A hold whose record was lost (a full ring) is found in BPF's table and
// served like any other.
TEST(LibraryHold, HoldWithoutItsRecordIsAdopted) {
  HoldFixture fx;
  {
    std::lock_guard lk(fx.mu);
    fx.bpf_held.emplace_back(100, mono_now_ns() - 200'000'000);
  }
  LibraryWatch w(fx.hooks(), std::chrono::hours(1), {}, fx.dir.file("proc"));
  w.start();
  ASSERT_TRUE(fx.wait_resumed());
  EXPECT_EQ(w.stats().holds_adopted, 1u);
  std::lock_guard lk(fx.mu);
  EXPECT_EQ(fx.attaches, 1);
  EXPECT_EQ(fx.resumed, std::vector<uint32_t>{100});
  // Its maps name the file, now attached: nothing could be missed.
  ASSERT_EQ(fx.rows.size(), 1u);
  EXPECT_EQ(fx.rows[0].library, "libcuda.so.1");
  EXPECT_FALSE(fx.rows[0].calls_before_attach) << fx.rows[0].reason;
}

// Stopping the watch never leaves a process stopped.
TEST(LibraryHold, StopResumesEveryHeldProcess) {
  HoldFixture fx;
  fx.attach_takes = 300ms;
  LibraryWatch w(fx.hooks(), std::chrono::hours(1), {}, fx.dir.file("proc"));
  w.start();
  w.on_map(fx.notice(GPUOBS_LIB_HELD));
  std::this_thread::sleep_for(20ms);
  w.stop();
  std::lock_guard lk(fx.mu);
  EXPECT_EQ(fx.resumed, std::vector<uint32_t>{100});
  ASSERT_EQ(fx.rows.size(), 1u);
  // The attach finished before stop() returned (it joins the attacher): no
  // miss then; had stop cut it short, the row would say so.
  if (fx.rows[0].calls_before_attach) {
    EXPECT_NE(fx.rows[0].reason.find("stopped"), std::string::npos) << fx.rows[0].reason;
  }
}
