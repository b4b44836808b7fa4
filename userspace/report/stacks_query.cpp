#include "report/stacks_query.h"

#include <cstdio>
#include <map>

#include "store/schema.h"

namespace gpuobs {
namespace {

// Every query takes ?1 = pid, ?2 = kernel LIKE pattern, ?3 = api (NULL: any).
// {P} is the fourth column (the row's process_id, or 0) and {G} what groups
// by it: weigh_stacks() fills them in for StackFilter.by_process.
std::string_view measure_sql(StackMeasure m) {
  switch (m) {
    case StackMeasure::launches:
      // From the writer's launch counts (launch_agg), not every launch row.
      return "SELECT a.stack_id, CASE a.kernel_name WHEN '' THEN printf('function 0x%x', a.function)"
             " ELSE a.kernel_name END, sum(a.launches), {P} FROM launch_agg a JOIN processes p ON p.id = a.process_id"
             " WHERE a.stack_id != 0 AND (?1 IS NULL OR p.tgid = ?1) AND (?2 IS NULL OR instr(a.kernel_name, ?2) > 0)"
             " AND (?3 IS NULL OR a.api = ?3) GROUP BY 1, 2{G}";
    case StackMeasure::calls:
      // api_calls with its launches read through kernel_launches_between
      // (store/launch_table.h): the view unpacks launch runs in SQL, 25x slower.
      return "SELECT stack_id, api, count(*), {P} FROM (SELECT stack_id, api, tgid, process_id FROM"
             " kernel_launches_between() UNION ALL SELECT stack_id, api, tgid, process_id FROM api_calls_timed)"
             " WHERE stack_id IS NOT NULL"
             " AND (?1 IS NULL OR tgid = ?1) AND ?2 IS NULL AND (?3 IS NULL OR api = ?3) GROUP BY 1, 2{G}";
    case StackMeasure::copied:
      return "SELECT stack_id, api || ' ' || coalesce(direction, ''), sum(bytes), {P} FROM copies"
             " WHERE kind = 'copy' AND (result IS NULL OR result = 0) AND stack_id IS NOT NULL"
             " AND (?1 IS NULL OR tgid = ?1) AND ?2 IS NULL AND (?3 IS NULL OR api = ?3) GROUP BY 1, 2{G}";
    case StackMeasure::allocated:
      return "SELECT stack_id, api || ' ' || kind, sum(bytes), {P} FROM memory_ops"
             " WHERE op IN ('alloc', 'create') AND (result IS NULL OR result = 0) AND bytes IS NOT NULL"
             " AND stack_id IS NOT NULL AND (?1 IS NULL OR tgid = ?1) AND ?2 IS NULL AND (?3 IS NULL OR api = ?3)"
             " GROUP BY 1, 2{G}";
    case StackMeasure::blocked:
      return "SELECT stack_id, api, sum(coalesce(blocked_ns, duration_ns, 0)), {P} FROM syncs WHERE stack_id IS NOT "
             "NULL"
             " AND (?1 IS NULL OR tgid = ?1) AND ?2 IS NULL AND (?3 IS NULL OR api = ?3) GROUP BY 1, 2{G}";
    case StackMeasure::ioctls:
      return "SELECT stack_id, printf('ioctl %d:%d 0x%x', dev_major, dev_minor, cmd), count(*), {P} FROM ioctls"
             " WHERE stack_id IS NOT NULL AND (?1 IS NULL OR tgid = ?1) AND ?2 IS NULL AND ?3 IS NULL GROUP BY 1, 2{G}";
  }
  return "";
}

}  // namespace

Result<StackMeasure> parse_measure(std::string_view s) {
  if (s == "launches") return StackMeasure::launches;
  if (s == "calls") return StackMeasure::calls;
  if (s == "copied") return StackMeasure::copied;
  if (s == "allocated") return StackMeasure::allocated;
  if (s == "blocked") return StackMeasure::blocked;
  if (s == "ioctls") return StackMeasure::ioctls;
  return make_error("unknown measure '" + std::string(s) + "'",
                    "use launches, calls, copied, allocated, blocked or ioctls", 2);
}

const char* measure_unit(StackMeasure m) {
  switch (m) {
    case StackMeasure::launches: return "launches";
    case StackMeasure::calls: return "calls";
    case StackMeasure::copied:
    case StackMeasure::allocated: return "bytes";
    case StackMeasure::blocked: return "ns";
    case StackMeasure::ioctls: return "ioctls";
  }
  return "";
}

Result<std::vector<StackLeaf>> weigh_stacks(Db& db, StackMeasure m, const StackFilter& f) {
  if (!f.kernel.empty() && m != StackMeasure::launches)
    return make_error("--kernel filters launches only", "use --by launches with --kernel", 2);
  std::string sql(measure_sql(m));
  auto fill = [&](const std::string& hole, const std::string& with) { sql.replace(sql.find(hole), hole.size(), with); };
  fill("{P}", f.by_process ? (m == StackMeasure::launches ? "a.process_id" : "process_id") : "0");
  fill("{G}", f.by_process ? ", 4" : "");
  Stmt st(db.get(), sql);
  if (!st.valid())
    return make_error("cannot query stacks: " + db.errmsg(), "is this a capture from gpuobs >= 0.1 with stacks?", 2);
  if (f.pid) st.bind(1, *f.pid);
  else st.bind_null(1);
  if (!f.kernel.empty()) st.bind(2, f.kernel);
  else st.bind_null(2);
  if (!f.api.empty()) st.bind(3, f.api);
  else st.bind_null(3);
  std::vector<StackLeaf> out;
  int rc;
  std::vector<int64_t> process_ids;
  while ((rc = st.step()) == SQLITE_ROW) {
    const unsigned char* leaf = sqlite3_column_text(st.get(), 1);
    out.push_back(StackLeaf{sqlite3_column_int64(st.get(), 0), leaf ? reinterpret_cast<const char*>(leaf) : "",
                            sqlite3_column_int64(st.get(), 2), 0, ""});
    process_ids.push_back(sqlite3_column_int64(st.get(), 3));
  }
  if (rc != SQLITE_DONE) return capture_error(db.get(), "cannot query stacks");
  if (f.by_process) {
    Stmt proc(db.get(), "SELECT tgid, comm FROM processes WHERE id = ?");
    if (!proc.valid()) return capture_error(db.get(), "cannot read processes");
    std::map<int64_t, std::pair<int64_t, std::string>> known;
    for (size_t i = 0; i < out.size(); ++i) {
      auto it = known.find(process_ids[i]);
      if (it == known.end()) {
        std::pair<int64_t, std::string> who{0, "?"};
        proc.bind(1, process_ids[i]);
        if (proc.step() == SQLITE_ROW) {
          const unsigned char* comm = sqlite3_column_text(proc.get(), 1);
          who = {sqlite3_column_int64(proc.get(), 0), comm ? reinterpret_cast<const char*>(comm) : "?"};
        }
        proc.reset();
        it = known.emplace(process_ids[i], who).first;
      }
      out[i].pid = it->second.first;
      out[i].comm = it->second.second;
    }
  }
  return out;
}

Result<std::map<int64_t, StackInfo>> load_stacks(Db& db, const std::set<int64_t>& ids) {
  std::map<int64_t, StackInfo> out;
  Stmt head(db.get(), "SELECT end_reason, python_thread FROM stacks WHERE id = ?");
  Stmt frames(db.get(),
              "SELECT module, symbol, symbol_offset, file, line, offset, kind FROM stack_symbols"
              " WHERE stack_id = ? ORDER BY position");
  if (!head.valid() || !frames.valid()) return make_error("cannot read stacks: " + db.errmsg(), "", 2);
  auto text = [](Stmt& s, int i) {
    const unsigned char* t = sqlite3_column_text(s.get(), i);
    return t ? std::string(reinterpret_cast<const char*>(t)) : std::string();
  };
  for (int64_t id : ids) {
    StackInfo info;
    head.bind(1, id);
    if (head.step() == SQLITE_ROW) {
      info.end_reason = text(head, 0);
      info.python_thread = text(head, 1);
    }
    head.reset();
    frames.bind(1, id);
    while (frames.step() == SQLITE_ROW)
      info.frames.push_back(StackFrame{text(frames, 0), text(frames, 1), sqlite3_column_int64(frames.get(), 2),
                                       text(frames, 3), sqlite3_column_int64(frames.get(), 4),
                                       sqlite3_column_int64(frames.get(), 5), text(frames, 6) == "python"});
    frames.reset();
    out.emplace(id, std::move(info));
  }
  return out;
}

size_t main_thread_python_start(const StackInfo& s) {
  if (s.python_thread != "main") return s.frames.size();
  for (size_t i = 0; i < s.frames.size(); ++i)
    if (s.frames[i].python) return i;
  return s.frames.size();
}

std::string frame_label(const StackFrame& f) {
  if (!f.symbol.empty()) return f.symbol;
  std::string base = f.module.substr(f.module.rfind('/') + 1);
  char off[32];
  std::snprintf(off, sizeof off, "+0x%llx", static_cast<unsigned long long>(f.offset));
  return base + off;
}

}  // namespace gpuobs
