// The capture's API rows as one stream of calls in the replay's total order
// (docs/replay.md, "Order"): what the replay engine consumes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "store/db.h"

namespace gpuobs::replay::detail {

// The rank of each source table in the total order (ts_mono_ns, table, id):
// at one instant a launch sorts before a copy, before a memory call, a stream
// or event call, and a synchronization.
enum class Table : uint8_t { kernel_launches = 0, copies = 1, memory_ops = 2, stream_ops = 3, syncs = 4 };
const char* table_name(Table t);

// Strings repeat (API symbols, kernel names): a million calls keep indexes.
class Strings {
 public:
  uint32_t intern(const std::string& s);
  const std::string& operator[](uint32_t i) const { return all_[i]; }

 private:
  std::vector<std::string> all_{std::string()};  // 0: the empty string
  std::unordered_map<std::string, uint32_t> index_{{std::string(), 0}};
};

struct Call {
  int64_t ts = 0;
  int64_t id = 0;         // row id in its table
  int64_t duration = -1;  // -1: not measured (entry-only probe)
  int64_t process_id = 0;
  int64_t stack_id = 0;             // 0: none
  std::optional<int64_t> result;    // NULL: no return probe
  std::optional<uint64_t> stream;   // the stream argument, if the call takes one
  std::optional<int64_t> alloc_id;  // memory_ops free: the allocation's row
  uint64_t event = 0, dst = 0, src = 0, bytes = 0, address = 0, flags = 0;
  uint32_t tgid = 0, tid = 0;
  uint32_t api = 0;   // Strings index: the API symbol
  uint32_t op = 0;    // launch; copy/memset; memory op; stream_ops op; sync target
  uint32_t kind = 0;  // copy direction; memory kind
  uint32_t name = 0;  // kernel name (0: not known)
  Table table = Table::kernel_launches;
  bool per_thread = false;  // _ptsz/_ptds variant
  bool async = false;       // copies: *Async

  bool ok() const { return !result || *result == 0; }
  int64_t end() const { return duration >= 0 ? ts + duration : ts; }
};

// A call's GPU interval measured by CUPTI (gpu_times, schema 20).
struct Measured {
  int64_t start_ns = 0, end_ns = 0;
};

struct Input {
  std::vector<Call> calls;  // in the total order
  Strings strings;
  std::map<std::pair<Table, int64_t>, Measured> gpu_times;  // (table, row id); empty without --gpu-time
  int64_t end_ns = 0;                                       // capture.end_mono_ns, or the last call's end
  // (processes.id, handle) -> the stream's label of stream_names (schema 25):
  // "stream#N", the one name reports, exports and diff give it.
  std::map<std::pair<int64_t, uint64_t>, std::string> stream_labels;
};

gpuobs::Result<Input> load_input(Db& capture);

}  // namespace gpuobs::replay::detail
