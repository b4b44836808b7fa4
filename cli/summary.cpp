// gpuobs summary FILE: a capture's story on one screen (100 columns, at most
// 40 lines), like the overview nsys prints after a profile: what ran, what
// gpuobs saw (processes, launches by kernel, streams, syncs, copies, the top
// stack with file:line), where the capture and its HTML report are, and the
// next commands to try. The demo ends with it. Only what the capture holds is
// said: a family with no calls gets no line, so there are no zero counters.
#include <sys/stat.h>
#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "common/human_bytes.h"
#include "common/log.h"
#include "common/short_name.h"
#include "common/terminal_text.h"
#include "report/query.h"
#include "store/schema.h"

namespace gpuobs::cli {
namespace {

constexpr const char* kProgram = "gpuobs summary";
constexpr size_t kWidth = 100;

// "20,000": counts read at a glance.
std::string grouped(int64_t v) {
  std::string s = std::to_string(v < 0 ? -v : v), out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string plural(int64_t n, const char* one, const char* many) { return grouped(n) + " " + (n == 1 ? one : many); }

// A duration in the unit that reads best: ns, µs, ms or s, 3 significant digits.
std::string duration_text(double ns) {
  const char* unit = "ns";
  double v = ns;
  if (ns >= 1e9) v = ns / 1e9, unit = "s";
  else if (ns >= 1e6) v = ns / 1e6, unit = "ms";
  else if (ns >= 1e3) v = ns / 1e3, unit = "µs";
  char buf[32];
  std::snprintf(buf, sizeof buf, v >= 100 ? "%.0f %s" : v >= 10 ? "%.1f %s" : "%.2f %s", v, unit);
  return buf;
}

// A line of the screen: traced text made inert, cut at the width.
void line(const std::string& s) {
  std::string t = terminal_safe(s);
  if (t.size() > kWidth) t = t.substr(0, kWidth - 3) + "...";
  std::printf("%s\n", t.c_str());
}

std::string cut(std::string s, size_t w) { return s.size() <= w ? s : s.substr(0, w - 3) + "..."; }

struct Q {
  Db& db;
  std::vector<std::vector<Cell>> rows(const std::string& sql) {
    auto r = run_query(db, sql);
    return r ? r->rows : std::vector<std::vector<Cell>>{};
  }
  int64_t num(const std::string& sql) {
    auto r = rows(sql);
    if (r.empty() || r[0].empty()) return 0;
    if (auto* i = std::get_if<int64_t>(&r[0][0])) return *i;
    if (auto* d = std::get_if<double>(&r[0][0])) return static_cast<int64_t>(*d);
    return 0;
  }
  static std::string str(const Cell& c) {
    if (auto* s = std::get_if<std::string>(&c)) return *s;
    if (auto* i = std::get_if<int64_t>(&c)) return std::to_string(*i);
    if (auto* d = std::get_if<double>(&c)) return std::to_string(*d);
    return "";
  }
  static int64_t i64(const Cell& c) {
    if (auto* i = std::get_if<int64_t>(&c)) return *i;
    if (auto* d = std::get_if<double>(&c)) return static_cast<int64_t>(*d);
    return 0;
  }
};

bool has_table(Q& q, const char* name) {
  return q.num(std::string("SELECT count(*) FROM sqlite_master WHERE name = '") + name + "'") > 0;
}

}  // namespace

int run_summary(const SummaryArgs& a) {
  const std::string file = a.file.empty() ? kDaemonCapture : a.file;
  auto db = open_capture_readonly(file);
  if (!db) {
    print_error(kProgram, db.error());
    return db.error().exit_code;
  }
  Q q{*db};
  auto cap = q.rows(
      "SELECT command, exit_status, (coalesce(end_mono_ns, committed_mono_ns) - start_mono_ns) / 1e9, state, mode "
      "FROM capture WHERE id = 1");
  if (cap.empty()) {
    print_error(kProgram, make_error(file + " has no capture row", "gpuobs check " + file, 2));
    return 2;
  }
  const auto& c = cap[0];
  const bool daemon = Q::str(c[4]) == "daemon";
  const int64_t launches = q.num("SELECT coalesce(sum(launches), 0) FROM launch_agg");
  const int64_t streams = q.num("SELECT count(DISTINCT process_id || ':' || stream) FROM launch_agg");
  const int64_t calls = q.num("SELECT count(*) FROM api_calls WHERE family != 'launch'");
  const int64_t procs =
      q.num("SELECT count(*) FROM (SELECT process_id FROM launch_agg UNION SELECT process_id FROM api_calls)");

  line("What ran");
  if (daemon) {
    line("  gpuobsd, system-wide, for " +
         duration_text(std::get_if<double>(&c[2]) ? *std::get_if<double>(&c[2]) * 1e9 : 0));
  } else {
    std::string status = std::holds_alternative<std::monostate>(c[1]) ? "no exit status" : "exit " + Q::str(c[1]);
    double secs = std::get_if<double>(&c[2]) ? *std::get_if<double>(&c[2]) : 0;
    line("  " + cut(Q::str(c[0]), 64) + "  (" + status + ", " + duration_text(secs * 1e9) + ")");
  }
  auto top_procs = q.rows(
      "SELECT p.tgid, CASE WHEN length(p.comm) = 15 AND p.exe LIKE '%/' || p.comm || '%' "
      "THEN replace(p.exe, rtrim(p.exe, replace(p.exe, '/', '')), '') ELSE p.comm END, "
      "coalesce((SELECT sum(launches) FROM launch_agg l WHERE l.process_id = p.id), 0) AS n "
      "FROM processes p WHERE p.id IN (SELECT process_id FROM launch_agg UNION SELECT process_id FROM api_calls) "
      "ORDER BY n DESC, p.tgid LIMIT 3");
  std::string plist;
  for (const auto& r : top_procs) plist += (plist.empty() ? "" : ", ") + Q::str(r[1]) + " (pid " + Q::str(r[0]) + ")";
  if (procs > static_cast<int64_t>(top_procs.size())) plist += ", ...";
  line("  " + grouped(procs) + (procs == 1 ? " GPU process: " : " GPU processes: ") + plist);

  line("");
  line("What gpuobs saw");
  line("  " + grouped(launches) + " kernel launches on " + grouped(streams) + (streams == 1 ? " stream" : " streams") +
       ", " + grouped(calls) + " other GPU API calls");
  if (launches) {
    auto kernels = q.rows(
        "SELECT CASE WHEN kernel_name != '' THEN kernel_name ELSE printf('(unnamed: handle 0x%x)', function) END AS k, "
        "sum(launches) AS n, count(DISTINCT stream) FROM launch_agg GROUP BY k ORDER BY n DESC, k LIMIT 4");
    line("  kernel                                                            launches  share  streams");
    for (const auto& r : kernels) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "  %-64s %9s %5.1f%% %8s", cut(short_name(Q::str(r[0])), 64).c_str(),
                    grouped(Q::i64(r[1])).c_str(),
                    100.0 * static_cast<double>(Q::i64(r[1])) / static_cast<double>(launches),
                    grouped(Q::i64(r[2])).c_str());
      line(buf);
    }
    const int64_t kinds = q.num("SELECT count(DISTINCT kernel_name || function) FROM launch_agg");
    if (kinds > 4) line("  ... " + grouped(kinds - 4) + " more kernels: gpuobs report launches " + file);
  }
  // Per stream: kernels, async copies and syncs (the streams the launches used first).
  if (streams > 1 || launches) {
    auto per = q.rows(
        "SELECT l.process_id, (SELECT label FROM stream_names n WHERE n.process_id = l.process_id "
        " AND n.stream = l.stream), sum(l.launches) AS n, "
        "(SELECT count(*) FROM copies c WHERE c.process_id = l.process_id AND c.stream = l.stream AND c.async = 1), "
        "(SELECT count(*) FROM syncs s WHERE s.process_id = l.process_id AND s.target = 'stream' "
        " AND s.stream = l.stream) "
        "FROM launch_agg l GROUP BY l.process_id, l.stream ORDER BY n DESC LIMIT 6");
    std::string s = "  streams:";
    for (const auto& r : per)
      s += "  " + Q::str(r[1]) + " " + grouped(Q::i64(r[2])) + " launches" +
           (Q::i64(r[3]) ? ", " + plural(Q::i64(r[3]), "copy", "copies") : "") +
           (Q::i64(r[4]) ? ", " + plural(Q::i64(r[4]), "sync", "syncs") : "") + ";";
    if (!per.empty()) {
      s.pop_back();
      // Wrapped at the width, continuation lines indented.
      std::string cur;
      size_t pos = 0;
      while (pos < s.size()) {
        size_t next = s.find(';', pos);
        std::string part = s.substr(pos, next == std::string::npos ? std::string::npos : next - pos + 1);
        if (cur.size() + part.size() > kWidth && !cur.empty()) {
          line(cur);
          cur = "          ";
          while (!part.empty() && part[0] == ' ') part.erase(0, 1);
        }
        cur += part;
        pos = next == std::string::npos ? s.size() : next + 1;
      }
      if (!cur.empty()) line(cur);
    }
  }
  auto syncs = q.rows("SELECT count(*), coalesce(sum(blocked_ns), 0), coalesce(max(blocked_ns), 0) FROM syncs");
  if (!syncs.empty() && Q::i64(syncs[0][0]))
    line("  syncs: " + grouped(Q::i64(syncs[0][0])) + ", the host blocked " +
         duration_text(static_cast<double>(Q::i64(syncs[0][1]))) + " in all (longest " +
         duration_text(static_cast<double>(Q::i64(syncs[0][2]))) + ")");
  auto copies = q.rows(
      "SELECT kind, coalesce(direction, ''), count(*), coalesce(sum(bytes), 0), "
      "sum(result IS NOT NULL AND result != 0) FROM copies GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 4");
  if (!copies.empty()) {
    std::string s = "  copies and memsets:";
    for (const auto& r : copies) {
      const int64_t n = Q::i64(r[2]);
      std::string what = Q::str(r[0]) == "memset" ? (n == 1 ? "memset" : "memsets")
                         : Q::str(r[1]).empty()   ? (n == 1 ? "copy" : "copies")
                                                  : Q::str(r[1]);
      s += " " + grouped(n) + " " + what + " (" + human_bytes(static_cast<uint64_t>(Q::i64(r[3]))) +
           (Q::i64(r[4]) ? ", " + grouped(Q::i64(r[4])) + " failed" : "") + "),";
    }
    s.pop_back();
    line(s);
  }
  if (launches && has_table(q, "stack_symbols")) {
    // The top stack's first frame with a source line: where the launches came from.
    auto top = q.rows(
        "WITH t AS (SELECT stack_id, sum(launches) AS n FROM launch_agg WHERE stack_id != 0 "
        "GROUP BY stack_id ORDER BY n DESC LIMIT 1) "
        "SELECT t.n, s.symbol, s.file, s.line, s.module FROM t JOIN stack_symbols s ON s.stack_id = t.stack_id "
        "WHERE s.line IS NOT NULL AND s.line > 0 ORDER BY s.position LIMIT 1");
    if (!top.empty()) {
      std::string path = Q::str(top[0][2]);
      std::string where =
          short_name(Q::str(top[0][1])) + " (" + path.substr(path.rfind('/') + 1) + ":" + Q::str(top[0][3]) + ")";
      char share[32];
      std::snprintf(share, sizeof share, "%.1f%%",
                    100.0 * static_cast<double>(Q::i64(top[0][0])) / static_cast<double>(launches));
      line("  top stack: " + grouped(Q::i64(top[0][0])) + " launches (" + share + ") from " + where);
    }
  }

  line("");
  line("Capture");
  struct stat st {};
  std::string size = ::stat(file.c_str(), &st) == 0 ? human_bytes(static_cast<uint64_t>(st.st_size)) : "?";
  line("  " + file + "  (" + Q::str(c[3]) + ", " + size + ")");
  if (!a.html.empty()) line("  HTML report: " + a.html + "  (open it in a browser)");

  line("");
  line("Next");
  char buf[200];
  std::snprintf(buf, sizeof buf, "  %-58s %s", ("gpuobs report kern_sum " + file).c_str(),
                "kernels by name and GPU time");
  line(buf);
  std::snprintf(buf, sizeof buf, "  %-58s %s", ("gpuobs stacks " + file + " --top 3").c_str(),
                "where the launches came from");
  line(buf);
  std::snprintf(buf, sizeof buf, "  %-58s %s", ("gpuobs sql \"SELECT * FROM syncs LIMIT 5\" " + file).c_str(),
                "your own SQL (docs/schema.md)");
  line(buf);
  return 0;
}

}  // namespace gpuobs::cli
