// gpuobs status: is gpuobsd up, and how is it doing (its status file);
// gpuobs segments: the segment files kept in the state directory.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "common/human_bytes.h"
#include "common/log.h"
#include "common/terminal_text.h"
#include "daemon_state/health_json.h"
#include "daemon_state/segments.h"
#include "report/query.h"
#include "store/schema.h"

namespace gpuobs::cli {
namespace {

// The daemon rewrites the file every second: older than this, it is stuck or gone.
constexpr int64_t kStaleAfterS = 5;

std::string utc(int64_t unix_s) {
  time_t t = static_cast<time_t>(unix_s);
  struct tm tm {};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// The health document as key,value rows: "segments.0.path" for nested values.
void flatten(const nlohmann::json& j, const std::string& prefix, QueryResult& out) {
  if (j.is_object() || j.is_array()) {
    size_t i = 0;
    for (auto it = j.begin(); it != j.end(); ++it, ++i)
      flatten(*it, prefix + (prefix.empty() ? "" : ".") + (j.is_object() ? it.key() : std::to_string(i)), out);
    return;
  }
  Cell v;
  if (j.is_number_integer()) v = j.get<int64_t>();
  else if (j.is_number()) v = j.get<double>();
  else if (j.is_boolean()) v = int64_t{j.get<bool>()};
  else if (j.is_string()) v = j.get<std::string>();
  out.rows.push_back({prefix, v});
}

}  // namespace

int run_status(const StatusArgs& a) {
  auto fmt = parse_format(a.format);
  if (!fmt) {
    print_error("gpuobs status", fmt.error());
    return 2;
  }
  std::ifstream in(a.status_file);
  nlohmann::json j;
  std::string why;
  std::optional<HealthSnapshot> h;
  if (!in) {
    // Not there and not ours to read are different answers: the second one
    // says the daemon may well be up.
    int e = 0;
    if (int fd = ::open(a.status_file.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) ::close(fd);
    else e = errno;
    if (e == EACCES || e == EPERM) {
      print_error("gpuobs status",
                  make_error("permission denied reading " + a.status_file,
                             "members of group gpuobs can read it (sudo usermod -aG gpuobs $USER), or run as root", 4));
      return 4;
    }
    why = e == ENOENT ? "no status file " + a.status_file : a.status_file + ": " + std::strerror(e);
  } else {
    try {
      j = nlohmann::json::parse(in);
      auto parsed = health_from_json(j);
      if (parsed) h = *parsed;
      else why = parsed.error().message;
    } catch (const nlohmann::json::exception& e) { why = a.status_file + " is not JSON: " + e.what(); }
  }
  bool alive = false, fresh = false;
  int64_t age = 0;
  if (h) {
    alive = h->pid > 0 && (::kill(static_cast<pid_t>(h->pid), 0) == 0 || errno == EPERM);
    age = static_cast<int64_t>(::time(nullptr)) - h->sampled_unix_s;
    fresh = age <= kStaleAfterS;
    if (!alive) why = "pid " + std::to_string(h->pid) + " is not running";
    else if (!fresh) why = "status last written " + std::to_string(age) + " s ago";
  }
  bool up = alive && fresh;
  if (*fmt != OutputFormat::table) {
    nlohmann::json out = h ? to_json(*h) : nlohmann::json::object();
    out["up"] = up;
    if (!up) out["reason"] = why;
    if (*fmt == OutputFormat::json) {
      std::printf("%s\n", out.dump(2).c_str());
    } else {  // csv: one key,value row per value of the JSON document, keys as dotted paths
      QueryResult r;
      r.columns = {"key", "value"};
      flatten(out, "", r);
      std::fflush(stdout);
      print_result(r, OutputFormat::csv, std::cout);
    }
    return up ? 0 : 3;
  }
  std::printf("gpuobsd:        %s\n", up ? "up" : ("not running (" + why + ")").c_str());
  if (!h) return 3;
  std::printf("version:        %s (pid %u, started %s)\n", h->version.c_str(), h->pid, utc(h->started_unix_s).c_str());
  std::printf("sampled:        %s (%lld s ago)\n", utc(h->sampled_unix_s).c_str(), static_cast<long long>(age));
  std::printf("events:         %.0f/s, %llu total\n", h->events_per_s,
              static_cast<unsigned long long>(h->events_total));
  std::printf("dropped:        %llu\n", static_cast<unsigned long long>(h->drops_total));
  std::printf("not stored:     %llu\n", static_cast<unsigned long long>(h->store_failed));
  std::printf("attach failures: %llu\n", static_cast<unsigned long long>(h->attach_failures));
  // Whether the segment being written can say it saw everything (issue 37).
  if (!h->capture_state.empty()) std::printf("capture:        %s\n", terminal_safe(h->capture_state).c_str());
  std::printf(
      "holds:          %llu processes held at their first mapping of a GPU library (longest %.1f ms, %llu "
      "timed out); %llu mappings could call a library unseen%s\n",
      static_cast<unsigned long long>(h->library_holds), h->library_hold_max_ms,
      static_cast<unsigned long long>(h->library_hold_timeouts),
      static_cast<unsigned long long>(h->calls_before_attach),
      h->first_miss.empty() ? "" : (" (first: " + terminal_safe(h->first_miss) + ")").c_str());
  std::printf("batches lost:   %llu\n", static_cast<unsigned long long>(h->store_failed_batches));
  std::printf("emergency deletions: %llu (segments deleted on a full disk)\n",
              static_cast<unsigned long long>(h->emergency_deletions));
  std::printf("NCCL stalls:    %llu (gpuobs report nccl_stalls)\n", static_cast<unsigned long long>(h->nccl_stalls));
  if (!h->diff_baseline.empty()) {
    std::printf(
        "diff:           %llu series regressed (worst %.2fx), %llu new kernels against %s; %llu comparisons, "
        "%llu errors\n",
        static_cast<unsigned long long>(h->diff_regressed), h->diff_worst_ratio,
        static_cast<unsigned long long>(h->diff_new_kernels), terminal_safe(h->diff_baseline).c_str(),
        static_cast<unsigned long long>(h->diff_comparisons), static_cast<unsigned long long>(h->diff_errors));
    if (!h->diff_last_error.empty()) std::printf("  last error: %s\n", terminal_safe(h->diff_last_error).c_str());
  }
  if (!h->ship_url.empty()) {
    std::printf(
        "shipping:       to %s: %llu segments (%llu rows) shipped, backlog %llu segments (%llu bytes), "
        "%llu failures, %llu deleted unshipped (disk full), %llu unshippable\n",
        terminal_safe(h->ship_url).c_str(), static_cast<unsigned long long>(h->ship_segments),
        static_cast<unsigned long long>(h->ship_rows), static_cast<unsigned long long>(h->ship_backlog_segments),
        static_cast<unsigned long long>(h->ship_backlog_bytes), static_cast<unsigned long long>(h->ship_failures),
        static_cast<unsigned long long>(h->unshipped_deleted), static_cast<unsigned long long>(h->ship_unshippable));
    if (!h->ship_last_error.empty()) std::printf("  last error: %s\n", terminal_safe(h->ship_last_error).c_str());
  }
  std::printf("metrics:        %llu connections open, %llu refused, %llu accept backoffs\n",
              static_cast<unsigned long long>(h->metrics_connections),
              static_cast<unsigned long long>(h->metrics_connections_refused),
              static_cast<unsigned long long>(h->metrics_accept_backoffs));
  std::printf("libraries:\n");
  for (const auto& l : h->libraries)
    std::printf("  %s: %d probes attached, %d failed\n", terminal_safe(l.path).c_str(), l.probes_attached,
                l.probes_failed);
  if (h->libraries.empty()) std::printf("  (none)\n");
  std::printf("GPU processes:  %zu\n", h->processes.size());
  if (!h->gpu_metrics.empty()) {
    std::printf("GPU metrics:    %s, %llu query errors\n", terminal_safe(h->gpu_metrics).c_str(),
                static_cast<unsigned long long>(h->gpu_metric_query_errors));
    // The few values people look at first; gpuobs report gpu_sum has them all.
    for (const auto& g : h->gpus) {
      std::string line;
      for (const char* key : {"gpu_util_pct", "sm_active_pct", "mem_used_bytes", "power_mw", "temperature_c"})
        for (const auto& [name, v] : g.metrics)
          if (name == key) line += fmt::format("  {} {:g}", name, v);
      std::printf("  %s %s:%s\n", terminal_safe(g.uuid).c_str(), terminal_safe(g.name).c_str(), line.c_str());
    }
  }
  std::printf("segment:        %s (%s)\n", terminal_safe(h->segment_path).c_str(),
              human_bytes(h->segment_bytes).c_str());
  std::printf("segments kept:  %llu (%s)\n", static_cast<unsigned long long>(h->segments),
              human_bytes(h->storage_bytes).c_str());
  return up ? 0 : 3;
}

int run_segments(const SegmentsArgs& a) {
  auto fmt = parse_format(a.format);
  if (!fmt) {
    print_error("gpuobs segments", fmt.error());
    return 2;
  }
  auto all = segments::list(a.state_dir);
  std::string current;
  if (auto c = segments::current(a.state_dir)) current = *c;
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& s : all) {
    nlohmann::json r{{"segment", s.seq}, {"path", s.path}, {"bytes", s.bytes}, {"current", s.path == current}};
    // A segment being written (or one whose daemon was killed) has no end yet.
    if (auto db = open_capture_readonly(s.path)) {
      auto off = db->scalar("SELECT clock_offset_ns FROM capture");
      auto start = db->scalar("SELECT start_mono_ns FROM capture");
      auto end = db->scalar("SELECT coalesce(end_mono_ns, -1) FROM capture");
      auto launches = db->scalar("SELECT coalesce(sum(launches), 0) FROM launch_agg");
      if (off && start) r["start"] = utc((*start + *off) / 1000000000);
      if (off && end && *end >= 0) r["end"] = utc((*end + *off) / 1000000000);
      if (launches) r["launches"] = *launches;
    } else {
      r["error"] = db.error().message;
    }
    rows.push_back(r);
  }
  if (*fmt == OutputFormat::json) {
    std::printf("%s\n", rows.dump(2).c_str());
    return 0;
  }
  if (*fmt == OutputFormat::csv) {
    // The JSON's fields as columns; what a segment lacks (no end yet, an
    // unreadable file's launches) is an empty cell.
    QueryResult r;
    r.columns = {"segment", "path", "bytes", "current", "start", "end", "launches", "error"};
    auto text = [](const nlohmann::json& row, const char* k) {
      return row.contains(k) ? Cell{row[k].get<std::string>()} : Cell{};
    };
    for (const auto& row : rows)
      r.rows.push_back({row["segment"].get<int64_t>(), row["path"].get<std::string>(),
                        static_cast<int64_t>(row["bytes"].get<uint64_t>()), int64_t{row["current"].get<bool>()},
                        text(row, "start"), text(row, "end"),
                        row.contains("launches") ? Cell{row["launches"].get<int64_t>()} : Cell{}, text(row, "error")});
    std::fflush(stdout);
    print_result(r, OutputFormat::csv, std::cout);
    return 0;
  }
  std::printf("%-4s %-21s %-21s %10s %10s  %s\n", "seq", "start", "end", "size", "launches", "path");
  for (const auto& r : rows)
    std::printf("%-4lld %-21s %-21s %10s %10s  %s%s\n", r["segment"].get<long long>(),
                r.value("start", std::string("?")).c_str(), r.value("end", std::string("-")).c_str(),
                human_bytes(r["bytes"].get<uint64_t>()).c_str(),
                r.contains("launches") ? std::to_string(r["launches"].get<int64_t>()).c_str() : "?",
                terminal_safe(r["path"].get<std::string>()).c_str(), r["current"].get<bool>() ? " (current)" : "");
  if (rows.empty()) std::printf("(no segments in %s)\n", a.state_dir.c_str());
  return 0;
}

Result<std::vector<std::string>> resolve_captures(const std::vector<std::string>& files, const std::string& segment,
                                                  const std::string& state_dir) {
  if (!segment.empty() && !files.empty()) return make_error("give capture files or --segment, not both", "", 2);
  if (!segment.empty()) return segments::select(state_dir, segment);
  if (!files.empty()) return files;
  auto cur = segments::current(state_dir);
  if (!cur) return cur.error();
  return std::vector<std::string>{*cur};
}

}  // namespace gpuobs::cli
