// Bad input to gpuobs record: a clear one-line error, the right exit status,
// and nothing half-written.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "catalogue/api_spec.h"
#include "run_util.h"
#include "store/schema.h"
#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::testing;

namespace {
bool exists(const std::string& p) { return std::filesystem::exists(p); }
}  // namespace

TEST(RecordErrors, CommandNotFound) {
  TempDir dir;
  std::string out = dir.file("x.gpuobs"), err = dir.file("err");
  EXPECT_EQ(run(std::string(GPUOBS_BIN) + " record -o " + out + " -- /no/such/program 2>" + err), 127);
  EXPECT_NE(read_file(err).find("command not found: /no/such/program"), std::string::npos);
  EXPECT_FALSE(exists(out));
}

TEST(RecordErrors, ExistingOutputIsRefusedAndUntouched) {
  TempDir dir;
  std::string out = dir.file("keep.gpuobs"), err = dir.file("err"), marker = dir.file("ran");
  std::ofstream(out) << "precious";
  // Not a capture: refused, and --force is not suggested (it would be refused too).
  EXPECT_EQ(run(std::string(GPUOBS_BIN) + " record -o " + out + " -- touch " + marker + " 2>" + err), 2);
  EXPECT_NE(read_file(err).find(out + " is not a gpuobs capture; refusing to write it"), std::string::npos);
  EXPECT_EQ(read_file(err).find("--force"), std::string::npos);
  EXPECT_EQ(read_file(out), "precious");
  EXPECT_FALSE(exists(marker)) << "the command must not start";
  // --force replaces captures only; this file is not one (OutputSafety.* in cli_safety_test.cpp).
  EXPECT_EQ(run(std::string(GPUOBS_BIN) + " record -f -o " + out + " -- touch " + marker + " 2>" + err), 2);
  EXPECT_NE(read_file(err).find("is not a gpuobs capture"), std::string::npos);
  EXPECT_EQ(read_file(out), "precious");
  std::string cap = dir.file("old.gpuobs");
  ASSERT_EQ(run(std::string(GPUOBS_BIN) + " record -o " + cap + " -- true 2>/dev/null"), 0);
  // A capture: refused without --force, replaced with it.
  EXPECT_EQ(run(std::string(GPUOBS_BIN) + " record -o " + cap + " -- touch " + marker + " 2>" + err), 2);
  EXPECT_NE(read_file(err).find("already exists"), std::string::npos);
  EXPECT_NE(read_file(err).find("--force"), std::string::npos);
  EXPECT_EQ(run(std::string(GPUOBS_BIN) + " record -f -o " + cap + " -- touch " + marker + " 2>/dev/null"), 0);
  EXPECT_TRUE(exists(marker));
  EXPECT_TRUE(open_capture_readonly(cap).ok());
}

TEST(RecordErrors, UnwritableOutputFailsBeforeTheCommandStarts) {
  TempDir dir;
  std::string marker = dir.file("ran"), err = dir.file("err");
  EXPECT_EQ(run(std::string(GPUOBS_BIN) + " record -o /proc/no/such/dir/x.gpuobs -- touch " + marker + " 2>" + err), 2);
  EXPECT_NE(read_file(err).find("cannot create /proc/no/such/dir/x.gpuobs"), std::string::npos);
  EXPECT_FALSE(exists(marker));
}

TEST(RecordErrors, NotRootIsRefusedWithAHintAndNoFile) {
  TempDir dir;
  ::chmod(dir.path().c_str(), 0777);
  std::string out = dir.file("u.gpuobs"), err = dir.file("err"), marker = dir.file("ran");
  // setpriv drops to nobody with no capabilities.
  int rc = run("setpriv --reuid=65534 --regid=65534 --clear-groups " + std::string(GPUOBS_BIN) + " record -o " + out +
               " -- touch " + marker + " 2>" + err);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(read_file(err).find("insufficient privileges"), std::string::npos);
  EXPECT_NE(read_file(err).find("hint: run as root"), std::string::npos);
  EXPECT_FALSE(exists(out));
  EXPECT_FALSE(exists(marker));
}

TEST(RecordErrors, NoSystemLibcudaStillRecordsAndWatchesForIt) {
  TempDir dir;
  std::string out = dir.file("n.gpuobs"), err = dir.file("err");
  // An empty search path: no libcuda.so.1 on the system. Not an error (issue
  // 15): the command's processes may map one from anywhere, and it is
  // attached then (library_discovery_test.cpp).
  EXPECT_EQ(run("GPUOBS_LIBCUDA_SEARCH_PATH=" + dir.path() + " " + GPUOBS_BIN + " record -o " + out +
                " -- sh -c 'exit 3' 2>" + err),
            3);
  EXPECT_EQ(read_file(err).find("not found"), std::string::npos) << read_file(err);
  auto db = open_capture_readonly(out);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(scalar(*db,
                   "SELECT count(*) FROM probes WHERE status = 'missing' AND library = 'libcuda.so.1' AND "
                   "symbol = '*' AND error LIKE '%attached where processes map it%'"),
            1);
  EXPECT_EQ(scalar(*db, "SELECT exit_status FROM capture"), 3);
}

TEST(RecordErrors, ExplicitLibcudaThatDoesNotExist) {
  TempDir dir;
  std::string out = dir.file("m.gpuobs"), err = dir.file("err");
  EXPECT_EQ(run(std::string(GPUOBS_BIN) + " record -o " + out + " --libcuda /no/libcuda.so.1 -- true 2>" + err), 2);
  EXPECT_NE(read_file(err).find("cannot open library /no/libcuda.so.1"), std::string::npos);
  EXPECT_FALSE(exists(out));
}

TEST(ReportErrors, ForeignAndMissingFilesExitTwoAndWriteNothing) {
  TempDir dir;
  std::string foreign = dir.file("f.db");
  ASSERT_EQ(run("sqlite3 " + foreign + " 'CREATE TABLE t(x)'"), 0);
  auto before = read_file(foreign);
  EXPECT_EQ(run(std::string(GPUOBS_BIN) + " report launches " + foreign + " 2>/dev/null"), 2);
  EXPECT_EQ(read_file(foreign), before);
  EXPECT_EQ(run(std::string(GPUOBS_BIN) + " report launches " + dir.file("none") + " 2>/dev/null"), 2);
  EXPECT_FALSE(exists(dir.file("none")));
}
