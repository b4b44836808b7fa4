// gpuobs stacks FILE: the call stacks that launched, copied, allocated or
// blocked the most, innermost frame first. gpuobs export folded FILE: the
// same weights as flame-graph input (flamegraph.pl, speedscope, inferno).
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/commands.h"
#include "cli/output_file.h"
#include "common/log.h"
#include "common/short_name.h"
#include "common/terminal_text.h"
#include "report/query.h"
#include "report/stacks_query.h"
#include "store/schema.h"

namespace gpuobs::cli {
namespace {

struct Loaded {
  StackMeasure measure;
  std::vector<StackLeaf> leaves;
  std::map<int64_t, StackInfo> stacks;
};

Result<Loaded> load(const StackArgs& a, bool all_stacks, size_t top) {
  auto m = parse_measure(a.by);
  if (!m) return m.error();
  auto db = open_capture_readonly(a.file.empty() ? std::string(kDaemonCapture) : a.file);
  if (!db) return db.error();
  StackFilter f{a.pid ? std::optional<int64_t>(a.pid) : std::nullopt, a.kernel, a.api, a.by_process};
  auto leaves = weigh_stacks(*db, *m, f);
  if (!leaves) return leaves.error();
  std::map<int64_t, int64_t> per_stack;
  for (auto& l : *leaves) per_stack[l.stack_id] += l.weight;
  std::vector<std::pair<int64_t, int64_t>> ranked(per_stack.begin(), per_stack.end());
  std::sort(ranked.begin(), ranked.end(),
            [](auto& x, auto& y) { return x.second != y.second ? x.second > y.second : x.first < y.first; });
  std::set<int64_t> ids;
  for (size_t i = 0; i < ranked.size() && (all_stacks || i < top); ++i) ids.insert(ranked[i].first);
  auto stacks = load_stacks(*db, ids);
  if (!stacks) return stacks.error();
  return Loaded{*m, std::move(*leaves), std::move(*stacks)};
}

std::string location(const StackFrame& f) {
  // A Python frame's module is its source file (frames.kind 'python').
  if (!f.file.empty() && f.module == f.file)
    return "py  " + f.file.substr(f.file.rfind('/') + 1) + ":" + std::to_string(f.line);
  std::string s = f.module.substr(f.module.rfind('/') + 1);
  if (!f.file.empty()) s += "  " + f.file.substr(f.file.rfind('/') + 1) + ":" + std::to_string(f.line);
  return s;
}

// One row per frame of each ranked stack (innermost first, frame 0), the
// stack's weight on every row, as perf script or a spreadsheet expects: the
// same numbers as --format json, flat.
QueryResult csv_rows(const Loaded& L, const std::vector<std::pair<int64_t, int64_t>>& ranked, int64_t total,
                     const char* unit) {
  QueryResult r;
  r.columns = {"rank",   "stack_id",      "weight", "unit", "share",  "end_reason", "frame",        "module",
               "symbol", "symbol_offset", "file",   "line", "offset", "kind",       "python_thread"};
  int64_t rank = 0;
  for (auto& [w, id] : ranked) {
    ++rank;
    const StackInfo& s = L.stacks.at(id);
    double share = total ? double(w) / double(total) : 0.0;
    for (size_t i = 0; i < s.frames.size(); ++i) {
      const StackFrame& f = s.frames[i];
      auto text_or_null = [](const std::string& t) { return t.empty() ? Cell{} : Cell{t}; };
      r.rows.push_back({rank, id, w, std::string(unit), share, s.end_reason, static_cast<int64_t>(i), f.module,
                        text_or_null(f.symbol), f.symbol_offset, text_or_null(f.file), f.line ? Cell{f.line} : Cell{},
                        f.offset, std::string(f.python ? "python" : "native"), text_or_null(s.python_thread)});
    }
  }
  return r;
}

}  // namespace

int run_stacks(const StackArgs& a) {
  auto fmt = parse_format(a.format);
  if (!fmt) {
    print_error("gpuobs stacks", fmt.error());
    return 2;
  }
  auto loaded = load(a, false, a.top);
  if (!loaded) {
    print_error("gpuobs stacks", loaded.error());
    return loaded.error().exit_code;
  }
  const Loaded& L = *loaded;
  int64_t total = 0;
  std::map<int64_t, std::vector<std::pair<int64_t, std::string>>> leaves_of;
  std::map<int64_t, int64_t> weight_of;
  for (auto& l : L.leaves) {
    total += l.weight;
    weight_of[l.stack_id] += l.weight;
    leaves_of[l.stack_id].emplace_back(l.weight, l.leaf);
  }
  std::vector<std::pair<int64_t, int64_t>> ranked;
  for (auto& [id, info] : L.stacks) ranked.emplace_back(weight_of[id], id);
  std::sort(ranked.begin(), ranked.end(),
            [](auto& x, auto& y) { return x.first != y.first ? x.first > y.first : x.second < y.second; });
  const char* unit = measure_unit(L.measure);

  if (*fmt == OutputFormat::csv) {
    print_result(csv_rows(L, ranked, total, unit), OutputFormat::csv, std::cout);
    return 0;
  }
  if (*fmt == OutputFormat::json) {
    nlohmann::json out = nlohmann::json::array();
    for (auto& [w, id] : ranked) {
      const StackInfo& s = L.stacks.at(id);
      nlohmann::json frames = nlohmann::json::array(), leaves = nlohmann::json::array();
      for (auto& f : s.frames)
        frames.push_back({{"module", f.module},
                          {"symbol", f.symbol.empty() ? nlohmann::json() : nlohmann::json(f.symbol)},
                          {"symbol_offset", f.symbol_offset},
                          {"file", f.file.empty() ? nlohmann::json() : nlohmann::json(f.file)},
                          {"line", f.line ? nlohmann::json(f.line) : nlohmann::json()},
                          {"offset", f.offset},
                          {"kind", f.python ? "python" : "native"}});
      auto ls = leaves_of[id];
      std::sort(ls.rbegin(), ls.rend());
      for (auto& [lw, name] : ls) leaves.push_back({{"name", name}, {"weight", lw}});
      out.push_back({{"stack_id", id},
                     {"weight", w},
                     {"unit", unit},
                     {"share", total ? double(w) / double(total) : 0.0},
                     {"end_reason", s.end_reason},
                     {"python_thread", s.python_thread.empty() ? nlohmann::json() : nlohmann::json(s.python_thread)},
                     {"leaves", leaves},
                     {"frames", frames}});
    }
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  // Folded as nsys stats and perf report show C++ names (--full-names: whole).
  auto shorten = [&](const std::string& n) { return a.full_names ? n : short_name(n); };
  std::cout << "top " << ranked.size() << " stacks by " << a.by << " (" << total << " " << unit << " in all)\n";
  int rank = 0;
  for (auto& [w, id] : ranked) {
    const StackInfo& s = L.stacks.at(id);
    char share[32];
    std::snprintf(share, sizeof share, "%.1f%%", total ? 100.0 * double(w) / double(total) : 0.0);
    std::cout << "\n#" << ++rank << "  " << w << " " << unit << " (" << share << ")  stack " << id << ", "
              << s.frames.size() << " frames, " << terminal_safe(s.end_reason) << "\n";
    auto ls = leaves_of[id];
    std::sort(ls.rbegin(), ls.rend());
    for (size_t i = 0; i < ls.size() && i < 3; ++i)
      std::cout << "    " << (i == 0 ? "-> " : "   ") << terminal_safe(shorten(ls[i].second)) << "  (" << ls[i].first
                << ")\n";
    if (ls.size() > 3) std::cout << "       ... " << ls.size() - 3 << " more\n";
    const size_t borrowed = main_thread_python_start(s);
    for (size_t i = 0; i < s.frames.size(); ++i) {
      if (i == borrowed) std::cout << "    -- the main thread's Python (this thread ran none) --\n";
      std::cout << "    #" << i << "  " << terminal_safe(shorten(frame_label(s.frames[i]))) << "  ["
                << terminal_safe(location(s.frames[i])) << "]\n";
    }
  }
  return 0;
}

int run_export_folded(const StackArgs& a) {
  if (!a.output.empty())
    if (Status st = check_output(a.output, a.force); !st) {
      print_error("gpuobs export folded", st.error());
      return st.error().exit_code;
    }
  auto loaded = load(a, true, 0);
  if (!loaded) {
    print_error("gpuobs export folded", loaded.error());
    return loaded.error().exit_code;
  }
  // Traced names reach a terminal when folded goes to standard output there:
  // their control characters are escaped (a file keeps every byte).
  const bool to_terminal = (a.output.empty() || a.output == kStdoutPath) && ::isatty(STDOUT_FILENO);
  auto write = [&](std::ostream& out) -> Status {
    auto clean = [to_terminal](std::string s) {  // ';' separates frames, newlines end lines
      for (char& c : s)
        if (c == ';' || c == '\n') c = ':';
      return to_terminal ? terminal_safe(s) : s;
    };
    // root first, the leaf (kernel, API, ioctl) on top
    for (auto& l : loaded->leaves) {
      const StackInfo& s = loaded->stacks.at(l.stack_id);
      // --by-process: two root frames, the command then its pid, so one
      // program's processes sit side by side and never merge with another's.
      std::string line = a.by_process ? clean(l.comm) + ";pid " + std::to_string(l.pid) + ";" : "";
      // The main thread's Python frames (a thread that ran none) sit below
      // a marker frame, so the worker's work reads as called from there.
      const size_t borrowed = main_thread_python_start(s);
      for (size_t i = s.frames.size(); i-- > 0;) {
        line += clean(frame_label(s.frames[i])) + ";";
        if (i == borrowed) line += "[other thread];";
      }
      out << line << clean("[" + l.leaf + "]") << " " << l.weight << "\n";
    }
    if (!out) return make_error("cannot write " + (a.output.empty() ? std::string("the output") : a.output));
    return {};
  };
  if (a.output.empty()) {
    Status s = write(std::cout);
    std::cout.flush();
    return s ? 0 : 1;
  }
  if (Status s = write_output(a.output, a.force, write); !s) {
    print_error("gpuobs export folded", s.error());
    return s.error().exit_code;
  }
  return 0;
}

}  // namespace gpuobs::cli
