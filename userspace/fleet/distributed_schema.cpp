#include "fleet/distributed_schema.h"

#include <cctype>
#include <string>
#include <vector>

#include "fleet/fleet_schema.h"

namespace gpuobs::fleet {
namespace {

// A name pasted into DDL unquoted: letters, digits and _, not starting with
// a digit (the database names parse_endpoint takes; gpuobs's table names).
bool identifier(const std::string& s) {
  if (s.empty() || s.size() > 64 || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (unsigned char c : s)
    if (!std::isalnum(c) && c != '_') return false;
  return true;
}

// A cluster as remote_servers names it (an XML element name: also . and -);
// passed to Distributed() as a string literal.
bool cluster_name(const std::string& s) {
  if (s.empty() || s.size() > 128) return false;
  for (unsigned char c : s)
    if (!std::isalnum(c) && c != '_' && c != '-' && c != '.') return false;
  return true;
}

// The arguments of "Distributed(cluster, db, table[, key])" as system.tables'
// engine_full gives them, quotes and spaces removed.
std::vector<std::string> engine_args(const std::string& engine_full) {
  std::vector<std::string> out;
  size_t open = engine_full.find('('), close = engine_full.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return out;
  std::string cur;
  auto push = [&] {
    size_t a = cur.find_first_not_of(" '`\""), b = cur.find_last_not_of(" '`\"");
    out.push_back(a == std::string::npos ? std::string() : cur.substr(a, b - a + 1));
    cur.clear();
  };
  for (size_t i = open + 1; i < close; ++i) {
    if (engine_full[i] == ',') push();
    else cur += engine_full[i];
  }
  push();
  return out;
}

// A table's columns as one comparable text: name, type and default, in order.
Result<std::string> columns_of(const ClickHouse& ch, const std::string& database, const std::string& table) {
  return ch.query("SELECT name, type, default_kind, default_expression FROM system.columns WHERE database = " +
                      sql_literal(database) + " AND table = " + sql_literal(table),
                  false);
}

}  // namespace

Result<DistributedSource> distributed_source(const ClickHouse& ch) {
  // Not in the database: it may not exist yet (init), which is no error here.
  auto r = ch.query("SELECT engine_full FROM system.tables WHERE database = " + sql_literal(ch.endpoint().database) +
                        " AND engine = 'Distributed' ORDER BY name LIMIT 1",
                    false);
  if (!r) return r.error();
  DistributedSource out;
  auto rows = parse_tsv(*r);
  if (rows.empty() || rows[0].empty()) return out;
  auto args = engine_args(rows[0][0]);
  out.cluster = args.empty() || args[0].empty() ? std::string("?") : args[0];
  if (args.size() > 1) out.shard_database = args[1];
  return out;
}

Status refuse_shipping_to_distributed(const ClickHouse& ch) {
  auto src = distributed_source(ch);
  if (!src) return src.error();
  if (src->cluster.empty()) return {};
  const std::string db = src->shard_database.empty() ? "gpuobs" : src->shard_database;
  // The fix in the message itself: gpuobsd logs and publishes only that.
  return make_error("database " + ch.endpoint().database + " at " + ch.endpoint().base +
                        " holds Distributed tables over cluster " + src->cluster +
                        " (a query node's, for reports), which take no shipment: ship to database " + db +
                        " on one shard of " + src->cluster,
                    "--to or ship_url 'http://SHARD:8123/?database=" + db +
                        "', each host always to the same shard; gpuobs report --clickhouse reads this database");
}

Result<DistributedInit> init_distributed_schema(const ClickHouse& ch, const std::string& cluster,
                                                const std::string& shard_database) {
  const Endpoint& ep = ch.endpoint();
  if (!cluster_name(cluster))
    return make_error("not a cluster name: '" + cluster + "'", "the name of a cluster in remote_servers", 2);
  if (!identifier(shard_database))
    return make_error("not a database name: '" + shard_database + "'", "letters, digits and _", 2);
  if (shard_database == ep.database)
    return make_error("the Distributed tables would replace the shard tables of database " + shard_database,
                      "name a database of their own in the URL (e.g. ?database=" + shard_database +
                          "_all); --shard-database names the one gpuobs ships to on every shard",
                      2);
  // The cluster, as this server's config.xml names it (Distributed tables
  // are made without, and fail only when read).
  auto shards =
      ch.query("SELECT uniqExact(shard_num) FROM system.clusters WHERE cluster = " + sql_literal(cluster), false);
  if (!shards) return shards.error();
  DistributedInit out;
  out.shards = std::strtoull(shards->c_str(), nullptr, 10);
  if (out.shards == 0)
    return make_error("ClickHouse at " + ep.base + " has no cluster " + cluster,
                      "name it in remote_servers in the server's config.xml (docs/operations.md, Fleet, A cluster); "
                      "SELECT cluster FROM system.clusters lists those it has");

  // The template: the shard database on this server, made by gpuobs
  // clickhouse init (its version check refuses a newer one).
  Endpoint shard_ep = ep;
  shard_ep.database = shard_database;
  const ClickHouse shard(shard_ep);
  auto version = check_schema(shard);
  if (!version) return version.error();
  out.version = *version;
  auto shard_src = distributed_source(shard);
  if (!shard_src) return shard_src.error();
  if (!shard_src->cluster.empty())
    return make_error("database " + shard_database + " at " + ep.base +
                          " holds Distributed tables itself: it is a query node's database, not a shard's",
                      "--shard-database names the database gpuobs ships to on every shard", 2);
  // Its tables: those the shipper writes are MergeTree (the ledger's repair
  // deletes with a mutation); schema_version is each database's own.
  auto listed = shard.query(
      "SELECT name FROM system.tables WHERE database = currentDatabase() AND engine LIKE '%MergeTree' ORDER BY name");
  if (!listed) return listed.error();
  for (auto& row : parse_tsv(*listed))
    if (!row.empty() && identifier(row[0])) out.tables.push_back(row[0]);
  if (out.tables.empty())
    return make_error("database " + shard_database + " at " + ep.base + " has no gpuobs tables",
                      "run gpuobs clickhouse init " + shard_ep.display());

  // The query node's database: Distributed tables and schema_version only.
  if (auto r = ch.query("CREATE DATABASE IF NOT EXISTS " + ep.database, false); !r) return r.error();
  auto existing = ch.query("SELECT name, engine, engine_full FROM system.tables WHERE database = currentDatabase()");
  if (!existing) return existing.error();
  std::vector<std::vector<std::string>> have = parse_tsv(*existing);
  for (const auto& row : have)
    if (row.size() >= 3 && row[1] != "Distributed" && row[0] != "schema_version")
      return make_error("database " + ep.database + " at " + ep.base + " holds table " + row[0] + " (" + row[1] +
                            "): it is not a database of Distributed tables",
                        "name a database of their own in the URL (e.g. ?database=" + shard_database + "_all)");
  for (const std::string& t : out.tables) {
    const std::vector<std::string>* found = nullptr;
    for (const auto& row : have)
      if (row.size() >= 3 && row[0] == t) found = &row;
    if (found) {
      // Made before: kept if it reads the same cluster and database and
      // has the shard table's columns (a later gpuobs may add some), else
      // made again (a Distributed table holds no rows: nothing is lost).
      auto args = engine_args((*found)[2]);
      auto want = columns_of(ch, shard_database, t), got = columns_of(ch, ep.database, t);
      if (!want) return want.error();
      if (!got) return got.error();
      if (args.size() >= 3 && args[0] == cluster && args[1] == shard_database && args[2] == t && *want == *got)
        continue;
      if (auto r = ch.query("DROP TABLE " + t); !r) return r.error();
      out.remade.push_back(t);
    }
    // No sharding key: an INSERT through the table is refused by the server
    // (with more than one shard), so rows only arrive through a shard.
    if (auto r =
            ch.query("CREATE TABLE IF NOT EXISTS " + t + " AS " + shard_database + "." + t + " ENGINE = Distributed(" +
                     sql_literal(cluster) + ", " + sql_literal(shard_database) + ", " + sql_literal(t) + ")");
        !r)
      return r.error();
  }

  // Every shard answers for every table: a shard without the database or a
  // table (not initialized, or by an older gpuobs) fails here, not in a
  // report. count() reads no column data.
  for (const std::string& t : out.tables)
    if (auto r = ch.query("SELECT count() FROM " + t); !r)
      return make_error("reading " + t + " over cluster " + cluster + ": " + r.error().message,
                        "run gpuobs clickhouse init 'http://SHARD:8123/?database=" + shard_database +
                            "' on every shard of " + cluster + " with this gpuobs, then this command again");

  // The version last, so that a database left half made fails check_schema.
  if (auto r = ch.query("CREATE TABLE IF NOT EXISTS schema_version AS " + shard_database + ".schema_version"); !r)
    return r.error();
  auto v = ch.query("SELECT count() FROM schema_version WHERE version = " + std::to_string(out.version));
  if (!v) return v.error();
  if (std::strtoull(v->c_str(), nullptr, 10) == 0)
    if (auto r = ch.query("INSERT INTO schema_version (version) VALUES (" + std::to_string(out.version) + ")"); !r)
      return r.error();
  return out;
}

}  // namespace gpuobs::fleet
