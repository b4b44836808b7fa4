// The capture's `strings` table (schema/migrations/012): every name a row
// refers to, stored once. Interned in memory, so a name costs one hash lookup
// per row and one insert per capture (per segment: each file is
// self-contained). Used only by the writer thread, inside its transactions.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "store/db.h"

namespace gpuobs {

class StringTable {
 public:
  Status prepare(sqlite3* db);
  // The id of text, inserting it first if it is new. 0 when the insert
  // failed (the caller's row then fails too; the batch is rolled back).
  int64_t intern(std::string_view text);
  // After a rolled-back transaction: the strings it inserted are gone; know
  // exactly what the file holds again.
  Status reload();
  size_t size() const { return ids_.size(); }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  sqlite3* db_ = nullptr;
  Stmt insert_;
  std::unordered_map<std::string, int64_t, Hash, std::equal_to<>> ids_;
  int64_t next_id_ = 1;
};

}  // namespace gpuobs
