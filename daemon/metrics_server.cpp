// The Prometheus endpoint's HTTP side, on Boost.Beast/Asio.
//
// Why Beast: gpuobsd must stay one self-contained binary (top CMakeLists.txt,
// GPUOBS_STATIC). Debian 12's libcpp-httplib-dev ships a declarations-only
// httplib.h whose code lives in libcpp-httplib.so (not usable header-only), and
// Debian's libmicrohttpd.a needs GnuTLS, whose static chain (p11-kit) Debian
// does not ship. Beast and Asio (libboost-dev) are header-only, so the server
// adds no shared library.
//
// One thread runs an io_context: accept, then per connection read a request,
// answer it, repeat while keep-alive (Prometheus keeps its connection), each
// read bounded by a timeout so an idle or slow client cannot pin a socket.
//
// Bounded (issue 15): at most max_connections are served at once and none
// while the process is short of file descriptors; a connection over either
// limit gets a 503 and is closed at once. An accept() that fails (EMFILE with
// the fd limit reached: the connection stays queued and the listening socket
// stays readable) is retried after a growing pause, never at once, which
// would spin a core.
#include "metrics_server.h"

#include <dirent.h>
#include <sys/resource.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <mutex>
#include <thread>

#include "metrics_text.h"

namespace gpuobs {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct MetricsServer::Impl {
  // Before io: connections still pending when io is destroyed count down here.
  std::atomic<uint64_t> active{0}, refused{0}, backoffs{0};
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  MetricsServerOptions options;
  asio::steady_timer backoff_timer{io};
  std::chrono::milliseconds backoff{0};  // the pause before the next accept (0: none); server thread only
  tcp::endpoint bound;                   // read by port()/address() from any thread, written once in start()
  std::thread thread;
  std::mutex mu;
  std::shared_ptr<const std::string> body = std::make_shared<const std::string>();

  std::shared_ptr<const std::string> current() {
    std::lock_guard lock(mu);
    return body;
  }
  void accept_next();
  void on_accept_error(const beast::error_code& ec);
  void refuse(tcp::socket& socket);
};

namespace {

constexpr auto kReadTimeout = std::chrono::seconds(30);
// Pauses after a failed accept: 100 ms, doubling up to 2 s.
constexpr auto kFirstBackoff = std::chrono::milliseconds(100);
constexpr auto kMaxBackoff = std::chrono::milliseconds(2000);

// True when fewer than reserve descriptors are free under the soft
// RLIMIT_NOFILE (counted in /proc/self/fd; not countable: short).
bool short_of_fds(size_t reserve) {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return false;
  DIR* d = ::opendir("/proc/self/fd");
  if (!d) return true;
  size_t open = 0;
  while (const dirent* e = ::readdir(d)) open += e->d_name[0] != '.';
  ::closedir(d);
  return open + reserve > rl.rlim_cur;
}

// One client connection; keeps itself alive through its pending handlers.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // Counted in server.active from here to its destruction (socket closed).
  Connection(tcp::socket socket, MetricsServer::Impl& server) : stream_(std::move(socket)), server_(server) {
    ++server_.active;
  }
  ~Connection() { --server_.active; }
  void start() { read(); }

 private:
  void read() {
    req_ = {};
    stream_.expires_after(kReadTimeout);
    http::async_read(stream_, buf_, req_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    if (ec) return close();  // end of stream, timeout or a malformed request
    auto res = std::make_shared<http::response<http::string_body>>();
    res->version(req_.version());
    res->keep_alive(req_.keep_alive());
    res->set(http::field::server, "gpuobsd");
    std::string_view target(req_.target().data(), req_.target().size());
    if (auto q = target.find('?'); q != std::string_view::npos) target = target.substr(0, q);
    if (req_.method() != http::verb::get && req_.method() != http::verb::head) {
      res->result(http::status::method_not_allowed);
      res->set(http::field::allow, "GET, HEAD");
      res->set(http::field::content_type, "text/plain");
      res->body() = "only GET /metrics is served\n";
    } else if (target != "/metrics") {
      res->result(http::status::not_found);
      res->set(http::field::content_type, "text/plain");
      res->body() = "only /metrics is served\n";
    } else {
      res->result(http::status::ok);
      res->set(http::field::content_type, kPrometheusContentType);
      res->body() = *server_.current();
    }
    res->prepare_payload();
    if (req_.method() == http::verb::head) res->body().clear();  // Content-Length stays the GET's
    http::async_write(stream_, *res, [self = shared_from_this(), res](beast::error_code wec, std::size_t) {
      if (wec || !res->keep_alive()) return self->close();
      self->read();
    });
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buf_;
  http::request<http::string_body> req_;
  MetricsServer::Impl& server_;
};

// "HOST:PORT", "[V6]:PORT" or "PORT".
Result<tcp::endpoint> parse_listen(const std::string& listen) {
  std::string host = kDefaultMetricsHost, port_text = listen;
  if (auto colon = listen.rfind(':'); colon != std::string::npos) {
    host = listen.substr(0, colon);
    port_text = listen.substr(colon + 1);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  }
  unsigned port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() || port > 65535)
    return make_error("bad metrics listen address '" + listen + "': the port must be 0..65535",
                      "write HOST:PORT, e.g. 127.0.0.1:9464");
  beast::error_code aec;
  auto addr = asio::ip::make_address(host, aec);
  if (aec)
    return make_error("bad metrics listen address '" + listen + "': '" + host + "' is not an IP address",
                      "write an IPv4 or [IPv6] address, e.g. 127.0.0.1:9464");
  return tcp::endpoint(addr, static_cast<uint16_t>(port));
}

}  // namespace

void MetricsServer::Impl::accept_next() {
  acceptor.async_accept(asio::make_strand(io), [this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted) return;  // stopping
    if (ec) return on_accept_error(ec);
    if (backoff.count()) {
      backoff = std::chrono::milliseconds(0);
      if (options.warn) options.warn("metrics endpoint: accepting connections again");
    }
    // Only this thread creates connections: active cannot grow behind the check.
    if (active.load() >= options.max_connections || short_of_fds(options.fd_reserve)) refuse(socket);
    else std::make_shared<Connection>(std::move(socket), *this)->start();
    accept_next();
  });
}

// Logged once per run of failures (the first), counted each time.
void MetricsServer::Impl::on_accept_error(const beast::error_code& ec) {
  ++backoffs;
  if (!backoff.count()) {
    backoff = kFirstBackoff;
    if (options.warn)
      options.warn(
          fmt::format("metrics endpoint: cannot accept a connection: {}; waiting {}-{} ms between tries "
                      "until it can (counted in gpuobs_metrics_accept_backoffs_total)",
                      ec.message(), kFirstBackoff.count(), kMaxBackoff.count()));
  } else {
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
  backoff_timer.expires_after(backoff);
  backoff_timer.async_wait([this](beast::error_code tec) {
    if (!tec) accept_next();
  });
}

// 503 and close: the client learns why at once instead of waiting in a queue
// that a slow client at the head would hold. The reply fits an empty socket
// buffer: written without blocking, or not at all.
void MetricsServer::Impl::refuse(tcp::socket& socket) {
  ++refused;
  static constexpr std::string_view kBusy =
      "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 26\r\n"
      "Connection: close\r\nServer: gpuobsd\r\n\r\ntoo many connections open\n";
  beast::error_code ignored;
  socket.non_blocking(true, ignored);
  // A request already received is read first: closing over unread data
  // would send a reset that can discard the 503 at the client.
  char sink[4096];
  socket.read_some(asio::buffer(sink), ignored);
  socket.write_some(asio::buffer(kBusy.data(), kBusy.size()), ignored);
  socket.shutdown(tcp::socket::shutdown_send, ignored);
  socket.close(ignored);
}

Result<std::unique_ptr<MetricsServer>> MetricsServer::start(const std::string& listen, MetricsServerOptions options) {
  auto ep = parse_listen(listen);
  if (!ep) return ep.error();
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  if (impl->options.max_connections == 0)
    return make_error("metrics endpoint: the connection limit must be at least 1", "set metrics_max_connections");
  beast::error_code ec;
  auto fail = [&](const char* what) {
    return make_error(fmt::format("metrics endpoint: cannot {} {}: {}", what, listen, ec.message()),
                      "choose another port or turn the endpoint off; under systemd the unit allows no "
                      "network socket unless the gpuobsd-metrics.conf drop-in is installed (docs/operations.md)");
  };
  impl->acceptor.open(ep->protocol(), ec);
  if (ec) return fail("open a socket for");
  impl->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  impl->acceptor.bind(*ep, ec);
  if (ec) return fail("bind");
  impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return fail("listen on");
  impl->bound = impl->acceptor.local_endpoint(ec);
  impl->accept_next();
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->io.run(); });
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(impl)));
}

MetricsServer::MetricsServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MetricsServer::~MetricsServer() {
  asio::post(impl_->io, [raw = impl_.get()] {
    beast::error_code ignored;
    raw->acceptor.close(ignored);
    raw->backoff_timer.cancel();
  });
  impl_->io.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

void MetricsServer::update(const HealthSnapshot& snapshot) {
  auto text = std::make_shared<const std::string>(render_prometheus(snapshot));
  std::lock_guard lock(impl_->mu);
  impl_->body = std::move(text);
}

MetricsServerStats MetricsServer::stats() const {
  return MetricsServerStats{impl_->active.load(), impl_->refused.load(), impl_->backoffs.load()};
}

uint16_t MetricsServer::port() const { return impl_->bound.port(); }

std::string MetricsServer::address() const {
  const auto& ep = impl_->bound;
  if (ep.address().is_v6()) return "[" + ep.address().to_string() + "]:" + std::to_string(ep.port());
  return ep.address().to_string() + ":" + std::to_string(ep.port());
}

}  // namespace gpuobs
