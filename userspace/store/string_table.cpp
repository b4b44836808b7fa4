#include "store/string_table.h"

namespace gpuobs {

Status StringTable::prepare(sqlite3* db) {
  db_ = db;
  insert_ = Stmt(db, "INSERT INTO strings (id, text) VALUES (?, ?)");
  if (!insert_.valid()) return make_error(std::string("cannot prepare the strings table: ") + sqlite3_errmsg(db));
  return reload();
}

int64_t StringTable::intern(std::string_view text) {
  if (auto it = ids_.find(text); it != ids_.end()) return it->second;
  int64_t id = next_id_;
  if (insert_.bind(1, id).bind(2, text).exec() != SQLITE_DONE) return 0;
  ++next_id_;
  ids_.emplace(std::string(text), id);
  return id;
}

Status StringTable::reload() {
  ids_.clear();
  next_id_ = 1;
  Stmt all(db_, "SELECT id, text FROM strings");
  if (!all.valid()) return make_error(std::string("cannot read the strings table: ") + sqlite3_errmsg(db_));
  while (all.step() == SQLITE_ROW) {
    int64_t id = sqlite3_column_int64(all.get(), 0);
    auto* t = reinterpret_cast<const char*>(sqlite3_column_text(all.get(), 1));
    ids_.emplace(t ? t : "", id);
    if (id >= next_id_) next_id_ = id + 1;
  }
  return {};
}

}  // namespace gpuobs
