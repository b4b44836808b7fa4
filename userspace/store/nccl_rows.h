// NCCL calls (Family::collective) bound into nccl_comm_rows and
// nccl_call_rows (schema/migrations/017_nccl.sql). Keeps the communicators of
// every process (NcclComms: identity, rank, the next sequence number) and
// which of them this file has a row for. Used only by the writer thread.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "decode/decoder.h"
#include "decode/nccl_record.h"
#include "store/db.h"
#include "store/string_table.h"

namespace gpuobs {

// A stall found by the watch (capture/nccl_watch.h): nccl_stalls and its
// nccl_stall_ranks rows.
struct NcclStallRank {
  std::optional<int64_t> rank;
  uint32_t tgid = 0;
  std::string state;  // in, inside, missing, exited
  std::optional<int64_t> last_seq;
  std::string last_api;
  std::optional<int64_t> last_call_ns;
};
struct NcclStall {
  int64_t detected_ns = 0;
  uint64_t comm_hash = 0;
  int64_t seq = 0;
  std::string op;
  std::string kind;  // missing, not_returned
  std::optional<int64_t> nranks;
  std::string ranks_in, ranks_missing;  // "0,2"
  int64_t waited_ns = 0;
  std::vector<NcclStallRank> ranks;
};
// Inserts a stall and its ranks (the caller's transaction). SQLite's code.
int write_nccl_stall(sqlite3* db, const NcclStall& s);

class NcclRowWriter {
 public:
  Status prepare(sqlite3* db, StringTable* strings);
  // SQLite's code of the insert (SQLITE_DONE on success).
  int write_call(const ApiCallEvent& e, const ApiSpec& spec, int64_t process_id, int64_t stack_id);
  // A call not stored (dropped behind a backlog, lost with its batch): it
  // still takes its sequence number, so later ones match the other ranks'.
  void skip_call(const ApiCallEvent& e, const ApiSpec& spec) { comms_.observe(e.hdr.tgid, decode_nccl(e, spec)); }
  // The batch was rolled back: the comm rows it inserted are gone (written
  // again on next use); those of committed batches stay.
  void forget_batch_rows() {
    for (const auto& k : new_in_batch_) row_of_.erase(k);
    new_in_batch_.clear();
  }
  void committed() { new_in_batch_.clear(); }
  void forget_process(uint32_t tgid);
  // gpuobsd rotation: the communicators and their sequence numbers go on;
  // the new file gets its own comm rows.
  void carry_from(const NcclRowWriter& prev) { comms_ = prev.comms_; }

 private:
  // The comm row of (tgid, comm) in this file, inserted first if needed (0: failed).
  int64_t comm_row(const NcclCall& c, int64_t process_id, int64_t stack_id, bool made_here);
  int64_t text(std::string_view t);

  sqlite3* db_ = nullptr;
  StringTable* strings_ = nullptr;
  Stmt comm_, call_;
  NcclComms comms_;
  std::map<std::pair<uint32_t, uint64_t>, int64_t> row_of_;  // (tgid, comm) -> nccl_comm_rows.id
  std::vector<std::pair<uint32_t, uint64_t>> new_in_batch_;  // row_of_ keys inserted since the last commit
  bool failed_ = false;
};

}  // namespace gpuobs
