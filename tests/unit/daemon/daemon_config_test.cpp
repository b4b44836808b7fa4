// gpuobsd's configuration on SIGHUP (daemon/config.h): what diff_config
// reports for each option, what apply_live takes over, and a reload that
// reads the changed file while command-line options keep winning. No root.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "daemon/config.h"
#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::daemon;
using namespace gpuobs::testing;

namespace {

struct OptionCase {
  const char* name;  // as diff_config names it
  bool live;         // applied at SIGHUP
  std::function<void(Config&)> change;
};

const std::vector<OptionCase>& option_cases() {
  static const std::vector<OptionCase> cases = {
      {"log_level", true, [](Config& c) { c.log_level = "debug"; }},
      {"segment_max_bytes", true, [](Config& c) { c.segment_max_bytes = 1; }},
      {"segment_max_age", true, [](Config& c) { c.segment_max_age_s = 1; }},
      {"keep_segments", true, [](Config& c) { c.keep_segments = 1; }},
      {"keep_bytes", true, [](Config& c) { c.keep_bytes = 1; }},
      {"max_age", true, [](Config& c) { c.max_age_s = 1; }},
      {"status_file", true, [](Config& c) { c.status_file = "/tmp/s.json"; }},
      {"state_dir", false, [](Config& c) { c.state_dir = "/tmp/x"; }},
      {"db", false, [](Config& c) { c.db = "/tmp/x.gpuobs"; }},
      {"libcuda", false, [](Config& c) { c.libcuda = {"/a"}; }},
      {"libhip", false, [](Config& c) { c.libhip = {"/b"}; }},
      {"watch_dev", false, [](Config& c) { c.watch_dev = {"/dev/null"}; }},
      {"gpu_devices", false, [](Config& c) { c.gpu_devices = false; }},
      {"ring_mb", false, [](Config& c) { c.ring_mb = 1; }},
      {"stack_depth", false, [](Config& c) { c.stack_depth = 1; }},
      {"unwind", false, [](Config& c) { c.unwind = UnwindMode::dwarf; }},
      {"stack_copy", false, [](Config& c) { c.stack_copy = 8; }},
      {"metrics_listen", false, [](Config& c) { c.metrics_listen = "127.0.0.1:1"; }},
      {"metrics_max_connections", false, [](Config& c) { c.metrics_max_connections = 1; }},
      {"library_rescan", false, [](Config& c) { c.library_rescan_ms = 1; }},
      {"library_max_files", false, [](Config& c) { c.library_max_files = 1; }},
      {"library_max_files_per_user", false, [](Config& c) { c.library_max_files_per_user = 1; }},
  };
  return cases;
}

using Names = std::vector<std::string>;

Parsed parse_args(std::vector<std::string> args) {
  args.insert(args.begin(), "gpuobsd");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return parse_config(static_cast<int>(argv.size()), argv.data());
}

}  // namespace

TEST(ConfigDiff, EachOptionIsReportedOnceAsAppliedOrNeedingRestart) {
  for (const auto& oc : option_cases()) {
    Config before, after;
    oc.change(after);
    ConfigChange ch = diff_config(before, after);
    EXPECT_EQ(ch.applied, oc.live ? Names{oc.name} : Names{}) << oc.name;
    EXPECT_EQ(ch.need_restart, oc.live ? Names{} : Names{oc.name}) << oc.name;
  }
  ConfigChange none = diff_config(Config{}, Config{});
  EXPECT_TRUE(none.applied.empty());
  EXPECT_TRUE(none.need_restart.empty());
}

TEST(ConfigDiff, ApplyLiveTakesExactlyTheAppliedOptions) {
  for (const auto& oc : option_cases()) {
    Config current, next;
    oc.change(next);
    Config applied = apply_live(current, next);
    // What apply_live took over is exactly what diff_config calls applied:
    // after it, only the restart-only change is left.
    ConfigChange left = diff_config(applied, next);
    EXPECT_TRUE(left.applied.empty()) << oc.name << " reported as applied but not applied";
    EXPECT_EQ(left.need_restart, oc.live ? Names{} : Names{oc.name}) << oc.name;
  }
}

TEST(ConfigReload, ReadsTheChangedFileAndTheCommandLineStillWins) {
  TempDir dir;
  std::string conf = dir.file("gpuobsd.conf");
  std::ofstream(conf) << "keep_segments = 10\nring_mb = 32\nlog_level = \"info\"\n";
  std::vector<std::string> args = {"--config", conf, "--keep-bytes", "1000", "--state-dir", dir.path()};
  Parsed first = parse_args(args);
  ASSERT_EQ(first.exit_code, -1);
  EXPECT_EQ(first.config.keep_segments, 10u);
  EXPECT_EQ(first.config.ring_mb, 32u);
  EXPECT_EQ(first.config.keep_bytes, 1000u);
  EXPECT_EQ(first.config.config_file, conf);

  // The file changes (a command-line option too, which keeps its value).
  std::ofstream(conf) << "keep_segments = 3\nring_mb = 64\nlog_level = \"warn\"\nkeep_bytes = 5\n";
  Parsed second = parse_args(args);
  ASSERT_EQ(second.exit_code, -1);
  ConfigChange ch = diff_config(first.config, second.config);
  EXPECT_EQ(ch.applied, (Names{"log_level", "keep_segments"}));
  EXPECT_EQ(ch.need_restart, (Names{"ring_mb"}));
  Config now = apply_live(first.config, second.config);
  EXPECT_EQ(now.keep_segments, 3u);
  EXPECT_EQ(now.log_level, "warn");
  EXPECT_EQ(now.keep_bytes, 1000u);
  EXPECT_EQ(now.ring_mb, 32u) << "restart-only: the running value stays";

  // A file with an error: parse_config says so, and the reload keeps the running config.
  std::ofstream(conf) << "ring_mb = 0\n";
  EXPECT_EQ(parse_args(args).exit_code, 2);
}
