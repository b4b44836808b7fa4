// Launches in the compact form (schema/migrations/012): a launch row is its
// time and a "shape" id; the shape (everything a repeated launch has in
// common) and every name are stored once. Launches are buffered for the
// writer's transaction, then inserted in time order with their counts per
// shape and second (launch_counts), so the rows and the counts commit or
// roll back together. Used only by the writer thread.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "decode/launch_record.h"
#include "store/db.h"
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
  void forget_names(int64_t process_id) { name_ids_.erase(process_id); }
  // Inserts the buffered launches and their counts. Rows that could not be
  // inserted alone are added to *failed; an error that must roll the
  // transaction back is returned (else SQLITE_DONE).
  int flush(uint64_t* failed);
  // The transaction was rolled back: drop the buffered launches and re-read
  // the shapes the file holds (the strings table must be reloaded first).
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
  struct ShapeHash {
    size_t operator()(const ShapeKey& k) const;
  };
  struct ShapeEq {
    bool operator()(const ShapeKey& a, const ShapeKey& b) const;
  };
  struct Row {
    int64_t ts_rel;
    int64_t shape;
  };
  int64_t name_id(int64_t process_id, uint64_t function);
  std::pair<int64_t, int64_t> api_ids(uint32_t api);
  int insert_shape(const ShapeKey& k, int64_t id);

  sqlite3* db_ = nullptr;
  StringTable* strings_ = nullptr;
  NameSource names_;
  int64_t t0_ = 0;
  Stmt ins_shape_, ins_launch_, upsert_count_;
  std::unordered_map<ShapeKey, int64_t, ShapeHash, ShapeEq> shapes_;
  int64_t next_shape_id_ = 1;
  // process_id -> function -> strings.id of its kernel name (0: none known)
  std::unordered_map<int64_t, std::unordered_map<uint64_t, int64_t>> name_ids_;
  std::unordered_map<uint32_t, std::pair<int64_t, int64_t>> api_ids_;  // api -> (symbol, vendor) string ids
  std::vector<Row> rows_;
};

}  // namespace gpuobs
