// gpuobsd's options: /etc/gpuobs/gpuobsd.conf (TOML/INI, read by CLI11) with
// every option also on the command line, where it wins over the file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "capture/capture_options.h"
#include "capture/session.h"
#include "common/modes.h"
#include "common/result.h"

namespace gpuobs::daemon {

inline constexpr const char* kDefaultConfig = "/etc/gpuobs/gpuobsd.conf";

struct Config {
  std::string config_file;
  std::string db;  // one fixed capture file, no segments (the walking skeleton's mode)
  std::string state_dir = "/var/lib/gpuobs";
  uint64_t segment_max_bytes = 256ull << 20;
  uint64_t segment_max_age_s = 3600;
  uint64_t keep_segments = 48;
  uint64_t keep_bytes = 4ull << 30;
  uint64_t max_age_s = 0;  // 0: no age limit
  std::vector<std::string> libcuda, libhip, watch_dev;
  bool gpu_devices = true;
  // The capture options, as gpuobs record has them (capture/capture_options.h).
  uint32_t ring_mb = kRingMbDefault;
  uint32_t nccl_stall_s = kNcclStallDefaultS;
  bool python_stacks = true;
  bool python_main_thread = true;
  uint32_t metrics_hz = kMetricsHzDefault;                 // GPU metrics sampled per second (0: off)
  uint32_t detail_interval_ms = kDetailIntervalMsDefault;  // GPM averaged over this long
  uint32_t stack_depth = kStackDepthDefault;
  UnwindMode unwind = UnwindMode::fp;
  uint32_t stack_copy = kStackCopyDefault;
  uint64_t library_rescan_ms = 10000;  // rescan every process's maps for GPU libraries
  // Library files with probes: in all, and untrusted ones per owning user
  // (docs/operations.md, "Bounds"). A refusal is logged and counted.
  uint32_t library_max_files = 64;
  uint32_t library_max_files_per_user = 8;
  // Hold a process at its first mapping of an unprobed GPU library, at most
  // this long (bpf/library.bpf.h; 0: never).
  uint64_t library_hold_ms = 2000;
  std::string log_level = "info";
  std::string metrics_listen;             // empty: no listening socket
  uint64_t metrics_max_connections = 16;  // served at once; more get 503 and are closed
  std::string status_file = "/run/gpuobs/status.json";
  // Rolling comparison (daemon/diff_watch.h): off while diff_baseline is empty.
  std::string diff_baseline;
  uint64_t diff_interval_s = 300;  // how often
  uint64_t diff_window_s = 300;    // the current segment's last this many seconds
  // Shipping to ClickHouse (daemon/fleet_ship.h): off while ship_url is empty.
  std::string ship_url;           // http://HOST:8123/?database=gpuobs
  std::string ship_credentials;   // a file: user = NAME, password = SECRET (mode 600)
  uint64_t ship_interval_s = 60;  // how often to look for finished segments (a rotation also wakes it)

  SessionOptions session_options() const;
};

// Parses argv (and the config file it names or the default one, if present).
// exit_code >= 0: stop now with it (--help, --version, a parse error; CLI11
// has printed the message).
struct Parsed {
  Config config;
  int exit_code = -1;
};
Parsed parse_config(int argc, char** argv);

// The options in effect, one `key = value` line each, in the config file's
// syntax (gpuobsd --print-config).
std::string config_text(const Config& c);
// The key of a value config_text() cannot write so that it reads back ('#',
// a line break, or both kinds of quote), if any; --print-config refuses it.
std::optional<std::string> config_unwritable(const Config& c);

// SIGHUP: what changed between two configs, applied or not.
struct ConfigChange {
  std::vector<std::string> applied;       // option names that take effect now
  std::vector<std::string> need_restart;  // changed, but only a restart applies them
};
ConfigChange diff_config(const Config& before, const Config& after);
// SIGHUP: `current` with the options that take effect now (diff_config's
// `applied` ones) taken from `next`; the others stay until a restart.
Config apply_live(const Config& current, const Config& next);

}  // namespace gpuobs::daemon
