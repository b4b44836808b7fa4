// The capture writer alone (issue 17): how many launches per second one
// CaptureWriter stores, with no ring, no BPF and no workload in the way.
// Launch events of P processes, each repeating a step of D distinct launches
// (a training step's shape), are built in memory first, then handed over in
// chunks the size of a ring consumer's poll as fast as the writer takes them;
// the writer thread's CPU and the wall time to the last commit are printed
// beside the limit measured in the same run: SQLite inserting the same number
// of launch rows (two integer columns, in key order) from memory.
//
//   build/bench/writer_bench --procs 8 --distinct 1000 --launches 3000000
#include <sqlite3.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "store/writer.h"

using namespace gpuobs;

namespace {

double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

double process_cpu_s() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

// SQLite alone: the same number of (key, shape) rows, 8192 per transaction,
// with the writer's journal settings, `per` rows per INSERT statement. The
// floor for one launch row.
double sqlite_limit_s(const std::string& path, size_t rows, int shapes, int per) {
  std::filesystem::remove(path);
  std::filesystem::remove(path + "-wal");
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_exec(db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;", nullptr, nullptr, nullptr);
  sqlite3_exec(db, "CREATE TABLE launches (id INTEGER PRIMARY KEY, shape_id INTEGER NOT NULL)", nullptr, nullptr,
               nullptr);
  std::string sql = "INSERT INTO launches (id, shape_id) VALUES (?, ?)";
  for (int i = 1; i < per; ++i) sql += ",(?,?)";
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr);
  double t0 = thread_cpu_s();
  for (size_t i = 0; i < rows; i += size_t(per)) {
    if (i % 8192 == 0) sqlite3_exec(db, i ? "COMMIT; BEGIN" : "BEGIN", nullptr, nullptr, nullptr);
    for (int k = 0; k < per; ++k) {
      sqlite3_bind_int64(st, 2 * k + 1, int64_t(i + size_t(k)) * 5336);
      sqlite3_bind_int64(st, 2 * k + 2, int64_t((i + size_t(k)) % size_t(shapes)) + 1);
    }
    sqlite3_step(st);
    sqlite3_reset(st);
  }
  sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
  double cpu = thread_cpu_s() - t0;
  sqlite3_finalize(st);
  sqlite3_close(db);
  std::filesystem::remove(path);
  std::filesystem::remove(path + "-wal");
  return cpu;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"the capture writer alone: launches stored per second and CPU per launch"};
  int procs = 8, distinct = 1000;
  size_t launches = 2'000'000;
  double rate = 1.5e6;  // launches/s the timestamps say (not a pace: events are handed over at once)
  std::string path = "/tmp/writer_bench.gpuobs";
  app.add_option("--procs", procs, "processes")->check(CLI::Range(1, 1024));
  app.add_option("--distinct", distinct, "distinct launches per process (a step)")->check(CLI::Range(1, 1 << 24));
  app.add_option("--launches", launches, "launches in all")->check(CLI::Range(size_t{1}, size_t{1} << 32));
  app.add_option("--rate", rate, "launches per second, for the timestamps")->check(CLI::PositiveNumber);
  app.add_option("--out", path, "capture file (replaced)");
  CLI11_PARSE(app, argc, argv);

  auto lookup = [](uint32_t tgid) -> std::optional<ProcessInfo> {
    ProcessInfo p;
    p.comm = "bench" + std::to_string(tgid);
    p.exe = "/usr/bin/bench";
    return p;
  };
  auto w = CaptureWriter::create(path, true, lookup);
  if (!w) {
    std::fprintf(stderr, "writer_bench: %s\n", w.error().message.c_str());
    return 1;
  }
  CaptureWriter& writer = *w.value();
  writer.set_origin_lookup([](uint32_t) { return std::optional<ProcessOrigin>(ProcessOrigin{}); });
  writer.set_max_backlog(std::chrono::hours(1), SIZE_MAX);  // store everything: the writer's rate is the figure
  CaptureMeta meta;
  meta.gpuobs_version = "bench";
  meta.mode = CaptureMode::daemon;
  meta.start_mono_ns = 1'000'000'000;
  if (auto s = writer.write_meta(meta); !s) {
    std::fprintf(stderr, "writer_bench: %s\n", s.error().message.c_str());
    return 1;
  }

  // Built before the clock starts: the ring consumer's work is not measured here.
  std::vector<std::vector<CaptureWriter::Queued>> chunks;
  const size_t kChunk = 1024;  // one consumer poll's hand-over
  const double gap_ns = 1e9 / rate;
  for (size_t i = 0; i < launches; i += kChunk) {
    auto& c = chunks.emplace_back();
    for (size_t k = i; k < std::min(launches, i + kChunk); ++k) {
      gpuobs_launch l{};
      uint32_t p = uint32_t(k % size_t(procs));
      uint64_t step = (k / size_t(procs)) % size_t(distinct);
      l.hdr.type = GPUOBS_EV_LAUNCH;
      l.hdr.size = sizeof l;
      l.hdr.ts_ns = uint64_t(meta.start_mono_ns) + uint64_t(double(k) * gap_ns);
      l.hdr.tgid = 100000 + p;
      l.hdr.tid = 100000 + p;
      l.function = 0x7f0000001000 + step * 64;
      l.grid_x = uint32_t(step % 97) + 1, l.grid_y = 1, l.grid_z = 1;
      l.block_x = 128, l.block_y = 1, l.block_z = 1;
      l.stream = 0x5555000 + p;
      l.kernel_params = 0x7ffd0000 + step;
      l.api = GPUOBS_API_CU_LAUNCH_KERNEL;
      c.push_back(CaptureWriter::Queued{Event(l), 0});
    }
  }

  double cpu0 = process_cpu_s(), main0 = thread_cpu_s();
  auto t0 = std::chrono::steady_clock::now();
  writer.start();
  // Paced as a ring consumer is: at most kAhead events waiting, so the queue
  // stays the size a keeping-up daemon sees (a backlog of millions would
  // measure vector growth and page faults, not the writer).
  const uint64_t kAhead = 32768;
  uint64_t handed = 0;
  for (auto& c : chunks) {
    handed += c.size();
    writer.push_many(c);
    while (handed > writer.stats().launches + kAhead) usleep(100);
  }
  double pushed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  writer.stop();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double writer_cpu = (process_cpu_s() - cpu0) - (thread_cpu_s() - main0);
  WriterStats st = writer.stats();
  if (auto s = writer.write_end(meta.start_mono_ns + int64_t(double(launches) * gap_ns), 0, {}); !s)
    std::fprintf(stderr, "writer_bench: %s\n", s.error().message.c_str());
  w.value().reset();
  auto bytes = std::filesystem::file_size(path);

  double limit = sqlite_limit_s(path + ".limit", launches, procs * distinct, 1);
  double limit64 = sqlite_limit_s(path + ".limit", launches / 64 * 64, procs * distinct, 64);
  std::printf("workload   %d processes x %d distinct launches, %zu launches\n", procs, distinct, launches);
  std::printf("stored     %llu launches, %llu failed, %llu dropped (backlog), %llu batches\n",
              (unsigned long long)st.launches, (unsigned long long)st.failed_rows,
              (unsigned long long)st.backlog_dropped, (unsigned long long)st.batches);
  std::printf("writer     %.3f s CPU, %.3f s wall = %.0f ns CPU per launch, %.0f launches/s\n", writer_cpu, wall,
              writer_cpu * 1e9 / double(launches), double(launches) / wall);
  std::printf("producer   handed over in %.3f s wall, %.3f s CPU\n", pushed, thread_cpu_s() - main0);
  std::printf("disk       %.1f bytes per launch\n", double(bytes) / double(launches));
  std::printf("limit      SQLite inserts %zu (key, shape) rows in %.3f s CPU = %.0f ns per row\n", launches, limit,
              limit * 1e9 / double(launches));
  std::printf("limit      the same, 64 rows per INSERT: %.3f s CPU = %.0f ns per row\n", limit64,
              limit64 * 1e9 / double(launches / 64 * 64));
  std::printf("ratio      writer / limit = %.2f\n", writer_cpu / limit);
  return 0;
}
