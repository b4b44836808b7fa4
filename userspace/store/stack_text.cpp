#include "store/stack_text.h"

#include <sqlite3.h>

#include <string_view>

namespace gpuobs {

Result<std::unordered_map<int64_t, std::string>> stack_lines(Db& db, int max_frames) {
  std::unordered_map<int64_t, std::string> lines;
  Stmt st(db.get(),
          "SELECT stack_id, coalesce(symbol, '?'), kind, file, line FROM stack_symbols WHERE position < ?"
          " ORDER BY stack_id, position");
  if (!st.valid())
    return make_error(std::string("cannot read stack_symbols from the capture: ") + sqlite3_errmsg(db.get()), {}, 2);
  sqlite3_bind_int(st.get(), 1, max_frames);
  int rc;
  while ((rc = st.step()) == SQLITE_ROW) {
    sqlite3_stmt* s = st.get();
    std::string& line = lines[sqlite3_column_int64(s, 0)];
    if (!line.empty()) line += " <- ";
    line += reinterpret_cast<const char*>(sqlite3_column_text(s, 1));
    const unsigned char* kind = sqlite3_column_text(s, 2);
    if (kind && std::string_view(reinterpret_cast<const char*>(kind)) == "python" &&
        sqlite3_column_type(s, 3) != SQLITE_NULL) {
      std::string file = reinterpret_cast<const char*>(sqlite3_column_text(s, 3));
      line += " (" + file.substr(file.rfind('/') + 1) + ":" + std::to_string(sqlite3_column_int64(s, 4)) + ")";
    }
  }
  if (rc != SQLITE_DONE)
    return make_error(std::string("cannot read stack_symbols from the capture: ") + sqlite3_errmsg(db.get()), {}, 2);
  return lines;
}

}  // namespace gpuobs
