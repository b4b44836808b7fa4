// gpuobs_replay_exec: runs a schedule file (gpuobs replay --schedule-out) on
// the GPU. `gpuobs replay --execute` starts it under `gpuobs record` and
// compares the two captures (docs/replay.md "Execute"); it can also be run by
// hand. One executor process per captured process (forked before CUDA is
// touched), all starting together once each is ready.
//
// usage: gpuobs_replay_exec SCHEDULE [--cuda-lib PATH] [--report FILE] [--fixed-ns F --ns-per-cycle R]
//        gpuobs_replay_exec --probe [--cuda-lib PATH]
//        gpuobs_replay_exec --calibrate-only --report FILE [--cuda-lib PATH]
// exit: 0 done; 1 bad schedule or a CUDA call failed; 2 usage; 4 no GPU.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "exec/cuda_driver.h"
#include "exec/executor.h"
#include "exec/schedule_file.h"

namespace {

using namespace gpuobs::exec;

constexpr int kNoGpu = 4;

int fail(const std::string& why, int code = 1) {
  std::fprintf(stderr, "gpuobs_replay_exec: %s\n", why.c_str());
  return code;
}

// The driver loaded and a device present, or why not (exit 4).
int open_gpu(const std::string& lib, CudaDriver& cu, bool print) {
  std::string why;
  if (!load_driver(lib, cu, why)) return fail("no CUDA driver: " + why, kNoGpu);
  if (CUresult r = cu.cuInit(0); r != 0) return fail("no usable GPU: cuInit failed: " + cu.error_text(r), kNoGpu);
  int n = 0;
  if (CUresult r = cu.cuDeviceGetCount(&n); r != 0 || n < 1)
    return fail("no GPU: cuDeviceGetCount found " + std::to_string(n) + " devices", kNoGpu);
  if (print) {
    char name[256] = "";
    CUdevice dev = 0;
    if (cu.cuDeviceGetName && cu.cuDeviceGet(&dev, 0) == 0) cu.cuDeviceGetName(name, sizeof name, dev);
    std::fprintf(stderr, "gpuobs_replay_exec: %d CUDA device%s; device 0: %s\n", n, n == 1 ? "" : "s",
                 name[0] ? name : "(name not known)");
  }
  return 0;
}

bool append_line(const std::string& file, const std::string& line) {
  if (file.empty()) return true;
  int fd = ::open(file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  std::string l = line + "\n";
  bool ok = ::write(fd, l.data(), l.size()) == static_cast<ssize_t>(l.size());  // one write: lines never interleave
  return ::close(fd) == 0 && ok;
}

// One process's part: CUDA up, calibrated, ready; waits for the common start
// (read from `go`, or now when alone), runs, reports.
int run_part(const std::string& lib, const ScheduleFile& sched, int64_t process_id, int ready, int go,
             const std::string& report, const Calibration* given) {
  CudaDriver cu;
  if (int rc = open_gpu(lib, cu, false)) return rc;
  Executor ex(cu, sched, process_id);
  std::string why;
  if (!ex.init(why)) return fail(why);
  if (given) ex.set_calibration(*given);
  else if (!ex.calibrate(why)) return fail(why);
  int64_t t0 = now_mono_ns() + 1'000'000;
  if (ready >= 0) {
    char c = 1;
    if (::write(ready, &c, 1) != 1 || ::read(go, &t0, sizeof t0) != sizeof t0) return fail("lost the start signal");
  }
  if (!ex.run(t0, why)) return fail(why);
  if (!append_line(report, ex.report().json())) return fail("cannot write the report " + report);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string schedule, lib, report;
  bool probe = false, calibrate_only = false;
  Calibration given;
  int given_parts = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--probe") probe = true;
    else if (a == "--calibrate-only") calibrate_only = true;
    else if (a == "--cuda-lib" && i + 1 < argc) lib = argv[++i];
    else if (a == "--report" && i + 1 < argc) report = argv[++i];
    else if (a == "--fixed-ns" && i + 1 < argc) given.fixed_ns = std::strtod(argv[++i], nullptr), ++given_parts;
    else if (a == "--ns-per-cycle" && i + 1 < argc) given.ns_per_cycle = std::strtod(argv[++i], nullptr), ++given_parts;
    else if (!a.empty() && a[0] != '-' && schedule.empty()) schedule = a;
    else return fail("usage: gpuobs_replay_exec SCHEDULE [--cuda-lib PATH] [--report FILE] | --probe", 2);
  }
  if (probe) {
    CudaDriver cu;
    return open_gpu(lib, cu, true);
  }
  if (calibrate_only) {
    CudaDriver cu;
    if (int rc = open_gpu(lib, cu, false)) return rc;
    ScheduleFile none;
    Executor ex(cu, none, 0);
    std::string why, seq;
    if (!ex.init(why) || !ex.calibration_sequence(seq, why)) return fail(why);
    return append_line(report, "{\"calibration_sequence\":" + seq + "}") ? 0 : fail("cannot write " + report);
  }
  if (given_parts != 0 && (given_parts != 2 || !(given.ns_per_cycle > 0) || given.fixed_ns < 0))
    return fail("--fixed-ns and --ns-per-cycle go together, a positive rate and a fixed cost >= 0", 2);
  given.measured = given_parts == 2;
  given.source = "given";
  const Calibration* cal = given_parts ? &given : nullptr;
  if (schedule.empty()) return fail("usage: gpuobs_replay_exec SCHEDULE [--cuda-lib PATH] [--report FILE]", 2);
  ScheduleFile sched;
  std::string why;
  if (!read_schedule(schedule, sched, why)) return fail(why);
  std::set<int64_t> processes;
  for (const Thread& t : sched.threads) processes.insert(t.process_id);
  if (processes.size() <= 1)
    return run_part(lib, sched, processes.empty() ? 0 : *processes.begin(), -1, -1, report, cal);

  // Several processes: one child each, like the capture. The parent never
  // touches CUDA (a forked CUDA context is unusable).
  int ready[2], go[2];
  if (::pipe2(ready, O_CLOEXEC) != 0 || ::pipe2(go, O_CLOEXEC) != 0) return fail("pipe failed");
  std::vector<pid_t> children;
  for (int64_t p : processes) {
    pid_t c = ::fork();
    if (c < 0) return fail("fork failed");
    if (c == 0) {
      ::close(ready[0]), ::close(go[1]);
      std::_Exit(run_part(lib, sched, p, ready[1], go[0], report, cal));
    }
    children.push_back(c);
  }
  ::close(ready[1]), ::close(go[0]);
  size_t up = 0;
  char c = 0;
  while (up < children.size() && ::read(ready[0], &c, 1) == 1) ++up;
  int64_t t0 = now_mono_ns() + 2'000'000;
  for (size_t i = 0; i < up; ++i)
    if (::write(go[1], &t0, sizeof t0) != sizeof t0) break;
  ::close(go[1]);
  int rc = 0;
  for (pid_t child : children) {
    int status = 0;
    ::waitpid(child, &status, 0);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    if (code && !rc) rc = code;
  }
  return rc;
}
