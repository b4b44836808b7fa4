// A throwaway clickhouse-server for the fleet tests: its own config and data
// directory under a TempDir, free loopback ports, a `default` user without a
// password and a `gpuobs` user with one; started in the constructor (up
// within 30 s, or ok() is false and error() says why), stopped (SIGTERM,
// then SIGKILL) in the destructor. Debian's clickhouse-server 18.16
// (scripts/install-deps.sh installs it). ClickHouseOptions: a given TCP
// port and a remote_servers cluster, for servers that are shards.
#pragma once

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "run_util.h"
#include "unit/test_util.h"

namespace gpuobs::testing {

inline constexpr const char* kClickHouseServer = "/usr/sbin/clickhouse-server";
inline constexpr const char* kClickHousePassword = "s3cret-for-tests";

// A port nobody listens on now (bound and released: another process could
// take it in between, which the server's start would then say).
inline int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

// For a server of a cluster (fleet_cluster_test.cpp): its own directory
// and TCP port, and a remote_servers cluster of loopback servers, one shard
// per TCP port (this server's among them).
struct ClickHouseOptions {
  std::string name = "clickhouse";  // its directory under the TempDir
  int tcp_port = -1;                // -1: a free one
  std::string cluster;              // empty: no remote_servers
  std::vector<int> shard_tcp_ports;
};

class ClickHouseServer {
 public:
  explicit ClickHouseServer(const TempDir& dir, ClickHouseOptions opt = {})
      : dir_(dir.file(opt.name)), opt_(std::move(opt)) {
    start();
  }
  ~ClickHouseServer() { stop(); }
  ClickHouseServer(const ClickHouseServer&) = delete;
  ClickHouseServer& operator=(const ClickHouseServer&) = delete;

  bool ok() const { return pid_ > 0 && error_.empty(); }
  const std::string& error() const { return error_; }
  int http_port() const { return http_port_; }
  // The URL gpuobs takes: http://127.0.0.1:PORT/?database=DB
  std::string url(const std::string& database = "gpuobs") const {
    return "http://127.0.0.1:" + std::to_string(http_port_) + "/?database=" + database;
  }

  // Stops the server (its data stays) and starts it again on the same port.
  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    for (int i = 0; i < 150; ++i) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  void start() {
    // Ports are chosen free, then bound by the server: another process can
    // take one in between (the server then exits with "Address already in
    // use"). A first start tries fresh ports, up to 3 times; a restart keeps
    // its ports (a test stops and starts the same server).
    const bool first = http_port_ < 0;
    for (int attempt = 0;; ++attempt) {
      start_once();
      if (!first || error_.find("Address already in use") == std::string::npos || attempt == 2 || opt_.tcp_port > 0)
        return;
      http_port_ = -1;
      run("rm -rf " + dir_);
    }
  }

 private:
  void start_once() {
    error_.clear();
    if (access(kClickHouseServer, X_OK) != 0) {
      error_ = std::string(kClickHouseServer) + " missing: scripts/install-deps.sh installs clickhouse-server";
      return;
    }
    if (http_port_ < 0) {
      // Not a cluster's TCP port: those are chosen before, and free until a server takes them.
      const auto& ports = opt_.shard_tcp_ports;
      auto taken = [&](int p) { return p == opt_.tcp_port || std::find(ports.begin(), ports.end(), p) != ports.end(); };
      http_port_ = free_port();
      while (taken(http_port_)) http_port_ = free_port();
      tcp_port_ = opt_.tcp_port > 0 ? opt_.tcp_port : free_port();
      run("mkdir -p " + dir_ + "/data " + dir_ + "/tmp");
      write_config();
    }
    pid_ = ::fork();
    if (pid_ == 0) {
      std::string cfg = "--config-file=" + dir_ + "/config.xml";
      std::freopen((dir_ + "/stdout.log").c_str(), "a", stdout);
      std::freopen((dir_ + "/stderr.log").c_str(), "a", stderr);
      ::execl(kClickHouseServer, kClickHouseServer, cfg.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    std::string probe = "curl -sf -o /dev/null 'http://127.0.0.1:" + std::to_string(http_port_) + "/?query=SELECT%201'";
    while (std::chrono::steady_clock::now() < deadline) {
      if (run(probe) == 0) return;
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        error_ = "clickhouse-server exited at start: " + read_file(dir_ + "/server.err.log");
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    error_ = "clickhouse-server did not answer within 30 s: " + read_file(dir_ + "/server.err.log");
  }

  void write_config() {
    std::ofstream(dir_ + "/config.xml")
        << "<?xml version=\"1.0\"?>\n<yandex>\n"
        << "  <logger><level>warning</level><log>" << dir_ << "/server.log</log><errorlog>" << dir_
        << "/server.err.log</errorlog></logger>\n"
        << "  <http_port>" << http_port_ << "</http_port>\n  <tcp_port>" << tcp_port_ << "</tcp_port>\n"
        << "  <listen_host>127.0.0.1</listen_host>\n"
        << "  <path>" << dir_ << "/data/</path>\n  <tmp_path>" << dir_ << "/tmp/</tmp_path>\n"
        << "  <users_config>" << dir_ << "/users.xml</users_config>\n"
        << "  <default_profile>default</default_profile>\n  <default_database>default</default_database>\n"
        << "  <mark_cache_size>67108864</mark_cache_size>\n"
        << remote_servers() << "</yandex>\n";
    std::ofstream(dir_ + "/users.xml")
        << "<?xml version=\"1.0\"?>\n<yandex>\n"
        << "  <profiles><default><max_memory_usage>4000000000</max_memory_usage></default></profiles>\n"
        << "  <users>\n"
        << "    <default><password></password><networks><ip>127.0.0.1</ip></networks>"
        << "<profile>default</profile><quota>default</quota></default>\n"
        << "    <gpuobs><password>" << kClickHousePassword << "</password><networks><ip>127.0.0.1</ip></networks>"
        << "<profile>default</profile><quota>default</quota></gpuobs>\n"
        << "  </users>\n"
        << "  <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors>"
        << "<result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time></interval>"
        << "</default></quotas>\n</yandex>\n";
  }

  std::string remote_servers() const {
    if (opt_.cluster.empty()) return "";
    std::string x = "  <remote_servers><" + opt_.cluster + ">\n";
    for (int port : opt_.shard_tcp_ports)
      x += "    <shard><replica><host>127.0.0.1</host><port>" + std::to_string(port) + "</port></replica></shard>\n";
    return x + "  </" + opt_.cluster + "></remote_servers>\n";
  }

  std::string dir_;
  ClickHouseOptions opt_;
  int http_port_ = -1, tcp_port_ = -1;
  pid_t pid_ = -1;
  std::string error_;
};

}  // namespace gpuobs::testing
