#include "report/report_catalogue.h"

#include <sqlite3.h>

#include "report/query.h"
#include "store/db.h"
#include "store/schema.h"

namespace gpuobs {

std::string report_description(std::string_view sql) {
  // The header's text up to its first "Columns:"/"Filters:" paragraph, the
  // "name:" prefix dropped, lines joined.
  std::string text;
  size_t pos = 0;
  while (pos < sql.size() && sql.compare(pos, 2, "--") == 0) {
    size_t end = sql.find('\n', pos);
    if (end == std::string_view::npos) end = sql.size();
    std::string_view line = sql.substr(pos + 2, end - pos - 2);
    pos = end + 1;
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    if (line.starts_with("Columns:") || line.starts_with("Filters:")) break;
    if (!text.empty()) text += ' ';
    text += line;
  }
  if (size_t colon = text.find(": "); colon != std::string::npos && text.find(' ') > colon)
    text = text.substr(colon + 2);
  // The first sentence: a period followed by a space, outside parentheses.
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '(') ++depth;
    else if (text[i] == ')') depth = depth ? depth - 1 : 0;
    else if (text[i] == '.' && depth == 0 && (i + 1 == text.size() || text[i + 1] == ' ')) return text.substr(0, i);
  }
  return text;
}

Result<std::vector<ReportInfo>> report_catalogue() {
  auto db = Db::open(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  if (!db) return db.error();
  if (auto st = migrate(*db); !st) return st.error();
  std::vector<ReportInfo> out;
  for (const auto& name : report_names()) {
    auto sql = report_sql(name);
    if (!sql) return sql.error();
    ReportInfo info{name, report_description(*sql), {}, {}};
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db->get(), sql->data(), static_cast<int>(sql->size()), &raw, nullptr) != SQLITE_OK)
      return make_error("report " + name + " does not prepare: " + sqlite3_errmsg(db->get()));
    Stmt stmt(raw);
    for (int i = 0; i < sqlite3_column_count(raw); ++i) info.columns.emplace_back(sqlite3_column_name(raw, i));
    for (const auto& f : kReportFilters)
      if (sqlite3_bind_parameter_index(raw, (std::string(":") + f.param).c_str()) > 0) info.filters.push_back(f.flag);
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace gpuobs
