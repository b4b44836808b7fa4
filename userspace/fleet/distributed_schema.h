// A query node's database over a ClickHouse cluster (docs/operations.md,
// "Fleet", "A cluster"): one `Distributed` table per gpuobs table of the
// shards' database, of the same name and columns, so that the reports
// (fleet_reports.cpp) run unchanged over every shard. The shards are
// ordinary gpuobs databases (`gpuobs clickhouse init` on each; 18.16 without
// ZooKeeper has no ON CLUSTER DDL) and the shippers write there: a database
// of Distributed tables takes no shipment (no mutations for the ledger's
// repair, inserts forwarded asynchronously so the count after an insert is
// no proof).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "fleet/clickhouse_client.h"

namespace gpuobs::fleet {

struct DistributedInit {
  uint32_t version = 0;             // the shard database's schema version, recorded here too
  uint64_t shards = 0;              // in the cluster, as the query node's config names them
  std::vector<std::string> tables;  // the Distributed tables, by name
  std::vector<std::string> remade;  // those dropped and made again: their columns or cluster had changed
};

// Makes ch's database a view of `cluster` (remote_servers in the server's
// config.xml): for every MergeTree table of shard_database on ch's server
// (the template: that server is one of the shards, or holds an initialized,
// empty copy of their database) a table of the same name and columns with
// ENGINE = Distributed(cluster, shard_database, table), no sharding key
// (an INSERT through it fails: ship to a shard); then checks that every
// shard answers for every table and records the schema version. Idempotent:
// run again after `gpuobs clickhouse init` added tables to the shards, it
// adds theirs (and remakes a Distributed table whose columns differ; it
// holds no rows).
Result<DistributedInit> init_distributed_schema(const ClickHouse& ch, const std::string& cluster,
                                                const std::string& shard_database);

// What ch's database's Distributed tables read; an empty cluster when it has
// none (an ordinary gpuobs database, a shard's).
struct DistributedSource {
  std::string cluster, shard_database;
};
Result<DistributedSource> distributed_source(const ClickHouse& ch);

// An error naming the fix (ship to a shard's database) when ch's database
// holds Distributed tables; the shipper's first check.
Status refuse_shipping_to_distributed(const ClickHouse& ch);

}  // namespace gpuobs::fleet
