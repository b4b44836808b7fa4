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
  if (gpuobs::daemon::config_unwritable(first.config)) return 0;  // --print-config refuses these
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
