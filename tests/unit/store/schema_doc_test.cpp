// docs/schema.md and the schema migrate() builds list the same tables, views
// and columns. No table list is kept here: whatever the migrations make must
// be documented, and whatever is documented must exist.
//
// How docs/schema.md names columns (anything else is prose, not read):
//  - A heading `## name` or `### name` (optionally followed by ` (...)`)
//    opens table or view `name`; any other heading closes it.
//  - A markdown table with the header `| column | type | meaning |`: the
//    first cell of each row is one column or several, comma-separated. They
//    belong to the tables named in bold (`**name**`) in the paragraph just
//    above the table, else to the open heading's table (neither: an error).
//  - A paragraph or list item starting with `` `name (a, b, c)` `` names the
//    columns of `name`; one starting with `` `(a, b, c)` `` those of the
//    open heading's table (a view documented by its signature).
//  - A table with the header `| table | one row per | key columns |`: the
//    first cell is `name`, the third its columns (text in parentheses is a
//    remark).
// A column documented twice for the same table is an error too.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "store/db.h"
#include "store/schema.h"
#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::testing;

namespace {

using Columns = std::map<std::string, std::set<std::string>>;

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string part; std::getline(ss, part, sep);) out.push_back(part);
  return out;
}

bool is_ident(const std::string& s) {
  static const std::regex re("[a-z_][a-z0-9_]*");
  return std::regex_match(s, re);
}

struct DocSchema {
  Columns columns;
  std::vector<std::string> errors;  // "line N: what"
};

class DocParser {
 public:
  explicit DocParser(std::vector<std::string> lines) : lines_(std::move(lines)) {}

  DocSchema parse() {
    for (size_t i = 0; i < lines_.size();) i = line(i);
    return std::move(out_);
  }

 private:
  // Handles the construct starting at line i; returns the next line to read.
  size_t line(size_t i) {
    const std::string& l = lines_[i];
    if (l.starts_with("#")) return heading(i);
    if (l.starts_with("| column | type | meaning |")) return column_table(i);
    if (l.starts_with("| table | one row per | key columns |")) return key_column_table(i);
    if (trim(l).empty()) {
      above_.clear();
      return i + 1;
    }
    if (above_.empty() || l.starts_with("- ")) signature(i);  // the first line of a paragraph or a list item
    above_ += l + "\n";
    return i + 1;
  }

  size_t heading(size_t i) {
    static const std::regex re("#{2,3} ([a-z_][a-z0-9_]*)( \\(.*\\))?");
    std::smatch m;
    open_.clear();
    if (std::regex_match(lines_[i], m, re)) {
      open_ = m[1];
      out_.columns[open_];
    }
    above_.clear();
    return i + 1;
  }

  void add(const std::string& table, const std::string& column, size_t i) {
    std::string c = trim(column);
    if (!is_ident(c)) return error(i, "'" + c + "' is not a column name");
    if (!out_.columns[table].insert(c).second) error(i, table + "." + c + " is documented twice");
  }

  size_t column_table(size_t i) {
    std::vector<std::string> targets;
    static const std::regex bold("\\*\\*([a-z_][a-z0-9_]*)\\*\\*");
    for (std::sregex_iterator it(above_.begin(), above_.end(), bold), end; it != end; ++it) targets.push_back((*it)[1]);
    if (targets.empty() && !open_.empty()) targets.push_back(open_);
    if (targets.empty()) error(i, "a column table with no table: no heading names one, no **table** above it");
    size_t j = i + 2;  // past the header and |---|
    for (; j < lines_.size() && lines_[j].starts_with("|"); ++j) {
      auto cells = split(lines_[j], '|');
      if (cells.size() < 2) continue;
      for (const auto& c : split(cells[1], ','))
        for (const auto& t : targets) add(t, c, j);
    }
    above_.clear();
    return j;
  }

  size_t key_column_table(size_t i) {
    size_t j = i + 2;
    for (; j < lines_.size() && lines_[j].starts_with("|"); ++j) {
      auto cells = split(lines_[j], '|');
      if (cells.size() < 4) {
        error(j, "a row without three cells");
        continue;
      }
      std::string name = trim(cells[1]);
      if (name.size() < 2 || name.front() != '`' || name.back() != '`') {
        error(j, "the first cell is not a `table`");
        continue;
      }
      name = name.substr(1, name.size() - 2);
      out_.columns[name];
      std::string cols = std::regex_replace(cells[3], std::regex("\\([^)]*\\)"), "");
      for (const auto& c : split(cols, ',')) add(name, c, j);
    }
    above_.clear();
    return j;
  }

  // `name (a, b)` or `(a, b)` at the start of a paragraph or list item; the
  // backquoted span may go on over the following lines.
  void signature(size_t i) {
    std::string text = lines_[i];
    if (text.starts_with("- ")) text = text.substr(2);
    if (!text.starts_with("`")) return;
    for (size_t j = i + 1; text.find('`', 1) == std::string::npos && j < lines_.size() && !trim(lines_[j]).empty(); ++j)
      text += " " + lines_[j];
    size_t end = text.find('`', 1);
    if (end == std::string::npos) return;
    static const std::regex re("([a-z_][a-z0-9_]*)? ?\\(([^)]+)\\)");
    std::smatch m;
    std::string span = text.substr(1, end - 1);
    if (!std::regex_match(span, m, re)) return;  // a name or value in backquotes, not a signature
    std::string name = m[1].matched ? std::string(m[1]) : open_;
    if (name.empty()) return error(i, "`(columns)` under no table heading");
    out_.columns[name];
    for (const auto& c : split(m[2], ',')) add(name, c, i);
  }

  void error(size_t i, const std::string& what) {
    out_.errors.push_back("docs/schema.md:" + std::to_string(i + 1) + ": " + what);
  }

  std::vector<std::string> lines_;
  DocSchema out_;
  std::string open_;   // the table the last heading opened
  std::string above_;  // the lines of the current paragraph so far
};

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// Every table and view of a fresh capture, with its columns.
Columns real_schema(Db& db) {
  Columns out;
  Stmt names(
      db.get(),
      "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'");
  while (names.step() == SQLITE_ROW) {
    std::string t = reinterpret_cast<const char*>(sqlite3_column_text(names.get(), 0));
    auto& cols = out[t];
    Stmt info(db.get(), "SELECT name FROM pragma_table_info(?1)");
    info.bind(1, t);
    while (info.step() == SQLITE_ROW) cols.insert(reinterpret_cast<const char*>(sqlite3_column_text(info.get(), 0)));
  }
  return out;
}

// Every difference, one line each: what the doc lacks and what it has too much.
std::vector<std::string> differences(const Columns& real, const Columns& doc) {
  std::vector<std::string> out;
  for (const auto& [t, cols] : real) {
    auto d = doc.find(t);
    if (d == doc.end()) {
      out.push_back(t + ": in the schema, not in docs/schema.md");
      continue;
    }
    for (const auto& c : cols)
      if (!d->second.count(c)) out.push_back(t + "." + c + ": in the schema, not in docs/schema.md");
    for (const auto& c : d->second)
      if (!cols.count(c)) out.push_back(t + "." + c + ": in docs/schema.md, not in the schema");
  }
  for (const auto& [t, cols] : doc)
    if (!real.count(t)) out.push_back(t + ": in docs/schema.md, not in the schema");
  return out;
}

std::string lines_of(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& l : v) s += "  " + l + "\n";
  return s;
}

}  // namespace

TEST(SchemaDoc, DocumentsEveryTableViewAndColumnOfTheSchema) {
  TempDir dir;
  auto db = Db::open(dir.file("schema.gpuobs"), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  ASSERT_TRUE(db.ok()) << db.error().message;
  ASSERT_TRUE(migrate(*db).ok());
  Columns real = real_schema(*db);
  ASSERT_GT(real.size(), 10u) << "migrate() made almost nothing";

  auto lines = read_lines(std::string(GPUOBS_SOURCE_DIR) + "/docs/schema.md");
  ASSERT_FALSE(lines.empty()) << "cannot read " << GPUOBS_SOURCE_DIR << "/docs/schema.md";
  DocSchema doc = DocParser(lines).parse();
  EXPECT_TRUE(doc.errors.empty()) << lines_of(doc.errors);
  auto diff = differences(real, doc.columns);
  EXPECT_TRUE(diff.empty()) << diff.size() << " differences between docs/schema.md and migrate()'s schema:\n"
                            << lines_of(diff);
}

// The parser reads each documented form, and the comparison names every
// difference both ways: the controls for the test above.
TEST(SchemaDoc, ParserReadsEachFormAndComparisonNamesEveryDifference) {
  std::vector<std::string> doc = {
      "# Capture schema",
      "## alpha (one row)",
      "| column | type | meaning |",
      "|---|---|---|",
      "| id | integer | row id |",
      "| x, y | integer | a pair |",
      "",
      "## Section",
      "Columns added to **alpha** and **beta**:",
      "| column | type | meaning |",
      "|---|---|---|",
      "| stack_id | integer | a stack |",
      "",
      "- `beta (id, name,",
      "  size)`: a view over two lines",
      "### gamma (view)",
      "`(g1, g2)`: columns by signature; `delta (not, read)` mid-paragraph is prose",
      "| table | one row per | key columns |",
      "|---|---|---|",
      "| `eps` | thing | e1, e2 (a remark, with commas), e3 |",
  };
  DocSchema d = DocParser(doc).parse();
  EXPECT_TRUE(d.errors.empty()) << lines_of(d.errors);
  Columns want = {{"alpha", {"id", "x", "y", "stack_id"}},
                  {"beta", {"id", "name", "size", "stack_id"}},
                  {"gamma", {"g1", "g2"}},
                  {"eps", {"e1", "e2", "e3"}}};
  EXPECT_EQ(d.columns, want);

  Columns real = want;
  real["alpha"].erase("y");      // documented, not in the schema
  real["beta"].insert("extra");  // in the schema, not documented
  real.erase("eps");             // a documented table that is gone
  real["zeta"] = {"z"};          // an undocumented table
  auto diff = differences(real, d.columns);
  std::vector<std::string> expected = {
      "alpha.y: in docs/schema.md, not in the schema",
      "beta.extra: in the schema, not in docs/schema.md",
      "zeta: in the schema, not in docs/schema.md",
      "eps: in docs/schema.md, not in the schema",
  };
  EXPECT_EQ(diff, expected);

  // Strictness: a column table nothing names, a column documented twice, a bad name.
  DocSchema bad = DocParser({"## Section", "| column | type | meaning |", "|---|---|---|", "| a | integer | x |", "",
                             "## t", "| column | type | meaning |", "|---|---|---|", "| a | integer | x |",
                             "| a | integer | again |", "| Not a name | text | x |"})
                      .parse();
  std::vector<std::string> errors = {
      "docs/schema.md:2: a column table with no table: no heading names one, no **table** above it",
      "docs/schema.md:10: t.a is documented twice",
      "docs/schema.md:11: 'Not a name' is not a column name",
  };
  EXPECT_EQ(bad.errors, errors);
}
