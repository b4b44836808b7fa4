// What gpuobs does with hostile or mistaken input before it records
// anything: the output path (-o, -f), the files and directories it creates
// (who may read them), numeric options, unbound SQL parameters, and traced
// names that would drive root's terminal. Each test failed on the build
// before issue 15.
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "catalogue/api_spec.h"
#include "run_util.h"
#include "store/db.h"
#include "store/schema.h"
#include "store/writer.h"
#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::testing;

namespace {

const std::string kGpuobs = GPUOBS_BIN;

// `gpuobs record -o OUT ...ARGS -- touch MARKER`: the exit status, stderr in *err.
int record(const std::string& args, const std::string& marker, std::string* err) {
  TempDir tmp;
  std::string e = tmp.file("err");
  int rc = run(kGpuobs + " record " + args + " -- touch " + marker + " 2>" + e);
  *err = read_file(e);
  return rc;
}

mode_t mode_of(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 ? st.st_mode : 0;
}

void ensure_group_gpuobs() { ASSERT_EQ(run("getent group gpuobs >/dev/null || groupadd --system gpuobs"), 0); }

gid_t gpuobs_gid() {
  struct group* g = ::getgrnam("gpuobs");
  return g ? g->gr_gid : static_cast<gid_t>(-1);
}

}  // namespace

// -o /dev/null with -f replaced the device node with a capture.
TEST(OutputSafety, ForceNeverReplacesADeviceNode) {
  TempDir dir;
  std::string dev = dir.file("null"), marker = dir.file("ran"), err;
  ASSERT_EQ(::mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
  EXPECT_EQ(record("-f -o " + dev, marker, &err), 2);
  EXPECT_NE(err.find(dev + " is a device, FIFO or socket, not a capture file; refusing to replace it"),
            std::string::npos)
      << err;
  EXPECT_TRUE(S_ISCHR(mode_of(dev))) << "the device node must still be there";
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the command must not start";
  EXPECT_FALSE(std::filesystem::exists(dev + "-wal"));
}

TEST(OutputSafety, ForceRefusesDirectoriesFifosAndFilesThatAreNotCaptures) {
  TempDir dir;
  std::string marker = dir.file("ran"), err;
  std::string d = dir.file("adir"), fifo = dir.file("fifo"), text = dir.file("notes.txt"), other = dir.file("app.db");
  std::filesystem::create_directory(d);
  std::ofstream(d + "/inside") << "x";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::ofstream(text) << "precious";
  ASSERT_EQ(run("sqlite3 " + other + " 'CREATE TABLE users (name TEXT); INSERT INTO users VALUES (1)'"), 0);
  std::string other_bytes = read_file(other);

  EXPECT_EQ(record("-f -o " + d, marker, &err), 2);
  EXPECT_NE(err.find(d + " is a directory"), std::string::npos) << err;
  EXPECT_TRUE(std::filesystem::exists(d + "/inside"));
  EXPECT_EQ(record("-f -o " + fifo, marker, &err), 2);
  EXPECT_NE(err.find("is a device, FIFO or socket"), std::string::npos) << err;
  EXPECT_EQ(record("-f -o " + text, marker, &err), 2);
  EXPECT_NE(err.find(text + " is not a gpuobs capture; refusing to replace it"), std::string::npos) << err;
  EXPECT_EQ(read_file(text), "precious");
  EXPECT_EQ(record("-f -o " + other, marker, &err), 2);
  EXPECT_NE(err.find(other + " is an SQLite database but not a gpuobs capture"), std::string::npos) << err;
  EXPECT_EQ(read_file(other), other_bytes);
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST(OutputSafety, ForceReplacesAnEmptyFileOrACaptureAndItsCompanions) {
  TempDir dir;
  std::string out = dir.file("c.gpuobs"), marker = dir.file("ran"), err;
  std::ofstream(out).close();  // empty
  EXPECT_EQ(record("-f -o " + out, marker, &err), 0) << err;
  EXPECT_TRUE(open_capture_readonly(out).ok());
  // A capture with a leftover (empty, so not hot) rollback journal: both replaced.
  std::ofstream(out + "-journal").close();
  EXPECT_EQ(record("-f -o " + out, marker, &err), 0) << err;
  EXPECT_FALSE(std::filesystem::exists(out + "-journal"));
  EXPECT_TRUE(open_capture_readonly(out).ok());
  // A companion name that is not a regular file is not SQLite's: refused.
  std::string before = read_file(out);
  std::filesystem::create_directory(out + "-wal");
  std::ofstream(out + "-wal/keep") << "x";
  EXPECT_EQ(record("-f -o " + out, marker, &err), 2);
  EXPECT_NE(err.find(out + "-wal exists and is not a regular file"), std::string::npos) << err;
  EXPECT_EQ(read_file(out), before);
  EXPECT_TRUE(std::filesystem::exists(out + "-wal/keep"));
}

// Without -f, a dangling link at -o was followed and its target created.
TEST(OutputSafety, SymbolicLinksAreNeverFollowed) {
  TempDir dir;
  std::string link = dir.file("out.gpuobs"), target = dir.file("victim"), marker = dir.file("ran"), err;
  std::filesystem::create_symlink(target, link);
  EXPECT_EQ(record("-o " + link, marker, &err), 2);
  EXPECT_NE(err.find(link + " is a symbolic link: gpuobs does not write captures through links"), std::string::npos)
      << err;
  EXPECT_FALSE(std::filesystem::exists(target)) << "the link's target must not be created";
  // A link to a real capture: not replaced through the link either.
  std::string real = dir.file("real.gpuobs");
  ASSERT_EQ(record("-o " + real, marker, &err), 0) << err;
  std::filesystem::remove(link);
  std::filesystem::create_symlink(real, link);
  EXPECT_EQ(record("-f -o " + link, marker, &err), 2);
  EXPECT_TRUE(std::filesystem::is_symlink(link));
}

// Captures hold every user's command lines and stacks.
TEST(OutputSafety, CapturesAre0640GroupGpuobsWhateverTheUmask) {
  ensure_group_gpuobs();
  TempDir dir;
  std::string out = dir.file("p.gpuobs"), marker = dir.file("ran"), e = dir.file("err");
  ASSERT_EQ(run("umask 000; " + kGpuobs + " record -o " + out + " -- touch " + marker + " 2>" + e), 0) << read_file(e);
  EXPECT_EQ(mode_of(out) & 07777, 0640u);
  struct stat st {};
  ASSERT_EQ(::stat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, gpuobs_gid());
}

TEST(OutputSafety, DaemonDirectoriesAre0750AndItsSegments0640) {
  ensure_group_gpuobs();
  TempDir dir;
  std::string state = dir.file("a/state"), status = dir.file("run/gpuobs/status.json"), e = dir.file("err");
  // gpuobsd outside the unit: it makes the directories itself.
  std::string cmd = "umask 000; timeout -s TERM 4 " + std::string(GPUOBSD_BIN) + " --state-dir " + state +
                    " --status-file " + status + " --no-gpu-devices 2>" + e;
  int rc = run(cmd);
  EXPECT_TRUE(rc == 0 || rc == 124) << rc << " " << read_file(e);
  EXPECT_EQ(mode_of(state) & 07777, 0750u);
  EXPECT_EQ(mode_of(dir.file("a")) & 07777, 0750u);
  EXPECT_EQ(mode_of(dir.file("run/gpuobs")) & 07777, 0750u);
  EXPECT_EQ(mode_of(status) & 07777, 0640u);
  int segments = 0;
  for (auto& f : std::filesystem::directory_iterator(state))
    if (f.path().extension() == ".gpuobs") {
      ++segments;
      EXPECT_EQ(mode_of(f.path()) & 07777, 0640u) << f.path();
    }
  EXPECT_GE(segments, 1);
}

TEST(OutputSafety, StatusSaysPermissionDeniedToAUserWhoCannotRead) {
  TempDir dir;
  std::string status = dir.file("status.json"), e = dir.file("err");
  std::ofstream(status) << "{}";
  ::chmod(status.c_str(), 0640);
  ::chmod(dir.path().c_str(), 0755);
  int rc = run("setpriv --reuid=65534 --regid=65534 --clear-groups " + kGpuobs + " status --status-file " + status +
               " 2>" + e);
  EXPECT_EQ(rc, 4);
  EXPECT_NE(read_file(e).find("permission denied reading " + status), std::string::npos) << read_file(e);
  EXPECT_EQ(read_file(e).find("no status file"), std::string::npos);
  // Missing is still "not running".
  EXPECT_EQ(run(kGpuobs + " status --status-file " + dir.file("none.json") + " >/dev/null"), 3);
}

TEST(OptionValidation, NumericOptionsAreCheckedNotWrappedOrClamped) {
  TempDir dir;
  std::string marker = dir.file("ran"), out = dir.file("o.gpuobs"), e = dir.file("err");
  auto refused = [&](const std::string& args, const std::string& says) {
    int rc = run(kGpuobs + " " + args + " 2>" + e + " >/dev/null");
    std::string err = read_file(e);
    EXPECT_EQ(rc, 2) << args << ": " << err;
    EXPECT_NE(err.find(says), std::string::npos) << args << ": " << err;
    // The range in people's terms: CLI11's own printed DBL_MAX (309 digits).
    EXPECT_LT(err.size(), 300u) << args << ": " << err;
  };
  // ring_mb << 20 wrapped to a 4 KiB ring; above 1024 it was clamped.
  refused("record --ring-mb 0 -o " + out + " -- touch " + marker, "--ring-mb");
  refused("record --ring-mb 4096 -o " + out + " -- touch " + marker,
          "--ring-mb: 4096 is out of range (a whole number from 1 to 1024)");
  refused("record --ring-mb abc -o " + out + " -- touch " + marker,
          "--ring-mb: 'abc' is not a number (a whole number from 1 to 1024)");
  refused("record --ring-mb 1.5 -o " + out + " -- touch " + marker, "'1.5' is not a number");
  refused("record --metrics-hz x -o " + out + " -- touch " + marker, "--metrics-hz: 'x' is not a number");
  refused("record --ring-mb -1 -o " + out + " -- touch " + marker, "--ring-mb");
  refused("record --stack-depth 128 -o " + out + " -- touch " + marker, "--stack-depth");
  refused("record --unwind lbr -o " + out + " -- touch " + marker, "--unwind");
  refused("record --stack-copy 4096 -o " + out + " -- touch " + marker, "--stack-copy applies only to --unwind dwarf");
  refused("record --unwind dwarf --stack-copy 100 -o " + out + " -- touch " + marker,
          "not a multiple of 8 from 8 to 65536");
  EXPECT_FALSE(std::filesystem::exists(marker));
  EXPECT_FALSE(std::filesystem::exists(out));
  std::string cap = dir.file("c.gpuobs");
  ASSERT_EQ(run(kGpuobs + " record -o " + cap + " -- true 2>/dev/null"), 0);
  refused("stacks " + cap + " --top -1", "--top");
  refused("stacks " + cap + " --top 0", "--top");
  refused("report api_sum " + cap + " --since -5", "is not a number of seconds >= 0");
  refused("report api_sum " + cap + " --since nan", "is not a number of seconds >= 0");
  refused("report api_sum " + cap + " --until inf", "is not a number of seconds >= 0");
  refused("report api_sum " + cap + " --since 10 --until 1", "--until 1.000000 is not after --since 10.000000");
  refused("report api_sum " + cap + " --pid -3", "--pid: '-3' is not a number (a whole number from 1 to 4194304)");
  refused("report api_sum " + cap + " --pid 0", "--pid: 0 is out of range");
  refused("diff " + cap + " " + cap + " --alpha 2", "--alpha: 2 is out of range (a number from 1e-12 to 0.5)");
  refused("diff " + cap + " " + cap + " --alpha many", "--alpha: 'many' is not a number");
  EXPECT_EQ(run(kGpuobs + " report api_sum " + cap + " --since 0.5 --until 2 >/dev/null"), 0);
  // report a,b (like nsys stats -r): JSON is one object keyed by report; a
  // name it does not know is refused before anything is printed (issue 20).
  std::string several = dir.file("several.json");
  ASSERT_EQ(run(kGpuobs + " report kern_sum,api_sum,capture " + cap + " --format json >" + several), 0);
  auto reports = nlohmann::json::parse(read_file(several));
  ASSERT_TRUE(reports.is_object()) << reports.dump();
  EXPECT_EQ(reports.size(), 3u);
  EXPECT_TRUE(reports["kern_sum"].is_array());
  EXPECT_TRUE(reports["api_sum"].is_array());
  EXPECT_FALSE(reports["capture"].empty());
  EXPECT_EQ(run(kGpuobs + " report kern_sum,nope " + cap + " >" + several + " 2>/dev/null"), 2);
  EXPECT_EQ(read_file(several), "");
  // --format: every command that takes it refuses a word it does not know
  // (segments printed a table and exited 0), and CSV is CSV (issue 20).
  std::string state = dir.file("state");
  std::filesystem::create_directory(state);
  std::filesystem::copy_file(cap, state + "/capture-20261126T120000-7.gpuobs");
  refused("segments --state-dir " + state + " --format bogus", "unknown format 'bogus'");
  refused("stacks " + cap + " --format bogus", "unknown format 'bogus'");
  refused("report api_sum " + cap + " --format bogus", "unknown format 'bogus'");
  std::string csv = dir.file("segments.csv");
  ASSERT_EQ(run(kGpuobs + " segments --state-dir " + state + " --format csv >" + csv), 0);
  std::string text = read_file(csv);
  EXPECT_EQ(text.substr(0, text.find('\n')), "segment,path,bytes,current,start,end,launches,error");
  EXPECT_NE(text.find("\n7," + state + "/capture-20261126T120000-7.gpuobs,"), std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;
  EXPECT_EQ(run(kGpuobs + " record --ring-mb 1024 -o " + dir.file("big.gpuobs") + " -- true 2>/dev/null"), 0);
  auto db = open_capture_readonly(dir.file("big.gpuobs"));
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(scalar(*db, "SELECT ring_buffer_bytes FROM capture"), int64_t{1} << 30);
}

TEST(OptionValidation, SqlParametersWithoutAValueAreAnError) {
  TempDir dir;
  std::string cap = dir.file("c.gpuobs"), e = dir.file("err"), o = dir.file("out");
  ASSERT_EQ(run(kGpuobs + " record -o " + cap + " -- true 2>/dev/null"), 0);
  EXPECT_EQ(run(kGpuobs + " sql 'SELECT :a, :b' " + cap + " -p b=2 2>" + e), 2);
  EXPECT_NE(read_file(e).find("no value for :a"), std::string::npos) << read_file(e);
  EXPECT_NE(read_file(e).find("-p a=VALUE"), std::string::npos);
  EXPECT_EQ(run(kGpuobs + " sql 'SELECT ?' " + cap + " 2>" + e), 2);
  EXPECT_NE(read_file(e).find("positional parameter"), std::string::npos) << read_file(e);
  EXPECT_EQ(run(kGpuobs + " sql 'SELECT :a + 1 AS x' " + cap + " -p a=41 --format csv >" + o), 0);
  EXPECT_EQ(read_file(o), "x\n42\n");
}

namespace {

// Runs cmd under a pseudo-terminal of `cols` columns (util-linux script(1)):
// what a user at a terminal sees, output and diagnostics together.
std::string on_terminal(const std::string& cmd, int cols, const std::string& env = "") {
  TempDir dir;
  std::string inner = dir.file("inner.sh"), out = dir.file("out");
  {
    std::ofstream sh(inner);
    sh << "stty cols " << cols << " rows 50\n" << env << " " << cmd << "\n";
  }
  (void)run("script -qec 'sh " + inner + "' /dev/null > " + out + " 2>&1 </dev/null");
  return read_file(out);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (!l.empty() && l.back() == '\r') l.pop_back();
    out.push_back(l);
  }
  return out;
}

}  // namespace

// A kernel, process and library named with terminal controls: tables and
// `stacks` show them escaped; JSON keeps the bytes.
TEST(TerminalOutput, HostileNamesDoNotReachTheTerminal) {
  TempDir dir;
  std::string cap = dir.file("h.gpuobs");
  const std::string kernel = "k\x1b[2J\x1b[H\r\nroot@host:~# ";
  const std::string comm = "p\x1b]0;x\x07";
  {
    auto w = CaptureWriter::create(cap, false, nullptr);
    ASSERT_TRUE(w.ok()) << w.error().message;
    ASSERT_TRUE((*w)->write_meta(CaptureMeta{"t", CaptureMode::record, "c", "h", "k", "", 1000, 0, 4096}).ok());
    (*w)->start();
    gpuobs_hdr h{GPUOBS_EV_PROC_FORK, 0, 1000, 77, 77};
    (*w)->push(ProcEvent{GPUOBS_EV_PROC_FORK, h, 1, 1, 0, comm, ""});
    uint32_t get_function = 0;
    for (const ApiSpec& s : cuda_api_table())
      if (s.symbol == "cuModuleGetFunction") get_function = s.id;
    ApiCallEvent call{gpuobs_hdr{GPUOBS_EV_API_CALL, 0, 2000, 77, 77},
                      {},
                      0,
                      5,
                      0xF1,
                      get_function,
                      GPUOBS_CALL_F_RETURNED | GPUOBS_CALL_F_OUT_READ,
                      GPUOBS_BLOB_STRING,
                      kernel + std::string(1, '\0')};
    (*w)->push(call);
    (*w)->push(ModuleDef{1, "/tmp/\x1b[31mlib.so", 0, 0, nullptr});
    (*w)->push(FrameDef{1, 1, 0x1234});
    (*w)->push(StackDef{1, 0, {1}});
    gpuobs_launch l{};
    l.hdr = gpuobs_hdr{GPUOBS_EV_LAUNCH, 0, 3000, 77, 77};
    l.function = 0xF1;
    l.grid_x = l.grid_y = l.grid_z = l.block_x = l.block_y = l.block_z = 1;
    l.api = GPUOBS_API_CU_LAUNCH_KERNEL;
    (*w)->push(l, 1);
    (*w)->stop();
    ASSERT_TRUE((*w)->write_end(4000, 0, {}).ok());
  }
  std::string o = dir.file("out");
  // CSV too, as tables (it reached the terminal as it was: issue 38).
  for (std::string cmd :
       {"report kern_sum", "report launches", "report proc_sum", "stacks", "sql 'SELECT comm FROM processes'",
        "report kern_sum --format csv", "report proc_sum --format csv", "stacks --format csv",
        "sql 'SELECT comm FROM processes' --format csv"}) {
    ASSERT_EQ(run(kGpuobs + " " + cmd + " " + cap + " >" + o), 0) << cmd;
    std::string out = read_file(o);
    EXPECT_EQ(out.find('\x1b'), std::string::npos) << cmd << ":\n" << out;
    EXPECT_EQ(out.find('\r'), std::string::npos) << cmd;
    EXPECT_EQ(out.find('\x07'), std::string::npos) << cmd;
    EXPECT_EQ(out.find("\nroot@host"), std::string::npos) << cmd << ": a forged prompt line";
  }
  ASSERT_EQ(run(kGpuobs + " report kern_sum " + cap + " >" + o), 0);
  EXPECT_NE(read_file(o).find("k\\e[2J\\e[H\\r\\nroot@host:~#"), std::string::npos) << read_file(o);
  ASSERT_EQ(run(kGpuobs + " stacks " + cap + " >" + o), 0);
  EXPECT_NE(read_file(o).find("\\e[31mlib.so"), std::string::npos) << read_file(o);
  ASSERT_EQ(run(kGpuobs + " sql 'SELECT comm FROM processes' " + cap + " --format csv >" + o), 0);
  EXPECT_EQ(read_file(o), "comm\np\\e]0;x\\x07\n");
  ASSERT_EQ(run(kGpuobs + " sql 'SELECT comm FROM processes' " + cap + " --format json >" + o), 0);
  EXPECT_EQ(nlohmann::json::parse(read_file(o))[0]["comm"], comm);
  // export folded to a terminal escapes them too (into a file it keeps every byte).
  std::string folded = on_terminal(kGpuobs + " export folded --by-process " + cap, 200);
  EXPECT_NE(folded.find(";pid 77;"), std::string::npos) << folded;
  EXPECT_EQ(folded.find('\x1b'), std::string::npos) << folded;
  EXPECT_EQ(folded.find('\x07'), std::string::npos) << folded;
  // record's summary names the command it ran: escaped as well (issue 38).
  std::string e = dir.file("err"), cap2 = dir.file("r.gpuobs");
  ASSERT_EQ(run(kGpuobs + " record -o " + cap2 + " -- true \"$(printf 'x\\033[2J\\r')\" 2>" + e), 0);
  std::string said = read_file(e);
  EXPECT_EQ(said.find('\x1b'), std::string::npos) << said;
  EXPECT_EQ(said.find('\r'), std::string::npos) << said;
  EXPECT_NE(said.find("gpuobs: recorded true 'x\\e[2J\\r' (exit status 0"), std::string::npos) << said;
}

// Tables fit the terminal: the widest text columns are cut with "...",
// numbers never; --wide cuts nothing; a pipe gets the whole text (issue 20).
TEST(TerminalOutput, TablesFitTheTerminalUnlessWide) {
  TempDir dir;
  std::string listed = on_terminal(kGpuobs + " report --list", 70);
  auto lines = lines_of(listed);
  ASSERT_GT(lines.size(), 20u) << listed;
  for (const auto& l : lines) EXPECT_LE(l.size(), 70u) << l;
  EXPECT_NE(listed.find("..."), std::string::npos) << listed;
  EXPECT_NE(listed.find("api_sum "), std::string::npos) << listed;  // the names are whole
  size_t widest = 0;
  for (const auto& l : lines_of(on_terminal(kGpuobs + " report --list --wide", 70)))
    widest = std::max(widest, l.size());
  EXPECT_GT(widest, 150u);
  std::string piped = dir.file("piped");
  ASSERT_EQ(run(kGpuobs + " report --list > " + piped), 0);
  EXPECT_NE(read_file(piped).find("per CUDA driver API, the calls and the host time spent inside them"),
            std::string::npos);
}

// Colour on a terminal only, and never with NO_COLOR (issue 20).
TEST(TerminalOutput, NoColorTurnsColourOff) {
  TempDir dir;
  std::string cap = dir.file("new.gpuobs");
  ASSERT_EQ(run(kGpuobs + " record -o " + cap + " -- true 2>/dev/null"), 0);
  {
    auto db = Db::open(cap, SQLITE_OPEN_READWRITE);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->exec("PRAGMA user_version = 999").ok());  // a newer gpuobs's capture: a warning
  }
  std::string sql = kGpuobs + " sql 'SELECT 1 AS one' " + cap;
  // spdlog colours a terminal whose TERM it knows: CI may run with none.
  std::string coloured = on_terminal(sql, 100, "TERM=xterm");
  EXPECT_NE(coloured.find("newer gpuobs"), std::string::npos) << coloured;
  EXPECT_NE(coloured.find("\x1b["), std::string::npos) << "no colour on a terminal: " << coloured;
  std::string plain = on_terminal(sql, 100, "TERM=xterm NO_COLOR=1");
  EXPECT_NE(plain.find("newer gpuobs"), std::string::npos) << plain;
  EXPECT_EQ(plain.find('\x1b'), std::string::npos) << plain;
  std::string err = dir.file("err");
  ASSERT_EQ(run(sql + " >/dev/null 2>" + err), 0);
  EXPECT_EQ(read_file(err).find('\x1b'), std::string::npos) << "colour into a pipe";
}

// Progress lines: on a terminal only (GPUOBS_PROGRESS_AFTER_MS=0 shows them
// for work shorter than the default second), erased at the end, never into a
// pipe and never with TERM=dumb (issue 20).
TEST(TerminalOutput, ProgressOnATerminalOnly) {
  TempDir dir;
  std::string cap = dir.file("p.gpuobs");
  std::string shown =
      on_terminal(kGpuobs + " record -o " + cap + " -- true", 100, "TERM=xterm GPUOBS_PROGRESS_AFTER_MS=0");
  EXPECT_NE(shown.find("gpuobs record: storing the capture: "), std::string::npos) << shown;
  EXPECT_NE(shown.find("\r\x1b[K"), std::string::npos) << "the line is not erased";
  std::string report =
      on_terminal(kGpuobs + " report kern_sum,api_sum " + cap, 100, "TERM=xterm GPUOBS_PROGRESS_AFTER_MS=0");
  EXPECT_NE(report.find("gpuobs report kern_sum,api_sum: "), std::string::npos) << report;
  EXPECT_NE(report.find("== api_sum =="), std::string::npos) << report;
  std::string dumb = on_terminal(kGpuobs + " report kern_sum " + cap, 100, "TERM=dumb GPUOBS_PROGRESS_AFTER_MS=0");
  EXPECT_EQ(dumb.find("gpuobs report kern_sum: "), std::string::npos) << dumb;
  std::string err = dir.file("err");
  ASSERT_EQ(run("GPUOBS_PROGRESS_AFTER_MS=0 " + kGpuobs + " report kern_sum " + cap + " >/dev/null 2>" + err), 0);
  EXPECT_EQ(read_file(err), "") << "progress into a pipe";
  // The default delay: a report this small ends before any line is drawn.
  std::string quick = on_terminal(kGpuobs + " report kern_sum " + cap, 100, "TERM=xterm");
  EXPECT_EQ(quick.find("gpuobs report kern_sum: "), std::string::npos) << quick;
}

// gpuobs record and gpuobsd take the capture options from one definition
// (capture/capture_options.h): the same help, defaults and bounds, and the
// same refusals (issue 20).
TEST(OptionValidation, RecordAndTheDaemonShareTheCaptureOptions) {
  TempDir dir;
  auto help_of = [&](const std::string& cmd) {
    std::string out = dir.file("help");
    (void)run(cmd + " --help > " + out + " 2>&1");
    std::map<std::string, std::string> lines;  // option -> its help, config spellings dropped
    std::istringstream in(read_file(out));
    std::string option;
    for (std::string l; std::getline(in, l);) {
      size_t dash = l.find("--");
      if (l.rfind("  --", 0) == 0 && dash == 2) {
        option = l.substr(2, l.find_first_of(" ,{", 2) - 2);
        size_t space = l.find(' ', 2);
        lines[option] = space == std::string::npos ? "" : l.substr(space);
      } else if (!option.empty() && l.rfind("      ", 0) == 0) {
        lines[option] += l;
      }
    }
    for (auto& [o, text] : lines) {  // the column the help starts in differs with the option names' width
      std::string squeezed;
      for (char ch : text)
        if (ch != ' ' || squeezed.empty() || squeezed.back() != ' ') squeezed += ch;
      text = squeezed;
    }
    return lines;
  };
  auto record = help_of(kGpuobs + " record"), daemon = help_of(GPUOBSD_BIN);
  for (const char* o : {"--ring-mb", "--stack-depth", "--unwind", "--stack-copy", "--libcuda", "--libhip",
                        "--watch-dev", "--no-gpu-devices", "--nccl-stall"}) {
    ASSERT_TRUE(record.count(o)) << o;
    ASSERT_TRUE(daemon.count(o)) << o;
    EXPECT_EQ(record[o], daemon[o]) << o;
  }
  EXPECT_NE(record["--ring-mb"].find("=64"), std::string::npos) << record["--ring-mb"];
  // Every option that takes a value, given as "--option VALUE" (not
  // "=VALUE"): gpuobs record finds where its command starts by them
  // (cli/record.cpp); one it does not know swallowed its value (--nccl-stall 2
  // was refused as "1 required UINT missing").
  for (const char* good : {"--ring-mb 8", "--stack-depth 8", "--unwind fp", "--stack-copy 16384 --unwind dwarf",
                           "--nccl-stall 2", "--watch-dev 1:3"})
    EXPECT_EQ(run(kGpuobs + " record " + good + " -f -o " + dir.file("g.gpuobs") + " -- true 2>/dev/null"), 0) << good;
  for (const char* bad : {"--ring-mb 4096", "--stack-depth 128", "--unwind lbr", "--stack-copy 100",
                          "--stack-copy 4096 --unwind fp", "--nccl-stall 0"}) {
    std::string e1 = dir.file("e1"), e2 = dir.file("e2");
    EXPECT_EQ(run(kGpuobs + " record " + bad + " -o " + dir.file("x.gpuobs") + " -- true 2>" + e1), 2) << bad;
    EXPECT_EQ(run(std::string(GPUOBSD_BIN) + " --config /dev/null " + bad + " --print-config >/dev/null 2>" + e2), 2)
        << bad;
    EXPECT_FALSE(read_file(e1).empty());
    EXPECT_FALSE(read_file(e2).empty());
  }
}

// One name per process and per stream (issue 38): a comm the kernel cut to
// 15 bytes reads as the executable's name, and streams are "stream#N" in
// order of first use in the reports, the summary and the Perfetto/Chrome
// tracks alike; a table prints one time unit per report.
TEST(Readability, ProcessAndStreamNamesAreTheSameEverywhere) {
  TempDir dir;
  std::string cap = dir.file("n.gpuobs");
  {
    auto w = CaptureWriter::create(cap, false, nullptr);
    ASSERT_TRUE(w.ok()) << w.error().message;
    ASSERT_TRUE((*w)->write_meta(CaptureMeta{"t", CaptureMode::record, "c", "h", "k", "", 1000, 0, 4096}).ok());
    (*w)->start();
    gpuobs_hdr h{GPUOBS_EV_PROC_FORK, 0, 1000, 88, 88};
    (*w)->push(ProcEvent{GPUOBS_EV_PROC_FORK, h, 1, 1, 0, "very_long_progr", ""});
    gpuobs_hdr e{GPUOBS_EV_PROC_EXEC, 0, 1100, 88, 88};
    (*w)->push(ProcEvent{GPUOBS_EV_PROC_EXEC, e, 1, 1, 0, "very_long_progr", "/opt/app/very_long_program_name"});
    // 3 launches on 0x5000 first, then 2 on 0x4000.
    uint64_t ts = 2000;
    for (uint64_t stream : {0x5000, 0x5000, 0x5000, 0x4000, 0x4000}) {
      gpuobs_launch l{};
      l.hdr = gpuobs_hdr{GPUOBS_EV_LAUNCH, 0, ts += 1000, 88, 88};
      l.function = 0xF1;
      l.stream = stream;
      l.grid_x = l.grid_y = l.grid_z = l.block_x = l.block_y = l.block_z = 1;
      l.api = GPUOBS_API_CU_LAUNCH_KERNEL;
      (*w)->push(l);
    }
    (*w)->stop();
    ASSERT_TRUE((*w)->write_end(20000, 0, {}).ok());
  }
  std::string o = dir.file("out");
  ASSERT_EQ(run(kGpuobs + " report proc_sum " + cap + " >" + o), 0);
  EXPECT_NE(read_file(o).find("very_long_program_name"), std::string::npos) << read_file(o);
  ASSERT_EQ(run(kGpuobs + " summary " + cap + " >" + o), 0);
  EXPECT_NE(read_file(o).find("stream#1 3 launches"), std::string::npos) << read_file(o);
  EXPECT_NE(read_file(o).find("very_long_program_name (pid 88)"), std::string::npos) << read_file(o);
  // The exports' stream tracks carry the same label.
  ASSERT_EQ(run(kGpuobs + " export chrome " + cap + " -o " + o + " -f"), 0);
  EXPECT_NE(read_file(o).find("Stream stream#1 0x5000 (pid 88)"), std::string::npos);
  EXPECT_NE(read_file(o).find("Stream stream#2 0x4000 (pid 88)"), std::string::npos);
}
