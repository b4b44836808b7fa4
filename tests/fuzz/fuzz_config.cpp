// gpuobsd's configuration parser (daemon/config.cpp, CLI11's TOML/INI reader
// and gpuobs's own unit transforms) on any configuration file. Input: the
// file's bytes, passed as --config /proc/self/fd/N.
// Besides ASan/UBSan and uncaught exceptions, checks the round trip that
// `gpuobsd --print-config > gpuobsd.conf` relies on: a configuration that
// parses prints (config_text) as a file that parses back to the same options.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <streambuf>
#include <string>

#include "daemon/config.h"
#include "memfd.h"

namespace {

gpuobs::daemon::Parsed parse_file(const uint8_t* data, size_t size) {
  int fd = gpuobs::fuzz::memfd_with(data, size);
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  std::string argv0 = "gpuobsd", flag = "--config";
  char* argv[] = {argv0.data(), flag.data(), path.data(), nullptr};
  auto p = gpuobs::daemon::parse_config(3, argv);
  ::close(fd);
  return p;
}

// Values Debian 12's CLI11 (2.1.2) cannot read back from one line, whatever
// config_text() prints (tests/fuzz/README.md, "Findings"): it does not undo
// the backslash escapes config_text() writes for '"' and '\\', and a '#'
// anywhere in a line starts a comment, even inside quotes (a multi-line list
// can still carry one). And library_rescan: its parser takes at most 12
// digits, so a rescan period of 10^12 ms or more ("999999999999h") parses but
// prints as a value it refuses. Such configurations are left out of the round trip.
bool printable(const gpuobs::daemon::Config& c) {
  if (c.library_rescan_ms > 999'999'999'999ull) return false;
  auto plain = [](const std::string& v) { return v.find_first_of("\"\\#") == std::string::npos; };
  for (const std::string* v : {&c.state_dir, &c.db, &c.unwind, &c.log_level, &c.metrics_listen, &c.status_file})
    if (!plain(*v)) return false;
  for (const auto* list : {&c.libcuda, &c.libhip, &c.watch_dev})
    for (const std::string& v : *list)
      if (!plain(v)) return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // CLI11 prints every parse error (and --help) on std::cout/std::cerr:
  // silence them; sanitizer reports go to fd 2 directly and still show.
  struct Discard : std::streambuf {
    int overflow(int ch) override { return ch; }
  };
  static Discard sink;
  std::cout.rdbuf(&sink);
  std::cerr.rdbuf(&sink);
  std::freopen("/dev/null", "w", stdout);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto first = parse_file(data, size);
  if (first.exit_code >= 0) return 0;  // refused (or --help/--version/--print-config): CLI11 said why
  if (!printable(first.config)) return 0;
  std::string text = gpuobs::daemon::config_text(first.config);
  auto second = parse_file(reinterpret_cast<const uint8_t*>(text.data()), text.size());
  if (second.exit_code >= 0) {
    std::fprintf(stderr, "printed configuration does not parse:\n%s", text.c_str());
    std::abort();
  }
  auto diff = gpuobs::daemon::diff_config(first.config, second.config);
  if (!diff.applied.empty() || !diff.need_restart.empty()) {
    std::fprintf(stderr, "printed configuration reads back differently (%s):\n%s",
                 (diff.applied.empty() ? diff.need_restart : diff.applied).front().c_str(), text.c_str());
    std::abort();
  }
  return 0;
}
