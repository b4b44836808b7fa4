#include "export/chakra_writer.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "chakra_et_subset.pb.h"
#include "version.h"

namespace gpuobs::exporter {
namespace {

namespace pb = gpuobs::chakra;
using replay::ExecStep;
using replay::StepKind;

bool is_work(StepKind k) {
  return k == StepKind::kernel || k == StepKind::graph || k == StepKind::host_func || k == StepKind::copy ||
         k == StepKind::memset;
}
bool is_sync(StepKind k) {
  return k == StepKind::stream_sync || k == StepKind::event_sync || k == StepKind::context_sync;
}

pb::NodeType node_type(const ExecStep& s) {
  if (s.kind != StepKind::copy) return pb::COMP_NODE;
  if (s.direction == "HtoD" || s.direction == "HtoA") return pb::MEM_LOAD_NODE;
  if (s.direction == "DtoH" || s.direction == "AtoH") return pb::MEM_STORE_NODE;
  return pb::COMP_NODE;
}

template <class T>
void attr(pb::Node& n, const char* name, T v) {
  auto* a = n.add_attr();
  a->set_name(name);
  if constexpr (std::is_same_v<T, bool>) a->set_bool_val(v);
  else if constexpr (std::is_same_v<T, uint64_t>) a->set_uint64_val(v);
  else if constexpr (std::is_integral_v<T>) a->set_int64_val(static_cast<int64_t>(v));
  else a->set_string_val(std::string(v));
}

void string_attr(pb::GlobalMetadata& m, const char* name, const std::string& v) {
  auto* a = m.add_attr();
  a->set_name(name);
  a->set_string_val(v);
}

uint64_t micros_up(int64_t ns) { return ns <= 0 ? 0 : static_cast<uint64_t>((ns + 999) / 1000); }

void put(google::protobuf::io::CodedOutputStream& out, const google::protobuf::MessageLite& m) {
  out.WriteVarint32(static_cast<uint32_t>(m.ByteSizeLong()));
  m.SerializeWithCachedSizes(&out);
}

}  // namespace

Result<std::string> chakra_trace(const replay::Schedule& s, const std::string& source) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream raw(&bytes);
    google::protobuf::io::CodedOutputStream out(&raw);
    pb::GlobalMetadata meta;
    meta.set_version("0.0.4");
    string_attr(meta, "producer", std::string("gpuobs ") + GPUOBS_VERSION);
    string_attr(meta, "source", source);
    string_attr(meta, "schedule", "gpuobs-schedule 1 (docs/replay.md \"Schedule\")");
    put(out, meta);

    // What the next operation on a stream must follow: its last operation,
    // and what it was made to wait for since (event waits). A record takes
    // the stream's frontier as what the event stands for.
    std::map<int32_t, std::set<uint64_t>> frontier, waited;
    std::map<int32_t, std::set<uint64_t>> event_source;
    std::map<int32_t, uint64_t> last_sync;             // thread -> its last sync node
    std::map<int64_t, std::set<uint64_t>> step_nodes;  // step index -> the nodes it stands for
    std::map<int32_t, int64_t> stream_process;
    for (const auto& st : s.streams) stream_process[st.id] = st.process_id;
    std::map<int32_t, int64_t> thread_process;
    for (const auto& t : s.threads) thread_process[t.id] = t.process_id;

    for (const ExecStep& st : s.steps) {
      uint64_t id = static_cast<uint64_t>(st.index);
      if (st.kind == StepKind::event_record) {
        std::set<uint64_t> src = frontier[st.stream];
        src.insert(waited[st.stream].begin(), waited[st.stream].end());
        event_source[st.event] = src;
        step_nodes[st.index] = src;
        continue;
      }
      if (st.kind == StepKind::event_wait) {
        auto& src = event_source[st.event];
        waited[st.stream].insert(src.begin(), src.end());
        continue;
      }
      if (!is_work(st.kind) && !is_sync(st.kind)) continue;
      pb::Node n;
      n.set_id(id);
      n.set_name(st.name.empty() ? replay::to_string(st.kind) : st.name);
      n.set_start_time_micros(static_cast<uint64_t>(std::max<int64_t>(0, st.at_ns)) / 1000);
      std::set<uint64_t> ctrl, data;
      if (auto it = last_sync.find(st.thread); it != last_sync.end()) ctrl.insert(it->second);
      if (is_work(st.kind)) {
        n.set_type(node_type(st));
        n.set_duration_micros(micros_up(st.gpu_ns));
        ctrl.insert(frontier[st.stream].begin(), frontier[st.stream].end());
        data.insert(waited[st.stream].begin(), waited[st.stream].end());
        for (int64_t a : st.after)
          if (auto it = step_nodes.find(a); it != step_nodes.end()) data.insert(it->second.begin(), it->second.end());
        frontier[st.stream] = {id};
        waited[st.stream].clear();
        step_nodes[st.index] = {id};
      } else {
        n.set_type(pb::COMP_NODE);
        n.set_duration_micros(0);
        if (st.kind == StepKind::stream_sync) {
          data.insert(frontier[st.stream].begin(), frontier[st.stream].end());
          data.insert(waited[st.stream].begin(), waited[st.stream].end());
        } else if (st.kind == StepKind::event_sync) {
          auto& src = event_source[st.event];
          data.insert(src.begin(), src.end());
        } else {  // context_sync: every stream of the thread's process
          for (auto& [stream, f] : frontier)
            if (stream_process[stream] == thread_process[st.thread]) data.insert(f.begin(), f.end());
        }
        last_sync[st.thread] = id;
      }
      for (uint64_t d : data) ctrl.erase(d);  // one edge per pair: the data edge says more
      for (uint64_t c : ctrl) n.add_ctrl_deps(c);
      for (uint64_t d : data) n.add_data_deps(d);
      attr(n, "is_cpu_op", is_sync(st.kind));
      attr(n, "gpuobs_kind", replay::to_string(st.kind));
      if (st.stream >= 0) {
        const auto& x = s.streams[st.stream];
        attr(n, "stream", int64_t{st.stream});
        attr(n, "stream_label", x.label.empty() ? x.kind : x.label);
        attr(n, "stream_priority", int64_t{x.priority});
        attr(n, "stream_non_blocking", x.non_blocking);
      }
      attr(n, "thread", int64_t{st.thread});
      attr(n, "tid", uint64_t{s.threads[st.thread].tid});
      attr(n, "host_gap_ns", st.gap_ns);
      if (is_work(st.kind) && st.kind != StepKind::copy && st.kind != StepKind::memset) {
        attr(n, "gpu_ns", st.gpu_ns);
        attr(n, "gpu_ns_source", replay::to_string(st.gpu_from));
      }
      if (st.kind == StepKind::copy || st.kind == StepKind::memset) attr(n, "tensor_size", uint64_t{st.bytes});
      if (st.kind == StepKind::copy) {
        attr(n, "copy_direction", st.direction);
        attr(n, "async", st.async);
      }
      if (is_sync(st.kind)) attr(n, "blocked_ns", st.host_ns);
      put(out, n);
    }
    if (out.HadError()) return make_error("cannot encode the Chakra trace");
  }
  return bytes;
}

}  // namespace gpuobs::exporter
