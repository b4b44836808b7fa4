// Ships one capture file (a gpuobs record capture or a gpuobsd segment) into
// ClickHouse: every table of fleet_schema.h (those of them, and of their
// columns, the database has), each row
// tagged with the host, a host id and the segment's id. At least once and
// never twice: a per-(segment, table) ledger row in `segments` is written
// after each table's insert; a table found with the segment's rows already
// there but no ledger row (a crash between the two) is counted, not sent
// again; one with some but not all of them (a crash mid-insert) has them
// deleted (ALTER TABLE ... DELETE, waited for) and sent again. One shipper
// per host at a time (gpuobsd, or gpuobs ship), which the segment ids make
// safe across hosts. docs/operations.md, "Fleet".
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/result.h"
#include "fleet/clickhouse_client.h"

namespace gpuobs::fleet {

struct ShipStats {
  uint64_t segment = 0;  // the segment's id in ClickHouse
  std::string host;
  uint64_t rows_sent = 0, bytes_sent = 0;  // bytes: RowBinary before compression
  uint64_t tables_sent = 0;
  uint64_t tables_already_there = 0;  // complete from an earlier try, only the ledger written
  uint64_t tables_repaired = 0;       // partial from an earlier try: deleted, then sent
  uint64_t tables_skipped = 0;        // already in the ledger
  // Tables this build ships that the database lacks (made by an older
  // gpuobs; `gpuobs clickhouse init` adds them): not sent.
  std::vector<std::string> tables_missing;
  // Columns (table.column) this build ships that the database's tables
  // lack (added since; `gpuobs clickhouse init` adds them): not sent.
  std::vector<std::string> columns_missing;
  bool already_shipped() const { return tables_sent == 0 && tables_repaired == 0 && tables_already_there == 0; }
};

struct ShipOptions {
  // Rows per INSERT: one insert of up to 1,048,576 rows is one block, so
  // either all of it lands or none (ClickHouse's max_insert_block_size).
  // The shipper's memory is two chunks of RowBinary rows (one filled while
  // the other is sent, each at most this many rows or 64 MiB; about 46 MB
  // at 200,000 launches), kept until the capture is shipped, and the
  // gzip of one.
  size_t rows_per_insert = 200000;
  // Called between inserts; returning false stops the shipment (an error
  // "stopped"), which a later call resumes. For the daemon's shutdown.
  std::function<bool()> keep_going;
};

// The ids a capture is shipped under: the host as its capture names it, a
// hash of that name, and a hash of (host, capture start) that is the same
// whichever shipper sends it.
struct CaptureIdentity {
  std::string host;
  uint64_t host_id = 0;
  uint64_t segment = 0;
  int64_t clock_offset_ns = 0;       // CLOCK_MONOTONIC -> wall clock, from the capture
  int64_t start_ns = 0, end_ns = 0;  // wall clock
};
Result<CaptureIdentity> capture_identity(const std::string& path);

// Ships path into ch's database (which `gpuobs clickhouse init` made: its
// schema version is checked first).
Result<ShipStats> ship_capture(const ClickHouse& ch, const std::string& path, const ShipOptions& opt = {});

// Whether the segment is in the ledger for every table (gpuobsd's retention
// asks before deleting a segment).
Result<bool> is_shipped(const ClickHouse& ch, const std::string& path);

}  // namespace gpuobs::fleet
