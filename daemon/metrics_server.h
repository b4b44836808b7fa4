// The optional Prometheus endpoint of gpuobsd: GET /metrics answers the latest
// HealthSnapshot in the text exposition format 0.0.4 (metrics_text.h).
//
// Off by default: gpuobsd opens no listening socket unless the config or the
// command line names an address. The default address, when the user turns it
// on without one, is 127.0.0.1 (kDefaultMetricsHost).
//
// How gpuobsd uses it (H3a, daemon main loop):
//   auto metrics = MetricsServer::start("127.0.0.1:9464");   // Result<unique_ptr>
//   if (!metrics) { print_error("gpuobsd", metrics.error()); return 1; }
//   ... once a second: (*metrics)->update(snapshot);   // thread-safe, cheap (renders once)
//   ... on exit: metrics.value().reset();               // stops the thread, closes the socket
// Build: cmake/metrics.cmake defines gpuobsd_metrics and links it into gpuobsd.
// start() has bound and is listening when it returns, so a scrape right after
// it is answered (with no series until the first update()). update() may be
// called from any thread; the server thread only reads the rendered text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/result.h"
#include "daemon_state/health.h"

namespace gpuobs {

inline constexpr const char* kDefaultMetricsHost = "127.0.0.1";
// Connections served at once; more are answered 503 and closed at once.
inline constexpr size_t kDefaultMetricsMaxConnections = 16;

struct MetricsServerOptions {
  size_t max_connections = kDefaultMetricsMaxConnections;
  // A connection is refused (503, closed) while fewer than this many file
  // descriptors would stay free under RLIMIT_NOFILE: segment rotation, the
  // status file, /proc scans and library attaches need them more.
  size_t fd_reserve = 64;
  // Called on the server thread with a warning worth logging (the first
  // accept failure of a run of them, and when accepting works again).
  std::function<void(const std::string&)> warn;
};

// Counters of the endpoint since it started (read from any thread).
struct MetricsServerStats {
  uint64_t connections_active = 0;
  uint64_t connections_refused = 0;  // over max_connections or short of fds: 503 and closed
  uint64_t accept_backoffs = 0;      // accept() failed (EMFILE, ENFILE, ...): waited before trying again
};

class MetricsServer {
 public:
  // listen: "HOST:PORT", "[V6]:PORT" or "PORT" (then 127.0.0.1). Port 0 picks a
  // free port (port() tells which). Errors: a malformed address, or bind/listen
  // failing (address in use, permission).
  static Result<std::unique_ptr<MetricsServer>> start(const std::string& listen, MetricsServerOptions options = {});
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  void update(const HealthSnapshot& snapshot);
  MetricsServerStats stats() const;
  uint16_t port() const;
  std::string address() const;  // "HOST:PORT" actually bound

  struct Impl;

 private:
  explicit MetricsServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuobs
