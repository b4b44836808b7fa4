#include "fleet/clickhouse_client.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <sstream>

#include "common/gzip.h"
#include "fleet/curl_library.h"

namespace gpuobs::fleet {
namespace {

std::string trim(std::string s) {
  size_t a = s.find_first_not_of(" \t\r\n"), b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

// CURLOPT_XFERINFOFUNCTION: non-zero aborts the transfer (connects too).
int progress(void* cancel, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* flag = static_cast<const std::atomic<bool>*>(cancel);
  return flag && flag->load() ? 1 : 0;
}

size_t append_body(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

// Percent-encodes a query parameter's value.
std::string url_encode(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char b[4];
      std::snprintf(b, sizeof b, "%%%02X", c);
      out += b;
    }
  }
  return out;
}

std::string url_decode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += s[i] == '+' ? ' ' : s[i];
    }
  }
  return out;
}

bool valid_identifier(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (unsigned char c : s)
    if (!isalnum(c) && c != '_') return false;
  return !isdigit(static_cast<unsigned char>(s[0]));
}

Status read_credentials(const std::string& path, Endpoint& ep) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return make_error("cannot open the credentials file " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return make_error("the credentials file " + path + " is not a regular file");
  }
  if (st.st_mode & 0077) {
    ::close(fd);
    return make_error("the credentials file " + path + " can be read by others (mode " +
                          std::to_string((st.st_mode >> 6) & 7) + std::to_string((st.st_mode >> 3) & 7) +
                          std::to_string(st.st_mode & 7) + ")",
                      "chmod 600 " + path + ": it holds a password");
  }
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0 && text.size() < 65536) text.append(buf, static_cast<size_t>(n));
  ::close(fd);
  std::istringstream in(text);
  std::string line;
  int no = 0;
  while (std::getline(in, line)) {
    ++no;
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    size_t eq = line.find('=');
    if (eq == std::string::npos)
      return make_error(path + ":" + std::to_string(no) + ": expected 'user = NAME' or 'password = SECRET'");
    std::string key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    if (key == "user") ep.user = value;
    else if (key == "password") ep.password = value;
    else return make_error(path + ":" + std::to_string(no) + ": unknown key '" + key + "' (user, password)");
  }
  return {};
}

}  // namespace

std::string Endpoint::display() const { return base + "?database=" + database; }

Result<Endpoint> parse_endpoint(const std::string& url, const std::string& credentials_file) {
  Endpoint ep;
  if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0)
    return make_error("not a ClickHouse HTTP URL (http:// or https://)", "e.g. http://HOST:8123/?database=gpuobs", 2);
  size_t q = url.find('?');
  ep.base = url.substr(0, q);
  if (ep.base.find('@') != std::string::npos)
    return make_error("a password in the URL would show in process lists and logs",
                      "put 'user = NAME' and 'password = SECRET' in a credentials file", 2);
  size_t slash = ep.base.find('/', ep.base.find("//") + 2);
  if (slash == std::string::npos) ep.base += '/';
  if (q != std::string::npos) {
    std::string params = url.substr(q + 1);
    size_t pos = 0;
    while (pos <= params.size()) {
      size_t amp = params.find('&', pos);
      std::string kv = params.substr(pos, amp == std::string::npos ? std::string::npos : amp - pos);
      size_t eq = kv.find('=');
      std::string key = kv.substr(0, eq), value = eq == std::string::npos ? "" : url_decode(kv.substr(eq + 1));
      if (key == "database") ep.database = value;
      else if (!key.empty())
        return make_error("unknown parameter '" + key + "' in the ClickHouse URL",
                          "only database=NAME; a user and password go in a credentials file", 2);
      if (amp == std::string::npos) break;
      pos = amp + 1;
    }
  }
  if (!valid_identifier(ep.database))
    return make_error("not a database name: '" + ep.database + "'", "letters, digits and _", 2);
  if (!credentials_file.empty())
    if (auto s = read_credentials(credentials_file, ep); !s) return s.error();
  return ep;
}

Result<std::string> ClickHouse::query(const std::string& sql, bool in_database) const {
  std::string url = ep_.base + (in_database ? "?database=" + ep_.database : std::string());
  if (ep_.on_statement) ep_.on_statement(sql);
  return post(url, sql, false);
}

Result<std::string> ClickHouse::query(const std::string& sql, const std::vector<ExternalTable>& tables) const {
  // The server reads a table's _structure and _format as it meets its file
  // part: they come first.
  std::vector<FormPart> form{{"query", sql}};
  for (const auto& t : tables) {
    if (!valid_identifier(t.name)) return make_error("not a table name: '" + t.name + "'");
    form.push_back({t.name + "_structure", t.structure});
    form.push_back({t.name + "_format", "TabSeparated"});
    form.push_back({t.name, t.rows, true});
  }
  if (ep_.on_statement) ep_.on_statement(sql);
  return post(ep_.base + "?database=" + ep_.database, "", false, &form);
}

Status ClickHouse::insert(const std::string& table, const std::string& columns, const std::string& rows,
                          const char* format, const std::string& query_id) const {
  std::string sql = "INSERT INTO " + table + " (" + columns + ") FORMAT " + format;
  if (ep_.on_statement) ep_.on_statement(sql);
  auto body = gzip(rows, 1);  // the fastest level: 15.2 B per launch on the wire all the same (RowBinary)
  if (!body) return body.error();
  std::string url = ep_.base + "?database=" + ep_.database + "&query=" + url_encode(sql);
  if (!query_id.empty()) url += "&query_id=" + url_encode(query_id);
  auto r = post(url, *body, true);
  if (!r) return r.error();
  return {};
}

Result<std::string> ClickHouse::post(const std::string& url, const std::string& body, bool gzip_body,
                                     const std::vector<FormPart>* form) const {
  auto lib = curl_library();
  if (!lib) return lib.error();
  const CurlFunctions& c = **lib;
  // Declared first, freed last: the easy handle refers to its form until
  // its cleanup.
  std::unique_ptr<curl_mime, void (*)(curl_mime*)> mime(nullptr, c.mime_free);
  std::unique_ptr<CURL, void (*)(CURL*)> h(c.easy_init(), c.easy_cleanup);
  if (!h) return make_error("curl_easy_init failed");
  std::string response;
  curl_slist* headers = nullptr;
  c.easy_setopt(h.get(), CURLOPT_URL, url.c_str());
  if (form) {
    mime.reset(c.mime_init(h.get()));
    if (!mime) return make_error("curl_mime_init failed");
    for (const auto& p : *form) {
      curl_mimepart* part = c.mime_addpart(mime.get());
      // (curl copies the name, the data and the file name.)
      if (!part || c.mime_name(part, p.name.c_str()) != CURLE_OK ||
          c.mime_data(part, p.value.data(), p.value.size()) != CURLE_OK ||
          (p.file && c.mime_filename(part, p.name.c_str()) != CURLE_OK))
        return make_error("cannot build the request's form part " + p.name);
    }
    c.easy_setopt(h.get(), CURLOPT_MIMEPOST, mime.get());
    headers = c.slist_append(headers, "Expect:");  // no 100-continue round trip
  } else {
    if (gzip_body) headers = c.slist_append(headers, "Content-Encoding: gzip");
    headers = c.slist_append(headers, "Content-Type: text/plain; charset=utf-8");
    c.easy_setopt(h.get(), CURLOPT_POST, 1L);
    c.easy_setopt(h.get(), CURLOPT_POSTFIELDS, body.data());
    c.easy_setopt(h.get(), CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  }
  c.easy_setopt(h.get(), CURLOPT_HTTPHEADER, headers);
  c.easy_setopt(h.get(), CURLOPT_WRITEFUNCTION, append_body);
  c.easy_setopt(h.get(), CURLOPT_WRITEDATA, &response);
  c.easy_setopt(h.get(), CURLOPT_NOSIGNAL, 1L);  // a daemon thread: no SIGALRM for timeouts
  c.easy_setopt(h.get(), CURLOPT_CONNECTTIMEOUT, 10L);
  c.easy_setopt(h.get(), CURLOPT_TIMEOUT, ep_.timeout_s);
  c.easy_setopt(h.get(), CURLOPT_PROTOCOLS_STR, "http,https");
  if (ep_.cancel) {
    c.easy_setopt(h.get(), CURLOPT_NOPROGRESS, 0L);
    c.easy_setopt(h.get(), CURLOPT_XFERINFOFUNCTION, progress);
    c.easy_setopt(h.get(), CURLOPT_XFERINFODATA, const_cast<std::atomic<bool>*>(ep_.cancel));
  }
  if (!ep_.user.empty()) {
    c.easy_setopt(h.get(), CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC));
    c.easy_setopt(h.get(), CURLOPT_USERNAME, ep_.user.c_str());
    c.easy_setopt(h.get(), CURLOPT_PASSWORD, ep_.password.c_str());
  }
  CURLcode rc = c.easy_perform(h.get());
  long status = 0;
  c.easy_getinfo(h.get(), CURLINFO_RESPONSE_CODE, &status);
  c.slist_free_all(headers);
  if (rc != CURLE_OK) return make_error("ClickHouse at " + ep_.display() + ": " + c.easy_strerror(rc));
  if (status != 200) {
    std::string text = trim(response.substr(0, 600));
    return make_error("ClickHouse at " + ep_.display() + " answered " + std::to_string(status) +
                      (text.empty() ? std::string() : ": " + text));
  }
  return response;
}

std::string sql_literal(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  return out + "'";
}

void append_tsv_field(std::string& out, std::string_view s) {
  for (char ch : s) {
    switch (ch) {
      case '\\': out += "\\\\"; break;
      case '\t': out += "\\t"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\0': out += "\\0"; break;
      default: out += ch;
    }
  }
}

std::vector<std::vector<std::string>> parse_tsv(const std::string& body) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  for (size_t i = 0; i < body.size(); ++i) {
    char ch = body[i];
    if (ch == '\\' && i + 1 < body.size()) {
      char e = body[++i];
      // \N alone in a field is NULL: kept as the two characters, which
      // parse_tsv's callers test for (a text "\N" arrives as "\\N").
      if (e == 'N' && field.empty() && (i + 1 == body.size() || body[i + 1] == '\t' || body[i + 1] == '\n')) {
        field = "\\N";
        continue;
      }
      switch (e) {
        case 't': field += '\t'; break;
        case 'n': field += '\n'; break;
        case 'r': field += '\r'; break;
        case '0': field += '\0'; break;
        case 'b': field += '\b'; break;
        case 'f': field += '\f'; break;
        case 'a': field += '\a'; break;
        case 'v': field += '\v'; break;
        default: field += e;
      }
    } else if (ch == '\t') {
      row.push_back(std::move(field));
      field.clear();
    } else if (ch == '\n') {
      row.push_back(std::move(field));
      field.clear();
      rows.push_back(std::move(row));
      row.clear();
    } else {
      field += ch;
    }
  }
  if (!field.empty() || !row.empty()) {
    row.push_back(std::move(field));
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace gpuobs::fleet
