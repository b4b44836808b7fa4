// The bad-input defects a newcomer met (issue 38), each with what the user
// sees: a full disk during record, `-o -` and device files as outputs, a
// file that is not a GPU library given as --libcuda, a capture whose schema
// is damaged given to `check`, and a capture the user may not read.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "run_util.h"
#include "store/db.h"
#include "store/schema.h"
#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::testing;

namespace {

const std::string kGpuobs = GPUOBS_BIN;

int count_lines_with(const std::string& text, const std::string& what) {
  int n = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) n += line.find(what) != std::string::npos;
  return n;
}

// A small tmpfs of its own, unmounted at the end.
struct SmallDisk {
  TempDir dir;
  std::string mnt = dir.file("disk");
  explicit SmallDisk(const char* size) {
    std::filesystem::create_directory(mnt);
    mounted = ::mount("tmpfs", mnt.c_str(), "tmpfs", 0, (std::string("size=") + size).c_str()) == 0;
  }
  ~SmallDisk() {
    if (mounted) ::umount2(mnt.c_str(), MNT_DETACH);
  }
  bool mounted = false;
};

}  // namespace

// A disk that fills up during record printed ~110 "cannot rollback - no
// transaction is active" warnings, lost ~946 K events and stored counters
// that read 0 lost. Now: one message, the command runs on unharmed, every
// launch is stored or counted, and the capture says it is incomplete.
TEST(BadInput, FullDiskDuringRecordIsOneMessageAndEveryLaunchCounted) {
  SmallDisk disk("4M");
  ASSERT_TRUE(disk.mounted) << "cannot mount a tmpfs (root needed)";
  TempDir tmp;
  const std::string cap = disk.mnt + "/c.gpuobs", err = tmp.file("err"), truth = tmp.file("truth.json");
  const int launches = 1500000;
  int rc =
      run(kGpuobs + " record -o " + cap + " --libcuda " + FAKE_LIBCUDA + " -- " + LAUNCH_WORKLOAD + " --lib " +
          FAKE_LIBCUDA + " --threads 2 --launches " + std::to_string(launches / 2) + " --truth " + truth + " 2>" + err);
  const std::string said = read_file(err);
  EXPECT_EQ(rc, 0) << "the command's own exit status: " << said;
  EXPECT_EQ(said.find("cannot rollback"), std::string::npos) << said;
  EXPECT_EQ(count_lines_with(said, "is full"), 1) << said;
  EXPECT_EQ(count_lines_with(said, "warning"), 0) << said;
  EXPECT_LE(count_lines_with(said, "gpuobs"), 5) << said;
  EXPECT_NE(said.find("the disk holding " + cap + " is full"), std::string::npos) << said;
  EXPECT_NE(said.find("events not stored (the disk was full)"), std::string::npos) << said;
  EXPECT_FALSE(std::filesystem::exists(cap + "-reserve")) << "the reserve is given back";

  auto db = open_capture_readonly(cap);
  ASSERT_TRUE(db.ok()) << db.error().message;
  const std::string state = text(*db, "SELECT state FROM capture");
  EXPECT_EQ(state.rfind("incomplete (", 0), 0u) << state;
  EXPECT_NE(state.find("events not stored (the disk was full)"), std::string::npos) << state;
  EXPECT_EQ(scalar(*db, "SELECT end_mono_ns IS NOT NULL FROM capture"), 1) << "the end was written";
  auto counter = [&](const char* name) {
    return scalar(*db, std::string("SELECT value FROM counters WHERE name = '") + name + "'");
  };
  const int64_t stored = scalar(*db, "SELECT count(*) FROM kernel_launches");
  EXPECT_GT(counter("store_failed_rows"), 0);
  EXPECT_GT(counter("store_lost_disk_full"), 0);
  EXPECT_EQ(counter("stored_launch"), stored);
  EXPECT_EQ(counter("dropped_launch_ringbuf_full"), 0) << "nothing dropped before the store";
  // Every launch the program made is in the capture or in its loss counter.
  EXPECT_EQ(counter("submitted_launch"), launches);
  EXPECT_EQ(stored + counter("store_failed_launches"), launches)
      << "stored " << stored << ", counted lost " << counter("store_failed_launches");
  // The CLI shows it.
  std::string out = tmp.file("out");
  ASSERT_EQ(run(kGpuobs + " report capture " + cap + " >" + out), 0);
  EXPECT_NE(read_file(out).find("events not stored (the disk was full)"), std::string::npos) << read_file(out);
}

// A disk too full for the reserve: refused before the command starts.
TEST(BadInput, RecordOnAFullDiskRefusesBeforeTheCommandRuns) {
  SmallDisk disk("2M");
  ASSERT_TRUE(disk.mounted);
  TempDir tmp;
  ASSERT_EQ(run("head -c 2000000 /dev/zero > " + disk.mnt + "/fill 2>/dev/null; true"), 0);
  const std::string cap = disk.mnt + "/c.gpuobs", marker = tmp.file("ran"), err = tmp.file("err");
  int rc = run(kGpuobs + " record -o " + cap + " -- touch " + marker + " 2>" + err);
  EXPECT_EQ(rc, 2) << read_file(err);
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the command must not start";
  EXPECT_FALSE(std::filesystem::exists(cap)) << read_file(err);
  EXPECT_LE(count_lines_with(read_file(err), "\n") + 1, 3) << read_file(err);
}

// A record killed mid-capture (SIGPIPE on its stderr, kill -9) leaves its
// reserve beside the capture; the next record at that path said "cannot set
// aside room ... File exists" and "is the disk full already?". A leftover
// plain file is replaced; a link in its place is refused and not followed.
TEST(BadInput, AReserveLeftByAKilledRecordDoesNotStopTheNext) {
  TempDir tmp;
  const std::string cap = tmp.file("c.gpuobs"), err = tmp.file("err"), victim = tmp.file("victim");
  ASSERT_EQ(run("echo stale > " + cap + "-reserve"), 0);
  ASSERT_EQ(run(kGpuobs + " record -o " + cap + " -- true 2>" + err), 0) << read_file(err);
  EXPECT_TRUE(std::filesystem::exists(cap));
  EXPECT_FALSE(std::filesystem::exists(cap + "-reserve")) << "the reserve is given back at the end";

  ASSERT_EQ(run("echo keep > " + victim + " && ln -s " + victim + " " + tmp.file("d.gpuobs-reserve")), 0);
  int rc = run(kGpuobs + " record -o " + tmp.file("d.gpuobs") + " -- true 2>" + err);
  EXPECT_EQ(rc, 2);
  EXPECT_NE(read_file(err).find("d.gpuobs-reserve"), std::string::npos) << read_file(err);
  EXPECT_EQ(read_file(err).find("disk is full"), std::string::npos) << read_file(err);
  EXPECT_EQ(read_file(victim), "keep\n") << "the link's target is untouched";
}
// `export -o -` wrote a file named "-"; export wrote into device files that
// record refuses. One rule: "-" is standard output, /dev/null and terminals
// take streams, any other device is refused, a capture needs a file.
TEST(BadInput, DashIsStandardOutputAndDevicesAreRefusedByEveryCommand) {
  TempDir tmp;
  const std::string cap = tmp.file("c.gpuobs");
  ASSERT_EQ(run(kGpuobs + " record -o " + cap + " --libcuda " + FAKE_LIBCUDA + " -- " + LAUNCH_WORKLOAD + " --lib " +
                FAKE_LIBCUDA + " --threads 1 --launches 10 2>/dev/null"),
            0);
  const std::string out = tmp.file("out.json"), err = tmp.file("err");
  ASSERT_EQ(run("cd " + tmp.path() + " && " + kGpuobs + " export chrome " + cap + " -o - >" + out), 0);
  EXPECT_FALSE(std::filesystem::exists(tmp.file("-"))) << "a file named '-'";
  EXPECT_EQ(read_file(out).rfind("{", 0), 0u) << read_file(out).substr(0, 200);
  ASSERT_EQ(run("cd " + tmp.path() + " && " + kGpuobs + " export folded " + cap + " -o - >" + out), 0);
  EXPECT_FALSE(std::filesystem::exists(tmp.file("-")));
  EXPECT_NE(read_file(out).find("run_worker"), std::string::npos) << read_file(out);
  EXPECT_EQ(run(kGpuobs + " export perfetto " + cap + " -o /dev/null"), 0);

  // A character device that is not /dev/null or a terminal (/dev/zero's numbers).
  const std::string dev = tmp.file("zero");
  ASSERT_EQ(::mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 5)), 0);
  for (const std::string& cmd : {"export chrome " + cap + " -o " + dev, "export perfetto " + cap + " -o " + dev,
                                 "export folded " + cap + " -o " + dev, "export html " + cap + " -o " + dev + " -f"}) {
    EXPECT_EQ(run(kGpuobs + " " + cmd + " 2>" + err), 2) << cmd;
    EXPECT_NE(read_file(err).find(dev + " is a device (character 1:5); refusing to write it"), std::string::npos)
        << cmd << ": " << read_file(err);
  }
  EXPECT_TRUE(S_ISCHR([&] {
    struct stat st {};
    ::lstat(dev.c_str(), &st);
    return st.st_mode;
  }()));
  EXPECT_EQ(run(kGpuobs + " record -f -o " + dev + " -- true 2>" + err), 2);
  EXPECT_NE(read_file(err).find("is a device, FIFO or socket, not a capture file"), std::string::npos)
      << read_file(err);
  EXPECT_EQ(run("cd " + tmp.path() + " && " + kGpuobs + " record -o - -- true 2>" + err), 2);
  EXPECT_NE(read_file(err).find("-o -: a capture is an SQLite database and needs a file"), std::string::npos)
      << read_file(err);
  EXPECT_FALSE(std::filesystem::exists(tmp.file("-")));
}

// --libcuda /etc/passwd exited 0 after 128 warnings and said "complete".
TEST(BadInput, LibcudaThatIsNotTheLibraryIsRefused) {
  TempDir tmp;
  const std::string marker = tmp.file("ran"), err = tmp.file("err"), cap = tmp.file("c.gpuobs");
  auto refused = [&](const std::string& lib, const std::string& says) {
    EXPECT_EQ(run(kGpuobs + " record -o " + cap + " --libcuda " + lib + " -- touch " + marker + " 2>" + err), 2)
        << lib << ": " << read_file(err);
    EXPECT_NE(read_file(err).find(says), std::string::npos) << lib << ": " << read_file(err);
    EXPECT_EQ(count_lines_with(read_file(err), "warning"), 0) << read_file(err);
    EXPECT_FALSE(std::filesystem::exists(marker));
    EXPECT_FALSE(std::filesystem::exists(cap));
  };
  refused("/etc/passwd", "/etc/passwd is not an ELF file");
  // An executable (PIE: ELF type DYN too) that defines no cu* function.
  refused(LAUNCH_WORKLOAD, "defines none of the 142 functions gpuobs probes there (cuLaunchKernel, ...)");
  // A shared library, but not the CUDA driver (libc exports no cu* function).
  ASSERT_EQ(run("ldd /bin/true | awk '/libc.so/ {printf \"%s\", $3}' >" + tmp.file("libc")), 0);
  const std::string libc = read_file(tmp.file("libc"));
  ASSERT_FALSE(libc.empty());
  refused(libc, "defines none of the");
  EXPECT_EQ(run(kGpuobs + " record -o " + cap + " --libhip /etc/hostname -- true 2>" + err), 2) << read_file(err);
  EXPECT_NE(read_file(err).find("is not an ELF file"), std::string::npos) << read_file(err);
}

// check on a capture whose schema is damaged exited 2 (not the documented 1)
// and told the user to run gpuobs check.
TEST(BadInput, CheckCallsADamagedSchemaCorruptAndExitsOne) {
  TempDir tmp;
  const std::string cap = tmp.file("c.gpuobs"), out = tmp.file("out"), err = tmp.file("err");
  ASSERT_EQ(run(kGpuobs + " record -o " + cap + " -- true 2>/dev/null"), 0);
  // Page 1 past the 100-byte header holds sqlite_master's root: garbage there.
  {
    std::fstream f(cap, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(120);
    std::string junk(3000, '\x5a');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  EXPECT_EQ(run(kGpuobs + " check " + cap + " >" + out + " 2>" + err), 1) << read_file(out) << read_file(err);
  EXPECT_NE(read_file(out).find(cap + ": corrupt"), std::string::npos) << read_file(out);
  EXPECT_EQ(read_file(err).find("gpuobs check " + cap), std::string::npos)
      << "check told to run check: " << read_file(err);
  // Other commands: exit 2, and they point at check.
  EXPECT_EQ(run(kGpuobs + " report capture " + cap + " >/dev/null 2>" + err), 2);
  EXPECT_NE(read_file(err).find("gpuobs check " + cap), std::string::npos) << read_file(err);
}

// A user without permission got "unable to open database file".
TEST(BadInput, UnreadableCaptureSaysPermissionDeniedWithModeAndGroup) {
  TempDir tmp;
  ASSERT_EQ(run("getent group gpuobs >/dev/null || groupadd --system gpuobs"), 0);
  const std::string cap = tmp.file("c.gpuobs"), err = tmp.file("err");
  ASSERT_EQ(run(kGpuobs + " record -o " + cap + " -- true 2>/dev/null"), 0);
  ::chmod(tmp.path().c_str(), 0755);
  for (const std::string& cmd : {"report capture " + cap, "sql 'SELECT 1' " + cap, "check " + cap}) {
    EXPECT_EQ(run("setpriv --reuid=65534 --regid=65534 --clear-groups " + kGpuobs + " " + cmd + " 2>" + err), 2) << cmd;
    EXPECT_NE(read_file(err).find("permission denied: " + cap + " (mode 0640, owner root, group gpuobs)"),
              std::string::npos)
        << cmd << ": " << read_file(err);
    EXPECT_NE(read_file(err).find("usermod -aG gpuobs"), std::string::npos) << read_file(err);
    EXPECT_EQ(read_file(err).find("unable to open database file"), std::string::npos) << read_file(err);
  }
}
