#include "daemon/config.h"

#include "capture/capture_options.h"
#include "common/number_checks.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "version.h"

namespace gpuobs::daemon {
namespace {

// "90", "90s", "15min", "12h", "30d" -> seconds.
CLI::AsNumberWithUnit duration_units() {
  return CLI::AsNumberWithUnit(std::map<std::string, uint64_t>{{"s", 1}, {"min", 60}, {"h", 3600}, {"d", 86400}},
                               CLI::AsNumberWithUnit::DEFAULT, "DURATION");
}

constexpr uint64_t kMaxDurationMs = 24ull * 3600 * 1000;

// "500ms", "10s", "2min", or a plain number of seconds -> milliseconds.
CLI::Validator duration_ms() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        static const std::pair<const char*, uint64_t> units[] = {
            {"ms", 1}, {"s", 1000}, {"min", 60000}, {"h", 3600000}};
        size_t i = 0;
        while (i < v.size() && v[i] >= '0' && v[i] <= '9') ++i;
        std::string unit = v.substr(i);
        while (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
        if (i == 0 || i > 12) return "expected a duration such as 500ms, 10s or 2min, not '" + v + "'";
        uint64_t n = std::stoull(v.substr(0, i)), mult = unit.empty() ? 1000 : 0;
        for (const auto& [name, m] : units)
          if (unit == name) mult = m;
        if (!mult) return "unknown unit '" + unit + "' (ms, s, min, h)";
        // At most a day: a longer rescan is no rescan, and every accepted
        // value prints (as ms) in a form this parser reads back.
        if (n > kMaxDurationMs / mult) return "'" + v + "' is longer than a day (24h)";
        v = std::to_string(n * mult);
        return {};
      },
      "DURATION", "duration_ms");
}

// CLI11 (2.1.2, Debian 12) strips one pair of either quote and undoes no
// backslash escape, and a '#' anywhere starts a comment: a value is written
// between the quotes it does not contain, and one it cannot be written in
// at all is reported by config_unwritable().
std::string quoted(const std::string& v) {
  char q = v.find('"') == std::string::npos ? '"' : '\'';
  return q + v + q;
}

bool writable(const std::string& v) {
  return v.find_first_of("#\n\r") == std::string::npos &&
         (v.find('"') == std::string::npos || v.find('\'') == std::string::npos);
}

// The string options with their config-file keys.
std::vector<std::pair<const char*, const std::string*>> string_options(const Config& c) {
  std::vector<std::pair<const char*, const std::string*>> out = {
      {"state_dir", &c.state_dir},     {"db", &c.db},
      {"log_level", &c.log_level},     {"metrics_listen", &c.metrics_listen},
      {"status_file", &c.status_file}, {"diff_baseline", &c.diff_baseline},
      {"ship_url", &c.ship_url},       {"ship_credentials", &c.ship_credentials}};
  using List = std::pair<const char*, const std::vector<std::string>*>;
  for (const List& l : {List{"libcuda", &c.libcuda}, List{"libhip", &c.libhip}, List{"watch_dev", &c.watch_dev}})
    for (const std::string& v : *l.second) out.emplace_back(l.first, &v);
  return out;
}

std::string list(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + quoted(v[i]);
  return out + "]";
}

}  // namespace

std::optional<std::string> config_unwritable(const Config& c) {
  for (const auto& [key, v] : string_options(c))
    if (!writable(*v)) return std::string(key);
  return std::nullopt;
}

std::string config_text(const Config& c) {
  std::string t;
  auto line = [&](const char* k, const std::string& v) { t += std::string(k) + " = " + v + "\n"; };
  line("state_dir", quoted(c.state_dir));
  if (!c.db.empty()) line("db", quoted(c.db));
  line("segment_max_bytes", std::to_string(c.segment_max_bytes));
  line("segment_max_age", std::to_string(c.segment_max_age_s));
  line("keep_segments", std::to_string(c.keep_segments));
  line("keep_bytes", std::to_string(c.keep_bytes));
  line("max_age", std::to_string(c.max_age_s));
  // Empty lists: discover (libraries) or nothing extra (devices).
  if (!c.libcuda.empty()) line("libcuda", list(c.libcuda));
  if (!c.libhip.empty()) line("libhip", list(c.libhip));
  if (!c.watch_dev.empty()) line("watch_dev", list(c.watch_dev));
  line("gpu_devices", c.gpu_devices ? "true" : "false");
  line("ring_mb", std::to_string(c.ring_mb));
  line("stack_depth", std::to_string(c.stack_depth));
  line("unwind", quoted(std::string(to_string(c.unwind))));
  line("stack_copy", std::to_string(c.stack_copy));
  line("nccl_stall", std::to_string(c.nccl_stall_s));
  line("python_stacks", quoted(c.python_stacks ? "on" : "off"));
  line("python_main_thread", quoted(c.python_main_thread ? "on" : "off"));
  line("metrics_hz", std::to_string(c.metrics_hz));
  line("detail_interval_ms", std::to_string(c.detail_interval_ms));
  line("library_rescan", quoted(std::to_string(c.library_rescan_ms) + "ms"));
  line("library_max_files", std::to_string(c.library_max_files));
  line("library_max_files_per_user", std::to_string(c.library_max_files_per_user));
  line("library_hold", quoted(std::to_string(c.library_hold_ms) + "ms"));
  line("log_level", quoted(c.log_level));
  line("metrics_listen", quoted(c.metrics_listen));
  line("metrics_max_connections", std::to_string(c.metrics_max_connections));
  line("status_file", quoted(c.status_file));
  line("diff_baseline", quoted(c.diff_baseline));
  line("diff_interval", std::to_string(c.diff_interval_s));
  line("diff_window", std::to_string(c.diff_window_s));
  line("ship_url", quoted(c.ship_url));
  line("ship_credentials", quoted(c.ship_credentials));
  line("ship_interval", std::to_string(c.ship_interval_s));
  return t;
}

SessionOptions Config::session_options() const {
  SessionOptions o;
  o.mode = CaptureMode::daemon;
  o.only_tracked = false;
  o.libcuda_paths = libcuda;
  o.libhip_paths = libhip;
  o.device_specs = watch_dev;
  o.gpu_devices = gpu_devices;
  o.ring_bytes = ring_mb << 20;
  o.stack_depth = stack_depth;
  o.unwind = unwind;
  o.stack_copy_bytes = stack_copy;
  o.nccl_stall_s = nccl_stall_s;
  o.python_stacks = python_stacks;
  o.python_main_thread = python_main_thread;
  o.metrics_hz = metrics_hz;
  o.detail_interval_ms = detail_interval_ms;
  o.output = db;
  o.library_rescan_ms = static_cast<uint32_t>(std::min<uint64_t>(library_rescan_ms, UINT32_MAX));
  o.library_max_files = library_max_files;
  o.library_max_files_per_user = library_max_files_per_user;
  o.library_hold_ms = static_cast<uint32_t>(std::min<uint64_t>(library_hold_ms, 60000));
  return o;
}

Parsed parse_config(int argc, char** argv) {
  Parsed p;
  Config& c = p.config;
  CLI::App app{"gpuobsd " GPUOBS_VERSION ": record every GPU process on this host into segment files"};
  // Config-file keys are the long names; both spellings are accepted
  // (state_dir in the file, --state-dir on the command line).
  app.set_config("--config", kDefaultConfig, "configuration file (TOML or INI; a missing default file is fine)");
  app.add_option("--state-dir,--state_dir", c.state_dir, "directory of the segment files")->capture_default_str();
  app.add_option("--db", c.db, "write this one capture file instead of segments in --state-dir (no rotation)");
  app.add_option("--segment-max-bytes,--segment_max_bytes", c.segment_max_bytes,
                 "start a new segment when the current one reaches this size (e.g. 256MB)")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  app.add_option("--segment-max-age,--segment_max_age", c.segment_max_age_s,
                 "start a new segment when the current one is this old (s, min, h, d)")
      ->transform(duration_units())
      ->capture_default_str();
  app.add_option("--keep-segments,--keep_segments", c.keep_segments, "keep at most this many segments")
      ->capture_default_str();
  app.add_option("--keep-bytes,--keep_bytes", c.keep_bytes, "keep at most this many bytes of segments (e.g. 4GB)")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  app.add_option("--max-age,--max_age", c.max_age_s, "delete segments last written longer ago than this (0: never)")
      ->transform(duration_units())
      ->capture_default_str();
  // The options gpuobs record shares: one definition (capture/capture_options.h).
  add_capture_options(app,
                      CaptureOptionFields{&c.libcuda, &c.libhip, &c.watch_dev, &c.gpu_devices, &c.ring_mb,
                                          &c.stack_depth, &c.unwind, &c.stack_copy, &c.nccl_stall_s, &c.python_stacks,
                                          &c.metrics_hz, &c.detail_interval_ms, &c.python_main_thread},
                      true);
  app.add_option("--gpu-devices,--gpu_devices", c.gpu_devices, "watch GPU drivers' devices (true/false)");
  app.add_option("--library-rescan,--library_rescan", c.library_rescan_ms,
                 "read every process's maps for GPU libraries this often (e.g. 10s, 500ms; plain number: s)")
      ->transform(duration_ms())
      ->default_str("10s");
  app.add_option("--library-max-files,--library_max_files", c.library_max_files,
                 "attach GPU library files up to this many in all (1 to 4096)")
      ->check(whole_number(1, 4096u))
      ->capture_default_str();
  app.add_option("--library-max-files-per-user,--library_max_files_per_user", c.library_max_files_per_user,
                 "of them, files outside root-only system directories per owning user (0 to 4096)")
      ->check(whole_number(0, 4096u))
      ->capture_default_str();
  app.add_option("--library-hold,--library_hold", c.library_hold_ms,
                 "hold a process that maps a GPU library gpuobs has no probes on yet until they are made, at most "
                 "this long (e.g. 2s, 500ms; 0: never hold, its first calls may go unseen)")
      ->transform(duration_ms())
      ->check(whole_number(0, 60000))
      ->default_str("2s");
  app.add_option("-v,--log-level,--log_level", c.log_level, "trace, debug, info, warn, error, off")
      ->capture_default_str();
  app.add_option("--metrics-listen,--metrics_listen", c.metrics_listen,
                 "serve Prometheus metrics on this 127.0.0.1:PORT (empty: no listening socket)");
  app.add_option("--metrics-max-connections,--metrics_max_connections", c.metrics_max_connections,
                 "metrics connections served at once, 1 to 1024; more get 503 and are closed")
      ->check(whole_number(1, 1024))
      ->capture_default_str();
  app.add_option("--status-file,--status_file", c.status_file, "JSON health file rewritten every second")
      ->capture_default_str();
  app.add_option("--diff-baseline,--diff_baseline", c.diff_baseline,
                 "compare the current segment with this capture every --diff-interval, as gpuobs diff does, "
                 "into the status file and Prometheus (empty: off; docs/diff.md)");
  app.add_option("--diff-interval,--diff_interval", c.diff_interval_s, "how often to compare (s, min, h)")
      ->transform(duration_units())
      ->check(whole_number(10, 86400))
      ->capture_default_str();
  app.add_option("--diff-window,--diff_window", c.diff_window_s,
                 "compare the current segment's last this long (s, min, h)")
      ->transform(duration_units())
      ->check(whole_number(1, 86400))
      ->capture_default_str();
  app.add_option("--ship-url,--ship_url", c.ship_url,
                 "ship every finished segment to this ClickHouse (http://HOST:8123/?database=gpuobs; empty: off; "
                 "docs/operations.md, Fleet)");
  app.add_option("--ship-credentials,--ship_credentials", c.ship_credentials,
                 "file with 'user = NAME' and 'password = SECRET' for ship_url, readable only by gpuobsd's user");
  app.add_option("--ship-interval,--ship_interval", c.ship_interval_s,
                 "how often to look for segments to ship (s, min, h; a rotation also starts a pass)")
      ->transform(duration_units())
      ->check(whole_number(1, 86400))
      ->capture_default_str();
  app.set_version_flag("--version", GPUOBS_VERSION);
  bool print_config = false;
  app.add_flag("--print-config", print_config,
               "check the configuration, print the options in effect (config-file syntax) and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    p.exit_code = rc == 0 ? 0 : 2;
    return p;
  }
  if (auto st = check_capture_options(c.unwind, c.stack_copy, "stack_copy"); !st) {
    std::fprintf(stderr, "gpuobsd: error: %s\n", st.error().message.c_str());
    p.exit_code = 2;
    return p;
  }
  // A '#' inside quotes in the file cuts the value there and leaves its
  // opening quote: refuse it rather than run with a wrong path.
  for (const auto& [key, v] : string_options(c))
    if (!v->empty() && (v->front() == '"' || v->front() == '\'')) {
      std::fprintf(stderr,
                   "gpuobsd: error: %s begins with a quote: %s (a '#' starts a comment in the config file, "
                   "even inside quotes)\n",
                   key, v->c_str());
      p.exit_code = 2;
      return p;
    }
  if (print_config) {
    if (auto key = config_unwritable(c)) {
      std::fprintf(stderr,
                   "gpuobsd: error: %s cannot be written in a config file ('#', a line break, or both kinds "
                   "of quote)\n",
                   key->c_str());
      p.exit_code = 2;
      return p;
    }
    std::printf("%s", config_text(c).c_str());
    p.exit_code = 0;
    return p;
  }
  if (auto* o = app.get_option("--config"); o && !o->empty()) c.config_file = o->as<std::string>();
  return p;
}

ConfigChange diff_config(const Config& a, const Config& b) {
  ConfigChange ch;
  auto note = [&](bool changed, const char* name, bool live) {
    if (changed) (live ? ch.applied : ch.need_restart).push_back(name);
  };
  note(a.log_level != b.log_level, "log_level", true);
  note(a.segment_max_bytes != b.segment_max_bytes, "segment_max_bytes", true);
  note(a.segment_max_age_s != b.segment_max_age_s, "segment_max_age", true);
  note(a.keep_segments != b.keep_segments, "keep_segments", true);
  note(a.keep_bytes != b.keep_bytes, "keep_bytes", true);
  note(a.max_age_s != b.max_age_s, "max_age", true);
  note(a.status_file != b.status_file, "status_file", true);
  note(a.state_dir != b.state_dir, "state_dir", false);
  note(a.db != b.db, "db", false);
  note(a.libcuda != b.libcuda, "libcuda", false);
  note(a.libhip != b.libhip, "libhip", false);
  note(a.watch_dev != b.watch_dev, "watch_dev", false);
  note(a.gpu_devices != b.gpu_devices, "gpu_devices", false);
  note(a.ring_mb != b.ring_mb, "ring_mb", false);
  note(a.stack_depth != b.stack_depth, "stack_depth", false);
  note(a.unwind != b.unwind, "unwind", false);
  note(a.stack_copy != b.stack_copy, "stack_copy", false);
  note(a.nccl_stall_s != b.nccl_stall_s, "nccl_stall", false);
  note(a.python_stacks != b.python_stacks, "python_stacks", false);
  note(a.python_main_thread != b.python_main_thread, "python_main_thread", false);
  note(a.metrics_hz != b.metrics_hz, "metrics_hz", false);
  note(a.detail_interval_ms != b.detail_interval_ms, "detail_interval_ms", false);
  note(a.metrics_listen != b.metrics_listen, "metrics_listen", false);
  note(a.metrics_max_connections != b.metrics_max_connections, "metrics_max_connections", false);
  note(a.library_rescan_ms != b.library_rescan_ms, "library_rescan", false);
  note(a.library_max_files != b.library_max_files, "library_max_files", false);
  note(a.library_max_files_per_user != b.library_max_files_per_user, "library_max_files_per_user", false);
  note(a.library_hold_ms != b.library_hold_ms, "library_hold", false);
  note(a.diff_baseline != b.diff_baseline, "diff_baseline", false);
  note(a.diff_interval_s != b.diff_interval_s, "diff_interval", false);
  note(a.diff_window_s != b.diff_window_s, "diff_window", false);
  note(a.ship_url != b.ship_url, "ship_url", false);
  note(a.ship_credentials != b.ship_credentials, "ship_credentials", false);
  note(a.ship_interval_s != b.ship_interval_s, "ship_interval", false);
  return ch;
}

Config apply_live(const Config& current, const Config& next) {
  Config out = current;
  out.log_level = next.log_level;
  out.segment_max_bytes = next.segment_max_bytes;
  out.segment_max_age_s = next.segment_max_age_s;
  out.keep_segments = next.keep_segments;
  out.keep_bytes = next.keep_bytes;
  out.max_age_s = next.max_age_s;
  out.status_file = next.status_file;
  return out;
}

}  // namespace gpuobs::daemon
