#include "capture/gpu_time_import.h"

#include <glob.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <unordered_map>

#include "gpu_time/activity_file.h"
#include "gpu_time/activity_format.h"
#include "store/db.h"

namespace gpuobs {
namespace {

namespace fs = std::filesystem;
using gpu_time::HostCall;
using gpu_time::HostCallKind;

// A call's key in the join: its table in the top byte (launch ids are
// (ts - start) * 8 + n, far below 2^56 for any capture shorter than 100 days).
constexpr int kTableShift = 56;
constexpr uint64_t kIdMask = (uint64_t{1} << kTableShift) - 1;
enum CallTable : uint64_t { kLaunches = 0, kCopies = 1, kGraphLaunches = 2 };

// The files matching a pattern, sorted so the highest version comes last.
std::vector<std::string> glob_all(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t g{};
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) out.push_back(g.gl_pathv[i]);
  globfree(&g);
  std::sort(out.begin(), out.end());
  return out;
}

// libcupti.so.13 before .12 before the unversioned name, in one directory.
std::string best_cupti_in(const std::string& dir) {
  for (const char* name : {"libcupti.so.13", "libcupti.so.12", "libcupti.so"})
    if (::access((dir + "/" + name).c_str(), R_OK) == 0) return dir + "/" + name;
  return "";
}

// The command as it will be found on PATH.
std::string resolve_command(const std::string& command) {
  if (command.find('/') != std::string::npos) return command;
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/bin:/bin";
  for (size_t start = 0; start <= p.size();) {
    size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    std::string candidate = p.substr(start, end - start) + "/" + command;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return command;
}

Result<GpuTimeSetup> find_pieces(const std::string& exe, const std::string& command);

}  // namespace

Result<GpuTimeSetup> find_gpu_time_setup(const std::string& exe, const std::string& command) {
  auto setup = find_pieces(exe, command);
  if (setup) {
    // Absolute: the command may change directory before CUDA loads them.
    setup->inject_library = fs::absolute(setup->inject_library).lexically_normal().string();
    setup->cupti = fs::absolute(setup->cupti).lexically_normal().string();
  }
  return setup;
}

namespace {
Result<GpuTimeSetup> find_pieces(const std::string& exe, const std::string& command) {
  GpuTimeSetup s;
  std::vector<std::string> tried;
  if (const char* env = std::getenv("GPUOBS_CUPTI_INJECT"); env && *env) {
    tried.push_back(env);
    if (::access(env, R_OK) == 0) s.inject_library = env;
  } else {
    fs::path dir = fs::path(exe).parent_path();
    // Installed next to gpuobs (the staged build), under lib/gpuobs, or in the build tree.
    for (const fs::path& p : {dir / "libgpuobs_cupti_inject.so", dir / "../lib/gpuobs/libgpuobs_cupti_inject.so",
                              dir / "../inject/cupti/libgpuobs_cupti_inject.so"}) {
      tried.push_back(p.lexically_normal().string());
      if (::access(p.c_str(), R_OK) == 0) {
        s.inject_library = fs::absolute(p).lexically_normal().string();
        break;
      }
    }
  }
  if (s.inject_library.empty()) {
    std::string list;
    for (const auto& t : tried) list += (list.empty() ? "" : ", ") + t;
    return make_error(
        "--gpu-time: the CUPTI injection library libgpuobs_cupti_inject.so is not installed (looked "
        "at " +
            list + ")",
        "set GPUOBS_CUPTI_INJECT to its path", 2);
  }
  if (const char* env = std::getenv("GPUOBS_CUPTI_PATH"); env && *env) {
    if (::access(env, R_OK) != 0)
      return make_error(std::string("--gpu-time: GPUOBS_CUPTI_PATH names ") + env + ", which cannot be read", "", 2);
    s.cupti = env;
    return s;
  }
  // PyTorch's wheel copy, when the command is a Python of a virtual
  // environment (or a prefix) that has one: the CUPTI built for the CUDA
  // runtime the program uses.
  fs::path cmd = resolve_command(command);
  if (cmd.parent_path().filename() == "bin") {
    fs::path prefix = cmd.parent_path().parent_path();
    for (const char* site : {"/lib/python3*/site-packages/nvidia/*/lib", "/lib/python3*/dist-packages/nvidia/*/lib",
                             "/lib/python3*/site-packages/torch/lib"})
      for (const auto& dir : glob_all(prefix.string() + site))
        if (std::string c = best_cupti_in(dir); !c.empty()) s.cupti = c;
    if (!s.cupti.empty()) return s;
  }
  for (const char* dir : {"/usr/local/cuda/lib64", "/usr/local/cuda/extras/CUPTI/lib64", "/usr/local/cuda/lib",
                          "/usr/local/cuda/targets/x86_64-linux/lib", "/usr/lib/x86_64-linux-gnu"})
    if (std::string c = best_cupti_in(dir); !c.empty()) {
      s.cupti = c;
      return s;
    }
  return make_error(
      "--gpu-time: CUPTI (libcupti.so.13 or .12) not found in the command's Python environment or "
      "the CUDA toolkit (/usr/local/cuda)",
      "set GPUOBS_CUPTI_PATH to a libcupti.so of the program's CUDA version", 2);
}

}  // namespace

Result<GpuTimeImport> import_gpu_times(const std::string& capture, const std::string& activity_file) {
  auto file = gpu_time::read_activity_file(activity_file);
  if (!file) return file.error();
  auto opened = Db::open(capture, SQLITE_OPEN_READWRITE);
  if (!opened) return opened.error();
  Db& db = *opened;
  GpuTimeImport out;
  out.read = file->counts;
  out.processes = file->processes.size();
  for (const auto& p : file->processes) {
    out.cupti_dropped += p.cupti_dropped;
    out.processes_clock_pair += p.clock_kind == gpu_time::kGtClockCuptiPair;
    out.processes_without_tids += p.tid_kind != gpu_time::kGtTidSystem;
  }
  for (const auto& a : file->activities)
    out.gpu_activities += a.kind == gpu_time::ActivityKind::kernel || a.kind == gpu_time::ActivityKind::memcpy ||
                          a.kind == gpu_time::ActivityKind::memset;

  // The calls that put work on a GPU, as the capture holds them.
  std::vector<HostCall> calls;
  // key -> (process_id, kernel name index): names interned, not one string per launch.
  std::unordered_map<uint64_t, std::pair<int64_t, uint32_t>> info;
  std::vector<std::string> kernel_names{""};
  std::unordered_map<std::string, uint32_t> kernel_index{{"", 0}};
  auto kernel_of = [&](const unsigned char* t) -> uint32_t {
    std::string k = t ? reinterpret_cast<const char*>(t) : "";
    auto [it, fresh] = kernel_index.try_emplace(k, static_cast<uint32_t>(kernel_names.size()));
    if (fresh) kernel_names.push_back(k);
    return it->second;
  };
  auto t0 = db.scalar("SELECT start_mono_ns FROM capture WHERE id = 1");
  if (!t0) return t0.error();
  {
    Stmt st(db.get(),
            "SELECT id, tgid, tid, ts_mono_ns, stream, process_id,"
            " CASE WHEN coalesce(kernel_name, '') != '' THEN kernel_name"
            " ELSE printf('(unknown: handle 0x%x)', function) END FROM kernel_launches");
    if (!st.valid()) return make_error("cannot read the launches of " + capture + ": " + db.errmsg());
    while (st.step() == SQLITE_ROW) {
      sqlite3_stmt* s = st.get();
      uint64_t key = (kLaunches << kTableShift) | (static_cast<uint64_t>(sqlite3_column_int64(s, 0)) & kIdMask);
      calls.push_back(HostCall{key, static_cast<uint32_t>(sqlite3_column_int64(s, 1)),
                               static_cast<uint32_t>(sqlite3_column_int64(s, 2)),
                               static_cast<uint64_t>(sqlite3_column_int64(s, 3)), HostCallKind::launch,
                               static_cast<uint64_t>(sqlite3_column_int64(s, 4))});
      info[key] = {sqlite3_column_int64(s, 5), kernel_of(sqlite3_column_text(s, 6))};
    }
  }
  {
    // Failed calls put nothing on the GPU.
    Stmt st(db.get(),
            "SELECT id, tgid, tid, ts_mono_ns, coalesce(stream, 0), process_id, kind FROM copies"
            " WHERE result IS NULL OR result = 0");
    if (!st.valid()) return make_error("cannot read the copies of " + capture + ": " + db.errmsg());
    while (st.step() == SQLITE_ROW) {
      sqlite3_stmt* s = st.get();
      uint64_t key = (kCopies << kTableShift) | (static_cast<uint64_t>(sqlite3_column_int64(s, 0)) & kIdMask);
      std::string kind = reinterpret_cast<const char*>(sqlite3_column_text(s, 6));
      calls.push_back(HostCall{key, static_cast<uint32_t>(sqlite3_column_int64(s, 1)),
                               static_cast<uint32_t>(sqlite3_column_int64(s, 2)),
                               static_cast<uint64_t>(sqlite3_column_int64(s, 3)),
                               kind == "memset" ? HostCallKind::memset : HostCallKind::copy,
                               static_cast<uint64_t>(sqlite3_column_int64(s, 4))});
      info[key] = {sqlite3_column_int64(s, 5), 0};
    }
  }
  {
    // CUDA graph launches (stream_ops): their kernels, copies and memsets.
    Stmt st(db.get(),
            "SELECT id, tgid, tid, ts_mono_ns, coalesce(stream, 0), process_id FROM stream_ops"
            " WHERE op = 'graph_launch'");
    if (!st.valid()) return make_error("cannot read the graph launches of " + capture + ": " + db.errmsg());
    while (st.step() == SQLITE_ROW) {
      sqlite3_stmt* s = st.get();
      uint64_t key = (kGraphLaunches << kTableShift) | (static_cast<uint64_t>(sqlite3_column_int64(s, 0)) & kIdMask);
      calls.push_back(HostCall{key, static_cast<uint32_t>(sqlite3_column_int64(s, 1)),
                               static_cast<uint32_t>(sqlite3_column_int64(s, 2)),
                               static_cast<uint64_t>(sqlite3_column_int64(s, 3)), HostCallKind::graph,
                               static_cast<uint64_t>(sqlite3_column_int64(s, 4))});
      info[key] = {sqlite3_column_int64(s, 5), 0};
    }
  }
  out.calls = calls.size();
  gpu_time::JoinResult joined = gpu_time::join_activities(calls, file->activities);
  out.join = joined.counts;
  {
    // The join's margin: how long after the probe CUPTI's API record says
    // the call entered (the driver's; a runtime call enters before the
    // probe: negative).
    std::unordered_map<uint64_t, uint64_t> entry;  // (pid << 32 | correlation) -> API entry
    for (auto kind : {gpu_time::ActivityKind::driver_api, gpu_time::ActivityKind::runtime_api})
      for (const auto& a : file->activities)
        if (a.kind == kind) entry.try_emplace((uint64_t{a.pid} << 32) | a.correlation_id, a.start_ns);
    std::unordered_map<uint64_t, const HostCall*> by_row;
    for (const auto& c : calls) by_row[c.row_id] = &c;
    std::vector<int64_t> lags;
    for (const auto& g : joined.rows) {
      if (g.by_order) continue;
      auto c = by_row.find(g.row_id);
      if (c == by_row.end()) continue;
      auto e = entry.find((uint64_t{c->second->tgid} << 32) | g.correlation_id);
      if (e != entry.end()) lags.push_back(static_cast<int64_t>(e->second) - static_cast<int64_t>(c->second->ts_ns));
    }
    if (!lags.empty()) {
      std::sort(lags.begin(), lags.end());
      out.entry_lag_median_ns = lags[lags.size() / 2];
      out.entry_lag_max_ns = std::max(std::abs(lags.front()), std::abs(lags.back()));
    }
  }

  if (auto s = db.exec("BEGIN"); !s) return s.error();
  auto fail = [&](const std::string& what) -> Result<GpuTimeImport> {
    std::string e = db.errmsg();
    (void)db.exec("ROLLBACK");
    return make_error("cannot store the GPU times in " + capture + ": " + what + ": " + e);
  };
  // Kernel names as kern_sum spells them, interned like every text of the capture.
  std::map<std::string, int64_t> name_ids;
  Stmt find_name(db.get(), "SELECT id FROM strings WHERE text = ?");
  Stmt add_name(db.get(), "INSERT INTO strings (id, text) VALUES ((SELECT coalesce(max(id), 0) + 1 FROM strings), ?)");
  auto name_id = [&](const std::string& name) -> int64_t {
    if (auto it = name_ids.find(name); it != name_ids.end()) return it->second;
    int64_t id = 0;
    find_name.bind(1, name);
    if (find_name.step() == SQLITE_ROW) id = sqlite3_column_int64(find_name.get(), 0);
    find_name.reset();
    if (!id && add_name.bind(1, name).exec() == SQLITE_DONE) id = sqlite3_last_insert_rowid(db.get());
    return name_ids[name] = id;
  };
  Stmt ins(db.get(),
           "INSERT OR REPLACE INTO gpu_time_rows (call_table, row_id, process_id, name_id, start_ns, duration_ns,"
           " device, stream_id, correlation_id, activities, by_order) VALUES (?,?,?,?,?,?,?,?,?,?,?)");
  if (!ins.valid()) return fail("prepare");
  for (const auto& g : joined.rows) {
    uint64_t table = g.row_id >> kTableShift;
    const auto& [process_id, kernel] = info[g.row_id];
    ins.bind(1, table).bind(2, static_cast<int64_t>(g.row_id & kIdMask)).bind(3, process_id);
    if (table == kLaunches) ins.bind(4, name_id(kernel_names[kernel]));
    else ins.bind_null(4);
    ins.bind(5, static_cast<int64_t>(g.start_ns) - *t0)
        .bind(6, static_cast<int64_t>(g.end_ns - g.start_ns))
        .bind(7, g.device_id)
        .bind(8, g.stream_id)
        .bind(9, g.correlation_id)
        .bind(10, g.activities)
        .bind(11, int64_t{g.by_order});
    if (ins.exec() != SQLITE_DONE) return fail("a row");
    ++out.rows;
  }
  // What was joined, and what was not, with the reader's damage: stored
  // with the capture's other counters (docs/schema.md, "counters").
  const auto& j = out.join;
  const auto& r = out.read;
  std::pair<const char*, uint64_t> counters[] = {
      {"gpu_time_activities", out.gpu_activities},
      {"gpu_time_rows", out.rows},
      {"gpu_time_joined_by_correlation", j.joined_by_correlation},
      {"gpu_time_joined_by_order", j.joined_by_order},
      {"gpu_time_extra_activities", j.extra_activities},
      {"gpu_time_activities_without_row", j.activities_without_row},
      {"gpu_time_graph_activities", j.graph_activities},
      {"gpu_time_activities_ambiguous", j.activities_ambiguous},
      {"gpu_time_rows_without_activity", j.rows_without_activity},
      {"gpu_time_rows_without_process", j.rows_without_process},
      {"gpu_time_stream_conflicts", j.stream_conflicts},
      {"gpu_time_processes", out.processes},
      {"gpu_time_cupti_dropped", out.cupti_dropped},
      {"gpu_time_processes_clock_pair", out.processes_clock_pair},
      {"gpu_time_processes_without_tids", out.processes_without_tids},
      {"gpu_time_entry_lag_median_ns", static_cast<uint64_t>(out.entry_lag_median_ns)},  // stored signed
      {"gpu_time_entry_lag_max_ns", static_cast<uint64_t>(out.entry_lag_max_ns)},
      // Slots the reader could not use, and a write cut short at the end.
      {"gpu_time_file_damaged",
       r.unknown_type + r.without_header + r.bad_times + r.bad_names + (r.truncated_tail_bytes ? 1 : 0)},
  };
  Stmt counter(db.get(), "INSERT OR REPLACE INTO counters (name, value, source) VALUES (?, ?, 'userspace')");
  for (const auto& [name, value] : counters)
    if (counter.bind(1, std::string_view(name)).bind(2, value).exec() != SQLITE_DONE) return fail(name);
  if (auto s = db.exec("COMMIT"); !s) return fail("commit");
  return out;
}

}  // namespace gpuobs
