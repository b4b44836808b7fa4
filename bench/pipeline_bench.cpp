// pipeline_bench: what the daemon side costs per event, against the best the
// store can do, in one run (issue 17).
//
//   pipeline_bench [--procs N] [--seconds T | --launches L] [--rate R] [--distinct D] [--mode daemon|record]
//                  [--lib LIBCUDA] [--gpuobsd PATH] [--gpuobs PATH] [--ring-mb M] [--batch ROWS]
//                  [--wait-max S] [--keep DIR] [--no-limit]
//
// Runs the real gpuobsd (--db FILE, default) or `gpuobs record` against N
// processes calling cuLaunchKernel on the fake libcuda, for T seconds each or
// L launches each, at R launches/s per process (0: as fast as they go). Prints:
//   offered   launches the processes issued (they count them) and the rate
//   stored    their launches in the capture; every drop counter of the capture
//   cpu       the daemon's utime+stime (/proc/PID/stat) from the first launch
//             to the capture holding every launch, per stored launch
//   complete  from the last launch to the capture holding every launch
//             (polling its counters every 10 ms) and to the last commit
//   on disk   the capture's size after the daemon exits (WAL folded in) per launch
//   limit     the same final rows, read back generically (PRAGMA table_info of
//             every table with rows) and inserted from memory into a fresh
//             database with the writer's pragmas and transactions of --batch
//             rows (default 8192, the writer's most events per transaction):
//             ns per row, per stored launch, and daemon / limit
// Needs root (BPF). Paths default to the bench's own directory, then the build
// tree's layout (../daemon/gpuobsd, ../cli/gpuobs, ../tests/libcuda.so.1).
#include <dlfcn.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../tests/workloads/launch_truth.h"

namespace {

using LaunchFn = int (*)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**,
                         void**);

int64_t mono_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000LL + t.tv_nsec;
}

int64_t thread_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000LL + t.tv_nsec;
}

void sleep_until_ns(int64_t t) {
  timespec ts{static_cast<time_t>(t / 1000000000LL), static_cast<long>(t % 1000000000LL)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {}
}

struct Options {
  int procs = 1;
  double seconds = 5;
  uint64_t launches = 0;  // per process; 0: time-bound (--seconds)
  uint64_t rate = 0;      // per process and second; 0: as fast as it goes
  // Launches repeat every `distinct` calls, like a training step repeats its
  // launches (0: every launch's arguments differ, as launch_workload's do).
  uint64_t distinct = 1000;
  std::string mode = "daemon";
  std::string lib, gpuobsd, gpuobs, keep;
  int ring_mb = 0;  // 0: the daemon's default
  int batch = 8192;
  double wait_max = 600;
  bool limit = true;
};

std::string self_dir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

std::string find_file(const std::string& given, const std::string& name, const std::string& build_rel) {
  if (!given.empty()) return given;
  std::string dir = self_dir();
  for (const std::string& p : {dir + "/" + name, dir + "/" + build_rel})
    if (access(p.c_str(), R_OK) == 0) return p;
  return dir + "/" + build_rel;
}

// ---- the workload: one process calling cuLaunchKernel ----------------------

struct WorkerResult {
  uint64_t launches = 0;
  int64_t first_ns = 0, last_ns = 0;
  pid_t pid = 0;
};

// Launches from start_ns until end_ns (or `launches` calls), paced to `rate`;
// writes "pid launches first_ns last_ns" to out. The arguments are those of
// tests/workloads/launch_workload (launch_truth.h) for launch i % distinct:
// five functions, varying grids, a "step" of `distinct` launches repeated.
[[noreturn]] void worker(const std::string& lib, uint32_t index, int64_t start_ns, int64_t end_ns, uint64_t launches,
                         uint64_t rate, uint64_t distinct, const std::string& out) {
  void* h = dlopen(lib.c_str(), RTLD_NOW);
  auto fn = h ? reinterpret_cast<LaunchFn>(dlsym(h, "cuLaunchKernel")) : nullptr;
  if (!fn) {
    std::fprintf(stderr, "pipeline_bench: no cuLaunchKernel in %s\n", lib.c_str());
    _exit(1);
  }
  sleep_until_ns(start_ns);
  WorkerResult r;
  r.first_ns = mono_ns();
  uint64_t i = 0;
  for (;; ++i) {
    if (i % 64 == 0) {
      int64_t now = mono_ns();
      if (launches ? i >= launches : now >= end_ns) break;
      if (rate) {
        int64_t due = start_ns + static_cast<int64_t>(i * 1000000000ull / rate);
        if (due > now) sleep_until_ns(due);
      }
    } else if (launches && i >= launches) {
      break;
    }
    auto a = gpuobs::testing::launch_args(index, static_cast<uint32_t>(distinct ? i % distinct : i));
    fn(reinterpret_cast<void*>(a.function), a.grid_x, a.grid_y, a.grid_z, a.block_x, a.block_y, a.block_z,
       a.shared_mem_bytes, reinterpret_cast<void*>(a.stream), reinterpret_cast<void**>(a.kernel_params), nullptr);
  }
  r.last_ns = mono_ns();
  r.launches = i;
  std::ofstream(out) << getpid() << ' ' << r.launches << ' ' << r.first_ns << ' ' << r.last_ns << '\n';
  _exit(0);
}

std::vector<pid_t> start_workers(const Options& o, const std::string& dir, int64_t start_ns) {
  std::vector<pid_t> pids;
  int64_t end_ns = start_ns + static_cast<int64_t>(o.seconds * 1e9);
  for (int i = 0; i < o.procs; ++i) {
    pid_t p = fork();
    if (p == 0)
      worker(o.lib, static_cast<uint32_t>(i), start_ns, end_ns, o.launches, o.rate, o.distinct,
             dir + "/worker." + std::to_string(i));
    pids.push_back(p);
  }
  return pids;
}

std::vector<WorkerResult> read_results(const std::string& dir, int procs) {
  std::vector<WorkerResult> rs;
  for (int i = 0; i < procs; ++i) {
    WorkerResult r;
    std::ifstream in(dir + "/worker." + std::to_string(i));
    if (in >> r.pid >> r.launches >> r.first_ns >> r.last_ns) rs.push_back(r);
  }
  return rs;
}

// `gpuobs record`'s command: the workers, started once the recorder runs.
int worker_group(const Options& o, const std::string& dir) {
  auto pids = start_workers(o, dir, mono_ns() + 100000000LL);
  int failed = 0;
  for (pid_t p : pids) {
    int st = 0;
    waitpid(p, &st, 0);
    failed += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  return failed ? 1 : 0;
}

// ---- the daemon under test --------------------------------------------------

pid_t spawn(const std::vector<std::string>& args, const std::string& log) {
  pid_t pid = fork();
  if (pid == 0) {
    if (!std::freopen(log.c_str(), "w", stderr)) _exit(126);
    if (!std::freopen("/dev/null", "w", stdout)) _exit(126);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// utime + stime of every thread of pid, in ns (/proc/PID/stat fields 14, 15).
int64_t cpu_ns(pid_t pid) {
  std::string s = read_text("/proc/" + std::to_string(pid) + "/stat");
  size_t rp = s.rfind(')');
  if (rp == std::string::npos) return -1;
  std::istringstream in(s.substr(rp + 2));
  std::string f;
  unsigned long long ut = 0, st = 0;
  for (int field = 3; field <= 15 && in >> f; ++field) {
    if (field == 14) ut = std::strtoull(f.c_str(), nullptr, 10);
    if (field == 15) st = std::strtoull(f.c_str(), nullptr, 10);
  }
  return static_cast<int64_t>((ut + st) * (1000000000ull / static_cast<unsigned long long>(sysconf(_SC_CLK_TCK))));
}

using Counters = std::map<std::string, int64_t>;

struct Db {
  sqlite3* db = nullptr;
  explicit Db(const std::string& path, int flags = SQLITE_OPEN_READONLY) {
    if (sqlite3_open_v2(path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
      sqlite3_close(db);
      db = nullptr;
    } else {
      sqlite3_busy_timeout(db, 2000);
    }
  }
  ~Db() { sqlite3_close(db); }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  bool exec(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) == SQLITE_OK) return true;
    std::fprintf(stderr, "pipeline_bench: %s: %s\n", sql.c_str(), err ? err : "?");
    sqlite3_free(err);
    return false;
  }
  int64_t scalar(const std::string& sql) {
    sqlite3_stmt* st = nullptr;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
      v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
  }
  std::vector<std::string> strings(const std::string& sql, int col = 0) {
    std::vector<std::string> out;
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK)
      while (sqlite3_step(st) == SQLITE_ROW) {
        auto t = sqlite3_column_text(st, col);
        out.emplace_back(t ? reinterpret_cast<const char*>(t) : "");
      }
    sqlite3_finalize(st);
    return out;
  }
  Counters counters() {
    Counters c;
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT name, value FROM counters", -1, &st, nullptr) == SQLITE_OK)
      while (sqlite3_step(st) == SQLITE_ROW)
        c[reinterpret_cast<const char*>(sqlite3_column_text(st, 0))] = sqlite3_column_int64(st, 1);
    sqlite3_finalize(st);
    return c;
  }
};

// Every counter that counts a loss: launches, calls or records never stored.
// (store_failed_batches counts batches whose rows are in store_failed_rows;
// library_* and unwind_* failures lose no event.)
bool is_loss(const std::string& name) {
  if (name == "store_failed_batches" || name.rfind("library_", 0) == 0 || name.rfind("unwind_", 0) == 0) return false;
  return name.rfind("dropped_", 0) == 0 || name.find("stale") != std::string::npos ||
         name.find("failed") != std::string::npos;
}

int64_t losses(const Counters& c) {
  int64_t n = 0;
  for (auto& [k, v] : c)
    if (is_loss(k)) n += v;
  return n;
}

// ---- the SQLite limit -------------------------------------------------------

// Rows in memory, column values flat: type, then an integer, a double's bits
// or an offset into the text arena.
struct Table {
  std::string name;
  std::vector<std::string> cols;
  std::vector<uint8_t> types;
  std::vector<int64_t> vals;
  std::vector<uint32_t> lens;
  std::string arena;
  size_t rows = 0;
};

Table load_table(Db& src, const std::string& name) {
  Table t;
  t.name = name;
  t.cols = src.strings("SELECT name FROM pragma_table_info('" + name + "')");
  std::string sel = "SELECT ";
  for (size_t i = 0; i < t.cols.size(); ++i) sel += (i ? ", \"" : "\"") + t.cols[i] + "\"";
  sel += " FROM \"" + name + "\"";
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(src.db, sel.c_str(), -1, &st, nullptr) != SQLITE_OK) return t;
  int n = static_cast<int>(t.cols.size());
  while (sqlite3_step(st) == SQLITE_ROW) {
    for (int c = 0; c < n; ++c) {
      int ty = sqlite3_column_type(st, c);
      int64_t v = 0;
      uint32_t len = 0;
      if (ty == SQLITE_INTEGER) {
        v = sqlite3_column_int64(st, c);
      } else if (ty == SQLITE_FLOAT) {
        double d = sqlite3_column_double(st, c);
        std::memcpy(&v, &d, sizeof v);
      } else if (ty == SQLITE_TEXT || ty == SQLITE_BLOB) {
        const void* p =
            ty == SQLITE_TEXT ? static_cast<const void*>(sqlite3_column_text(st, c)) : sqlite3_column_blob(st, c);
        len = static_cast<uint32_t>(sqlite3_column_bytes(st, c));
        v = static_cast<int64_t>(t.arena.size());
        if (len) t.arena.append(static_cast<const char*>(p), len);
      }
      t.types.push_back(static_cast<uint8_t>(ty));
      t.vals.push_back(v);
      t.lens.push_back(len);
    }
    ++t.rows;
  }
  sqlite3_finalize(st);
  return t;
}

struct LimitResult {
  size_t rows = 0;
  double seconds = 0;      // wall
  double cpu_seconds = 0;  // this thread's CPU: what the daemon's figure is compared with
  bool ok = false;
};

// Inserts every table's rows into a fresh database with the writer's pragmas
// (WAL, synchronous NORMAL), `batch` rows per transaction; only the inserts
// are timed.
LimitResult measure_limit(const std::string& capture, const std::string& fresh, int batch) {
  LimitResult r;
  std::vector<Table> tables;
  std::vector<std::string> ddl;
  {
    Db src(capture);
    if (!src.db) return r;
    // Tables and indexes as the capture has them; views and triggers are left
    // out (a trigger would insert rows a second time).
    ddl = src.strings(
        "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' "
        "AND type IN ('table', 'index') ORDER BY type = 'index', rowid");
    for (const std::string& name :
         src.strings("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")) {
      Table t = load_table(src, name);
      if (t.rows) tables.push_back(std::move(t));
    }
  }
  for (const char* sfx : {"", "-wal", "-shm"}) unlink((fresh + sfx).c_str());
  Db dst(fresh, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  if (!dst.db || !dst.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;")) return r;
  for (auto& s : ddl)
    if (!dst.exec(s)) return r;
  int64_t t0 = mono_ns(), c0 = thread_cpu_ns();
  size_t in_txn = 0;
  dst.exec("BEGIN");
  for (const Table& t : tables) {
    std::string ins = "INSERT INTO \"" + t.name + "\" (";
    for (size_t i = 0; i < t.cols.size(); ++i) ins += (i ? ", \"" : "\"") + t.cols[i] + "\"";
    ins += ") VALUES (";
    for (size_t i = 0; i < t.cols.size(); ++i) ins += i ? ",?" : "?";
    ins += ")";
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(dst.db, ins.c_str(), -1, &st, nullptr) != SQLITE_OK) {
      std::fprintf(stderr, "pipeline_bench: %s: %s\n", ins.c_str(), sqlite3_errmsg(dst.db));
      return r;
    }
    size_t n = t.cols.size();
    for (size_t row = 0; row < t.rows; ++row) {
      for (size_t c = 0; c < n; ++c) {
        size_t k = row * n + c;
        int idx = static_cast<int>(c + 1);
        switch (t.types[k]) {
          case SQLITE_INTEGER: sqlite3_bind_int64(st, idx, t.vals[k]); break;
          case SQLITE_FLOAT: {
            double d;
            std::memcpy(&d, &t.vals[k], sizeof d);
            sqlite3_bind_double(st, idx, d);
            break;
          }
          case SQLITE_TEXT:
            sqlite3_bind_text(st, idx, t.arena.data() + t.vals[k], static_cast<int>(t.lens[k]), SQLITE_STATIC);
            break;
          case SQLITE_BLOB:
            sqlite3_bind_blob(st, idx, t.arena.data() + t.vals[k], static_cast<int>(t.lens[k]), SQLITE_STATIC);
            break;
          default: sqlite3_bind_null(st, idx);
        }
      }
      if (sqlite3_step(st) != SQLITE_DONE) {
        std::fprintf(stderr, "pipeline_bench: insert into %s: %s\n", t.name.c_str(), sqlite3_errmsg(dst.db));
        sqlite3_finalize(st);
        return r;
      }
      sqlite3_reset(st);
      if (++in_txn == static_cast<size_t>(batch)) {
        dst.exec("COMMIT");
        dst.exec("BEGIN");
        in_txn = 0;
      }
    }
    sqlite3_finalize(st);
    r.rows += t.rows;
  }
  dst.exec("COMMIT");
  r.seconds = static_cast<double>(mono_ns() - t0) / 1e9;
  r.cpu_seconds = static_cast<double>(thread_cpu_ns() - c0) / 1e9;
  r.ok = true;
  return r;
}

// ---- the run ----------------------------------------------------------------

uint64_t file_size(const std::string& p) {
  struct stat st {};
  return stat(p.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

bool wait_for_log(const std::string& log, const std::string& text, pid_t pid, double seconds) {
  for (int64_t end = mono_ns() + static_cast<int64_t>(seconds * 1e9); mono_ns() < end;) {
    if (read_text(log).find(text) != std::string::npos) return true;
    if (waitpid(pid, nullptr, WNOHANG) == pid) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

int run(const Options& o) {
  char tmpl[] = "/tmp/gpuobs-pipeline-XXXXXX";
  std::string dir = o.keep.empty() ? std::string(mkdtemp(tmpl) ? tmpl : "") : o.keep;
  if (dir.empty() || (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)) {
    std::perror("pipeline_bench: work directory");
    return 1;
  }
  std::string cap = dir + "/capture.gpuobs", log = dir + "/daemon.log";
  for (const char* sfx : {"", "-wal", "-shm"}) unlink((cap + sfx).c_str());
  bool daemon = o.mode == "daemon";
  std::printf(
      "pipeline: %s, %d process(es) x %s, rate %s, lib %s\n", daemon ? "gpuobsd --db" : "gpuobs record", o.procs,
      o.launches ? (std::to_string(o.launches) + " launches").c_str() : (std::to_string(o.seconds) + " s").c_str(),
      o.rate ? (std::to_string(o.rate) + "/s per process").c_str() : "as fast as possible", o.lib.c_str());
  std::printf("shapes     %s\n",
              o.distinct
                  ? ("a step of " + std::to_string(o.distinct) + " distinct launches per process, repeated").c_str()
                  : "every launch's arguments differ (launch_workload's formula)");

  std::fflush(stdout);  // the workers are forked: nothing buffered twice
  std::vector<std::string> args;
  if (daemon) {
    std::string conf = dir + "/empty.conf";
    std::ofstream(conf).close();
    args = {o.gpuobsd,
            "--config",
            conf,
            "--db",
            cap,
            "--state-dir",
            dir + "/state",
            "--status-file",
            dir + "/status.json",
            "--libcuda",
            o.lib,
            "--no-gpu-devices"};
  } else {
    args = {o.gpuobs, "record", "-o", cap, "--libcuda", o.lib, "--no-gpu-devices"};
  }
  if (o.ring_mb) {
    args.push_back("--ring-mb");
    args.push_back(std::to_string(o.ring_mb));
  }
  int64_t start_ns = 0;
  std::vector<pid_t> workers;
  pid_t pid;
  int64_t cpu0 = 0;
  if (daemon) {
    pid = spawn(args, log);
    if (!wait_for_log(log, "capturing to", pid, 60)) {
      std::fprintf(stderr, "pipeline_bench: gpuobsd did not start:\n%s\n", read_text(log).c_str());
      return 1;
    }
    cpu0 = cpu_ns(pid);
    start_ns = mono_ns() + 200000000LL;
    workers = start_workers(o, dir, start_ns);
  } else {
    args.insert(args.end(),
                {"--", self_dir() + "/pipeline_bench", "--worker-group", dir, "--procs", std::to_string(o.procs),
                 "--seconds", std::to_string(o.seconds), "--launches", std::to_string(o.launches), "--rate",
                 std::to_string(o.rate), "--distinct", std::to_string(o.distinct), "--lib", o.lib});
    pid = spawn(args, log);
  }

  // The workers end; then the capture's counters say every launch is in.
  std::vector<WorkerResult> rs;
  if (daemon) {
    for (pid_t w : workers) waitpid(w, nullptr, 0);
    rs = read_results(dir, o.procs);
  } else {
    while (static_cast<int>((rs = read_results(dir, o.procs)).size()) < o.procs) {
      if (waitpid(pid, nullptr, WNOHANG) == pid) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  if (static_cast<int>(rs.size()) != o.procs) {
    std::fprintf(stderr, "pipeline_bench: %zu of %d workers reported (log %s)\n", rs.size(), o.procs, log.c_str());
    return 1;
  }
  if (!daemon) cpu0 = 0;  // the recorder's whole life
  uint64_t offered = 0;
  int64_t first = INT64_MAX, last = 0;
  for (auto& r : rs) {
    offered += r.launches;
    first = std::min(first, r.first_ns);
    last = std::max(last, r.last_ns);
  }
  double span = static_cast<double>(last - first) / 1e9;

  int64_t done_ns = 0, cpu1 = 0;
  Counters c;
  for (int64_t end = mono_ns() + static_cast<int64_t>(o.wait_max * 1e9); mono_ns() < end;) {
    {
      Db db(cap);
      if (db.db) c = db.counters();
    }
    auto it = c.find("stored_launch");
    if (it != c.end() && static_cast<uint64_t>(it->second + losses(c)) >= offered) {
      done_ns = mono_ns();
      break;
    }
    if (!daemon && waitpid(pid, nullptr, WNOHANG) == pid) {
      pid = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (pid > 0) cpu1 = cpu_ns(pid);
  int64_t committed = 0;
  {
    Db db(cap);
    if (db.db) committed = db.scalar("SELECT committed_mono_ns FROM capture");
  }
  if (pid > 0) {
    if (daemon) kill(pid, SIGTERM);
    int st = 0;
    waitpid(pid, &st, 0);
  }

  std::string tgids;
  for (auto& r : rs) tgids += (tgids.empty() ? "" : ",") + std::to_string(r.pid);
  int64_t stored = -1, rows = 0;
  {
    Db db(cap);
    if (db.db) {
      stored = db.scalar("SELECT count(*) FROM kernel_launches WHERE tgid IN (" + tgids + ")");
      c = db.counters();
      for (auto& t : db.strings("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"))
        rows += db.scalar("SELECT count(*) FROM \"" + t + "\"");
    }
  }
  uint64_t bytes = file_size(cap), wal = file_size(cap + "-wal");

  std::printf("offered    %" PRIu64 " launches in %.2f s = %.0f launches/s (%d process(es))\n", offered, span,
              static_cast<double>(offered) / span, o.procs);
  std::printf("stored     %" PRId64 " launches (%.3f%% of offered); %" PRId64 " rows in all tables\n", stored,
              100.0 * static_cast<double>(stored) / static_cast<double>(offered), rows);
  std::printf("drops     ");
  for (auto& [k, v] : c)
    if (is_loss(k)) std::printf(" %s=%" PRId64, k.c_str(), v);
  if (c.count("store_failed_batches")) std::printf(" (store_failed_batches=%" PRId64 ")", c["store_failed_batches"]);
  std::printf("\n");
  if (c.count("ring_records") && c["ring_records"] > 0)  // ABI 6: records as long as what they hold
    std::printf("ring       %" PRId64 " records, %.0f bytes per record\n", c["ring_records"],
                static_cast<double>(c["ring_record_bytes"]) / static_cast<double>(c["ring_records"]));
  double per_event = 0;
  if (done_ns) {
    per_event = static_cast<double>(cpu1 - cpu0) / static_cast<double>(std::max<int64_t>(stored, 1));
    std::printf("cpu        %s %.3f s (utime+stime, %s) = %.0f ns per stored launch\n",
                daemon ? "gpuobsd" : "gpuobs record", static_cast<double>(cpu1 - cpu0) / 1e9,
                daemon ? "first launch to capture complete" : "start to capture complete", per_event);
    std::printf("complete   %.0f ms after the last launch (last commit %.0f ms after it)\n",
                static_cast<double>(done_ns - last) / 1e6, static_cast<double>(committed - last) / 1e6);
  } else {
    std::printf("complete   NOT within %.0f s: the capture's counters say %" PRId64 " stored + %" PRId64
                " lost of %" PRIu64 "\n",
                o.wait_max, c.count("stored_launch") ? c["stored_launch"] : 0, losses(c), offered);
  }
  std::printf("on disk    %" PRIu64 " bytes (WAL %" PRIu64 ") = %.1f bytes per launch\n", bytes, wal,
              static_cast<double>(bytes + wal) / static_cast<double>(std::max<int64_t>(stored, 1)));
  {
    // Where the bytes are (dbstat: every table and index, largest first).
    Db db(cap);
    sqlite3_stmt* st = nullptr;
    if (db.db && sqlite3_prepare_v2(db.db,
                                    "SELECT name, sum(pgsize) FROM dbstat GROUP BY name "
                                    "ORDER BY 2 DESC LIMIT 6",
                                    -1, &st, nullptr) == SQLITE_OK) {
      std::printf("largest   ");
      while (sqlite3_step(st) == SQLITE_ROW)
        std::printf(
            " %s %.1f B/launch", reinterpret_cast<const char*>(sqlite3_column_text(st, 0)),
            static_cast<double>(sqlite3_column_int64(st, 1)) / static_cast<double>(std::max<int64_t>(stored, 1)));
      std::printf("\n");
    }
    sqlite3_finalize(st);
  }
  if (o.limit) {
    LimitResult l = measure_limit(cap, dir + "/limit.sqlite", o.batch);
    if (!l.ok) {
      std::printf("limit      failed\n");
      return 1;
    }
    double per_row = l.cpu_seconds * 1e9 / static_cast<double>(l.rows);
    double per_launch = l.cpu_seconds * 1e9 / static_cast<double>(std::max<int64_t>(stored, 1));
    std::printf(
        "limit      SQLite inserts the same %zu rows from memory in %.3f s CPU (%.3f s wall; %d rows per "
        "transaction) = %.0f ns per row, %.0f ns per stored launch\n",
        l.rows, l.cpu_seconds, l.seconds, o.batch, per_row, per_launch);
    if (per_event > 0) std::printf("ratio      daemon / limit = %.2f\n", per_event / per_launch);
    unlink((dir + "/limit.sqlite").c_str());
  }
  if (o.keep.empty()) {
    std::string rm = "rm -rf " + dir;
    if (std::system(rm.c_str()) != 0) std::fprintf(stderr, "pipeline_bench: could not remove %s\n", dir.c_str());
  } else {
    std::printf("kept       %s (capture.gpuobs, daemon.log)\n", dir.c_str());
  }
  return stored == static_cast<int64_t>(offered) ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::string group_dir;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    if (k == "--no-limit") {
      o.limit = false;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "pipeline_bench: %s needs a value\n", k.c_str());
      return 2;
    }
    std::string v = argv[++i];
    if (k == "--procs") o.procs = std::atoi(v.c_str());
    else if (k == "--seconds") o.seconds = std::atof(v.c_str());
    else if (k == "--launches") o.launches = std::strtoull(v.c_str(), nullptr, 10);
    else if (k == "--rate") o.rate = std::strtoull(v.c_str(), nullptr, 10);
    else if (k == "--distinct") o.distinct = std::strtoull(v.c_str(), nullptr, 10);
    else if (k == "--mode") o.mode = v;
    else if (k == "--lib") o.lib = v;
    else if (k == "--gpuobsd") o.gpuobsd = v;
    else if (k == "--gpuobs") o.gpuobs = v;
    else if (k == "--ring-mb") o.ring_mb = std::atoi(v.c_str());
    else if (k == "--batch") o.batch = std::atoi(v.c_str());
    else if (k == "--wait-max") o.wait_max = std::atof(v.c_str());
    else if (k == "--keep") o.keep = v;
    else if (k == "--worker-group") group_dir = v;
    else {
      std::fprintf(stderr,
                   "usage: pipeline_bench [--procs N] [--seconds T | --launches L] [--rate R] "
                   "[--mode daemon|record] [--lib LIBCUDA] [--gpuobsd PATH] [--gpuobs PATH] "
                   "[--ring-mb M] [--batch ROWS] [--wait-max S] [--keep DIR] [--no-limit]\n");
      return 2;
    }
  }
  o.lib = find_file(o.lib, "libcuda.so.1", "../tests/libcuda.so.1");
  if (!group_dir.empty()) return worker_group(o, group_dir);
  o.gpuobsd = find_file(o.gpuobsd, "gpuobsd", "../daemon/gpuobsd");
  o.gpuobs = find_file(o.gpuobs, "gpuobs", "../cli/gpuobs");
  if (o.procs < 1 || o.batch < 1 || (o.mode != "daemon" && o.mode != "record")) {
    std::fprintf(stderr, "pipeline_bench: bad --procs, --batch or --mode\n");
    return 2;
  }
  return run(o);
}
