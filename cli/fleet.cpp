// gpuobs ship, gpuobs clickhouse init and gpuobs report --clickhouse: the
// fleet commands (docs/operations.md, "Fleet").
#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "common/log.h"
#include "daemon_state/segments.h"
#include "fleet/clickhouse_client.h"
#include "fleet/fleet_reports.h"
#include "fleet/fleet_schema.h"
#include "fleet/shipper.h"
#include "report/query.h"

namespace gpuobs::cli {
namespace {

Result<fleet::ClickHouse> connect(const std::string& url, const std::string& credentials) {
  // A server that closes the connection mid-request is an error to report,
  // not a SIGPIPE that ends gpuobs silently (libcurl runs with NOSIGNAL).
  ::signal(SIGPIPE, SIG_IGN);
  auto ep = fleet::parse_endpoint(url, credentials);
  if (!ep) return ep.error();
  return fleet::ClickHouse(*ep);
}

}  // namespace

std::string fleet_report_names() {
  std::string out;
  for (const auto& n : fleet::fleet_report_names()) out += (out.empty() ? "" : ", ") + n;
  return out;
}

int run_clickhouse_init(const FleetArgs& args) {
  auto ch = connect(args.url, args.credentials);
  if (!ch) {
    print_error("gpuobs clickhouse init", ch.error());
    return ch.error().exit_code;
  }
  if (auto s = fleet::init_schema(*ch); !s) {
    print_error("gpuobs clickhouse init", s.error());
    return 1;
  }
  std::printf("gpuobs: ClickHouse %s ready: gpuobs schema version %u\n", ch->endpoint().display().c_str(),
              fleet::kFleetSchemaVersion);
  return 0;
}

int run_ship(const FleetArgs& args) {
  auto ch = connect(args.url, args.credentials);
  if (!ch) {
    print_error("gpuobs ship", ch.error());
    return ch.error().exit_code;
  }
  auto fmt = parse_format(args.format);
  if (!fmt) {
    print_error("gpuobs ship", fmt.error());
    return 2;
  }
  if (args.files.empty() && args.segment.empty()) {
    print_error("gpuobs ship", make_error("nothing to ship", "name capture files or --segment N|FROM..TO|all", 2));
    return 2;
  }
  auto files = resolve_captures(args.files, args.segment, args.state_dir);
  if (!files) {
    print_error("gpuobs ship", files.error());
    return files.error().exit_code;
  }
  // gpuobsd's current segment is still being written: shipping it now
  // would record in the ledger tables that grow later. gpuobsd ships it
  // once it rotates.
  if (auto cur = segments::current(args.state_dir)) {
    std::error_code ec;
    auto cur_path = std::filesystem::canonical(*cur, ec);
    std::vector<std::string> keep;
    for (const auto& f : *files) {
      std::error_code fe;
      auto p = std::filesystem::canonical(f, fe);
      if (!ec && !fe && p == cur_path) {
        std::fprintf(stderr, "gpuobs ship: %s is gpuobsd's current segment, still being written: not shipped\n",
                     f.c_str());
        continue;
      }
      keep.push_back(f);
    }
    *files = std::move(keep);
  }
  QueryResult r;
  r.columns = {"capture", "host", "segment", "rows_sent", "bytes_sent", "tables_sent", "already_there", "repaired"};
  int rc = 0;
  for (const auto& f : *files) {
    auto st = fleet::ship_capture(*ch, f);
    if (!st) {
      print_error("gpuobs ship", make_error(f + ": " + st.error().message, st.error().hint));
      rc = st.error().exit_code == 2 ? 2 : 1;
      continue;
    }
    if (!st->tables_missing.empty()) {
      std::string names;
      for (const auto& t : st->tables_missing) names += (names.empty() ? "" : ", ") + t;
      std::fprintf(stderr,
                   "gpuobs ship: %s: not sent: %s (the database has no such table; gpuobs clickhouse init adds it)\n",
                   f.c_str(), names.c_str());
    }
    if (!st->columns_missing.empty()) {
      std::string names;
      for (const auto& c : st->columns_missing) names += (names.empty() ? "" : ", ") + c;
      std::fprintf(stderr,
                   "gpuobs ship: %s: columns not sent: %s (the database's tables lack them; gpuobs clickhouse init "
                   "adds them)\n",
                   f.c_str(), names.c_str());
    }
    r.rows.push_back({f, st->host, static_cast<int64_t>(st->segment), static_cast<int64_t>(st->rows_sent),
                      static_cast<int64_t>(st->bytes_sent), static_cast<int64_t>(st->tables_sent),
                      static_cast<int64_t>(st->tables_already_there + st->tables_skipped),
                      static_cast<int64_t>(st->tables_repaired)});
  }
  print_result(r, *fmt, std::cout);
  return rc;
}

int run_fleet_report(const ReportArgs& args) {
  // A pid names a process on one host only: across a fleet it would match
  // whichever processes had that number on every host.
  if (args.pid > 0 && args.host.empty()) {
    print_error("gpuobs report", make_error("--pid with --clickhouse needs --host: a pid names a process on one host",
                                            "add --host HOST (the host name the captures carry)", 2));
    return 2;
  }
  auto ch = connect(args.clickhouse, args.credentials);
  if (!ch) {
    print_error("gpuobs report", ch.error());
    return ch.error().exit_code;
  }
  auto fmt = parse_format(args.format);
  if (!fmt) {
    print_error("gpuobs report", fmt.error());
    return 2;
  }
  fleet::FleetFilter f;
  f.host = args.host;
  if (args.pid > 0) f.pid = args.pid;
  f.process = args.process;
  if (args.since_s >= 0) f.since_s = args.since_s;
  if (args.until_s >= 0) f.until_s = args.until_s;
  int rc = 0;
  std::string names = args.name;
  size_t pos = 0;
  bool many = names.find(',') != std::string::npos;
  while (pos <= names.size()) {
    size_t comma = names.find(',', pos);
    std::string name = names.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    auto r = fleet::run_fleet_report(*ch, name, f);
    if (!r) {
      print_error("gpuobs report", r.error());
      rc = r.error().exit_code;
    } else {
      if (many) std::printf("%s== %s ==\n", pos == 0 ? "" : "\n", name.c_str());
      if (*fmt == OutputFormat::table && args.timeunit.empty()) convert_time_units_for_reading(*r);
      if (!args.timeunit.empty()) {
        std::string suffix;
        auto d = time_unit_divisor(args.timeunit, &suffix);
        if (!d) {
          print_error("gpuobs report", d.error());
          return 2;
        }
        convert_time_unit(*r, *d, suffix);
      }
      std::fflush(stdout);
      print_result(*r, *fmt, std::cout);
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return rc;
}

}  // namespace gpuobs::cli
