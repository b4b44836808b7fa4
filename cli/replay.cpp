// gpuobs replay FILE: rebuild the GPU queues a capture's host drove, write the
// replay tables (docs/replay.md) and print what they show.
#include <unistd.h>

#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.h"
#include "common/log.h"
#include "common/progress.h"
#include "replay/replay.h"
#include "report/query.h"
#include "store/schema.h"

namespace gpuobs::cli {
namespace {

constexpr const char* kProgram = "gpuobs replay";

// Opens the capture for writing the replay tables, brought up to this
// build's schema; a file we may not write is an error that names the way out.
Result<Db> open_for_write(const std::string& file) {
  auto check = open_capture_readonly(file);  // the same clear errors as every read command
  if (!check) return check.error();
  // A newer gpuobs's capture may hold meanings this build would break.
  if (auto s = refuse_if_newer(*check, file); !s) return s.error();
  auto hint = "run with --no-write to only print the replay, or replay a copy: cp " + file +
              " /tmp/replay.gpuobs && gpuobs replay /tmp/replay.gpuobs";
  if (::access(file.c_str(), W_OK) != 0)
    return make_error("cannot write the replay tables into " + file + ": the file is not writable", hint, 2);
  auto db = Db::open(file, SQLITE_OPEN_READWRITE);
  if (!db || sqlite3_db_readonly(db->get(), "main") == 1)
    return make_error("cannot open " + file + " for writing the replay tables", hint, 2);
  sqlite3_busy_timeout(db->get(), 2000);
  if (auto s = migrate(*db); !s)
    return make_error("cannot add the replay tables to " + file + ": " + s.error().message, hint, 2);
  return std::move(db.value());
}

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

// The innermost frames of a stack, as the stack_heads view prints them.
std::string stack_head(Db& db, int64_t stack_id) {
  if (!stack_id) return "";
  Stmt st(db.get(), "SELECT stack FROM stack_heads WHERE stack_id = ?");
  if (!st.valid()) return "";
  st.bind(1, stack_id);
  if (st.step() != SQLITE_ROW || !sqlite3_column_text(st.get(), 0)) return "";
  return reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 0));
}

struct Summary {
  nlohmann::ordered_json json;
  std::vector<std::pair<std::string, QueryResult>> tables;  // title, rows
};

Summary summarize(Db& db, const replay::Result& r) {
  Summary s;
  int64_t t0 =
      db.scalar("SELECT start_mono_ns FROM capture").ok() ? *db.scalar("SELECT start_mono_ns FROM capture") : 0;
  auto since = [&](int64_t ns) { return static_cast<double>(ns - t0) / 1e9; };

  QueryResult q{{"queue", "pid", "kind", "handle", "tid", "ops", "max_depth", "never_proven"}, {}};
  std::map<int64_t, int64_t> unproven;
  int64_t never = 0;
  for (const auto& o : r.ops)
    if (!o.latest_end_ns) ++unproven[o.queue_id], ++never;
  s.json["queues"] = nlohmann::json::array();
  for (const auto& x : r.queues) {
    Cell tid;
    if (x.tid) tid = int64_t{*x.tid};
    std::string kind = x.kind + (x.non_blocking ? " (non-blocking)" : "");
    q.rows.push_back({x.id, int64_t{x.tgid}, kind, hex(x.handle), tid, x.ops, x.max_depth, unproven[x.id]});
    s.json["queues"].push_back({{"queue", x.id},
                                {"pid", x.tgid},
                                {"kind", x.kind},
                                {"handle", x.handle},
                                {"tid", x.tid ? nlohmann::json(*x.tid) : nlohmann::json()},
                                {"non_blocking", x.non_blocking},
                                {"ops", x.ops},
                                {"max_depth", x.max_depth},
                                {"never_proven", unproven[x.id]}});
  }
  s.tables.emplace_back("queues", std::move(q));

  std::map<std::string, int64_t> dep_kinds;
  for (const auto& d : r.deps) ++dep_kinds[d.kind];
  QueryResult d{{"dependency", "count"}, {}};
  for (auto& [k, n] : dep_kinds) d.rows.push_back({k, n});
  s.json["dependencies"] = dep_kinds;
  s.tables.emplace_back("dependencies", std::move(d));

  std::map<std::string, std::pair<int64_t, int64_t>> obs;  // kind -> (count, blocked)
  std::map<std::string, int64_t> completed;
  for (const auto& o : r.observations) {
    obs[o.kind].first += 1, obs[o.kind].second += o.blocked_ns;
    completed[o.kind] += o.ops_completed;
  }
  QueryResult ob{{"observation", "count", "ops_proven", "blocked_ns"}, {}};
  s.json["observations"] = nlohmann::json::array();
  for (auto& [k, v] : obs) {
    ob.rows.push_back({k, v.first, completed[k], v.second});
    s.json["observations"].push_back(
        {{"kind", k}, {"count", v.first}, {"ops_proven", completed[k]}, {"blocked_ns", v.second}});
  }
  s.tables.emplace_back("host observations", std::move(ob));
  s.json["ops"] = r.ops.size();
  s.json["never_proven"] = never;

  std::map<std::string, int64_t> hz_kinds;
  for (const auto& h : r.hazards) ++hz_kinds[h.kind];
  QueryResult hk{{"hazard", "count"}, {}};
  for (auto& [k, n] : hz_kinds) hk.rows.push_back({k, n});
  s.json["hazard_counts"] = hz_kinds;
  s.tables.emplace_back("hazards by kind", std::move(hk));

  QueryResult hl{{"id", "kind", "t_s", "detail", "stack"}, {}};
  s.json["hazards"] = nlohmann::json::array();
  for (const auto& h : r.hazards) {
    std::string stack = stack_head(db, h.stack_id);
    hl.rows.push_back({h.id, h.kind, std::to_string(since(h.ts_ns)), h.detail, stack});
    s.json["hazards"].push_back({{"id", h.id},
                                 {"kind", h.kind},
                                 {"ts_ns", h.ts_ns},
                                 {"detail", h.detail},
                                 {"op_id", h.op_id ? nlohmann::json(*h.op_id) : nlohmann::json()},
                                 {"other_op_id", h.other_op_id ? nlohmann::json(*h.other_op_id) : nlohmann::json()},
                                 {"stack_id", h.stack_id},
                                 {"stack", stack},
                                 {"other_stack", stack_head(db, h.other_stack_id)}});
  }
  s.tables.emplace_back("hazards", std::move(hl));
  return s;
}

}  // namespace

int run_replay(const ReplayArgs& a) {
  auto fmt = parse_format(a.format);
  if (!fmt) {
    print_error(kProgram, fmt.error());
    return 2;
  }
  auto db = a.no_write ? open_capture_readonly(a.file) : open_for_write(a.file);
  if (!db) {
    print_error(kProgram, db.error());
    return db.error().exit_code;
  }
  std::optional<Progress> progress(std::in_place, "gpuobs replay");
  auto r = replay::run(*db);
  if (!r) {
    progress.reset();  // its line is erased before anything else is printed
    print_error(kProgram, r.error());
    return r.error().exit_code;
  }
  if (!a.no_write) {
    if (auto s = replay::write(*db, *r); !s) {
      progress.reset();
      Error e = s.error();
      if (e.hint.empty()) e.hint = "run with --no-write to only print the replay";
      print_error(kProgram, e);
      return 1;
    }
  }
  progress.reset();
  Summary s = summarize(*db, *r);
  if (*fmt == OutputFormat::json) {
    std::cout << s.json.dump(2) << "\n";
    return 0;
  }
  if (*fmt == OutputFormat::csv) {  // each table headed by its title, with its own header row
    for (size_t i = 0; i < s.tables.size(); ++i) {
      std::cout << (i ? "\n" : "") << "== " << s.tables[i].first << " ==\n";
      print_result(s.tables[i].second, OutputFormat::csv, std::cout);
    }
    return 0;
  }
  for (auto& [title, rows] : s.tables) {
    std::cout << "== " << title << "\n";
    print_result(rows, OutputFormat::table, std::cout);
    std::cout << "\n";
  }
  std::cout << r->ops.size() << " operations, " << s.json["never_proven"].get<int64_t>() << " never proven complete"
            << (a.no_write ? "" : "; tables replay_* written (docs/replay.md)") << "\n";
  return 0;
}

}  // namespace gpuobs::cli
