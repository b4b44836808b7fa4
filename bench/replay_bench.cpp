// replay_bench: gpuobs replay on a large capture. Writes a capture of about N
// queued operations (default 1,000,000) through the real writer: 8 processes,
// each with the legacy stream and three created streams (one non-blocking),
// two events recorded and waited on across streams, async memsets into
// per-stream ranges of one allocation, a stream sync every 10 rounds and a
// context sync every 100. Then times, in one run: the read floor (stepping
// through every API row the replay reads), replay::run, and replay::write;
// and prints the peak RSS (getrusage ru_maxrss) after each phase.
// usage: replay_bench [--ops N] [--keep FILE]
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "catalogue/api_spec.h"
#include "common/log.h"
#include "replay/replay.h"
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

long peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024;
}

gpuobs_hdr hdr(uint32_t type, uint32_t tgid, uint64_t ts) { return gpuobs_hdr{type, 0, ts, tgid, tgid}; }

ApiCallEvent call(uint32_t tgid, uint64_t ts, uint32_t api, std::initializer_list<uint64_t> args, uint64_t dur,
                  uint64_t out = 0) {
  ApiCallEvent e{hdr(GPUOBS_EV_API_CALL, tgid, ts),
                 {},
                 0,
                 dur,
                 out,
                 api,
                 GPUOBS_CALL_F_RETURNED | (out ? GPUOBS_CALL_F_OUT_READ : 0u),
                 0,
                 {}};
  size_t i = 0;
  for (uint64_t a : args) e.args[i++] = a;
  return e;
}

}  // namespace

int main(int argc, char** argv) {
  log_init("warn");
  long target_ops = 1'000'000;
  std::string keep;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--ops")) target_ops = std::atol(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--keep")) keep = argv[i + 1];
  }
  std::string path = keep.empty() ? "/tmp/replay_bench.gpuobs" : keep;
  std::remove(path.c_str());
  auto w = CaptureWriter::create(path, true, nullptr);
  if (!w) {
    std::fprintf(stderr, "%s\n", w.error().message.c_str());
    return 1;
  }
  const uint64_t t0 = 1'000'000'000;
  if (!(*w)->write_meta(
               CaptureMeta{"bench", CaptureMode::record, "replay_bench", "h", "k", "", int64_t(t0), 0, 1 << 20})
           .ok())
    return 1;
  // Every row is wanted: the bench pushes faster than any writer, so no backlog drops.
  (*w)->set_max_backlog(std::chrono::hours(24), SIZE_MAX);
  (*w)->start();
  const uint32_t create = api_id("cuStreamCreate"), ev_create = api_id("cuEventCreate"),
                 record = api_id("cuEventRecord"), wait = api_id("cuStreamWaitEvent"),
                 memset = api_id("cuMemsetD8Async"), ssync = api_id("cuStreamSynchronize"),
                 csync = api_id("cuCtxSynchronize"), alloc = api_id("cuMemAlloc_v2");
  constexpr uint32_t kProcs = 8;
  constexpr long kOpsPerRound = 8;  // 5 launches, 1 memset, 1 record, 1 wait
  const long rounds = target_ops / (kProcs * kOpsPerRound);
  auto start = std::chrono::steady_clock::now();
  uint64_t ts = t0;
  for (uint32_t p = 0; p < kProcs; ++p) {
    uint32_t tgid = 1000 + p;
    (*w)->push(ProcEvent{GPUOBS_EV_PROC_FORK, hdr(GPUOBS_EV_PROC_FORK, tgid, ts), 1, 1, 0, "bench", ""});
    (*w)->push(call(tgid, ++ts, alloc, {0, 1 << 20}, 10, 0xD0000000));
    for (uint64_t s = 0; s < 3; ++s) (*w)->push(call(tgid, ++ts, create, {0, s == 2 ? 1ull : 0ull}, 10, 0xA0 + s));
    for (uint64_t e = 0; e < 2; ++e) (*w)->push(call(tgid, ++ts, ev_create, {0, 0}, 10, 0xE0 + e));
  }
  const uint64_t streams[4] = {0, 0xA0, 0xA1, 0xA2};
  long calls = 0;
  for (long i = 0; i < rounds; ++i) {
    for (uint32_t p = 0; p < kProcs; ++p) {
      uint32_t tgid = 1000 + p;
      auto launch = [&](uint64_t stream) {
        gpuobs_launch l{};
        l.hdr = hdr(GPUOBS_EV_LAUNCH, tgid, ts += 100);
        l.function = 0xF000 + (i % 16);
        l.grid_x = l.grid_y = l.grid_z = l.block_x = l.block_y = l.block_z = 1;
        l.stream = stream;
        l.api = GPUOBS_API_CU_LAUNCH_KERNEL;
        (*w)->push(l);
        ++calls;
      };
      auto push = [&](ApiCallEvent e) {
        (*w)->push(std::move(e));
        ++calls;
      };
      launch(streams[i % 4]);
      launch(streams[(i + 1) % 4]);
      uint64_t ms = streams[(i + 2) % 4];
      push(call(tgid, ts += 100, memset, {0xD0000000 + uint64_t((i + 2) % 4) * 0x10000, 0, 4096, ms}, 50));
      push(call(tgid, ts += 100, record, {0xE0 + uint64_t(i % 2), streams[i % 4]}, 50));
      push(call(tgid, ts += 100, wait, {streams[(i + 3) % 4], 0xE0 + uint64_t(i % 2), 0}, 50));
      launch(streams[(i + 3) % 4]);
      launch(streams[i % 4]);
      launch(streams[(i + 2) % 4]);
      if (i % 10 == 9) push(call(tgid, ts += 100, ssync, {streams[i % 4]}, 2000));
      if (i % 100 == 99) push(call(tgid, ts += 100, csync, {}, 20000));
    }
  }
  (*w)->stop();
  if (!(*w)->write_end(int64_t(ts + 1000), 0, {}).ok()) return 1;
  w->reset();
  std::printf("capture: %ld API calls in %.1f s (%s); peak RSS %ld MiB\n", calls, seconds_since(start), path.c_str(),
              peak_rss_mib());

  auto db = Db::open(path, SQLITE_OPEN_READWRITE);
  if (!db) return 1;
  // The floor: stepping through every row of the five tables the replay reads.
  start = std::chrono::steady_clock::now();
  long rows = 0;
  for (const char* t : {"kernel_launches", "copies", "memory_ops", "stream_ops", "syncs"}) {
    Stmt st(db->get(), std::string("SELECT * FROM ") + t);
    while (st.step() == SQLITE_ROW) ++rows;
  }
  double floor_s = seconds_since(start);
  std::printf("read floor: SELECT * of %ld rows: %.2f s\n", rows, floor_s);

  start = std::chrono::steady_clock::now();
  auto r = replay::run(*db);
  if (!r) {
    std::fprintf(stderr, "%s\n", r.error().message.c_str());
    return 1;
  }
  double run_s = seconds_since(start);
  long rss_run = peak_rss_mib();
  std::printf(
      "replay::run: %zu ops, %zu queues, %zu deps, %zu observations, %zu hazards, %zu depth samples: "
      "%.2f s (%.1fx the floor); peak RSS %ld MiB\n",
      r->ops.size(), r->queues.size(), r->deps.size(), r->observations.size(), r->hazards.size(), r->depth.size(),
      run_s, run_s / floor_s, rss_run);
  start = std::chrono::steady_clock::now();
  if (auto s = replay::write(*db, *r); !s) {
    std::fprintf(stderr, "%s\n", s.error().message.c_str());
    return 1;
  }
  double write_s = seconds_since(start);
  std::printf("replay::write: %.2f s; run + write %.2f s = %.1fx the read floor; peak RSS %ld MiB\n", write_s,
              run_s + write_s, (run_s + write_s) / floor_s, peak_rss_mib());
  if (keep.empty()) std::remove(path.c_str());
  return 0;
}
