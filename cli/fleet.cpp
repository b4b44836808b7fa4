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
#include "fleet/distributed_schema.h"
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

// clickhouse init --distributed: the query node's database over the shards.
int init_distributed(const fleet::ClickHouse& ch, const FleetArgs& args) {
  const std::string shard_db = args.shard_database.empty() ? "gpuobs" : args.shard_database;
  auto d = fleet::init_distributed_schema(ch, args.cluster, shard_db);
  if (!d) {
    print_error("gpuobs clickhouse init", d.error());
    return d.error().exit_code;
  }
  for (const auto& t : d->remade)
    std::fprintf(stderr, "gpuobs clickhouse init: %s made again: its columns or cluster had changed\n", t.c_str());
  std::printf(
      "gpuobs: ClickHouse %s ready: %zu Distributed tables over cluster %s (%llu shards, database %s on "
      "each), gpuobs schema version %u\n",
      ch.endpoint().display().c_str(), d->tables.size(), args.cluster.c_str(),
      static_cast<unsigned long long>(d->shards), shard_db.c_str(), d->version);
  return 0;
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
  if (!args.cluster.empty()) return init_distributed(*ch, args);
  if (!args.shard_database.empty()) {
    print_error("gpuobs clickhouse init", make_error("--shard-database needs --distributed CLUSTER", {}, 2));
    return 2;
  }
  // A query node's database of Distributed tables: a table it lacks would
  // be made an empty MergeTree one, which the reports would then read
  // instead of the shards' rows.
  auto src = fleet::distributed_source(*ch);
  if (!src) {
    print_error("gpuobs clickhouse init", src.error());
    return 1;
  }
  if (!src->cluster.empty()) {
    print_error(
        "gpuobs clickhouse init",
        make_error("database " + ch->endpoint().database + " holds Distributed tables over cluster " + src->cluster +
                       ": it is a query node's database, not a shard's",
                   "gpuobs clickhouse init URL --distributed " + src->cluster + " --shard-database " +
                       (src->shard_database.empty() ? "gpuobs" : src->shard_database) + " brings it up to date"));
    return 1;
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
