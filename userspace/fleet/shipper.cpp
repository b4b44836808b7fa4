#include "fleet/shipper.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <future>
#include <optional>

#include <chrono>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "fleet/distributed_schema.h"
#include "fleet/fleet_schema.h"
#include "fleet/fleet_tables.h"
#include "fleet/row_binary.h"
#include "store/schema.h"
#include "store/stack_text.h"
#include "version.h"

namespace gpuobs::fleet {
namespace {

uint64_t fnv(std::string_view s, uint64_t h = 0xcbf29ce484222325ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h & 0x7fffffffffffffffull;  // fits Int64 too, for users' SQL
}

// A chunk is sent when it holds this many bytes, whatever its row count (zlib
// takes at most 4 GiB at once; long stacks make long rows).
constexpr size_t kChunkBytes = size_t{64} << 20;

// Frames per stack line: the call site and the frames that explain it; the
// rest would only make every row longer.
constexpr int kStackFrames = 32;

Error capture_error(Db& db, const std::string& what) {
  return make_error("cannot read " + what + " from the capture: " + sqlite3_errmsg(db.get()), {}, 2);
}

uint64_t count_of(const std::string& body) { return std::strtoull(body.c_str(), nullptr, 10); }

// An ALTER TABLE ... DELETE is a mutation that runs in the background: wait
// until none is left on the table, so the rows sent next are not counted
// with the old ones.
Status wait_for_mutations(const ClickHouse& ch, const std::string& table, const ShipOptions& opt) {
  for (int i = 0; i < 600; ++i) {
    if (opt.keep_going && !opt.keep_going()) return make_error("shipment stopped");
    auto r = ch.query("SELECT count() FROM system.mutations WHERE database = currentDatabase() AND table = '" + table +
                      "' AND is_done = 0");
    if (!r) return r.error();
    if (count_of(*r) == 0) return {};
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return make_error("ClickHouse did not finish deleting a partial shipment from " + table + " within 60 s");
}

// A shipper killed mid-insert (kill -9, a crash) leaves its last INSERT to
// the server, which finishes it after the client is gone: counted before it
// lands, its rows would be sent again and then doubled. Every insert is
// named gpuobs-SEGMENT-TABLE-N (query_id), so a later shipper waits until
// no insert of this segment's table runs before it counts what is there.
std::string insert_prefix(uint64_t segment, const std::string& table) {
  return "gpuobs-" + std::to_string(segment) + "-" + table + "-";
}

Status wait_for_inserts(const ClickHouse& ch, uint64_t segment, const std::string& table, const ShipOptions& opt) {
  for (int i = 0; i < 600; ++i) {
    auto r = ch.query("SELECT count() FROM system.processes WHERE startsWith(query_id, '" +
                      insert_prefix(segment, table) + "')");
    if (!r) return r.error();
    if (count_of(*r) == 0) return {};
    if (opt.keep_going && !opt.keep_going()) return make_error("shipment stopped");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return make_error("an insert of an earlier try into " + table + " is still running on ClickHouse after 60 s",
                    "the next try waits for it again");
}

}  // namespace

Result<CaptureIdentity> capture_identity(const std::string& path) {
  auto db = open_capture_readonly(path, OpenCheck::none);
  if (!db) return db.error();
  Stmt st(db->get(),
          "SELECT coalesce(host, ''), coalesce(clock_offset_ns, 0), start_mono_ns,"
          " coalesce(end_mono_ns, committed_mono_ns, start_mono_ns) FROM capture");
  if (!st.valid()) return capture_error(*db, "the capture row");
  if (st.step() != SQLITE_ROW) return make_error(path + " has no capture row", "is it a gpuobs capture?", 2);
  CaptureIdentity id;
  id.host = reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 0));
  id.clock_offset_ns = sqlite3_column_int64(st.get(), 1);
  id.start_ns = sqlite3_column_int64(st.get(), 2) + id.clock_offset_ns;
  id.end_ns = sqlite3_column_int64(st.get(), 3) + id.clock_offset_ns;
  id.host_id = fnv(id.host);
  // The same capture gives the same id whoever ships it, and a host's
  // segments never collide (their starts differ).
  id.segment = fnv(id.host + "\n" + std::to_string(id.start_ns));
  return id;
}

Result<bool> is_shipped(const ClickHouse& ch, const std::string& path) {
  auto id = capture_identity(path);
  if (!id) return id.error();
  auto tables = fleet_tables(ch);
  if (!tables) return tables.error();
  size_t want = 0;  // the tables this database has
  for (const ShippedTable& t : shipped_tables()) want += tables->count(t.name);
  auto r = ch.query("SELECT uniqExact(table_name) FROM segments WHERE host_id = " + std::to_string(id->host_id) +
                    " AND segment = " + std::to_string(id->segment));
  if (!r) return r.error();
  return count_of(*r) >= want;
}

Result<ShipStats> ship_capture(const ClickHouse& ch, const std::string& path, const ShipOptions& opt) {
  if (auto v = check_schema(ch); !v) return v.error();
  if (auto d = refuse_shipping_to_distributed(ch); !d) return d.error();  // a query node's: ship to a shard
  auto tables = fleet_tables(ch);
  if (!tables) return tables.error();
  auto id = capture_identity(path);
  if (!id) return id.error();
  auto db = open_capture_readonly(path, OpenCheck::quick, Threads::one);  // this thread's alone
  if (!db) return db.error();
  auto stacks = stack_lines(*db, kStackFrames);
  if (!stacks) return stacks.error();
  // One shipper per segment at a time (gpuobsd's thread, gpuobs ship): an
  // advisory lock on the capture file (SQLite's own locks are fcntl locks,
  // which flock does not touch).
  int lock_fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (lock_fd < 0) return make_error("cannot open " + path + ": " + std::strerror(errno), {}, 2);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{lock_fd};
  if (::flock(lock_fd, LOCK_EX | LOCK_NB) != 0)
    return make_error(path + " is being shipped by another process (gpuobsd or gpuobs ship)", "try again later");
  ShipStats stats;
  stats.segment = id->segment;
  stats.host = id->host;
  // The segment's rows, found through the sort key's prefix (date, host): a
  // day either side of the capture, so the lookup reads a few granules, not
  // the fleet.
  auto day = [](int64_t ns, int64_t shift) { return std::to_string(ns / 1000000000 + shift * 86400); };
  const std::string ledger_where =
      " WHERE host_id = " + std::to_string(id->host_id) + " AND segment = " + std::to_string(id->segment);
  const std::string where = ledger_where + " AND host = " + sql_literal(id->host) + " AND date BETWEEN toDate(" +
                            day(id->start_ns, -1) + ") AND toDate(" + day(id->end_ns, 1) + ")";

  // The two buffers inserts are made from, one filled while the other is
  // sent (below), reused from chunk to chunk and table to table.
  std::string bufs[2];
  int cur = 0;
  for (const ShippedTable& src : shipped_tables()) {
    const std::string table = src.name;
    const std::string sql = select_sql(src);
    if (!tables->count(table)) {  // a database made by an older gpuobs: its tables only
      stats.tables_missing.push_back(table);
      continue;
    }
    // The columns this database has (one made by an older gpuobs lacks the
    // newer ones until `gpuobs clickhouse init`): the others are not sent.
    // Each is sent in RowBinary at the width of the database's type.
    auto have = column_types(ch, table);
    if (!have) return have.error();
    const std::vector<std::string> names = column_names(src);
    std::vector<std::optional<BinaryType>> types(names.size());
    std::string columns;
    for (size_t i = 0; i < names.size(); ++i) {
      auto it = have->find(names[i]);
      if (it == have->end()) {
        if (i < 3) return make_error("table " + table + " has no column " + names[i] + ": not a gpuobs table");
        stats.columns_missing.push_back(table + "." + names[i]);
        continue;
      }
      auto type = parse_binary_type(it->second);
      if (!type) return make_error(table + "." + names[i] + ": " + type.error().message);
      types[i] = *type;
      columns += (columns.empty() ? "" : ", ") + names[i];
    }
    // The first three fields of every row.
    std::string tags;
    append_binary_string(tags, id->host.data(), id->host.size(), *types[0]);
    {
      Stmt ids(db->get(), "SELECT ?1, ?2");
      ids.bind(1, static_cast<int64_t>(id->host_id));
      ids.bind(2, static_cast<int64_t>(id->segment));
      if (ids.step() != SQLITE_ROW) return capture_error(*db, "the segment's ids");
      append_binary(tags, ids.get(), 0, *types[1]);
      append_binary(tags, ids.get(), 1, *types[2]);
    }
    auto ledger = ch.query("SELECT count() FROM segments" + ledger_where + " AND table_name = '" + table + "'");
    if (!ledger) return ledger.error();
    if (count_of(*ledger) > 0) {
      ++stats.tables_skipped;
      continue;
    }
    if (auto w = wait_for_inserts(ch, id->segment, table, opt); !w) return w.error();
    auto there = ch.query("SELECT count() FROM " + table + where);
    if (!there) return there.error();
    const uint64_t existing = count_of(*there);
    uint64_t rows = 0;
    bool send = true;
    if (existing > 0) {
      // Rows from an earlier try (a crash or timeout): complete, or not.
      // Only then is the capture counted (a second pass over the table).
      Stmt count(db->get(), ("SELECT count(*) FROM (" + sql + ")").c_str());
      if (!count.valid()) return capture_error(*db, table);
      count.bind(1, id->clock_offset_ns);
      if (count.step() != SQLITE_ROW) return capture_error(*db, table);
      rows = static_cast<uint64_t>(sqlite3_column_int64(count.get(), 0));
      if (existing == rows) {
        ++stats.tables_already_there;
        send = false;
      } else {
        if (auto r = ch.query("ALTER TABLE " + table + " DELETE" + ledger_where); !r) return r.error();
        if (auto w = wait_for_mutations(ch, table, opt); !w) return w.error();
        ++stats.tables_repaired;
      }
    } else {
      ++stats.tables_sent;
    }
    if (send) {
      // The rows, one insert of rows_per_insert (or kChunkBytes) at a time:
      // only one chunk is in memory (a segment can hold millions).
      Stmt st(db->get(), sql.c_str());
      if (!st.valid()) return capture_error(*db, table);
      st.bind(1, id->clock_offset_ns);
      std::string* chunk = &bufs[cur];
      chunk->clear();
      uint64_t in_chunk = 0, sent = 0, inserts = 0;
      // The previous chunk's insert (gzip, the request, the server's parse)
      // runs while the next chunk is read and formatted: two chunks in memory
      // at most. Its future is waited for before the next one starts, and by
      // its destructor on an early return.
      std::future<Status> pending;
      auto wait_pending = [&]() -> Status { return pending.valid() ? pending.get() : Status{}; };
      auto flush = [&]() -> Status {
        if (chunk->empty()) return {};
        if (opt.keep_going && !opt.keep_going()) return make_error("shipment stopped");
        if (auto w = wait_pending(); !w) return w.error();
        stats.bytes_sent += chunk->size();
        pending = std::async(std::launch::async, [&ch, &table, &columns, body = chunk,
                                                  qid = insert_prefix(id->segment, table) + std::to_string(inserts++)] {
          return ch.insert(table, columns, *body, "RowBinary", qid);
        });
        // The other buffer: its insert was waited for above. Its capacity
        // stays (a fresh string would grow and fault its pages in again).
        cur ^= 1;
        chunk = &bufs[cur];
        chunk->clear();
        in_chunk = 0;
        return {};
      };
      int rc;
      while ((rc = st.step()) == SQLITE_ROW) {
        sqlite3_stmt* s = st.get();
        *chunk += tags;
        const int n = sqlite3_column_count(s) - (src.stack ? 1 : 0);
        for (int i = 0; i < n; ++i)
          if (const auto& t = types[static_cast<size_t>(i) + 3]) append_binary(*chunk, s, i, *t);
        if (src.stack)
          if (const auto& t = types.back()) {
            const std::string* line = nullptr;
            if (sqlite3_column_type(s, n) != SQLITE_NULL)
              if (auto it = stacks->find(sqlite3_column_int64(s, n)); it != stacks->end()) line = &it->second;
            append_binary_string(*chunk, line ? line->data() : "", line ? line->size() : 0, *t);
          }
        ++sent;
        if (++in_chunk == opt.rows_per_insert || chunk->size() >= kChunkBytes)
          if (auto f = flush(); !f) return f.error();
      }
      if (rc != SQLITE_DONE) return capture_error(*db, table);
      if (auto f = flush(); !f) return f.error();
      if (auto w = wait_pending(); !w) return w.error();
      rows = sent;
      stats.rows_sent += rows;
      // What landed, before the ledger says so.
      auto landed = ch.query("SELECT count() FROM " + table + where);
      if (!landed) return landed.error();
      if (count_of(*landed) != rows)
        return make_error(table + ": ClickHouse holds " + std::to_string(count_of(*landed)) + " of the segment's " +
                          std::to_string(rows) + " rows after the insert; the next try repairs it");
    }
    std::string led;
    append_tsv_field(led, id->host);
    led += "\t" + std::to_string(id->host_id) + "\t" + std::to_string(id->segment) + "\t" + table + "\t" +
           std::to_string(rows) + "\t" + std::to_string(id->start_ns) + "\t" + std::to_string(id->end_ns) + "\t";
    append_tsv_field(led, path);
    led += "\t";
    append_tsv_field(led, GPUOBS_VERSION);
    led += "\n";
    if (auto s = ch.insert("segments",
                           "host, host_id, segment, table_name, rows, start_ns, end_ns, source, gpuobs_version", led);
        !s)
      return s.error();
  }
  return stats;
}

}  // namespace gpuobs::fleet
