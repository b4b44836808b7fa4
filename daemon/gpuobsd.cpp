// gpuobsd: the capture engine for the whole host, writing one capture database
// until SIGTERM/SIGINT, then draining the ring buffer and committing.
// (Service integration, rotation and hardening: docs/operations.md.)
#include <CLI/CLI.hpp>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <atomic>
#include <cstdio>
#include <ctime>

#include "capture/session.h"
#include "common/log.h"
#include "version.h"

namespace {

std::atomic<bool> g_stop{false};
void on_stop(int) { g_stop = true; }

}  // namespace

int main(int argc, char** argv) {
  using namespace gpuobs;
  CLI::App app{"gpuobsd " GPUOBS_VERSION ": record every GPU process on this host"};
  SessionOptions opts;
  opts.mode = "daemon";
  opts.only_tracked = false;
  std::string log_level = "info";
  uint32_t ring_mb = 16;
  app.add_option("--db", opts.output, "capture database to write")->required();
  app.add_option("--libcuda", opts.libcuda_paths, "libcuda file to probe (repeatable; default: discover)");
  app.add_option("--libhip", opts.libhip_paths, "HIP runtime file to probe (repeatable; default: discover)");
  app.add_option("--watch-dev", opts.device_specs, "also watch this character device (repeatable)");
  app.add_flag("!--no-gpu-devices", opts.gpu_devices, "do not watch GPU drivers' devices from /proc/devices");
  app.add_option("--ring-mb", ring_mb, "ring buffer size in MiB")->capture_default_str();
  app.add_option("--stack-depth", opts.stack_depth, "user-stack frames per event, 0 to 127 (0: no stacks)")
      ->capture_default_str();
  app.add_option("--unwind", opts.unwind, "fp (frame pointers), dwarf (copy the stack, unwind with .eh_frame in user space) or bpf (unwind in BPF from .eh_frame tables)")
      ->capture_default_str();
  app.add_option("--stack-copy", opts.stack_copy_bytes, "--unwind dwarf: stack bytes copied per event")
      ->capture_default_str();
  app.add_option("-v,--log-level", log_level, "trace, debug, info, warn, error, off")->capture_default_str();
  app.set_version_flag("--version", GPUOBS_VERSION);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  log_init(log_level);
  opts.ring_bytes = ring_mb << 20;

  // A previous capture is kept, never overwritten: it moves aside.
  struct stat st{};
  if (::stat(opts.output.c_str(), &st) == 0) {
    std::string aside = opts.output + "." + std::to_string(::time(nullptr));
    if (std::rename(opts.output.c_str(), aside.c_str()) != 0) {
      print_error("gpuobsd", make_error("cannot move the previous capture aside to " + aside));
      return 1;
    }
    for (const char* sfx : {"-wal", "-shm"}) std::rename((opts.output + sfx).c_str(), (aside + sfx).c_str());
    spdlog::info("previous capture moved to {}", aside);
  }

  struct sigaction sa{};
  sa.sa_handler = on_stop;
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);

  auto session = Session::create(opts);
  if (!session) {
    print_error("gpuobsd", session.error());
    return session.error().exit_code;
  }
  spdlog::info("capturing to {}", opts.output);
  while (!g_stop) (*session)->poll(100);

  auto sum = (*session)->finish(std::nullopt);
  if (!sum) {
    print_error("gpuobsd", sum.error());
    return 1;
  }
  spdlog::info("stopped: {} launches, {} ioctls, {} process events stored; {} dropped", sum->launches,
               sum->ioctls, sum->process_events, sum->dropped);
  return 0;
}
