// The library watch's bounds, without BPF: a fake /proc whose process maps
// ten copies of libcuda.so.1 in a temporary directory (not trusted: /tmp is
// writable by everyone) and the system's HIP runtime (root-owned in
// /usr/lib: trusted). Attaching is a stub that records what it was asked.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "capture/library_watch.h"
#include "capture/procfs.h"
#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::testing;
namespace fs = std::filesystem;

namespace {

// One maps line for path, as the kernel writes it (dev in hex major:minor).
std::string maps_line(const std::string& path, int n, const char* perms = "r-xp") {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  char buf[512];
  std::snprintf(buf, sizeof buf, "7f00%04x0000-7f00%04x1000 %s 00001000 %02x:%02x %llu    %s\n", n, n, perms,
                major(st.st_dev), minor(st.st_dev), static_cast<unsigned long long>(st.st_ino), path.c_str());
  return buf;
}

struct Fixture {
  TempDir dir;
  std::vector<std::string> copies;
  std::vector<std::pair<uint64_t, uint64_t>> attached, detached;
  LibraryWatch::Hooks hooks() {
    return {
        [this](const LibraryFile& f, std::span<const ApiSpec>) {
          attached.emplace_back(f.dev, f.ino);
          return std::vector<ProbeResult>{
              ProbeResult{f, "cuLaunchKernel", "cu_launch_kernel", ProbeStatus::attached, ""}};
        },
        [this](uint64_t dev, uint64_t ino) { detached.emplace_back(dev, ino); },
        [](std::vector<ProbeRow>) {},
        [](uint64_t, uint64_t, int64_t) {},
        {},
        {},
        {},
        {},
    };
  }
  // proc/100: maps the copies (and `extra`), root is the real "/".
  void make_process(const std::string& extra) {
    fs::create_directories(dir.file("proc/100"));
    std::ofstream maps(dir.file("proc/100/maps"));
    int n = 0;
    for (const auto& c : copies) {
      maps << maps_line(c, n, "r--p");  // ld.so's first, read-only mapping
      maps << maps_line(c, n + 1);      // then its code
      n += 2;
    }
    maps << extra;
    fs::create_directory_symlink("/", dir.file("proc/100/root"));
  }
};

}  // namespace

TEST(LibraryWatchBounds, UserCopiesCappedTrustedSystemFileExemptAndReleasedWhenUnmapped) {
  Fixture fx;
  for (int i = 0; i < 10; ++i) {
    std::string p = fx.dir.file("c" + std::to_string(i) + "/libcuda.so.1");
    fs::create_directories(fs::path(p).parent_path());
    std::ofstream(p) << "not an ELF: the stub attach does not read it";
    fx.copies.push_back(p);
  }
  // The system's HIP runtime (Debian's libamdhip64-5, a test dependency):
  // root-owned in root-only directories.
  const std::string hip = fs::canonical("/usr/lib/x86_64-linux-gnu/libamdhip64.so.5").string();
  fx.make_process(maps_line(hip, 99));

  LibraryWatchLimits limits;
  limits.max_files = 64;
  limits.max_files_per_user = 8;
  LibraryWatch w(fx.hooks(), std::chrono::hours(1), limits, fx.dir.file("proc"));
  w.scan_all("startup");
  LibraryWatchStats st = w.stats();
  EXPECT_EQ(fx.attached.size(), 9u);  // 8 copies + the HIP runtime
  EXPECT_EQ(st.refused_user_cap, 2u);
  EXPECT_EQ(st.refused_total_cap, 0u);
  int trusted = 0;
  for (const auto& lib : w.libraries()) {
    trusted += lib.trusted;
    if (lib.trusted) EXPECT_EQ(lib.file.path, hip);
    else EXPECT_EQ(lib.owner_uid, ::getuid());
  }
  EXPECT_EQ(trusted, 1);

  // Scanned again: the two refusals are not counted twice.
  w.scan_all("rescan");
  EXPECT_EQ(w.stats().refused_user_cap, 2u);
  EXPECT_EQ(fx.attached.size(), 9u);

  // The process is gone: the copies are released although their paths still
  // name them; the trusted runtime stays for the next process.
  fs::remove_all(fx.dir.file("proc/100"));
  w.scan_all("rescan");
  EXPECT_EQ(fx.detached.size(), 8u);
  ASSERT_EQ(w.libraries().size(), 1u);
  EXPECT_EQ(w.libraries()[0].file.path, hip);
}

TEST(LibraryWatchBounds, TotalCapCountsTrustedFilesToo) {
  Fixture fx;
  for (int i = 0; i < 3; ++i) {
    std::string p = fx.dir.file("c" + std::to_string(i) + "/libcuda.so.1");
    fs::create_directories(fs::path(p).parent_path());
    std::ofstream(p) << "x";
    fx.copies.push_back(p);
  }
  fx.make_process("");
  LibraryWatchLimits limits;
  limits.max_files = 2;
  limits.max_files_per_user = 8;
  LibraryWatch w(fx.hooks(), std::chrono::hours(1), limits, fx.dir.file("proc"));
  w.scan_all("startup");
  EXPECT_EQ(fx.attached.size(), 2u);
  EXPECT_EQ(w.stats().refused_total_cap, 1u);
  EXPECT_EQ(w.stats().refused_user_cap, 0u);
}

TEST(LibraryWatchBounds, ReadOnlyMappingIsNotAUse) {
  Fixture fx;
  std::string p = fx.dir.file("ro/libcuda.so.1");
  fs::create_directories(fs::path(p).parent_path());
  std::ofstream(p) << "x";
  fs::create_directories(fx.dir.file("proc/100"));
  std::ofstream(fx.dir.file("proc/100/maps")) << maps_line(p, 1, "r--p");
  fs::create_directory_symlink("/", fx.dir.file("proc/100/root"));
  LibraryWatch w(fx.hooks(), std::chrono::hours(1), {}, fx.dir.file("proc"));
  w.scan_all("startup");
  EXPECT_TRUE(fx.attached.empty());  // a tool reading the ELF, not running it
}

TEST(SearchPath, FirstDirectoryWithEachRuntimeWins) {
  TempDir dir;
  for (const char* d : {"a", "b"}) {
    fs::create_directories(dir.file(d));
    std::ofstream(dir.file(std::string(d) + "/libcuda.so.1")) << d;
  }
  std::ofstream(dir.file("b/libamdhip64.so.6")) << "hip";
  auto libs = gpu_libraries_on_search_path(dir.file("missing") + ":" + dir.file("a") + ":" + dir.file("b"));
  ASSERT_EQ(libs.size(), 2u);
  EXPECT_EQ(libs[0].path, dir.file("a/libcuda.so.1"));
  EXPECT_EQ(libs[1].path, dir.file("b/libamdhip64.so.6"));
  EXPECT_TRUE(gpu_libraries_on_search_path("").empty());
}
