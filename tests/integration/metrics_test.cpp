// The Prometheus endpoint against a real Prometheus server (Debian's
// `prometheus`): a known HealthSnapshot is served, Prometheus scrapes it every
// second, and its query API must return exactly the snapshot's values and
// labels (escaping included), then the values of a later update().
// Also: the exposition text itself, and what the endpoint refuses.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "metrics_server.h"
#include "metrics_text.h"

namespace fs = std::filesystem;
namespace http = boost::beast::http;
using boost::asio::ip::tcp;

namespace gpuobs {
namespace {

HealthSnapshot known_snapshot() {
  HealthSnapshot s;
  s.version = "0.1.0";
  s.pid = 4242;
  s.events_total = 123456;
  s.events_per_s = 2500.5;
  s.drops_total = 7;
  s.store_failed = 3;
  s.attach_failures = 2;
  s.libraries = {{"/usr/lib/x86_64-linux-gnu/libcuda.so.1", 2049, 11, 40, 0},
                 {"/proc/77/root/opt/conda/lib/libcuda.so.1", 2050, 12, 38, 2},
                 {"/opt/gone/libamdhip64.so.5", 2051, 13, 0, 5}};
  s.processes = {{1001, "python3", "", 5000, 1 << 20, 64 << 20},
                 {1002, "train\"er\\x", "0123456789abcdef", 17, 4096, 0},
                 {1003, "line\nbreak", "c0ffee", 0, 0, -512}};
  s.segment_bytes = 8192;
  s.segments = 4;
  s.storage_bytes = 1 << 30;
  return s;
}

// One GET over a fresh connection: {status, body}.
std::pair<int, std::string> http_get(uint16_t port, const std::string& target, http::verb verb = http::verb::get) {
  boost::asio::io_context io;
  tcp::socket sock(io);
  boost::beast::error_code ec;
  sock.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port), ec);
  if (ec) return {-1, ec.message()};
  http::request<http::empty_body> req(verb, target, 11);
  req.set(http::field::host, "127.0.0.1");
  http::write(sock, req, ec);
  if (ec) return {-1, ec.message()};
  boost::beast::flat_buffer buf;
  http::response_parser<http::string_body> parser;
  if (verb == http::verb::head) parser.skip(true);
  http::read(sock, buf, parser, ec);
  if (ec) return {-1, ec.message()};
  return {static_cast<int>(parser.get().result_int()), parser.get().body()};
}

std::string url_encode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (isalnum(c) || c == '_' || c == '-' || c == '.') out += static_cast<char>(c);
    else {
      char b[4];
      snprintf(b, sizeof b, "%%%02X", c);
      out += b;
    }
  }
  return out;
}

uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// A Prometheus server scraping `target_port` every second, in its own temp dir.
class Prometheus {
 public:
  explicit Prometheus(uint16_t target_port) {
    dir_ = fs::temp_directory_path() / ("gpuobs-prom-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "data");
    std::ofstream(dir_ / "prometheus.yml") << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                                              "scrape_configs:\n  - job_name: gpuobsd\n    static_configs:\n"
                                              "      - targets: ['127.0.0.1:"
                                           << target_port << "']\n";
    port_ = free_port();
    std::string cfg = "--config.file=" + (dir_ / "prometheus.yml").string();
    std::string data = "--storage.tsdb.path=" + (dir_ / "data").string();
    std::string web = "--web.listen-address=127.0.0.1:" + std::to_string(port_);
    std::string log = (dir_ / "prometheus.log").string();
    pid_ = ::fork();
    if (pid_ == 0) {
      FILE* f = std::freopen(log.c_str(), "w", stderr);
      (void)f;
      ::execlp("prometheus", "prometheus", cfg.c_str(), data.c_str(), web.c_str(), nullptr);
      ::_exit(127);
    }
  }
  ~Prometheus() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
    if (!::testing::Test::HasFailure()) fs::remove_all(dir_);
    else std::fprintf(stderr, "prometheus log kept in %s\n", dir_.c_str());
  }
  bool running() { return pid_ > 0 && ::waitpid(pid_, nullptr, WNOHANG) == 0; }

  // The instant-query result vector, or an empty array while Prometheus is not up.
  nlohmann::json query(const std::string& promql) {
    auto [status, body] = http_get(port_, "/api/v1/query?query=" + url_encode(promql));
    if (status != 200) return nlohmann::json::array();
    auto j = nlohmann::json::parse(body, nullptr, false);
    if (j.is_discarded() || j.value("status", "") != "success") return nlohmann::json::array();
    return j["data"]["result"];
  }

 private:
  fs::path dir_;
  uint16_t port_ = 0;
  pid_t pid_ = -1;
};

// {label set without job/instance/__name__ as "k=v,..." : value text}
std::map<std::string, std::string> by_labels(const nlohmann::json& result) {
  std::map<std::string, std::string> out;
  for (const auto& r : result) {
    std::string key;
    for (auto& [k, v] : r["metric"].items()) {
      if (k == "job" || k == "instance" || k == "__name__") continue;
      key += k + "=" + v.get<std::string>() + ";";
    }
    out[key] = r["value"][1].get<std::string>();
  }
  return out;
}

// Polls until `promql` returns exactly `want` (or 30 s pass); returns the last answer.
std::map<std::string, std::string> wait_for(Prometheus& prom, const std::string& promql,
                                            const std::map<std::string, std::string>& want) {
  std::map<std::string, std::string> got;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline && prom.running()) {
    got = by_labels(prom.query(promql));
    if (got == want) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return got;
}

TEST(MetricsText, HelpTypeAndEscapedLabels) {
  std::string text = render_prometheus(known_snapshot());
  for (const char* fam :
       {"gpuobs_events_total counter", "gpuobs_events_per_second gauge", "gpuobs_drops_total counter",
        "gpuobs_store_failed_total counter", "gpuobs_attach_failures_total counter", "gpuobs_attached_libraries gauge",
        "gpuobs_gpu_processes gauge", "gpuobs_process_launches_total counter",
        "gpuobs_process_bytes_copied_total counter", "gpuobs_process_device_memory_bytes gauge",
        "gpuobs_segment_bytes gauge", "gpuobs_storage_bytes gauge", "gpuobs_store_failed_batches_total counter",
        "gpuobs_emergency_deletions_total counter", "gpuobs_metrics_connections gauge",
        "gpuobs_metrics_connections_refused_total counter", "gpuobs_metrics_accept_backoffs_total counter"}) {
    std::string name(fam, std::string_view(fam).find(' '));
    EXPECT_NE(text.find("\n# TYPE " + std::string(fam) + "\n"), std::string::npos) << fam;
    EXPECT_NE(text.find("# HELP " + name + " "), std::string::npos) << name;
  }
  EXPECT_NE(text.find("\ngpuobs_events_per_second 2500.5\n"), std::string::npos);
  EXPECT_NE(text.find("\ngpuobs_attached_libraries 2\n"), std::string::npos);
  EXPECT_NE(text.find("gpuobs_process_launches_total{pid=\"1002\",comm=\"train\\\"er\\\\x\","
                      "container=\"0123456789abcdef\"} 17\n"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("gpuobs_process_device_memory_bytes{pid=\"1003\",comm=\"line\\nbreak\",container=\"c0ffee\"} -512\n"),
      std::string::npos);
  EXPECT_EQ(escape_label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(text.back(), '\n');
}

TEST(MetricsServer, ServesOnlyGetMetricsAndRefusesBadAddresses) {
  auto srv = MetricsServer::start("127.0.0.1:0");
  ASSERT_TRUE(srv) << srv.error().message;
  EXPECT_EQ((*srv)->address(), "127.0.0.1:" + std::to_string((*srv)->port()));
  auto [st0, body0] = http_get((*srv)->port(), "/metrics");
  EXPECT_EQ(st0, 200);
  EXPECT_EQ(body0, "");  // no snapshot yet: no series
  (*srv)->update(known_snapshot());
  auto [st1, body1] = http_get((*srv)->port(), "/metrics");
  EXPECT_EQ(st1, 200);
  EXPECT_EQ(body1, render_prometheus(known_snapshot()));
  EXPECT_EQ(http_get((*srv)->port(), "/").first, 404);
  EXPECT_EQ(http_get((*srv)->port(), "/metrics", http::verb::post).first, 405);
  EXPECT_EQ(http_get((*srv)->port(), "/metrics", http::verb::head).first, 200);

  // Port only: loopback, never all interfaces.
  auto lo = MetricsServer::start("0");
  ASSERT_TRUE(lo) << lo.error().message;
  EXPECT_EQ((*lo)->address().rfind("127.0.0.1:", 0), 0u) << (*lo)->address();

  auto in_use = MetricsServer::start("127.0.0.1:" + std::to_string((*srv)->port()));
  ASSERT_FALSE(in_use);
  EXPECT_NE(in_use.error().message.find("cannot bind"), std::string::npos) << in_use.error().message;
  for (const char* bad : {"localhost:9464", "127.0.0.1:", "127.0.0.1:70000", "127.0.0.1:9x", ""}) {
    auto r = MetricsServer::start(bad);
    EXPECT_FALSE(r) << bad;
    if (!r) { EXPECT_NE(r.error().message.find("bad metrics listen address"), std::string::npos) << bad; }
  }
}

// Over max_connections, a connection gets a 503 and is closed at once (the
// server never queues behind idle clients); the count is in stats(), and
// once the idle ones close, /metrics answers again.
TEST(MetricsServer, RefusesConnectionsOverTheCapWith503) {
  MetricsServerOptions o;
  o.max_connections = 3;
  auto srv = MetricsServer::start("127.0.0.1:0", o);
  ASSERT_TRUE(srv) << srv.error().message;
  (*srv)->update(known_snapshot());
  boost::asio::io_context io;
  std::vector<tcp::socket> idle;
  tcp::endpoint ep(boost::asio::ip::make_address("127.0.0.1"), (*srv)->port());
  for (int i = 0; i < 3; ++i) {
    idle.emplace_back(io);
    idle.back().connect(ep);
  }
  for (int i = 0; i < 50 && (*srv)->stats().connections_active < 3; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ((*srv)->stats().connections_active, 3u);
  for (int i = 0; i < 4; ++i) {
    auto [st, body] = http_get((*srv)->port(), "/metrics");
    EXPECT_EQ(st, 503) << body;
    EXPECT_EQ(body, "too many connections open\n");
  }
  EXPECT_EQ((*srv)->stats().connections_refused, 4u);
  EXPECT_EQ((*srv)->stats().accept_backoffs, 0u);
  idle.clear();  // closed: the server sees EOF and frees their slots
  int st = 0;
  for (int i = 0; i < 50 && st != 200; ++i) {
    st = http_get((*srv)->port(), "/metrics").first;
    if (st != 200) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(st, 200);
  MetricsServerOptions zero;
  zero.max_connections = 0;
  EXPECT_FALSE(MetricsServer::start("127.0.0.1:0", zero));
}

TEST(MetricsServer, RealPrometheusScrapesExactValues) {
  auto srv = MetricsServer::start("127.0.0.1:0");
  ASSERT_TRUE(srv) << srv.error().message;
  HealthSnapshot snap = known_snapshot();
  (*srv)->update(snap);
  Prometheus prom((*srv)->port());

  auto up = wait_for(prom, "up{job=\"gpuobsd\"}", {{"", "1"}});
  ASSERT_EQ(up, (std::map<std::string, std::string>{{"", "1"}})) << "prometheus never scraped the endpoint";
  // Prometheus stores an empty label value as no label: pid 1001 has no container.
  const std::map<std::string, std::string> launches = {{"comm=python3;pid=1001;", "5000"},
                                                       {"comm=train\"er\\x;container=0123456789abcdef;pid=1002;", "17"},
                                                       {"comm=line\nbreak;container=c0ffee;pid=1003;", "0"}};
  EXPECT_EQ(wait_for(prom, "gpuobs_process_launches_total", launches), launches);
  EXPECT_EQ(by_labels(prom.query("gpuobs_process_bytes_copied_total{pid=\"1001\"}")),
            (std::map<std::string, std::string>{{"comm=python3;pid=1001;", "1048576"}}));
  EXPECT_EQ(by_labels(prom.query("gpuobs_process_device_memory_bytes{pid=\"1003\"}")),
            (std::map<std::string, std::string>{{"comm=line\nbreak;container=c0ffee;pid=1003;", "-512"}}));
  const std::map<std::string, std::string> scalars = {
      {"gpuobs_events_total", "123456"},     {"gpuobs_events_per_second", "2500.5"}, {"gpuobs_drops_total", "7"},
      {"gpuobs_store_failed_total", "3"},    {"gpuobs_attach_failures_total", "2"},  {"gpuobs_attached_libraries", "2"},
      {"gpuobs_gpu_processes", "3"},         {"gpuobs_segment_bytes", "8192"},       {"gpuobs_segments", "4"},
      {"gpuobs_storage_bytes", "1073741824"}};
  for (const auto& [name, value] : scalars)
    EXPECT_EQ(by_labels(prom.query(name)), (std::map<std::string, std::string>{{"", value}})) << name;

  // A later snapshot replaces the earlier one at the next scrape.
  snap.processes[0].launches = 5100;
  snap.processes.pop_back();
  snap.drops_total = 9;
  (*srv)->update(snap);
  std::map<std::string, std::string> want = {{"comm=python3;pid=1001;", "5100"},
                                             {"comm=train\"er\\x;container=0123456789abcdef;pid=1002;", "17"}};
  // pid 1003's series goes stale once a scrape lacks it.
  EXPECT_EQ(wait_for(prom, "gpuobs_process_launches_total", want), want);
  EXPECT_EQ(wait_for(prom, "gpuobs_drops_total", {{"", "9"}}), (std::map<std::string, std::string>{{"", "9"}}));
}

}  // namespace
}  // namespace gpuobs
