#include "store/stack_text.h"

#include <sqlite3.h>

#include <string_view>

namespace gpuobs {

Result<std::unordered_map<int64_t, std::string>> stack_lines(Db& db, int max_frames) {
  std::unordered_map<int64_t, std::string> lines;
  // The main thread's Python frames (stacks.python_thread 'main') follow a
  // "[main thread]" marker: this thread ran none of them.
  Stmt st(db.get(),
          "SELECT ss.stack_id, coalesce(ss.symbol, '?'), ss.kind, ss.file, ss.line, st.python_thread IS 'main'"
          " FROM stack_symbols ss JOIN stacks st ON st.id = ss.stack_id WHERE ss.position < ?"
          " ORDER BY ss.stack_id, ss.position");
  if (!st.valid())
    return make_error(std::string("cannot read stack_symbols from the capture: ") + sqlite3_errmsg(db.get()), {}, 2);
  sqlite3_bind_int(st.get(), 1, max_frames);
  int rc;
  int64_t marked = 0;  // the last stack given its marker
  while ((rc = st.step()) == SQLITE_ROW) {
    sqlite3_stmt* s = st.get();
    const int64_t id = sqlite3_column_int64(s, 0);
    std::string& line = lines[id];
    const unsigned char* kind = sqlite3_column_text(s, 2);
    const bool python = kind && std::string_view(reinterpret_cast<const char*>(kind)) == "python";
    if (!line.empty()) line += " <- ";
    if (python && sqlite3_column_int(s, 5) && marked != id) {
      line += "[main thread] <- ";
      marked = id;
    }
    line += reinterpret_cast<const char*>(sqlite3_column_text(s, 1));
    if (python && sqlite3_column_type(s, 3) != SQLITE_NULL) {
      std::string file = reinterpret_cast<const char*>(sqlite3_column_text(s, 3));
      line += " (" + file.substr(file.rfind('/') + 1) + ":" + std::to_string(sqlite3_column_int64(s, 4)) + ")";
    }
  }
  if (rc != SQLITE_DONE)
    return make_error(std::string("cannot read stack_symbols from the capture: ") + sqlite3_errmsg(db.get()), {}, 2);
  return lines;
}

}  // namespace gpuobs
