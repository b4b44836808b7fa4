// gpuobs subcommands. Each returns the process exit status.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "capture/session.h"

namespace gpuobs::cli {

struct RecordArgs {
  SessionOptions session;
  std::vector<std::string> command;
  // --gpu-time: CUPTI's kernel/copy/memset times, joined to the capture's
  // calls after the command exits (capture/gpu_time_import.h).
  bool gpu_time = false;
  // --verbose: record's summary adds the probe counts and the absent sources.
  bool verbose = false;
};
int run_record(RecordArgs& args);
// For `gpuobs [global options] record [options] [--] CMD ARGS...`: removes
// CMD ARGS... from args and returns them (empty when args is not a record
// command line). The command starts after "--", or at the first word that is
// neither an option nor the value of an option that takes one.
std::vector<std::string> split_record_command(std::vector<std::string>& args);

// gpuobsd's state directory: report, sql and stacks read its `current`
// segment when no file is given (userspace/daemon_state/segments.h).
// (gpuobsd --db's old default; main.cpp always passes the resolved file.)
inline constexpr const char* kDaemonCapture = "/var/lib/gpuobs/current";  // gpuobsd's current segment
inline constexpr const char* kDaemonStateDir = "/var/lib/gpuobs";
inline constexpr const char* kDaemonStatusFile = "/run/gpuobs/status.json";

// The captures a command reads: the files given, the segments --segment
// selects (N, all, FROM..TO) in state_dir, or else state_dir/current.
Result<std::vector<std::string>> resolve_captures(const std::vector<std::string>& files, const std::string& segment,
                                                  const std::string& state_dir);

struct StatusArgs {
  std::string status_file = kDaemonStatusFile;
  std::string format = "table";
};
// Exit status 0: gpuobsd up; 3: not running (or not writing its status).
int run_status(const StatusArgs& args);

struct SegmentsArgs {
  std::string state_dir = kDaemonStateDir;
  std::string format = "table";
};
int run_segments(const SegmentsArgs& args);

struct ReportArgs {
  std::string name;
  std::string file;
  std::string format = "table";
  bool list = false;
  // Filters, bound to the reports' :pid, :process, :since_s, :until_s.
  int64_t pid = 0;
  std::string process;
  double since_s = -1, until_s = -1;  // seconds since the capture started; < 0: unset
  // Durations (*_ns columns) in ns, us, ms or s; empty: ns in JSON and CSV,
  // in a table each column in the unit that reads best.
  std::string timeunit;
  // --clickhouse URL: run the report there, over every shipped host
  // (--host: one), --since/--until then wall-clock seconds since the epoch.
  std::string clickhouse, credentials, host;
};
int run_report(const ReportArgs& args);
int run_fleet_report(const ReportArgs& args);
std::string fleet_report_names();  // "kern_sum, api_sum, ..."

struct SqlArgs {
  std::string query;
  std::string file;
  std::vector<std::string> params;  // name=value
  std::string format = "table";
};
int run_sql(const SqlArgs& args);

struct StackArgs {
  std::string file;
  std::string by = "launches";  // launches, calls, copied, allocated, blocked, ioctls
  std::string kernel;
  std::string api;
  int64_t pid = 0;
  size_t top = 10;
  std::string format = "table";
  std::string output;       // export: file to write (default stdout)
  bool force = false;       // export: replace an existing output file
  bool full_names = false;  // stacks' table: whole demangled names (default: folded, common/short_name.h)
  bool by_process = false;  // export folded, pprof: root every stack at its process (comm;pid N)
};
int run_stacks(const StackArgs& args);
int run_export_folded(const StackArgs& args);

struct ReplayArgs {
  std::string file;
  std::string format = "table";  // table or json
  bool no_write = false;         // print only; leave the capture untouched
  // --check: of the GPU times measured with --gpu-time, how many fall inside
  // the replay's window of their operation (exit 1 when one does not).
  bool check = false;
  // --schedule-out PATH: the capture's schedule as JSON (docs/replay.md
  // "Schedule"), with the part and the "what if" edits below; the capture is
  // not written.
  std::string schedule_out;
  // --chakra-out PATH: the same schedule as an MLCommons Chakra execution
  // trace (docs/export.md "Chakra"); the capture is not written.
  std::string chakra_out;
  std::optional<uint32_t> pid;     // --pid: one process
  std::string window;              // --window FROM:TO, seconds after the capture's start
  double speed = 1.0;              // --speed: host gaps divided by it
  bool no_host_gaps = false;       // --no-host-gaps
  bool drop_syncs = false;         // --drop-syncs: every host sync
  std::vector<int64_t> drop_sync;  // --drop-sync N: the sync whose replay_observations id is N
  std::vector<std::string> merge;  // --merge FROM:INTO queue ids
  // --execute: the schedule run on this host's GPU by gpuobs_replay_exec
  // under gpuobs record, --runs times, each compared with the original
  // (docs/replay.md "Execute"); the comparison is written into the capture.
  bool execute = false;
  int runs = 1;
  std::string exec_out;  // --exec-out PREFIX: PREFIX.schedule.json, PREFIX.N.gpuobs (default FILE's stem.exec)
  std::string cuda_lib;  // --cuda-lib: the libcuda the executor loads and record probes
  std::string exec_gpu_time = "auto";  // --exec-gpu-time on/off/auto (auto: when the original has GPU times)
};
int run_replay(const ReplayArgs& args);

// gpuobs's own executable file (cli/record.cpp): what sits beside it is found from it.
std::string self_exe();

// gpuobs diff BASE NEW (cli/diff.cpp, docs/diff.md). Exit status 0: no
// --fail-on threshold crossed; 1: one was (the verdict line says which); 2:
// bad input.
struct DiffArgs {
  std::vector<std::string> files;     // BASE NEW, or one capture with two windows
  std::string base_segment, segment;  // gpuobsd segment ranges instead of files
  std::string state_dir = kDaemonStateDir;
  double base_since_s = -1, base_until_s = -1, since_s = -1, until_s = -1;  // < 0: open
  int64_t pid = 0;
  std::string process, kernel;
  bool no_stacks = false;
  std::string per = "run";  // run, second, step
  std::string step_kernel, step_api;
  double alpha = 0.01, min_change_pct = 10, min_effect = 0.6, min_impact_pct = 0.1;
  std::string fail_on;
  bool all = false;  // every row, unchanged ones too
  std::string format = "table";
  std::string timeunit;
};
int run_diff(const DiffArgs& args);

// gpuobs export perfetto / chrome / pprof (cli/export.cpp, docs/export.md).
struct TimelineExportArgs {
  std::string file;
  std::string output;   // required
  bool chrome = false;  // Chrome JSON instead of Perfetto protobuf
  bool force = false;   // replace an existing output file
};
int run_export_timeline(const TimelineExportArgs& args);
// gpuobs export html: one self-contained page (docs/export.md, "HTML").
struct HtmlExportArgs {
  std::string file;
  std::string output;  // required
  bool force = false;
  double since_s = -1, until_s = -1;  // the timeline's window; < 0: unset
};
int run_export_html(const HtmlExportArgs& args);
int run_export_pprof(const StackArgs& args);  // output: required; by: default_sample_type

// gpuobs check FILE... (cli/check.cpp): PRAGMA integrity_check of each
// capture. Exit status 0: intact; 1: corrupt; 2: not a readable capture.
struct CheckArgs {
  std::vector<std::string> files;
};
int run_check(const CheckArgs& args);

// gpuobs summary [FILE] (cli/summary.cpp): the capture's story on one screen.
struct SummaryArgs {
  std::string file;
  std::string html;  // an HTML report of it to name (the demo writes one)
};
int run_summary(const SummaryArgs& args);

// gpuobs upgrade FILE... (cli/upgrade.cpp): migrates captures of older
// schemas in place. Exit status 0: upgraded or already current; 2: not done.
struct UpgradeArgs {
  std::vector<std::string> files;
};
int run_upgrade(const UpgradeArgs& args);

// gpuobs ship FILE...|--segment N --to URL and gpuobs clickhouse init URL
// (cli/fleet.cpp; docs/operations.md, "Fleet"). Exit status 0: shipped (or
// already there); 1: ClickHouse refused or could not be reached; 2: bad input.
struct FleetArgs {
  std::vector<std::string> files;
  std::string segment, state_dir = kDaemonStateDir;
  std::string url;          // http://HOST:8123/?database=gpuobs
  std::string credentials;  // a file: user = NAME, password = SECRET
  std::string format = "table";
  // clickhouse init --distributed: the cluster, and the database its shards
  // hold (docs/operations.md, "Fleet", "A cluster")
  std::string cluster, shard_database;
};
int run_ship(const FleetArgs& args);
int run_clickhouse_init(const FleetArgs& args);

}  // namespace gpuobs::cli
