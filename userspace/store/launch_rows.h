// Launches in the compact form (schema/migrations/012, 016): a launch is its
// time and a "shape" id; the shape (everything a repeated launch has in
// common) and every name are stored once. Launches are buffered for the
// writer's transaction, then inserted in time order, up to 64 per row of
// launch_runs (store/launch_runs.h).
// Their counts per shape and second (launch_counts) are kept in memory and
// stored about once a second of capture time, with the mark below which
// every launch is counted (migration 013): launch_agg counts the launches
// past the mark itself, so it is exact after every commit. Used only by the
// writer thread.
#pragma once

#include <sqlite3.h>

#include <climits>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "decode/launch_record.h"
#include "store/db.h"
#include "store/intern_table.h"
#include "store/launch_runs.h"
#include "store/string_table.h"

namespace gpuobs {

class LaunchRowWriter {
 public:
  // The kernel name learned for a process's function handle (nullptr: none yet).
  using NameSource = std::function<const std::string*(int64_t process_id, uint64_t function)>;

  Status prepare(sqlite3* db, StringTable* strings, NameSource names);
  // Launch times are stored relative to this (capture.start_mono_ns).
  void set_capture_start(int64_t start_mono_ns) { t0_ = start_mono_ns; }
  // Buffers one launch; a new shape (or name) is inserted now. SQLite's code
  // of a failed shape insert, else SQLITE_DONE.
  int add(const LaunchRecord& r, uint64_t ts_ns, int64_t process_id, uint32_t tgid, uint32_t tid, int64_t stack_id);
  // The process learned a kernel name: its launches are looked up again.
  void forget_names(int64_t process_id) {
    name_ids_.erase(process_id);
    by_raw_.clear();  // a new name is rare once a program runs: every raw key is looked up again
  }
  // Inserts the buffered launches, and the counts when a second of capture
  // time has passed since they were last stored (or `store_counts`). Rows
  // that could not be inserted alone are added to *failed; an error that must
  // roll the transaction back is returned (else SQLITE_DONE).
  int flush(uint64_t* failed, bool store_counts = false);
  // The transaction that flush() wrote into has committed.
  void committed();
  // The transaction was rolled back: drop the buffered launches and what
  // flush() counted, and re-read the shapes and the mark the file holds (the
  // strings table must be reloaded first).
  Status rolled_back();
  size_t shapes() const { return shapes_.size(); }

  // Launches of one nanosecond are told apart by the low bits of their id.
  static constexpr int kSameTimeBits = 3;

 private:
  struct ShapeKey {
    int64_t process_id, stack_id, name_id, api_sid, vendor_sid;
    uint64_t function, shmem, stream, kernel_params, extra;
    uint32_t tgid, tid, grid[3], block[3], cluster[3], attributes;
    uint8_t args_complete, cooperative, per_thread, has_cluster;
  };
  // What a launch record says, before any id is looked up: equal raw keys
  // make equal shapes (the names and API ids are functions of process,
  // function and API until forget_names), so most launches find their shape
  // here with one hash, and only a new raw key looks the ids up.
  struct RawKey {
    int64_t process_id, stack_id;
    uint64_t function, shmem, stream, kernel_params, extra;
    uint32_t tgid, tid, api, attributes, grid[3], block[3], cluster[3];
    uint8_t args_complete, cooperative, per_thread, has_cluster;
  };
  int64_t shape_of(const RawKey& raw, bool* name_failed);
  struct Row {
    int64_t ts_rel;
    int64_t shape;
  };
  int64_t name_id(int64_t process_id, uint64_t function, bool* failed);
  std::pair<int64_t, int64_t> api_ids(uint32_t api);
  int insert_shape(const ShapeKey& k, int64_t id);
  // Launches per shape and second, not yet in launch_counts.
  struct CountKey {
    int64_t shape, bucket;
    bool operator==(const CountKey&) const = default;
  };
  struct CountHash {
    size_t operator()(const CountKey& k) const { return std::hash<int64_t>{}(k.shape * 1'000'003 + k.bucket); }
  };
  struct Count {
    int64_t launches = 0, first = 0, last = 0;
  };
  using Counts = std::unordered_map<CountKey, Count, CountHash>;
  static void count(Counts& into, int64_t shape, int64_t ts_rel);
  // The run being built, as one row of launch_runs (nothing when empty).
  int insert_run();
  int upsert_counts(const Counts& counts);

  sqlite3* db_ = nullptr;
  StringTable* strings_ = nullptr;
  NameSource names_;
  int64_t t0_ = 0;
  Stmt ins_shape_, ins_launch_, ins_run_, upsert_count_, set_mark_;
  InternTable<ShapeKey> shapes_;
  InternTable<RawKey> by_raw_;  // raw key -> shape id
  int64_t next_shape_id_ = 1;
  // process_id -> function -> strings.id of its kernel name (0: none known)
  std::unordered_map<int64_t, std::unordered_map<uint64_t, int64_t>> name_ids_;
  std::unordered_map<uint32_t, std::pair<int64_t, int64_t>> api_ids_;  // api -> (symbol, vendor) string ids
  std::vector<Row> rows_;
  LaunchRunEncoder run_;  // flush()'s run being built

  // Committed launches not yet counted in launch_counts (ids >= counted_below_).
  Counts pending_;
  // This transaction's: counts of its launches, whether it stores the counts
  // (and the mark it sets), and its largest launch id.
  Counts txn_;
  bool txn_stores_counts_ = false;
  int64_t txn_mark_ = 0, txn_max_id_ = INT64_MIN;
  int64_t counted_below_ = 0;     // launch_counts_mark.counted_below as committed
  int64_t max_id_ = INT64_MIN;    // largest launches.id committed (INT64_MIN: none)
  int64_t counts_stored_ts_ = 0;  // capture time (ns) of the last launch when counts were last stored
};

}  // namespace gpuobs
