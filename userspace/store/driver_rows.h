// Driver ioctl rows: each ioctl decoded (decode/driver_ioctl.h) into the
// ioctls table, and the objects drivers created or destroyed into
// driver_objects, frees paired with their allocations per process.
// Used only by the writer thread.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

#include "decode/decoder.h"
#include "decode/driver_ioctl.h"
#include "store/db.h"

namespace gpuobs {

class DriverRowWriter {
 public:
  Status prepare(sqlite3* db);
  void set_nvidia_version(const NvidiaVersion& v) { nvidia_ = v; }
  // Returns the SQLite result code of the first insert that failed (SQLITE_DONE otherwise).
  int write(const IoctlEvent& e, int64_t process_id, int64_t stack_id);
  void forget_process(int64_t process_id);
  // The batch holding the allocations was rolled back: their ids are void.
  void forget_allocations() { live_.clear(); }
  uint64_t decoded() const { return decoded_; }
  uint64_t unknown() const { return unknown_; }

 private:
  sqlite3* db_ = nullptr;
  NvidiaVersion nvidia_;
  Stmt ioctl_, object_;
  uint64_t decoded_ = 0, unknown_ = 0;
  struct Live {
    int64_t id;  // driver_objects.id of the alloc
    std::optional<uint64_t> bytes;
    std::string kind;
    std::string class_name;
    std::optional<uint32_t> object_class;
    uint64_t parent = 0;
  };
  // One driver_objects row (columns of schema/migrations/007).
  struct Object {
    std::string_view kind;
    std::optional<uint64_t> client;
    uint64_t parent, handle;
    std::optional<uint32_t> object_class;
    std::string_view class_name;
    std::optional<uint64_t> bytes, flags, address;
  };
  int insert_object(const IoctlEvent& e, int64_t pid, int64_t stack_id, int64_t ioctl_id, std::string_view op,
                    const Object& o, std::optional<int64_t> alloc_id);
  int free_descendants(const IoctlEvent& e, int64_t pid, int64_t stack_id, int64_t ioctl_id, uint64_t client,
                       uint64_t handle, bool whole_client);
  // (process_id, driver, client, handle) -> the live object
  std::map<std::tuple<int64_t, uint32_t, uint64_t, uint64_t>, Live> live_;
};

}  // namespace gpuobs
