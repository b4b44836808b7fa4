#include "store/launch_rows.h"

#include <algorithm>
#include <cstring>
#include <string_view>

namespace gpuobs {
namespace {

constexpr int64_t kNsPerBucket = 1'000'000'000;
constexpr int64_t kSameTimeSlots = int64_t{1} << LaunchRowWriter::kSameTimeBits;

// As launch_agg always counted: whole seconds after the start, -1 before it.
int64_t bucket_of(int64_t ts_rel) { return ts_rel < 0 ? -1 : ts_rel / kNsPerBucket; }

}  // namespace

// Keys are zero-filled before they are set (padding included), so their
// bytes can be hashed and compared.
size_t LaunchRowWriter::ShapeHash::operator()(const ShapeKey& k) const {
  return std::hash<std::string_view>{}(std::string_view(reinterpret_cast<const char*>(&k), sizeof k));
}
bool LaunchRowWriter::ShapeEq::operator()(const ShapeKey& a, const ShapeKey& b) const {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

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
  ins_launch_ = Stmt(db, "INSERT INTO launches (id, shape_id) VALUES (?, ?)");
  upsert_count_ = Stmt(db,
                       "INSERT INTO launch_counts (shape_id, bucket_s, launches, first_ns, last_ns) VALUES (?,?,?,?,?)"
                       " ON CONFLICT DO UPDATE SET launches = launches + excluded.launches,"
                       " first_ns = min(first_ns, excluded.first_ns), last_ns = max(last_ns, excluded.last_ns)");
  for (auto* s : {&ins_shape_, &ins_launch_, &upsert_count_})
    if (!s->valid()) return make_error(std::string("cannot prepare the launch statements: ") + sqlite3_errmsg(db));
  return rolled_back();
}

int64_t LaunchRowWriter::name_id(int64_t process_id, uint64_t function) {
  auto& of_process = name_ids_[process_id];
  if (auto it = of_process.find(function); it != of_process.end()) return it->second;
  const std::string* name = names_ ? names_(process_id, function) : nullptr;
  int64_t id = name ? strings_->intern(*name) : 0;
  if (!name || id) of_process.emplace(function, id);  // a failed insert is tried again
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
  ShapeKey k;
  std::memset(&k, 0, sizeof k);
  auto [api_sid, vendor_sid] = api_ids(r.api);
  if (!api_sid || !vendor_sid) return SQLITE_ERROR;
  k.process_id = process_id, k.stack_id = stack_id, k.name_id = name_id(process_id, r.function);
  k.api_sid = api_sid, k.vendor_sid = vendor_sid;
  k.function = r.function, k.shmem = r.shared_mem_bytes, k.stream = r.stream;
  k.kernel_params = r.kernel_params, k.extra = r.extra;
  k.tgid = tgid, k.tid = tid, k.attributes = r.attributes;
  for (int i = 0; i < 3; ++i) k.grid[i] = r.grid[i], k.block[i] = r.block[i], k.cluster[i] = r.cluster[i];
  k.args_complete = r.args_complete, k.cooperative = r.cooperative, k.per_thread = r.per_thread_stream;
  k.has_cluster = r.has_cluster;
  auto [it, is_new] = shapes_.try_emplace(k, next_shape_id_);
  if (is_new) {
    if (int rc = insert_shape(k, next_shape_id_); rc != SQLITE_DONE) {
      shapes_.erase(it);
      return rc;
    }
    ++next_shape_id_;
  }
  // Unsigned arithmetic: defined for any ts the ring could carry.
  rows_.push_back(Row{static_cast<int64_t>(ts_ns - static_cast<uint64_t>(t0_)), it->second});
  return SQLITE_DONE;
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

int LaunchRowWriter::flush(uint64_t* failed) {
  // In time order: each insert appends to the B-tree (full pages, no split),
  // and launches of one nanosecond get consecutive low bits.
  std::stable_sort(rows_.begin(), rows_.end(), [](const Row& a, const Row& b) { return a.ts_rel < b.ts_rel; });
  struct Count {
    int64_t launches = 0, first = 0, last = 0;
  };
  std::unordered_map<int64_t, std::unordered_map<int64_t, Count>> counts;  // shape -> bucket -> count
  int64_t prev_ts = 0;
  int64_t slot = 0;
  for (size_t i = 0; i < rows_.size(); ++i) {
    const Row& row = rows_[i];
    slot = (i && row.ts_rel == prev_ts) ? slot + 1 : 0;
    prev_ts = row.ts_rel;
    int rc = SQLITE_CONSTRAINT;
    // A slot may already be taken by a launch of the same nanosecond that a
    // previous transaction stored: take the next one.
    for (; slot < kSameTimeSlots; ++slot) {
      int64_t id = static_cast<int64_t>(static_cast<uint64_t>(row.ts_rel) * kSameTimeSlots + uint64_t(slot));
      rc = ins_launch_.bind(1, id).bind(2, row.shape).exec();
      if ((rc & 0xff) != SQLITE_CONSTRAINT) break;
    }
    if (rc != SQLITE_DONE) {
      if (sqlite3_get_autocommit(db_)) {  // SQLite rolled the transaction back (disk full, I/O error)
        rows_.clear();
        return rc;
      }
      ++*failed;  // more than 8 launches in one nanosecond, or a lone row error
      continue;
    }
    Count& c = counts[row.shape][bucket_of(row.ts_rel)];
    if (!c.launches++) c.first = row.ts_rel;
    c.last = row.ts_rel;  // rows are in time order
  }
  rows_.clear();
  for (const auto& [shape, buckets] : counts)
    for (const auto& [bucket, c] : buckets) {
      int rc = upsert_count_.bind(1, shape).bind(2, bucket).bind(3, c.launches).bind(4, c.first).bind(5, c.last).exec();
      if (rc != SQLITE_DONE) return rc;  // the counts must match the rows: the batch is rolled back
    }
  return SQLITE_DONE;
}

Status LaunchRowWriter::rolled_back() {
  rows_.clear();
  shapes_.clear();
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
    shapes_.emplace(k, id);
    next_shape_id_ = std::max(next_shape_id_, id + 1);
  }
  return {};
}

}  // namespace gpuobs
