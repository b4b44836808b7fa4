// report_bench: how long every report takes on a large capture. Writes a
// capture of N kernel launches (default 10,000,000) through the real writer
// (8 processes, 64 kernels, 4 streams each; plus one sync, one copy and one
// allocation per 100 launches, and their stacks), then runs every report of
// schema/reports/ and prints its time against the target: 1 s each.
// usage: report_bench [--launches N] [--keep FILE]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "catalogue/api_spec.h"
#include "common/log.h"
#include "report/query.h"
#include "store/schema.h"
#include "store/writer.h"

using namespace gpuobs;

namespace {

uint32_t api_id(std::string_view symbol) {
  if (const ApiSpec* s = api_by_symbol(symbol)) return s->id;
  std::fprintf(stderr, "no API %.*s\n", static_cast<int>(symbol.size()), symbol.data());
  std::exit(1);
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) {
  log_init("warn");
  long launches = 10'000'000;
  std::string keep;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--launches")) launches = std::atol(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--keep")) keep = argv[i + 1];
  }
  std::string path = keep.empty() ? "/tmp/gpuobs-report-bench.gpuobs" : keep;
  const uint64_t t0 = 1'000'000'000;
  auto t_write = std::chrono::steady_clock::now();
  {
    auto w = CaptureWriter::create(path, true, nullptr);
    if (!w) {
      std::fprintf(stderr, "%s\n", w.error().message.c_str());
      return 1;
    }
    (void)(*w)->write_meta(CaptureMeta{"bench", CaptureMode::record, "report_bench", "h", "k", "", t0, 0, 4096});
    // Every row is wanted: the bench pushes faster than any writer, so no backlog drops.
    (*w)->set_max_backlog(std::chrono::hours(24), SIZE_MAX);
    (*w)->start();
    const uint32_t procs = 8;
    for (uint32_t p = 0; p < procs; ++p)
      (*w)->push(ProcEvent{GPUOBS_EV_PROC_FORK, gpuobs_hdr{GPUOBS_EV_PROC_FORK, 0, t0, 1000 + p, 1000 + p}, 1, 1, 0,
                           "proc" + std::to_string(p), ""});
    // 16 stacks of 8 frames in one pseudo-module.
    (*w)->push(ModuleDef{1, "[anon]", 0, 0, nullptr});
    for (int f = 1; f <= 32; ++f) (*w)->push(FrameDef{f, 1, static_cast<uint64_t>(f) * 16});
    for (int s = 1; s <= 16; ++s) {
      StackDef d{s, 0, {}};
      for (int f = 0; f < 8; ++f) d.frames.push_back(1 + (s + f) % 32);
      (*w)->push(d);
    }
    // Kernel names: 64 per process.
    uint32_t get_fn = api_id("cuModuleGetFunction"), sync = api_id("cuStreamSynchronize"),
             copy = api_id("cuMemcpyHtoDAsync_v2"), alloc = api_id("cuMemAlloc_v2");
    for (uint32_t p = 0; p < procs; ++p)
      for (uint64_t k = 0; k < 64; ++k) {
        std::string name = "_Z6kernelILi" + std::to_string(k) + "EEvv";
        ApiCallEvent e{gpuobs_hdr{GPUOBS_EV_API_CALL, 0, t0 + 1, 1000 + p, 1000 + p},
                       {0, 0xD0, 0},
                       0,
                       1000,
                       0x10000 + k,
                       get_fn,
                       GPUOBS_CALL_F_RETURNED | GPUOBS_CALL_F_OUT_READ,
                       GPUOBS_BLOB_STRING,
                       name + '\0'};
        (*w)->push(std::move(e));
      }
    for (long i = 0; i < launches; ++i) {
      uint32_t p = static_cast<uint32_t>(i % procs);
      uint64_t ts = t0 + 1000 + static_cast<uint64_t>(i) * 1000;  // 1 us apart
      gpuobs_launch l{};
      l.hdr = gpuobs_hdr{GPUOBS_EV_LAUNCH, 0, ts, 1000 + p, 1000 + p};
      l.function = 0x10000 + static_cast<uint64_t>(i * 7 % 64);
      l.grid_x = 1 + static_cast<uint32_t>(i % 1024), l.grid_y = 1, l.grid_z = 1;
      l.block_x = 256, l.block_y = 1, l.block_z = 1;
      l.stream = 0x100 + static_cast<uint64_t>(i / procs % 4);
      l.api = GPUOBS_API_CU_LAUNCH_KERNEL;
      (*w)->push(l, 1 + i % 16);
      if (i % 100 == 0) {
        uint32_t which = static_cast<uint32_t>(i / 100 % 3);
        ApiCallEvent e{gpuobs_hdr{GPUOBS_EV_API_CALL, 0, ts + 1, 1000 + p, 1000 + p},
                       {},
                       0,
                       static_cast<uint64_t>(1000 + i % 5000),
                       0,
                       0,
                       GPUOBS_CALL_F_RETURNED,
                       0,
                       {}};
        if (which == 0) {
          e.api = sync;
          e.args[0] = l.stream;
        }
        if (which == 1) {
          e.api = copy;
          e.args[0] = 0xA000;
          e.args[1] = 0x5000;
          e.args[2] = 4096;
          e.args[3] = l.stream;
        }
        if (which == 2) {
          e.api = alloc;
          e.args[1] = 1 << 16;
          e.out_value = 0x7f0000000000ull + static_cast<uint64_t>(i) * 0x10000;
          e.flags |= GPUOBS_CALL_F_OUT_READ;
        }
        (*w)->push(std::move(e), 1 + i % 16);
      }
    }
    (*w)->stop();
    (void)(*w)->write_end(t0 + 1000 + static_cast<uint64_t>(launches) * 1000, 0, {});
  }
  std::printf("capture: %ld launches (+%ld other calls) written through the writer in %.1f s: %s\n", launches,
              launches / 100 + 8 * 64, seconds_since(t_write), path.c_str());
  auto db = open_capture_readonly(path);
  if (!db) {
    std::fprintf(stderr, "%s\n", db.error().message.c_str());
    return 1;
  }
  int slow = 0;
  std::printf("%-12s %10s %8s   target 1.000 s per report\n", "report", "seconds", "rows");
  for (const auto& name : report_names()) {
    auto sql = report_sql(name);
    auto t = std::chrono::steady_clock::now();
    auto r = run_query(*db, *sql);
    double s = seconds_since(t);
    slow += s > 1.0;
    std::printf("%-12s %10.3f %8zu%s\n", name.c_str(), s, r ? r->rows.size() : 0,
                !r        ? "  (FAILED)"
                : s > 1.0 ? "  (over target)"
                          : "");
  }
  std::printf("%d report(s) over the 1 s target\n", slow);
  if (keep.empty()) std::remove(path.c_str());
  return 0;
}
