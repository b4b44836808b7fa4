#include "store/driver_rows.h"

#include <algorithm>
#include <vector>

namespace gpuobs {

Status DriverRowWriter::prepare(sqlite3* db) {
  db_ = db;
  ioctl_ =
      Stmt(db,
           "INSERT INTO ioctls (ts_mono_ns, latency_ns, process_id, tgid, tid, fd, dev_major, dev_minor, cmd, arg, ret,"
           " stack_id, driver, request, status, status_name, failed, object_class, class_name, control, control_name,"
           " args, args_complete) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  object_ =
      Stmt(db,
           "INSERT INTO driver_objects (ioctl_id, ts_mono_ns, process_id, tgid, tid, driver, op, kind, client, parent,"
           " handle, object_class, class_name, bytes, flags, address, alloc_id, stack_id)"
           " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  if (!ioctl_.valid() || !object_.valid())
    return make_error(std::string("cannot prepare ioctl statements: ") + sqlite3_errmsg(db));
  return {};
}

void DriverRowWriter::forget_process(int64_t pid) {
  live_.erase(live_.lower_bound({pid, 0, 0, 0}), live_.upper_bound({pid, UINT32_MAX, UINT64_MAX, UINT64_MAX}));
}

int DriverRowWriter::write(const IoctlEvent& e, int64_t pid, int64_t stack_id) {
  IoctlCapture cap{e.driver, e.cmd, e.dev_minor, e.ret, e.head, e.aux, nvidia_};
  DecodedIoctl d = decode_ioctl(cap);
  if (d.request.empty()) ++unknown_;
  else ++decoded_;
  auto opt_text = [&](int i, const std::string& s) {
    if (s.empty()) ioctl_.bind_null(i);
    else ioctl_.bind(i, s);
  };
  ioctl_.bind(1, e.hdr.ts_ns)
      .bind(2, e.latency_ns)
      .bind(3, pid)
      .bind(4, e.hdr.tgid)
      .bind(5, e.hdr.tid)
      .bind(6, e.fd)
      .bind(7, e.dev_major)
      .bind(8, e.dev_minor)
      .bind(9, e.cmd)
      .bind(10, e.arg)
      .bind(11, static_cast<int64_t>(e.ret));
  if (stack_id) ioctl_.bind(12, stack_id);
  else ioctl_.bind_null(12);
  ioctl_.bind(13, driver_name(e.driver));
  opt_text(14, d.request);
  if (d.status) ioctl_.bind(15, *d.status);
  else ioctl_.bind_null(15);
  opt_text(16, d.status_name);
  ioctl_.bind(17, int64_t{d.failed});
  if (d.object_class) ioctl_.bind(18, *d.object_class);
  else ioctl_.bind_null(18);
  opt_text(19, d.class_name);
  if (d.control) ioctl_.bind(20, *d.control);
  else ioctl_.bind_null(20);
  opt_text(21, d.control_name);
  if (d.fields.empty()) ioctl_.bind_null(22);
  else ioctl_.bind(22, d.fields.dump());
  ioctl_.bind(23, int64_t{!(e.flags & (GPUOBS_IOCTL_F_HEAD_FAULT | GPUOBS_IOCTL_F_AUX_FAULT)) && d.args_complete});
  int rc = ioctl_.exec();
  if (rc != SQLITE_DONE || !d.object || d.failed) return rc;

  // The object this call made or ended.
  const DriverObject& o = *d.object;
  int64_t ioctl_id = sqlite3_last_insert_rowid(db_);
  auto key = std::make_tuple(pid, e.driver, o.client, o.handle);
  std::optional<int64_t> alloc_id;
  std::optional<uint64_t> bytes = o.bytes;
  std::string kind = o.kind.empty() ? "unknown" : o.kind, class_name = o.class_name;
  std::optional<uint32_t> object_class = o.object_class;
  if (o.op == "free") {
    if (auto it = live_.find(key); it != live_.end()) {
      alloc_id = it->second.id;
      if (!bytes) bytes = it->second.bytes;
      kind = it->second.kind;  // a free names only the handle
      if (class_name.empty()) class_name = it->second.class_name;
      if (!object_class) object_class = it->second.object_class;
      live_.erase(it);
    }
  }
  int rc2 = insert_object(e, pid, stack_id, ioctl_id, o.op,
                          Object{kind, e.driver == GPUOBS_DRV_NVIDIA ? std::optional<uint64_t>(o.client) : std::nullopt,
                                 o.parent, o.handle, object_class, class_name, bytes, o.flags, o.address},
                          alloc_id);
  if (rc2 == SQLITE_DONE && o.op == "alloc")
    live_[key] = Live{sqlite3_last_insert_rowid(db_), o.bytes, kind, class_name, object_class, o.parent};
  if (rc2 == SQLITE_DONE && alloc_id && e.driver == GPUOBS_DRV_NVIDIA)
    rc2 = free_descendants(e, pid, stack_id, ioctl_id, o.client, o.handle, kind == "client");
  return rc2;
}

int DriverRowWriter::insert_object(const IoctlEvent& e, int64_t pid, int64_t stack_id, int64_t ioctl_id,
                                   std::string_view op, const Object& o, std::optional<int64_t> alloc_id) {
  object_.bind(1, ioctl_id)
      .bind(2, e.hdr.ts_ns)
      .bind(3, pid)
      .bind(4, e.hdr.tgid)
      .bind(5, e.hdr.tid)
      .bind(6, driver_name(e.driver))
      .bind(7, op)
      .bind(8, o.kind);
  if (o.client) object_.bind(9, *o.client);
  else object_.bind_null(9);
  object_.bind(10, o.parent).bind(11, o.handle);
  if (o.object_class) object_.bind(12, *o.object_class);
  else object_.bind_null(12);
  if (o.class_name.empty()) object_.bind_null(13);
  else object_.bind(13, o.class_name);
  if (o.bytes) object_.bind(14, *o.bytes);
  else object_.bind_null(14);
  if (o.flags) object_.bind(15, *o.flags);
  else object_.bind_null(15);
  if (o.address) object_.bind(16, *o.address);
  else object_.bind_null(16);
  if (alloc_id) object_.bind(17, *alloc_id);
  else object_.bind_null(17);
  if (stack_id) object_.bind(18, stack_id);
  else object_.bind_null(18);
  return object_.exec();
}

// RM frees an object's children with it (a client: everything it made), so
// each live descendant gets its free row too, from the same ioctl: driver
// memory per process then goes down when a device or client is freed.
int DriverRowWriter::free_descendants(const IoctlEvent& e, int64_t pid, int64_t stack_id, int64_t ioctl_id,
                                      uint64_t client, uint64_t handle, bool whole_client) {
  auto lo = live_.lower_bound({pid, e.driver, client, 0});
  auto hi = live_.upper_bound({pid, e.driver, client, UINT64_MAX});
  std::vector<uint64_t> gone{handle};
  std::vector<std::pair<uint64_t, Live>> ended;
  // Parents precede children in no particular handle order: sweep until no
  // live object has a parent that is gone.
  for (bool more = true; more;) {
    more = false;
    for (auto it = lo; it != hi;) {
      bool child = whole_client || std::find(gone.begin(), gone.end(), it->second.parent) != gone.end();
      if (!child) {
        ++it;
        continue;
      }
      uint64_t h = std::get<3>(it->first);
      gone.push_back(h);
      ended.emplace_back(h, it->second);
      it = live_.erase(it);
      more = !whole_client;
    }
    lo = live_.lower_bound({pid, e.driver, client, 0});
    hi = live_.upper_bound({pid, e.driver, client, UINT64_MAX});
  }
  int rc = SQLITE_DONE;
  for (const auto& [h, live] : ended)
    if (int r = insert_object(e, pid, stack_id, ioctl_id, "free",
                              Object{live.kind, client, live.parent, h, live.object_class, live.class_name, live.bytes,
                                     std::nullopt, std::nullopt},
                              live.id);
        r != SQLITE_DONE)
      rc = r;
  return rc;
}

}  // namespace gpuobs
