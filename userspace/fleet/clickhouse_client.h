// A ClickHouse server reached over its HTTP interface (port 8123), the one
// interface every version has: statements are POSTed as the request body,
// inserts name the statement in the URL's `query` parameter and send their
// rows gzip-compressed (Content-Encoding: gzip) in TabSeparated or RowBinary
// format.
// Kept to what ClickHouse 18.16 (Debian 12's) understands.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace gpuobs::fleet {

// Where and as whom: http://HOST:PORT/?database=NAME (the database defaults
// to gpuobs), and the user and password from a credentials file.
struct Endpoint {
  std::string base;  // scheme://host:port/ (path kept), no query
  std::string database = "gpuobs";
  std::string user, password;  // empty user: ClickHouse's default
  long timeout_s = 600;        // a fleet-wide report over 100 M rows takes seconds; a hung server, this
  // Set: every request is abandoned soon after it becomes true (gpuobsd's
  // shutdown must not wait for a server that does not answer).
  const std::atomic<bool>* cancel = nullptr;
  // Set: called with every statement's text as it is sent (tests check that
  // a filter's value is in none of them).
  std::function<void(const std::string& sql)> on_statement;
  std::string display() const;  // base and database, never the password
};

// Parses the URL; credentials_file (may be empty): "user = NAME" and
// "password = SECRET" lines (# comments), readable only by its owner (a
// file others can read is refused: it holds a password).
Result<Endpoint> parse_endpoint(const std::string& url, const std::string& credentials_file = "");

// A table sent with a query (ClickHouse's "external data"): the query reads
// it by name as a temporary table, which a Distributed table's shards get
// too. How the fleet reports bind their filter values: ClickHouse 18.16 has
// no query parameters.
struct ExternalTable {
  std::string name;       // an identifier: the table's name in the query
  std::string structure;  // "host String, pid Int64"
  std::string rows;       // TabSeparated, each field append_tsv_field's
};

class ClickHouse {
 public:
  explicit ClickHouse(Endpoint ep) : ep_(std::move(ep)) {}
  const Endpoint& endpoint() const { return ep_; }

  // Runs one statement in the database (in none with in_database false: to
  // create it) and returns the response body; a server error's text is the
  // error message (ClickHouse answers 4xx/5xx with "Code: N, e.displayText() = ...").
  Result<std::string> query(const std::string& sql, bool in_database = true) const;
  // A SELECT with tables sent beside it (multipart/form-data: the query, then
  // per table its structure, format and rows as a file part), so that
  // values reach the server as data, never in the statement's text.
  Result<std::string> query(const std::string& sql, const std::vector<ExternalTable>& tables) const;
  // INSERT INTO table (columns) FORMAT format (TabSeparated, RowBinary),
  // the rows gzip-compressed; query_id (optional) names the query in the
  // server's system.processes while it runs.
  Status insert(const std::string& table, const std::string& columns, const std::string& rows,
                const char* format = "TabSeparated", const std::string& query_id = "") const;

 private:
  // body: the request's body; form (set instead): a multipart body of
  // (name, value, is_file) parts, in order.
  struct FormPart {
    std::string name, value;
    bool file = false;
  };
  Result<std::string> post(const std::string& url, const std::string& body, bool gzip,
                           const std::vector<FormPart>* form = nullptr) const;
  Endpoint ep_;
};

// A ClickHouse string literal: s in single quotes, ' and \ escaped
// (host and process names are untrusted text).
std::string sql_literal(std::string_view s);
// One TabSeparated field: \, tab, newline and carriage return escaped as
// ClickHouse reads them (traced names are untrusted text).
void append_tsv_field(std::string& out, std::string_view s);
// A TabSeparated response split into rows and fields, escapes undone.
std::vector<std::vector<std::string>> parse_tsv(const std::string& body);

}  // namespace gpuobs::fleet
