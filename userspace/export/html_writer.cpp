#include "export/html_writer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <string_view>

#include "export/html_template.h"
#include "export/timeline_source.h"
#include "export/trace_layout.h"
#include "report/query.h"
#include "report/stacks_query.h"

namespace gpuobs::exporter {
namespace {

using nlohmann::json;

// The summary and the top tables, as the reports give them.
Result<json> report_tables(Db& db) {
  json out = json::object();
  for (const char* name :
       {"capture", "kern_sum", "api_sum", "copy_sum", "sync_sum", "mem", "proc_sum", "replay_exec_sum"}) {
    auto sql = report_sql(name);
    if (!sql) return sql.error();
    auto r = run_query(db, *sql);
    if (!r) return r.error();
    json rows = json::array();
    for (const auto& row : r->rows) {
      json cells = json::array();
      for (const Cell& c : row) {
        if (auto* i = std::get_if<int64_t>(&c)) cells.push_back(*i);
        else if (auto* d = std::get_if<double>(&c)) cells.push_back(*d);
        else if (auto* s = std::get_if<std::string>(&c)) cells.push_back(*s);
        else cells.push_back(nullptr);
      }
      rows.push_back(std::move(cells));
    }
    out[name] = {{"columns", r->columns}, {"rows", std::move(rows)}};
  }
  return out;
}

// A flame graph tree: root -> ... -> leaf, children by name.
struct Node {
  int64_t value = 0;
  std::map<std::string, Node> children;
};

json to_json(const std::string& name, const Node& n, int64_t cutoff) {
  json children = json::array();
  int64_t other = 0;
  for (const auto& [child_name, child] : n.children) {
    if (child.value < cutoff) other += child.value;
    else children.push_back(to_json(child_name, child, cutoff));
  }
  if (other) children.push_back({{"n", "(other)"}, {"v", other}, {"c", json::array()}});
  return {{"n", name}, {"v", n.value}, {"c", std::move(children)}};
}

Result<json> flame_graphs(Db& db, double min_share) {
  json out = json::object();
  for (const char* by : {"launches", "calls", "blocked", "copied", "allocated", "ioctls"}) {
    auto m = parse_measure(by);
    if (!m) return m.error();
    StackFilter f;
    f.by_process = true;  // rooted at their processes: never merged across them
    auto leaves = weigh_stacks(db, *m, f);
    if (!leaves) return leaves.error();
    std::set<int64_t> ids;
    for (const auto& l : *leaves) ids.insert(l.stack_id);
    auto stacks = load_stacks(db, ids);
    if (!stacks) return stacks.error();
    Node root;
    for (const auto& l : *leaves) {
      root.value += l.weight;
      Node* n = &root.children[l.comm + " (pid " + std::to_string(l.pid) + ")"];
      n->value += l.weight;
      auto st = stacks->find(l.stack_id);
      if (st != stacks->end()) {
        // The main thread's Python frames (this thread ran none) sit above
        // an "[other thread]" node, as in folded output.
        const auto& frames = st->second.frames;
        const size_t borrowed = main_thread_python_start(st->second);
        for (size_t k = frames.size(); k-- > 0;) {
          n = &n->children[frame_label(frames[k])];
          n->value += l.weight;
          if (k == borrowed) {
            n = &n->children["[other thread]"];
            n->value += l.weight;
          }
        }
      }
      n = &n->children["[" + l.leaf + "]"];
      n->value += l.weight;
    }
    auto cutoff = static_cast<int64_t>(static_cast<double>(root.value) * min_share);
    out[by] = {{"unit", measure_unit(*m)}, {"tree", to_json("all", root, std::max<int64_t>(cutoff, 1))}};
  }
  return out;
}

// The timeline of the window: tracks, slices [track, start, duration, name,
// args], counters; times in ns since the capture started. Names, arg keys and
// string arg values are indices into one string table (an arg is [key,
// is_string, value]): a replayed window's notes repeat on every slice, and
// inline they made a 300-step training run's page 22 MB.
json timeline(TraceLayout L, const HtmlOptions& o, int64_t capture_start) {
  // Seconds past the capture's end select nothing (and never overflow).
  const double span_s = static_cast<double>(std::max<int64_t>(0, L.end_ns - capture_start)) / 1e9 + 1;
  auto at = [&](double s) { return capture_start + static_cast<int64_t>(std::min(s, span_s) * 1e9); };
  int64_t from = o.since_s ? at(*o.since_s) : L.start_ns;
  int64_t to = o.until_s ? at(*o.until_s) : L.end_ns;
  json tracks = json::array();
  for (const Track& t : L.tracks)
    tracks.push_back({{"id", t.uuid},
                      {"parent", t.parent},
                      {"kind", static_cast<int>(t.kind)},
                      {"name", t.name},
                      {"pid", t.pid},
                      {"tid", t.tid}});
  std::vector<uint32_t> used_strings(L.strings.size(), 0);
  json strings = json::array({""});
  auto string_id = [&](uint32_t s) {
    if (!used_strings[s] && s) {
      used_strings[s] = static_cast<uint32_t>(strings.size());
      strings.push_back(L.strings[s]);
    }
    return used_strings[s];
  };
  std::map<std::string_view, uint32_t> key_ids;  // arg keys are C strings, not in L.strings
  auto key_id = [&](const char* key) {
    auto [it, fresh] = key_ids.emplace(key, 0);
    if (fresh) {
      it->second = static_cast<uint32_t>(strings.size());
      strings.push_back(key);
    }
    return it->second;
  };
  json slices = json::array();
  size_t kept = 0, in_window = 0;
  for (const Slice& s : L.slices) {
    if (s.end_ns < from || s.start_ns > to) continue;
    ++in_window;
    if (kept >= o.max_slices) continue;
    ++kept;
    json args = json::array();
    for (const Arg& a : s.args)
      args.push_back({key_id(a.key), a.is_string ? 1 : 0,
                      a.is_string ? json(string_id(static_cast<uint32_t>(a.value))) : json(a.value)});
    slices.push_back({s.track, s.start_ns - capture_start, s.end_ns - s.start_ns, string_id(s.name), std::move(args)});
  }
  json counters = json::object();
  for (const CounterPoint& c : L.counters) {
    if (c.ts_ns > to) continue;
    counters[std::to_string(c.track)].push_back({c.ts_ns - capture_start, c.value});
  }
  return {{"from", from - capture_start},  {"to", to - capture_start},    {"tracks", std::move(tracks)},
          {"strings", std::move(strings)}, {"slices", std::move(slices)}, {"counters", std::move(counters)},
          {"slices_in_window", in_window}, {"slices_kept", kept}};
}

}  // namespace

std::string script_safe_json(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '<') out += "\\u003c";
    else if (c == '>') out += "\\u003e";
    else if (c == '&') out += "\\u0026";
    else if (c == '\xe2' && i + 2 < text.size() && text[i + 1] == '\x80' &&
             (text[i + 2] == '\xa8' || text[i + 2] == '\xa9')) {
      out += text[i + 2] == '\xa8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

Status write_html(Db& db, const replay::Result& replayed, const HtmlOptions& o, std::ostream& out) {
  auto tables = report_tables(db);
  if (!tables) return tables.error();
  auto flames = flame_graphs(db, o.min_share);
  if (!flames) return flames.error();
  auto tl = load_timeline(db);
  if (!tl) return tl.error();
  int64_t capture_start = tl->start_ns;
  json data = {{"tables", std::move(*tables)},
               {"flame", std::move(*flames)},
               {"timeline", timeline(build_layout(std::move(*tl), replayed), o, capture_start)}};
  // Bytes that are not UTF-8 (a traced name is whatever the process held)
  // become U+FFFD rather than an exception.
  std::string payload = script_safe_json(data.dump(-1, ' ', false, json::error_handler_t::replace));
  std::string_view page = html_template();
  constexpr std::string_view hole = "/*GPUOBS_DATA*/null";
  size_t at = page.find(hole);
  if (at == std::string_view::npos) return make_error("the HTML template has no data placeholder (build problem)");
  out << page.substr(0, at) << payload << page.substr(at + hole.size());
  if (!out) return make_error("cannot write the HTML report (disk full?)");
  return {};
}

}  // namespace gpuobs::exporter
