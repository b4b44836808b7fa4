#include "fleet/fleet_tables.h"

namespace gpuobs::fleet {
namespace {

// Columns most call tables start with. Row ids (op_id, object_id, copy_id)
// are the capture's: with (host_id, segment) they name one row, and a free's
// alloc_id or a GPU time's row_id points at them.
FleetColumn ts(const char* a) { return {"ts_ns", "Int64", a}; }

// Every row's process is named by process_names (schema 25): comm, or the
// executable's name when comm is its 15-byte cut, as the local reports say.
constexpr const char* kProcess = "coalesce(p.name, '')";

// ClickHouse 18.16 types. Nullable where the capture has NULLs (a call probed
// at entry only has no duration); the sort keys lead with date and host so a
// fleet query's time and host filters prune parts and granules.
// Data, not code: one push_back per table would make a 200-line function.
// clang-format off
const std::vector<ShippedTable> kShipped = {
  {"processes",
      {{"process_id", "Int64", "p.id"}, {"pid", "UInt32", "p.tgid"}, {"comm", "String", "coalesce(p.comm, '')"},
       {"first_ns", "Int64", "coalesce(p.exec_mono_ns, p.fork_mono_ns, c.start_mono_ns) + ?1"},
       {"last_ns", "Int64", "coalesce(p.exit_mono_ns, c.end_mono_ns, c.committed_mono_ns, c.start_mono_ns) + ?1"},
       {"ppid", "Nullable(Int64)", "p.ppid"}, {"exe", "Nullable(String)", "p.exe"},
       {"exit_code", "Nullable(Int64)", "p.exit_code"}, {"cgroup", "Nullable(String)", "p.cgroup"},
       {"container_id", "Nullable(String)", "p.container_id"}},
      "FROM processes p, capture c ORDER BY p.id", "", "first_ns", "host, pid", false, "processes", "p",
      {"start_boottime_ns: the kernel's identity of the process, local to the host's boot",
       "source: how the local capture learned of the process"}},
  {"launches",
      {ts("k.ts_mono_ns + ?1"), {"process_id", "Int64", "k.process_id"}, {"pid", "UInt32", "k.tgid"},
       {"process", "String", kProcess}, {"tid", "UInt32", "k.tid"}, {"api", "String", "k.api"},
       {"kernel", "String", "CASE WHEN coalesce(k.kernel_name, '') != '' THEN k.kernel_name"
                            " ELSE printf('(unknown: handle 0x%x)', k.function) END"},
       {"function", "UInt64", "k.function"}, {"grid_x", "UInt32", "k.grid_x"}, {"grid_y", "UInt32", "k.grid_y"},
       {"grid_z", "UInt32", "k.grid_z"}, {"block_x", "UInt32", "k.block_x"}, {"block_y", "UInt32", "k.block_y"},
       {"block_z", "UInt32", "k.block_z"}, {"shared_mem", "UInt32", "k.shared_mem_bytes"},
       {"stream", "UInt64", "coalesce(k.stream, 0)"}, {"cooperative", "UInt8", "k.cooperative != 0"},
       {"vendor", "String", "k.vendor"}, {"stack", "String", "k.stack_id"}},
      "FROM kernel_launches_between(NULL, NULL) k LEFT JOIN process_names p ON p.id = k.process_id", "", "ts_ns",
      "host, kernel, ts_ns", true, "kernel_launches", "k",
      {"id: a launch run's position, not a stable row id", "kernel_params: a pointer, meaningless off the host",
       "extra: a pointer, meaningless off the host", "args_complete: local diagnosis",
       "cluster_x: rare (thread-block clusters); local", "cluster_y: as cluster_x", "cluster_z: as cluster_x",
       "per_thread_stream: in stream's value", "attributes: cuLaunchKernelEx's count; local"}},
  {"api_calls",
      {ts("a.ts_mono_ns + ?1"), {"process_id", "Int64", "a.process_id"}, {"pid", "UInt32", "a.tgid"},
       {"process", "String", kProcess}, {"tid", "UInt32", "a.tid"}, {"family", "String", "a.family"},
       {"api", "String", "a.api"}, {"duration_ns", "Nullable(Int64)", "a.duration_ns"},
       {"result", "Nullable(Int64)", "a.result"}, {"vendor", "String", "a.vendor"},
       {"stack", "String", "a.stack_id"}},
      "FROM api_calls_timed a LEFT JOIN process_names p ON p.id = a.process_id", "", "ts_ns", "host, api, ts_ns", true,
      "api_calls_timed", "a", {}},
  // call_site and python_site: each stack's, as nccl_ranks.sql finds them
  // (the stack's symbols and full file paths are not shipped).
  {"nccl_calls",
      {ts("n.ts_mono_ns + ?1"), {"duration_ns", "Nullable(Int64)", "n.duration_ns"},
       {"process_id", "Int64", "n.process_id"}, {"pid", "UInt32", "n.tgid"}, {"process", "String", kProcess},
       {"tid", "UInt32", "n.tid"}, {"api", "String", "n.api"}, {"op", "String", "n.op"},
       {"comm_hash", "UInt64", "coalesce(n.comm_hash, 0)"}, {"rank", "Int32", "coalesce(n.rank, -1)"},
       {"nranks", "Int32", "coalesce(n.nranks, 0)"}, {"seq", "Int64", "coalesce(n.seq, 0)"},
       {"count", "Nullable(UInt64)", "n.count"}, {"datatype", "String", "coalesce(n.datatype, '')"},
       {"redop", "String", "coalesce(n.redop, '')"}, {"peer", "Nullable(Int64)", "n.peer"},
       {"stream", "Nullable(UInt64)", "n.stream"}, {"bytes", "Nullable(Int64)", "n.bytes"},
       {"result", "Nullable(Int64)", "n.result"}, {"call_site", "Nullable(String)", "x.call_site"},
       {"python_site", "Nullable(String)", "x.python_site"}, {"stack_key", "Nullable(Int64)", "n.stack_id"},
       {"stack", "String", "n.stack_id"}},
      "FROM nccl_calls n LEFT JOIN process_names p ON p.id = n.process_id LEFT JOIN sites x ON x.stack_id = n.stack_id",
      "WITH sites AS (SELECT st.stack_id AS stack_id,"
      " (SELECT coalesce(s.symbol, printf('%s+0x%x', s.module, s.offset)) FROM stack_symbols s"
      " WHERE s.stack_id = st.stack_id AND s.module NOT LIKE '%libnccl.so%' AND s.module NOT LIKE '%librccl.so%'"
      " ORDER BY s.position LIMIT 1) AS call_site,"
      " (SELECT printf('%s (%s:%d)', s.symbol, replace(s.file, rtrim(s.file, replace(s.file, '/', '')), ''), s.line)"
      " FROM stack_symbols s WHERE s.stack_id = st.stack_id AND s.kind = 'python'"
      " ORDER BY (s.file LIKE '%/site-packages/%' OR s.file LIKE '%/dist-packages/%'"
      " OR s.file GLOB '*/lib/python3.[0-9]*/*' OR s.file GLOB '<*>'), s.position LIMIT 1) AS python_site"
      " FROM (SELECT DISTINCT stack_id FROM nccl_calls WHERE stack_id IS NOT NULL) st)",
      "ts_ns", "comm_hash, seq, host, ts_ns", true, "nccl_calls", "n",
      {"id: the local row id", "comm_id: the local communicator row; comm_hash names it across hosts",
       "comm: a pointer, meaningless off the host", "send_buf: a pointer", "recv_buf: a pointer"}},
  {"copies",
      {ts("x.ts_mono_ns + ?1"), {"duration_ns", "Nullable(Int64)", "x.duration_ns"},
       {"process_id", "Int64", "x.process_id"}, {"pid", "UInt32", "x.tgid"}, {"process", "String", kProcess},
       {"tid", "UInt32", "x.tid"}, {"api", "String", "x.api"}, {"kind", "Nullable(String)", "x.kind"},
       {"direction", "Nullable(String)", "x.direction"}, {"bytes", "Nullable(Int64)", "x.bytes"},
       {"async", "Nullable(UInt8)", "x.async"}, {"stream", "Nullable(UInt64)", "x.stream"},
       {"result", "Nullable(Int64)", "x.result"}, {"copy_id", "Int64", "x.id"}, {"vendor", "String", "x.vendor"},
       {"stack", "String", "x.stack_id"}},
      "FROM copies x LEFT JOIN process_names p ON p.id = x.process_id", "", "ts_ns", "host, api, ts_ns", true, "copies",
      "x",
      {"per_thread_stream: in stream's value", "dst: an address, meaningless off the host",
       "src: an address, meaningless off the host", "value: a memset's byte value; local"}},
  {"syncs",
      {ts("s.ts_mono_ns + ?1"), {"duration_ns", "Nullable(Int64)", "s.duration_ns"},
       {"process_id", "Int64", "s.process_id"}, {"pid", "UInt32", "s.tgid"}, {"process", "String", kProcess},
       {"tid", "UInt32", "s.tid"}, {"api", "String", "s.api"}, {"target", "Nullable(String)", "s.target"},
       {"stream", "Nullable(UInt64)", "s.stream"}, {"event", "Nullable(UInt64)", "s.event"},
       {"blocked_ns", "Nullable(Int64)", "s.blocked_ns"}, {"result", "Nullable(Int64)", "s.result"},
       {"vendor", "String", "s.vendor"}, {"stack", "String", "s.stack_id"}},
      "FROM syncs s LEFT JOIN process_names p ON p.id = s.process_id", "", "ts_ns", "host, api, ts_ns", true, "syncs",
      "s",
      {"id: the local row id", "per_thread_stream: in stream's value",
       "context: a pointer, meaningless off the host"}},
  // Allocations and frees (op_id: the row's id in its segment, which a
  // free's alloc_id names), stream and event operations.
  {"memory_ops",
      {ts("m.ts_mono_ns + ?1"), {"duration_ns", "Nullable(Int64)", "m.duration_ns"},
       {"process_id", "Int64", "m.process_id"}, {"pid", "UInt32", "m.tgid"}, {"process", "String", kProcess},
       {"tid", "UInt32", "m.tid"}, {"api", "String", "m.api"}, {"op", "String", "m.op"},
       {"kind", "Nullable(String)", "m.kind"}, {"address", "Nullable(Int64)", "m.address"},
       {"bytes", "Nullable(Int64)", "m.bytes"}, {"stream", "Nullable(UInt64)", "m.stream"},
       {"handle", "Nullable(Int64)", "m.handle"}, {"flags", "Nullable(Int64)", "m.flags"}, {"op_id", "Int64", "m.id"},
       {"alloc_id", "Nullable(Int64)", "m.alloc_id"}, {"result", "Nullable(Int64)", "m.result"},
       {"vendor", "String", "m.vendor"}, {"stack", "String", "m.stack_id"}},
      "FROM memory_ops m LEFT JOIN process_names p ON p.id = m.process_id", "", "ts_ns", "host, api, ts_ns", true,
      "memory_ops", "m", {"per_thread_stream: in stream's value"}},
  {"stream_ops",
      {ts("s.ts_mono_ns + ?1"), {"duration_ns", "Nullable(Int64)", "s.duration_ns"},
       {"process_id", "Int64", "s.process_id"}, {"pid", "UInt32", "s.tgid"}, {"process", "String", kProcess},
       {"tid", "UInt32", "s.tid"}, {"api", "String", "s.api"}, {"op", "String", "s.op"},
       {"stream", "Nullable(UInt64)", "s.stream"}, {"event", "Nullable(UInt64)", "s.event"},
       {"handle", "Nullable(Int64)", "s.handle"}, {"flags", "Nullable(Int64)", "s.flags"},
       {"priority", "Nullable(Int64)", "s.priority"}, {"result", "Nullable(Int64)", "s.result"},
       {"vendor", "String", "s.vendor"}, {"stack", "String", "s.stack_id"}},
      "FROM stream_ops s LEFT JOIN process_names p ON p.id = s.process_id", "", "ts_ns", "host, api, ts_ns", true,
      "stream_ops", "s", {"id: the local row id", "per_thread_stream: in stream's value"}},
  // The drivers' ioctls, decoded (args: the decoder's JSON), and the
  // objects they made and ended (object_id: the row's id, alloc_id of a
  // free names it).
  {"ioctls",
      {ts("i.ts_mono_ns + ?1"), {"latency_ns", "Int64", "i.latency_ns"}, {"process_id", "Int64", "i.process_id"},
       {"pid", "UInt32", "i.tgid"}, {"process", "String", kProcess}, {"tid", "UInt32", "i.tid"},
       {"fd", "Int32", "i.fd"}, {"dev_major", "UInt32", "i.dev_major"}, {"dev_minor", "UInt32", "i.dev_minor"},
       {"cmd", "UInt32", "i.cmd"}, {"driver", "Nullable(String)", "i.driver"},
       {"request", "Nullable(String)", "i.request"}, {"ret", "Int64", "i.ret"},
       {"status", "Nullable(Int64)", "i.status"}, {"status_name", "Nullable(String)", "i.status_name"},
       {"failed", "Nullable(UInt8)", "i.failed"}, {"object_class", "Nullable(Int64)", "i.object_class"},
       {"class_name", "Nullable(String)", "i.class_name"}, {"control", "Nullable(Int64)", "i.control"},
       {"control_name", "Nullable(String)", "i.control_name"}, {"args", "Nullable(String)", "i.args"},
       {"stack", "String", "i.stack_id"}},
      "FROM ioctls i LEFT JOIN process_names p ON p.id = i.process_id", "", "ts_ns", "host, ts_ns", true, "ioctls", "i",
      {"id: the local row id", "arg: a pointer, meaningless off the host",
       "args_complete: local diagnosis (args holds what was read)"}},
  {"driver_objects",
      {ts("d.ts_mono_ns + ?1"), {"process_id", "Int64", "d.process_id"}, {"pid", "UInt32", "d.tgid"},
       {"process", "String", kProcess}, {"tid", "UInt32", "d.tid"}, {"driver", "String", "d.driver"},
       {"op", "String", "d.op"}, {"kind", "String", "d.kind"}, {"client", "Nullable(Int64)", "d.client"},
       {"parent", "Nullable(Int64)", "d.parent"}, {"handle", "Int64", "d.handle"},
       {"class_name", "Nullable(String)", "d.class_name"}, {"bytes", "Nullable(Int64)", "d.bytes"},
       {"flags", "Nullable(Int64)", "d.flags"}, {"address", "Nullable(Int64)", "d.address"},
       {"object_id", "Int64", "d.id"}, {"alloc_id", "Nullable(Int64)", "d.alloc_id"},
       {"stack", "String", "d.stack_id"}},
      "FROM driver_objects d LEFT JOIN process_names p ON p.id = d.process_id", "", "ts_ns", "host, kind, ts_ns", true,
      "driver_objects", "d",
      {"ioctl_id: the local ioctl row (not shipped with its id)", "object_class: in class_name"}},
  // What the GPUs reported (a value holds from ts_ns until until_ns), per
  // process, and their Xid and ECC events; gpu is the GPU's UUID (gpu_id
  // is its number in the segment).
  {"gpu_metrics",
      {ts("m.ts_mono_ns + ?1"), {"until_ns", "Int64", "m.until_mono_ns + ?1"}, {"gpu_id", "UInt32", "m.gpu_id"},
       {"gpu", "String", "coalesce(m.gpu_uuid, '')"}, {"gpu_name", "String", "coalesce(g.name, '')"},
       {"metric", "String", "m.metric"}, {"unit", "String", "coalesce(m.unit, '')"}, {"value", "Float64", "m.value"}},
      "FROM gpu_metrics m LEFT JOIN gpus g ON g.id = m.gpu_id", "", "ts_ns", "host, gpu, metric, ts_ns", false,
      "gpu_metrics", "m", {}},
  {"gpu_process_metrics",
      {ts("m.ts_mono_ns + ?1"), {"until_ns", "Int64", "m.until_mono_ns + ?1"}, {"gpu_id", "UInt32", "m.gpu_id"},
       {"gpu", "String", "coalesce(m.gpu_uuid, '')"}, {"pid", "UInt32", "m.pid"},
       {"process_id", "Nullable(Int64)", "m.process_id"}, {"process", "String", kProcess},
       {"sm_util_pct", "Nullable(Int64)", "m.sm_util_pct"}, {"mem_util_pct", "Nullable(Int64)", "m.mem_util_pct"},
       {"memory_bytes", "Nullable(Int64)", "m.memory_bytes"}, {"gone", "UInt8", "m.gone"}},
      "FROM gpu_process_metrics m LEFT JOIN process_names p ON p.id = m.process_id", "", "ts_ns",
      "host, gpu, pid, ts_ns", false, "gpu_process_metrics", "m", {}},
  {"gpu_events",
      {ts("e.ts_mono_ns + ?1"), {"gpu_id", "UInt32", "e.gpu_id"}, {"gpu", "String", "coalesce(g.uuid, '')"},
       {"kind", "String", "e.kind"}, {"code", "Nullable(Int64)", "e.code"}},
      "FROM gpu_events e LEFT JOIN gpus g ON g.id = e.gpu_id", "", "ts_ns", "host, ts_ns", false, "gpu_events", "e", {}},
  // CUPTI's GPU time of each call it measured (record --gpu-time):
  // call_table and row_id name the call in its segment; kernel as
  // kern_sum names it.
  {"gpu_times",
      {ts("t.start_mono_ns + ?1"), {"end_ns", "Int64", "t.end_mono_ns + ?1"}, {"duration_ns", "Int64", "t.duration_ns"},
       {"process_id", "Int64", "t.process_id"}, {"pid", "UInt32", "coalesce(p.tgid, 0)"},
       {"process", "String", kProcess}, {"call_table", "String", "t.call_table"}, {"row_id", "Int64", "t.row_id"},
       {"kernel", "Nullable(String)", "t.kernel"}, {"device", "Nullable(Int64)", "t.device"},
       {"stream_id", "Nullable(Int64)", "t.stream_id"}, {"correlation_id", "Nullable(Int64)", "t.correlation_id"},
       {"activities", "Int64", "t.activities"}, {"joined_by", "String", "t.joined_by"}},
      "FROM gpu_times t LEFT JOIN process_names p ON p.id = t.process_id", "", "ts_ns", "host, call_table, ts_ns",
      false, "gpu_times", "t", {}},
  // The stall watch's stuck collectives, one row per stall and rank (the
  // rank's call_site and python_site as nccl_stalls.sql finds them).
  {"nccl_stalls",
      {ts("s.detected_mono_ns + ?1"), {"stall_id", "Int64", "s.id"}, {"comm_hash", "UInt64", "coalesce(s.comm_hash, 0)"},
       {"seq", "Int64", "s.seq"}, {"op", "String", "s.op"}, {"kind", "String", "s.kind"},
       {"nranks", "Nullable(Int64)", "s.nranks"}, {"ranks_in", "String", "coalesce(s.ranks_in, '')"},
       {"ranks_missing", "String", "coalesce(s.ranks_missing, '')"}, {"waited_ns", "Int64", "s.waited_ns"},
       {"rank", "Nullable(Int64)", "r.rank"}, {"pid", "UInt32", "r.tgid"}, {"state", "String", "r.state"},
       {"last_seq", "Nullable(Int64)", "r.last_seq"}, {"last_api", "Nullable(String)", "r.last_api"},
       {"call_site", "Nullable(String)",
        "(SELECT coalesce(ss.symbol, printf('%s+0x%x', ss.module, ss.offset)) FROM nccl_calls n"
        " JOIN stack_symbols ss ON ss.stack_id = n.stack_id WHERE n.tgid = r.tgid AND n.ts_mono_ns = r.last_call_mono_ns"
        " AND ss.module NOT LIKE '%libnccl.so%' AND ss.module NOT LIKE '%librccl.so%' ORDER BY n.id, ss.position LIMIT 1)"},
       {"python_site", "Nullable(String)",
        "(SELECT printf('%s (%s:%d)', ss.symbol, replace(ss.file, rtrim(ss.file, replace(ss.file, '/', '')), ''),"
        " ss.line) FROM nccl_calls n JOIN stack_symbols ss ON ss.stack_id = n.stack_id"
        " WHERE n.tgid = r.tgid AND n.ts_mono_ns = r.last_call_mono_ns AND ss.kind = 'python'"
        " ORDER BY n.id, (ss.file LIKE '%/site-packages/%' OR ss.file LIKE '%/dist-packages/%'"
        " OR ss.file GLOB '*/lib/python3.[0-9]*/*' OR ss.file GLOB '<*>'), ss.position LIMIT 1)"}},
      "FROM nccl_stalls s JOIN nccl_stall_ranks r ON r.stall_id = s.id ORDER BY s.id, r.rank", "", "ts_ns",
      "host, comm_hash, seq", false, "nccl_stalls", "s", {}},
  // Every counter of a segment as it ended (drops, failures to attach or
  // to symbolize): ts_ns is the segment's end.
  {"counters",
      {ts("coalesce(c.end_mono_ns, c.committed_mono_ns, c.start_mono_ns) + ?1"), {"name", "String", "k.name"},
       {"value", "Int64", "k.value"}, {"source", "String", "coalesce(k.source, '')"}},
      "FROM counters k, capture c ORDER BY k.name", "", "ts_ns", "host, name, segment", false, "counters", "k", {}},
};
// clang-format on

}  // namespace

const std::vector<ShippedTable>& shipped_tables() { return kShipped; }

const ShippedTable* shipped_table(const std::string& name) {
  for (const auto& t : shipped_tables())
    if (name == t.name) return &t;
  return nullptr;
}

std::string create_table_sql(const ShippedTable& t) {
  std::string sql = std::string("CREATE TABLE IF NOT EXISTS ") + t.name + " (date Date DEFAULT toDate(intDiv(" +
                    t.date + ", 1000000000)), host String, host_id UInt64, segment UInt64";
  for (const auto& c : t.columns) sql += std::string(", ") + c.name + " " + c.type;
  return sql + ") ENGINE = MergeTree() PARTITION BY toYYYYMM(date) ORDER BY (date, " + t.order + ")";
}

std::vector<std::string> column_names(const ShippedTable& t) {
  std::vector<std::string> out = {"host", "host_id", "segment"};
  for (const auto& c : t.columns) out.emplace_back(c.name);
  return out;
}

std::string select_sql(const ShippedTable& t) {
  std::string sql = t.with;
  sql += sql.empty() ? "SELECT " : " SELECT ";
  for (size_t i = 0; i < t.columns.size(); ++i) sql += (i ? ", " : "") + std::string(t.columns[i].expr);
  return sql + " " + t.from;
}

}  // namespace gpuobs::fleet
