#include "capture/capture_options.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <iterator>
#include <stdexcept>

#include "common/number_checks.h"
#include "events.h"

namespace gpuobs {
namespace {

static_assert(kStackDepthMax == GPUOBS_STACK_MAX, "the BPF side's stack depth bound");
static_assert(kStackCopyMax == GPUOBS_STACK_COPY_MAX, "the BPF side's stack copy bound");

// "--ring-mb" and, for the config file, "--ring-mb,--ring_mb".
std::string names(const std::string& dashed, bool config_spellings) {
  std::string underscored = dashed;
  for (size_t i = 2; i < underscored.size(); ++i)
    if (underscored[i] == '-') underscored[i] = '_';
  return config_spellings && underscored != dashed ? dashed + "," + underscored : dashed;
}

}  // namespace

void add_capture_options(CLI::App& app, const CaptureOptionFields& f, bool config_spellings) {
  const size_t before = app.get_options().size();
  app.add_option("--libcuda", *f.libcuda, "libcuda file to probe (repeatable; default: the system's libcuda.so.1)");
  app.add_option("--libhip", *f.libhip, "HIP runtime file to probe (repeatable; default: the system's libamdhip64.so)");
  app.add_option(names("--watch-dev", config_spellings), *f.watch_dev,
                 "also watch ioctls on this character device: MAJOR, MAJOR:MINOR or /dev/PATH, optionally "
                 "DRIVER=... to decode its ioctls as nvidia, nvidia-uvm or kfd (repeatable)");
  app.add_flag("!--no-gpu-devices", *f.gpu_devices, "do not watch the GPU drivers' devices found in /proc/devices");
  app.add_option(names("--ring-mb", config_spellings), *f.ring_mb,
                 "ring buffer size in MiB, 1 to " + std::to_string(kRingMbMax) + " (rounded up to a power of two)")
      ->check(whole_number(1, kRingMbMax))
      ->capture_default_str();
  app.add_option(names("--stack-depth", config_spellings), *f.stack_depth,
                 "user-stack frames per event, 0 to " + std::to_string(kStackDepthMax) + " (0: no stacks)")
      ->check(whole_number(0, kStackDepthMax))
      ->capture_default_str();
  // The word is checked against the words (CLI11's message names them) and
  // stored as the enum, never kept as a string.
  app.add_option_function<std::string>(
         "--unwind", [unwind = f.unwind](const std::string& w) { *unwind = parse<UnwindMode>(w).value_or(*unwind); },
         "fp: frame pointers (cheapest); dwarf: also copy the stack and unwind it with .eh_frame in user "
         "space; bpf: unwind in BPF from .eh_frame tables (both go through code built without frame pointers)")
      ->check(CLI::IsMember({"fp", "dwarf", "bpf"}))
      ->default_str(std::string(to_string(*f.unwind)));
  app.add_option(names("--stack-copy", config_spellings), *f.stack_copy,
                 "--unwind dwarf: bytes of stack copied per event (a multiple of 8, 8 to " +
                     std::to_string(kStackCopyMax) + ")")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            // Never throws: a word that is not a number is refused here.
            if (v.empty() || v.size() > 6 || v.find_first_not_of("0123456789") != std::string::npos)
              return "'" + v + "' is not a multiple of 8 from 8 to " + std::to_string(kStackCopyMax);
            unsigned long n = std::stoul(v);
            if (n < 8 || n > kStackCopyMax || n % 8)
              return "'" + v + "' is not a multiple of 8 from 8 to " + std::to_string(kStackCopyMax);
            return {};
          },
          "BYTES"))
      ->capture_default_str();
  app.add_option(names("--nccl-stall", config_spellings), *f.nccl_stall_s,
                 "seconds after which a collective that some ranks of a communicator entered and others did not "
                 "(or that none returned from) is reported as a stall, 1 to " +
                     std::to_string(kNcclStallMaxS))
      ->check(whole_number(1, kNcclStallMaxS))
      ->capture_default_str();
  // on|off, like the words of --unwind: never a bare flag whose value could
  // be taken for the command.
  app.add_option_function<std::string>(
         names("--python-stacks", config_spellings), [py = f.python_stacks](const std::string& w) { *py = w == "on"; },
         "on: CPython frames (function, file:line) in the stacks of Python processes, in place of the "
         "interpreter's native frames; off: native frames only")
      ->check(CLI::IsMember({"on", "off"}))
      ->default_str(*f.python_stacks ? "on" : "off");
  if (f.python_main_thread)
    app.add_option_function<std::string>(
           names("--python-main-thread", config_spellings),
           [m = f.python_main_thread](const std::string& w) { *m = w == "on"; },
           "on: a thread that runs no Python (PyTorch's autograd worker, a C++ thread pool) carries its process's "
           "main thread's Python frames after its own native ones, marked as such (the line that waits on it, "
           "e.g. loss.backward()); off: the calling thread's own frames only")
        ->check(CLI::IsMember({"on", "off"}))
        ->default_str(*f.python_main_thread ? "on" : "off");
  if (f.metrics_hz)
    app.add_option(names("--metrics-hz", config_spellings), *f.metrics_hz,
                   "GPU metrics (utilization, memory, power, clocks, throttling; GPM where supported) sampled per "
                   "second through NVML or AMD's sysfs, 0 to " +
                       std::to_string(kMetricsHzMax) + " (0: off)")
        ->check(whole_number(0, kMetricsHzMax))
        ->capture_default_str();
  if (f.detail_interval_ms)
    app.add_option(names("--detail-interval-ms", config_spellings), *f.detail_interval_ms,
                   "GPM metrics (SM active and occupancy, tensor, DRAM bandwidth, PCIe/NVLink: Hopper and later) "
                   "averaged over, and per-process GPU utilization read every, this many ms (each costs about "
                   "1 ms of CPU per GPU), up to " +
                       std::to_string(kDetailIntervalMsMax))
        ->check(whole_number(0, kDetailIntervalMsMax))
        ->capture_default_str();
  // Every value option defined here is one record's command splitter knows.
  auto added = app.get_options();
  for (size_t k = before; k < added.size(); ++k) {
    const CLI::Option* o = added[k];
    if (o->get_items_expected_min() == 0 || o->get_lnames().empty()) continue;  // a flag
    std::string name = "--" + o->get_lnames().front();
    if (std::find_if(std::begin(kCaptureValueOptions), std::end(kCaptureValueOptions),
                     [&](const char* n) { return name == n; }) == std::end(kCaptureValueOptions))
      throw std::logic_error("capture option " + name + " takes a value but is not in kCaptureValueOptions");
  }
}

Status check_capture_options(UnwindMode unwind, uint32_t stack_copy, const char* spelling) {
  // Only a value other than the default: gpuobsd --print-config writes every
  // key, and its output must read back as the same configuration.
  if (stack_copy != kStackCopyDefault && unwind != UnwindMode::dwarf)
    return make_error(
        std::string(spelling) + " applies only to --unwind dwarf (it sizes the stack copy that unwinds in user space)",
        "add --unwind dwarf, or drop " + std::string(spelling), 2);
  return {};
}

}  // namespace gpuobs
