// gpuobs replay FILE: rebuild the GPU queues a capture's host drove, write the
// replay tables (docs/replay.md) and print what they show.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.h"
#include "cli/output_file.h"
#include "cli/replay_execute.h"
#include "common/log.h"
#include "common/progress.h"
#include "export/chakra_writer.h"
#include "replay/exec_schedule.h"
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

// replay --check: each operation with a measured GPU time (schema 20) is
// inside its window when earliest_start <= GPU start and, where the replay
// proved an end, GPU end <= latest_end. A measured interval outside its
// window is a replay bug or a documented limit (docs/replay.md).
int check_against_gpu_times(Db& db, const replay::Result& r, OutputFormat fmt) {
  std::map<std::pair<std::string, int64_t>, std::pair<int64_t, int64_t>> measured;  // (table, id) -> (start, end)
  Stmt st(db.get(), "SELECT call_table, row_id, start_mono_ns, end_mono_ns FROM gpu_times");
  while (st.valid() && st.step() == SQLITE_ROW)
    measured[{reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 0)), sqlite3_column_int64(st.get(), 1)}] = {
        sqlite3_column_int64(st.get(), 2), sqlite3_column_int64(st.get(), 3)};
  int64_t checked = 0, inside = 0, early = 0, late = 0, open_ended = 0;
  QueryResult outside{{"op", "kind", "name", "window_start_ns", "gpu_start_ns", "gpu_end_ns", "window_end_ns"}, {}};
  for (const auto& o : r.ops) {
    auto it = measured.find({o.source_table, o.source_id});
    if (it == measured.end()) continue;
    ++checked;
    auto [gs, ge] = it->second;
    bool starts_ok = gs >= o.earliest_start_ns;
    bool ends_ok = !o.latest_end_ns || ge <= *o.latest_end_ns;
    if (!o.latest_end_ns) ++open_ended;
    if (starts_ok && ends_ok) {
      ++inside;
      continue;
    }
    early += !starts_ok, late += !ends_ok;
    if (outside.rows.size() < 20)
      outside.rows.push_back(
          {o.id, o.kind, o.name, o.earliest_start_ns, gs, ge, o.latest_end_ns ? Cell(*o.latest_end_ns) : Cell()});
  }
  nlohmann::ordered_json j{
      {"measured_ops", checked},       {"inside", inside},
      {"starts_before_window", early}, {"ends_after_window", late},
      {"never_proven", open_ended},    {"measured_not_replayed", static_cast<int64_t>(measured.size()) - checked}};
  if (fmt == OutputFormat::json) {
    std::cout << j.dump(2) << "\n";
  } else {
    if (!outside.rows.empty()) {
      std::cout << "== measured GPU intervals outside their replay window (first 20)\n";
      print_result(outside, fmt, std::cout);
    }
    std::cout << "replay check: " << inside << " of " << checked
              << " measured GPU intervals inside their operation's window (" << early << " start before it, " << late
              << " end after it; " << open_ended << " windows never proven closed; "
              << j["measured_not_replayed"].get<int64_t>() << " measured calls not in the replay)\n";
  }
  if (checked == 0) {
    print_error(kProgram, make_error("no GPU times in this capture to check the replay against",
                                     "record with gpuobs record --gpu-time (docs/gpu_time.md)"));
    return 2;
  }
  return inside == checked ? 0 : 1;
}

// --window FROM:TO in seconds -> ns.
Status parse_window(const std::string& w, replay::ScheduleOptions& o) {
  if (w.empty()) return {};
  auto colon = w.find(':');
  char* end = nullptr;
  auto seconds = [&](const std::string& t) -> std::optional<int64_t> {
    if (t.empty()) return std::nullopt;
    double v = std::strtod(t.c_str(), &end);
    if (end != t.c_str() + t.size() || !(v >= 0) || v > 1e9) return std::nullopt;
    return static_cast<int64_t>(v * 1e9);
  };
  if (colon == std::string::npos) return make_error("--window wants FROM:TO in seconds, got '" + w + "'");
  o.from_ns = seconds(w.substr(0, colon));
  o.to_ns = seconds(w.substr(colon + 1));
  if ((!o.from_ns && colon > 0) || (!o.to_ns && colon + 1 < w.size()) ||
      (o.from_ns && o.to_ns && *o.to_ns <= *o.from_ns))
    return make_error("--window wants FROM:TO in seconds after the capture's start, FROM < TO, got '" + w + "'");
  return {};
}

// The part of the capture and the what-if edits, from the flags.
Result<replay::ScheduleOptions> schedule_options(const ReplayArgs& a) {
  replay::ScheduleOptions o;
  o.pid = a.pid;
  o.speed = a.speed;
  o.no_host_gaps = a.no_host_gaps;
  o.drop_syncs = a.drop_syncs;
  o.drop_observations = a.drop_sync;
  if (auto s = parse_window(a.window, o); !s) {
    Error e = s.error();
    e.exit_code = 2;
    return e;
  }
  for (const std::string& m : a.merge) {
    long long from = 0, into = 0;
    char tail = 0;
    if (std::sscanf(m.c_str(), "%lld:%lld%c", &from, &into, &tail) != 2)
      return make_error("--merge wants FROM:INTO queue ids, got '" + m + "'",
                        "gpuobs report replay_queues FILE lists the queues", 2);
    o.merge.emplace_back(from, into);
  }
  return o;
}

int write_schedule(Db& db, const ReplayArgs& a) {
  auto o = schedule_options(a);
  if (!o) {
    print_error(kProgram, o.error());
    return 2;
  }
  auto s = replay::build_schedule(db, *o);
  if (!s) {
    print_error(kProgram, s.error());
    return s.error().exit_code ? s.error().exit_code : 2;
  }
  // Through the rule every output file follows (cli/output_file.h: a
  // temporary file renamed when complete, never through a planted link); a
  // schedule replaces the one an earlier run wrote.
  auto write = [&](const std::string& path, const std::string& text) {
    Status st = write_output(path, /*force=*/true, [&](std::ostream& out) -> Status {
      out.write(text.data(), static_cast<std::streamsize>(text.size()));
      if (!out) return make_error("cannot write " + path + " (disk full?)");
      return {};
    });
    if (!st) print_error(kProgram, st.error());
    return st.ok();
  };
  if (!a.schedule_out.empty() && !write(a.schedule_out, replay::schedule_json(*s))) return 1;
  if (!a.chakra_out.empty()) {
    auto trace = exporter::chakra_trace(*s, a.file);
    if (!trace) {
      print_error(kProgram, trace.error());
      return 1;
    }
    if (!write(a.chakra_out, *trace)) return 1;
  }
  std::cerr << "gpuobs replay: schedule of " << s->steps.size() << " steps on " << s->streams.size() << " streams, "
            << s->threads.size() << " threads (" << s->dropped_syncs << " syncs dropped) written to "
            << (a.schedule_out.empty() ? "" : a.schedule_out)
            << (a.schedule_out.empty() || a.chakra_out.empty() ? "" : " and ")
            << (a.chakra_out.empty() ? "" : a.chakra_out + " (Chakra)") << "\n";
  return 0;
}

}  // namespace

int run_replay(const ReplayArgs& a) {
  auto fmt = parse_format(a.format);
  if (!fmt) {
    print_error(kProgram, fmt.error());
    return 2;
  }
  if (a.execute)
    if (int rc = execute_preflight(a); rc != 0) return rc;
  bool read_only = a.no_write || a.check || !a.schedule_out.empty() || !a.chakra_out.empty();
  auto db = read_only ? open_capture_readonly(a.file) : open_for_write(a.file);
  if (!db) {
    print_error(kProgram, db.error());
    return db.error().exit_code;
  }
  if (!a.schedule_out.empty() || !a.chakra_out.empty()) return write_schedule(*db, a);
  if (a.execute) {
    auto o = schedule_options(a);
    if (!o) {
      print_error(kProgram, o.error());
      return 2;
    }
    return execute_schedule(*db, a, *o);
  }
  std::optional<Progress> progress(std::in_place, "gpuobs replay");
  auto r = replay::run(*db);
  if (!r) {
    progress.reset();  // its line is erased before anything else is printed
    print_error(kProgram, r.error());
    return r.error().exit_code;
  }
  if (a.check) {
    progress.reset();
    return check_against_gpu_times(*db, *r, *fmt);
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
