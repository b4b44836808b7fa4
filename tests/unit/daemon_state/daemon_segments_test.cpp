// gpuobsd's segment files (daemon/segments.h) on temporary directories:
// which files are segments, --segment selection, and retention (which
// segments go, oldest first, never the current one, with their SQLite
// companions). No root, no BPF.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <utime.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "daemon_state/segments.h"
#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::testing;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kT0 = 1700000000;  // 2023-11-14T22:13:20Z

// A segment file of `bytes` bytes, last written at mtime_unix_s.
std::string make_segment(const TempDir& dir, int64_t seq, uint64_t bytes, int64_t mtime_unix_s) {
  std::string path = dir.file(segments::segment_name(seq, kT0 + seq));
  std::ofstream(path) << std::string(bytes, 'x');
  struct utimbuf t {
    static_cast<time_t>(mtime_unix_s), static_cast<time_t>(mtime_unix_s)
  };
  ::utime(path.c_str(), &t);
  return path;
}

std::vector<int64_t> seqs(const std::string& dir) {
  std::vector<int64_t> out;
  for (const auto& s : segments::list(dir)) out.push_back(s.seq);
  return out;
}

std::string base(const std::string& p) { return fs::path(p).filename().string(); }

std::vector<std::string> bases(const std::vector<std::string>& v) {
  std::vector<std::string> out;
  for (const auto& p : v) out.push_back(base(p));
  return out;
}

}  // namespace

TEST(Segments, NameIsUtcStartAndSequence) {
  EXPECT_EQ(segments::segment_name(7, kT0), "capture-20231114T221320-7.gpuobs");
}

TEST(Segments, ListsOnlySegmentFilesSortedBySequenceWithTheirWal) {
  TempDir dir;
  make_segment(dir, 10, 100, kT0);
  make_segment(dir, 2, 50, kT0);
  make_segment(dir, 9, 10, kT0);
  std::ofstream(dir.file(segments::segment_name(9, kT0 + 9)) + "-wal") << std::string(25, 'w');
  // Not segments: other names, a bad sequence, a directory and a link with a segment's name.
  std::ofstream(dir.file("capture.gpuobs")) << "x";
  std::ofstream(dir.file("capture-20231114T221320-0.gpuobs")) << "x";
  std::ofstream(dir.file("capture-20231114T221320-3x.gpuobs")) << "x";
  fs::create_directory(dir.file("capture-20231114T221320-4.gpuobs"));
  fs::create_symlink(dir.file(segments::segment_name(2, kT0 + 2)), dir.file("capture-20231114T221320-5.gpuobs"));

  auto all = segments::list(dir.path());
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].seq, 2);
  EXPECT_EQ(all[0].bytes, 50u);
  EXPECT_EQ(all[1].seq, 9);
  EXPECT_EQ(all[1].bytes, 35u);  // the file and its -wal
  EXPECT_EQ(all[2].seq, 10);
  EXPECT_EQ(all[2].mtime_unix_s, kT0);
  EXPECT_EQ(segments::next_seq(dir.path()), 11);
  TempDir empty;
  EXPECT_EQ(segments::next_seq(empty.path()), 1);
}

TEST(Segments, CurrentIsARelativeLinkReplacedAtomically) {
  TempDir dir;
  std::string a = make_segment(dir, 1, 1, kT0), b = make_segment(dir, 2, 1, kT0);
  EXPECT_FALSE(segments::current(dir.path()).ok());
  ASSERT_TRUE(segments::set_current(dir.path(), a).ok());
  ASSERT_TRUE(segments::set_current(dir.path(), b).ok());
  EXPECT_EQ(fs::read_symlink(dir.file("current")).string(), base(b));
  auto cur = segments::current(dir.path());
  ASSERT_TRUE(cur.ok());
  EXPECT_EQ(*cur, dir.file(base(b)));
  EXPECT_FALSE(fs::exists(dir.file(".current.tmp")));
}

TEST(Segments, SelectsByNumberRangeOrAll) {
  TempDir dir;
  for (int64_t s : {1, 2, 3, 5}) make_segment(dir, s, 1, kT0);
  auto pick = [&](const std::string& spec) {
    auto r = segments::select(dir.path(), spec);
    return r.ok() ? bases(*r) : std::vector<std::string>{"error: " + r.error().message};
  };
  auto name = [](int64_t s) { return segments::segment_name(s, kT0 + s); };
  EXPECT_EQ(pick("3"), (std::vector<std::string>{name(3)}));
  EXPECT_EQ(pick("2..5"), (std::vector<std::string>{name(2), name(3), name(5)}));
  EXPECT_EQ(pick("4..4"), (std::vector<std::string>{"error: no segment 4..4 in " + dir.path()}));
  EXPECT_EQ(pick("all"), (std::vector<std::string>{name(1), name(2), name(3), name(5)}));
  for (const char* bad : {"0", "-1", "x", "3..2", "1..", "..2", "1...2", "2 "}) {
    auto r = segments::select(dir.path(), bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().exit_code, 2) << bad;
    EXPECT_NE(r.error().message.find("bad --segment"), std::string::npos) << bad << ": " << r.error().message;
  }
}

TEST(SegmentRetention, KeepsTheNewestCountAndNeverTheCurrent) {
  TempDir dir;
  std::vector<std::string> p;
  for (int64_t s = 1; s <= 5; ++s) p.push_back(make_segment(dir, s, 10, kT0));
  // Companions of a deleted segment go with it.
  for (const char* sfx : {"-wal", "-shm", "-journal"}) std::ofstream(p[0] + sfx) << "c";
  auto gone = segments::enforce(dir.path(), {2, 0, 0}, p[4], kT0);
  EXPECT_EQ(gone, (std::vector<std::string>{p[0], p[1], p[2]}));
  EXPECT_EQ(seqs(dir.path()), (std::vector<int64_t>{4, 5}));
  for (const char* sfx : {"-wal", "-shm", "-journal"}) EXPECT_FALSE(fs::exists(p[0] + sfx)) << sfx;
  // The current segment is kept even when it is the oldest over the limit.
  gone = segments::enforce(dir.path(), {1, 0, 0}, p[3], kT0);
  EXPECT_EQ(gone, (std::vector<std::string>{p[4]}));
  EXPECT_EQ(seqs(dir.path()), (std::vector<int64_t>{4}));
}

TEST(SegmentRetention, DeletesOldestUntilTheBytesFit) {
  TempDir dir;
  std::string a = make_segment(dir, 1, 100, kT0), b = make_segment(dir, 2, 100, kT0);
  std::string c = make_segment(dir, 3, 100, kT0), d = make_segment(dir, 4, 100, kT0);
  std::ofstream(c + "-wal") << std::string(50, 'w');  // counted in the size
  // 450 bytes in all: at most 260 leaves c (150) and d (100).
  EXPECT_EQ(segments::enforce(dir.path(), {0, 260, 0}, d, kT0), (std::vector<std::string>{a, b}));
  EXPECT_EQ(seqs(dir.path()), (std::vector<int64_t>{3, 4}));
  // Exactly at the limit: nothing goes.
  EXPECT_TRUE(segments::enforce(dir.path(), {0, 250, 0}, d, kT0).empty());
}

TEST(SegmentRetention, DeletesSegmentsLastWrittenTooLongAgo) {
  TempDir dir;
  std::string a = make_segment(dir, 1, 1, kT0 - 7200), b = make_segment(dir, 2, 1, kT0 - 3600);
  std::string c = make_segment(dir, 3, 1, kT0 - 3599), d = make_segment(dir, 4, 1, kT0 - 9000);
  // Age is by mtime, not by sequence: d is the oldest written but is current.
  EXPECT_EQ(segments::enforce(dir.path(), {0, 0, 3600}, d, kT0), (std::vector<std::string>{a}));
  EXPECT_EQ(seqs(dir.path()), (std::vector<int64_t>{2, 3, 4}));
}

TEST(SegmentRetention, NoLimitsDeleteNothing) {
  TempDir dir;
  std::string a = make_segment(dir, 1, 1000, 0), b = make_segment(dir, 2, 1000, 0);
  EXPECT_TRUE(segments::enforce(dir.path(), {0, 0, 0}, "", kT0).empty());
  EXPECT_EQ(seqs(dir.path()), (std::vector<int64_t>{1, 2}));
}
