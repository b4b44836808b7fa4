#include "store/launch_rows.h"

#include <algorithm>
#include <cstring>

namespace gpuobs {
namespace {

constexpr int64_t kNsPerBucket = 1'000'000'000;
constexpr int64_t kSameTimeSlots = int64_t{1} << LaunchRowWriter::kSameTimeBits;
// A run's launches take the low bits 0-3 of their keys; launch_rows the rest
// (4-7), so a late launch's key never meets one inside a run (migration 016).
constexpr int64_t kRunSlots = 4;
// Counts are stored once this much capture time has passed since they last
// were: a few thousand shapes a second cost a few thousand upserts a second,
// not one per shape in every transaction.
constexpr int64_t kCountsEvery = kNsPerBucket;
// Or sooner, once this many (shape, second) pairs wait in memory: launches
// that never repeat each make a pair.
constexpr size_t kMaxWaitingCounts = 65536;
constexpr int64_t kNoId = INT64_MIN;

// As launch_agg always counted: whole seconds after the start, -1 before it.
int64_t bucket_of(int64_t ts_rel) { return ts_rel < 0 ? -1 : ts_rel / kNsPerBucket; }

}  // namespace

Status LaunchRowWriter::prepare(sqlite3* db, StringTable* strings, NameSource names) {
  db_ = db;
  strings_ = strings;
  names_ = std::move(names);
  ins_shape_ = Stmt(
      db,
      "INSERT INTO launch_shapes (id, process_id, tgid, tid, api_id, function, grid_x, grid_y, grid_z, block_x,"
      " block_y, block_z, shared_mem_bytes, stream, kernel_params, extra, args_complete, kernel_name_id, cooperative,"
      " cluster_x, cluster_y, cluster_z, per_thread_stream, attributes, stack_id, vendor_id)"
      " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  ins_launch_ = Stmt(db, "INSERT INTO launch_rows (id, shape_id) VALUES (?, ?)");
  ins_run_ = Stmt(db, "INSERT INTO launch_runs (id, launches) VALUES (?, ?)");
  set_mark_ = Stmt(db, "INSERT OR REPLACE INTO launch_counts_mark (id, counted_below) VALUES (1, ?)");
  upsert_count_ = Stmt(db,
                       "INSERT INTO launch_counts (shape_id, bucket_s, launches, first_ns, last_ns) VALUES (?,?,?,?,?)"
                       " ON CONFLICT DO UPDATE SET launches = launches + excluded.launches,"
                       " first_ns = min(first_ns, excluded.first_ns), last_ns = max(last_ns, excluded.last_ns)");
  for (auto* s : {&ins_shape_, &ins_launch_, &ins_run_, &upsert_count_, &set_mark_})
    if (!s->valid()) return make_error(std::string("cannot prepare the launch statements: ") + sqlite3_errmsg(db));
  return rolled_back();
}

int64_t LaunchRowWriter::name_id(int64_t process_id, uint64_t function, bool* failed) {
  auto& of_process = name_ids_[process_id];
  if (auto it = of_process.find(function); it != of_process.end()) return it->second;
  const std::string* name = names_ ? names_(process_id, function) : nullptr;
  int64_t id = name ? strings_->intern(*name) : 0;
  if (!name || id) of_process.emplace(function, id);  // a failed insert is tried again
  else *failed = true;
  return id;
}

std::pair<int64_t, int64_t> LaunchRowWriter::api_ids(uint32_t api) {
  if (auto it = api_ids_.find(api); it != api_ids_.end()) return it->second;
  const ApiSpec* s = api_by_id(api);
  std::pair<int64_t, int64_t> ids{strings_->intern(api_name(api)),
                                  strings_->intern(to_string(s ? s->vendor : Vendor::cuda))};
  if (ids.first && ids.second) api_ids_.emplace(api, ids);
  return ids;
}

int LaunchRowWriter::add(const LaunchRecord& r, uint64_t ts_ns, int64_t process_id, uint32_t tgid, uint32_t tid,
                         int64_t stack_id) {
  RawKey k;
  std::memset(&k, 0, sizeof k);
  k.process_id = process_id, k.stack_id = stack_id;
  k.function = r.function, k.shmem = r.shared_mem_bytes, k.stream = r.stream;
  k.kernel_params = r.kernel_params, k.extra = r.extra;
  k.tgid = tgid, k.tid = tid, k.api = r.api, k.attributes = r.attributes;
  for (int i = 0; i < 3; ++i) k.grid[i] = r.grid[i], k.block[i] = r.block[i], k.cluster[i] = r.cluster[i];
  k.args_complete = r.args_complete, k.cooperative = r.cooperative, k.per_thread = r.per_thread_stream;
  k.has_cluster = r.has_cluster;
  const uint64_t h = InternTable<RawKey>::hash(k);
  int64_t shape = by_raw_.find(k, h);
  if (!shape) {
    bool name_failed = false;
    shape = shape_of(k, &name_failed);
    if (shape <= 0) return shape ? static_cast<int>(-shape) : SQLITE_ERROR;
    if (!name_failed) by_raw_.insert(k, h, shape);  // else the name is tried again next time
  }
  // Unsigned arithmetic: defined for any ts the ring could carry.
  rows_.push_back(Row{static_cast<int64_t>(ts_ns - static_cast<uint64_t>(t0_)), shape});
  return SQLITE_DONE;
}

// The shape id of a raw key seen for the first time (since forget_names):
// the ids of its names, then the shape table; a new shape is inserted now.
// 0 when an API name could not be stored, -rc when the shape insert failed;
// *name_failed when the kernel's name could not (the shape has none).
int64_t LaunchRowWriter::shape_of(const RawKey& raw, bool* name_failed) {
  ShapeKey k;
  std::memset(&k, 0, sizeof k);
  auto [api_sid, vendor_sid] = api_ids(raw.api);
  if (!api_sid || !vendor_sid) return 0;
  k.process_id = raw.process_id, k.stack_id = raw.stack_id,
  k.name_id = name_id(raw.process_id, raw.function, name_failed);
  k.api_sid = api_sid, k.vendor_sid = vendor_sid;
  k.function = raw.function, k.shmem = raw.shmem, k.stream = raw.stream;
  k.kernel_params = raw.kernel_params, k.extra = raw.extra;
  k.tgid = raw.tgid, k.tid = raw.tid, k.attributes = raw.attributes;
  for (int i = 0; i < 3; ++i) k.grid[i] = raw.grid[i], k.block[i] = raw.block[i], k.cluster[i] = raw.cluster[i];
  k.args_complete = raw.args_complete, k.cooperative = raw.cooperative, k.per_thread = raw.per_thread;
  k.has_cluster = raw.has_cluster;
  const uint64_t h = InternTable<ShapeKey>::hash(k);
  if (int64_t shape = shapes_.find(k, h)) return shape;
  if (int rc = insert_shape(k, next_shape_id_); rc != SQLITE_DONE) return -static_cast<int64_t>(rc);
  shapes_.insert(k, h, next_shape_id_);
  return next_shape_id_++;
}

int LaunchRowWriter::insert_shape(const ShapeKey& k, int64_t id) {
  Stmt& s = ins_shape_;
  s.bind(1, id).bind(2, k.process_id).bind(3, k.tgid).bind(4, k.tid).bind(5, k.api_sid).bind(6, k.function);
  for (int i = 0; i < 3; ++i) s.bind(7 + i, k.grid[i]).bind(10 + i, k.block[i]);
  s.bind(13, k.shmem).bind(14, k.stream).bind(15, k.kernel_params).bind(16, k.extra).bind(17, int64_t{k.args_complete});
  if (k.name_id) s.bind(18, k.name_id);
  else s.bind_null(18);
  s.bind(19, int64_t{k.cooperative});
  for (int i = 0; i < 3; ++i)
    if (k.has_cluster) s.bind(20 + i, k.cluster[i]);
    else s.bind_null(20 + i);
  s.bind(23, int64_t{k.per_thread}).bind(24, k.attributes);
  if (k.stack_id) s.bind(25, k.stack_id);
  else s.bind_null(25);
  s.bind(26, k.vendor_sid);
  return s.exec();
}

void LaunchRowWriter::count(Counts& into, int64_t shape, int64_t ts_rel) {
  Count& c = into[CountKey{shape, bucket_of(ts_rel)}];
  if (!c.launches++) {
    c.first = c.last = ts_rel;
  } else {
    c.first = std::min(c.first, ts_rel);
    c.last = std::max(c.last, ts_rel);
  }
}

int LaunchRowWriter::insert_run() {
  if (!run_.launches()) return SQLITE_DONE;
  const std::string& b = run_.bytes();
  ins_run_.bind(1, run_.first_key());
  sqlite3_bind_blob(ins_run_.get(), 2, b.data(), static_cast<int>(b.size()), SQLITE_STATIC);
  int rc = ins_run_.exec();
  run_.start(0);
  return rc;
}

int LaunchRowWriter::upsert_counts(const Counts& counts) {
  for (const auto& [key, c] : counts) {
    int rc = upsert_count_.bind(1, key.shape)
                 .bind(2, key.bucket)
                 .bind(3, c.launches)
                 .bind(4, c.first)
                 .bind(5, c.last)
                 .exec();
    if (rc != SQLITE_DONE) return rc;  // the counts must match the rows: the batch is rolled back
  }
  return SQLITE_DONE;
}

int LaunchRowWriter::flush(uint64_t* failed, bool store_counts) {
  txn_.clear();
  txn_stores_counts_ = false;
  txn_max_id_ = max_id_;
  // In time order: runs of consecutive launches, appended to the B-tree.
  std::stable_sort(rows_.begin(), rows_.end(), [](const Row& a, const Row& b) { return a.ts_rel < b.ts_rel; });
  // Launches after the last stored one go into runs (four of one nanosecond
  // at most). One in the same nanosecond as a stored launch or earlier
  // (another CPU's record arriving late), and the fifth and later of one
  // nanosecond, get a row of launch_rows each, in a free slot of 4-7.
  const int64_t stored_ts = max_id_ == kNoId ? kNoId : (max_id_ >> kSameTimeBits);
  Counts late;  // launches below the mark: their counts go in now
  run_.start(0);
  int64_t prev_ts = 0;
  int64_t slot = 0;
  auto fail = [&](int rc) {
    rows_.clear();
    run_.start(0);
    return rc;
  };
  for (size_t i = 0; i < rows_.size(); ++i) {
    const Row& row = rows_[i];
    slot = (i && row.ts_rel == prev_ts) ? slot + 1 : 0;
    prev_ts = row.ts_rel;
    auto id_of = [&](int64_t n) {
      // Unsigned arithmetic: defined for any ts the ring could carry.
      return static_cast<int64_t>(static_cast<uint64_t>(row.ts_rel) * kSameTimeSlots + uint64_t(n));
    };
    int64_t id = 0;
    if ((stored_ts != kNoId && row.ts_rel <= stored_ts) || slot >= kRunSlots) {
      int rc = SQLITE_CONSTRAINT;
      for (int64_t n = kRunSlots; n < kSameTimeSlots; ++n) {
        id = id_of(n);
        rc = ins_launch_.bind(1, id).bind(2, row.shape).exec();
        if ((rc & 0xff) != SQLITE_CONSTRAINT) break;
      }
      if (rc != SQLITE_DONE) {
        if (sqlite3_get_autocommit(db_)) return fail(rc);  // SQLite rolled the transaction back (disk full, I/O)
        ++*failed;  // more than 8 launches in one nanosecond, or a lone row error
        continue;
      }
    } else {
      id = id_of(slot);
      if (run_.launches() && (id >> kSameTimeBits) - (run_.first_key() >> kSameTimeBits) > kMaxRunSpanNs)
        if (int rc = insert_run(); rc != SQLITE_DONE) return fail(rc);
      if (!run_.launches()) run_.start(id);
      run_.add(id, row.shape);
      if (run_.launches() == kRunLaunches)
        if (int rc = insert_run(); rc != SQLITE_DONE) return fail(rc);
    }
    txn_max_id_ = txn_max_id_ == kNoId ? id : std::max(txn_max_id_, id);
    count(id < counted_below_ ? late : txn_, row.shape, row.ts_rel);
  }
  rows_.clear();
  if (int rc = insert_run(); rc != SQLITE_DONE) return rc;
  if (int rc = upsert_counts(late); rc != SQLITE_DONE) return rc;
  if (txn_max_id_ == kNoId) return SQLITE_DONE;  // no launch stored yet
  const int64_t last_ts = txn_max_id_ >> kSameTimeBits;
  bool due =
      store_counts || last_ts - counts_stored_ts_ >= kCountsEvery || pending_.size() + txn_.size() >= kMaxWaitingCounts;
  if (!due || (pending_.empty() && txn_.empty())) return SQLITE_DONE;
  // Every launch in the file is below the new mark and counted: the ones of
  // earlier transactions are in pending_, this one's in txn_ (or in late).
  if (int rc = upsert_counts(pending_); rc != SQLITE_DONE) return rc;
  if (int rc = upsert_counts(txn_); rc != SQLITE_DONE) return rc;
  txn_mark_ = txn_max_id_ + 1;
  if (int rc = set_mark_.bind(1, txn_mark_).exec(); rc != SQLITE_DONE) return rc;
  txn_stores_counts_ = true;
  return SQLITE_DONE;
}

void LaunchRowWriter::committed() {
  if (txn_stores_counts_) {
    pending_.clear();
    counted_below_ = txn_mark_;
    counts_stored_ts_ = txn_max_id_ >> kSameTimeBits;
  } else {
    for (const auto& [key, c] : txn_) {
      Count& p = pending_[key];
      p.first = p.launches ? std::min(p.first, c.first) : c.first;
      p.last = p.launches ? std::max(p.last, c.last) : c.last;
      p.launches += c.launches;
    }
  }
  max_id_ = txn_max_id_;
  txn_.clear();
  txn_stores_counts_ = false;
}

Status LaunchRowWriter::rolled_back() {
  rows_.clear();
  txn_.clear();
  txn_stores_counts_ = false;
  // What the file holds as committed: the mark and the last launch.
  if (auto mark = Stmt(db_, "SELECT counted_below FROM launch_counts_mark WHERE id = 1"); mark.step() == SQLITE_ROW)
    counted_below_ = sqlite3_column_int64(mark.get(), 0);
  else counted_below_ = 0;
  Stmt last(db_, "SELECT max(id) FROM launch_rows");
  max_id_ = last.step() == SQLITE_ROW && sqlite3_column_type(last.get(), 0) != SQLITE_NULL
                ? sqlite3_column_int64(last.get(), 0)
                : kNoId;
  // The last run's last launch.
  if (Stmt run(db_, "SELECT id, launches FROM launch_runs ORDER BY id DESC LIMIT 1"); run.step() == SQLITE_ROW) {
    int64_t id = sqlite3_column_int64(run.get(), 0);
    const auto* p = static_cast<const uint8_t*>(sqlite3_column_blob(run.get(), 1));
    std::vector<RunLaunch> decoded;
    if (p && decode_launch_run(id, {p, static_cast<size_t>(sqlite3_column_bytes(run.get(), 1))}, decoded) &&
        !decoded.empty())
      id = decoded.back().key;
    else id += kMaxRunSpanNs * kSameTimeSlots + kSameTimeSlots - 1;  // damaged: past any key it could hold
    max_id_ = max_id_ == kNoId ? id : std::max(max_id_, id);
  }
  txn_max_id_ = max_id_;
  shapes_.clear();
  by_raw_.clear();
  name_ids_.clear();
  api_ids_.clear();
  next_shape_id_ = 1;
  Stmt all(db_,
           "SELECT id, process_id, tgid, tid, api_id, function, grid_x, grid_y, grid_z, block_x, block_y, block_z,"
           " shared_mem_bytes, stream, kernel_params, extra, args_complete, coalesce(kernel_name_id, 0), cooperative,"
           " cluster_x IS NOT NULL, coalesce(cluster_x, 0), coalesce(cluster_y, 0), coalesce(cluster_z, 0),"
           " per_thread_stream, attributes, coalesce(stack_id, 0), vendor_id FROM launch_shapes");
  if (!all.valid()) return make_error(std::string("cannot read the launch shapes: ") + sqlite3_errmsg(db_));
  auto col = [&](int i) { return sqlite3_column_int64(all.get(), i); };
  auto u32 = [&](int i) { return static_cast<uint32_t>(col(i)); };
  while (all.step() == SQLITE_ROW) {
    ShapeKey k;
    std::memset(&k, 0, sizeof k);
    k.process_id = col(1), k.tgid = u32(2), k.tid = u32(3), k.api_sid = col(4);
    k.function = static_cast<uint64_t>(col(5));
    for (int i = 0; i < 3; ++i) k.grid[i] = u32(6 + i), k.block[i] = u32(9 + i);
    k.shmem = static_cast<uint64_t>(col(12)), k.stream = static_cast<uint64_t>(col(13));
    k.kernel_params = static_cast<uint64_t>(col(14)), k.extra = static_cast<uint64_t>(col(15));
    k.args_complete = col(16) != 0, k.name_id = col(17), k.cooperative = col(18) != 0;
    k.has_cluster = col(19) != 0;
    for (int i = 0; i < 3; ++i) k.cluster[i] = u32(20 + i);
    k.per_thread = col(23) != 0, k.attributes = u32(24), k.stack_id = col(25), k.vendor_sid = col(26);
    int64_t id = col(0);
    const uint64_t h = InternTable<ShapeKey>::hash(k);
    if (!shapes_.find(k, h)) shapes_.insert(k, h, id);
    next_shape_id_ = std::max(next_shape_id_, id + 1);
  }
  return {};
}

}  // namespace gpuobs
