#include "export/perfetto_writer.h"

#include <map>
#include <string>
#include <vector>

#include "perfetto_trace_subset.pb.h"

namespace gpuobs::exporter {
namespace {

namespace pb = gpuobs::perfetto;

// Capture times are CLOCK_MONOTONIC (bpf_ktime_get_ns), and the capture does
// not record BOOTTIME, Perfetto's default trace clock. Every timestamped
// packet says timestamp_clock_id = MONOTONIC, and a first ClockSnapshot makes
// MONOTONIC the trace's primary clock, so trace_processor keeps our
// timestamps as they are instead of needing a MONOTONIC -> BOOTTIME offset we
// do not have.
constexpr uint32_t kClockMonotonic = 3;

constexpr uint32_t kSeqIncrementalStateCleared = 1;
constexpr uint32_t kSeqNeedsIncrementalState = 2;

class PacketWriter {
 public:
  explicit PacketWriter(std::ostream& out) : out_(out) {}
  // A trace is `repeated TracePacket packet = 1`: each packet is appended as
  // field 1, length-delimited, so no message ever holds the whole trace.
  void write(const pb::TracePacket& p) {
    p.SerializeToString(&buf_);
    std::string head(1, '\x0A');
    for (uint64_t n = buf_.size();; n >>= 7) {
      if (n < 0x80) {
        head.push_back(static_cast<char>(n));
        break;
      }
      head.push_back(static_cast<char>((n & 0x7F) | 0x80));
    }
    out_.write(head.data(), static_cast<std::streamsize>(head.size()));
    out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
  }

 private:
  std::ostream& out_;
  std::string buf_;
};

void describe(const Track& t, pb::TrackDescriptor* d) {
  d->set_uuid(t.uuid);
  switch (t.kind) {
    case TrackKind::process:
      d->mutable_process()->set_pid(static_cast<int32_t>(t.pid));
      d->mutable_process()->set_process_name(t.name);
      break;
    case TrackKind::thread:
      d->mutable_thread()->set_pid(static_cast<int32_t>(t.pid));
      d->mutable_thread()->set_tid(t.tid);
      d->mutable_thread()->set_thread_name(t.name);
      break;
    case TrackKind::stream:
    case TrackKind::lane:
      // Lanes share their stream's name: the UI merges same-name siblings.
      d->set_parent_uuid(t.parent);
      d->set_name(t.name);
      if (t.kind == TrackKind::stream)
        d->set_description(
            "GPU queue replayed from the host's calls: each slice spans the window in which the "
            "operation can have run (earliest start, latest end), not a measured execution");
      break;
    case TrackKind::gpu:
      // A process of its own: Perfetto's UI lists it with the host's processes.
      d->mutable_process()->set_pid(static_cast<int32_t>(t.pid));
      d->mutable_process()->set_process_name(t.name);
      break;
    case TrackKind::communicator:
      // A process of its own, its ranks in rank order under it.
      d->mutable_process()->set_pid(static_cast<int32_t>(t.pid));
      d->mutable_process()->set_process_name(t.name);
      d->set_child_ordering(pb::TrackDescriptor::EXPLICIT);
      break;
    case TrackKind::rank:
      d->set_parent_uuid(t.parent);
      d->set_name(t.name);
      d->set_sibling_order_rank(t.order);
      d->set_description(
          "this rank's calls on the communicator (the same slices as on its thread); flows join each collective's "
          "calls in the order the ranks entered it");
      break;
    case TrackKind::ring:
      // Lanes of one ring share its name: the UI merges same-name siblings.
      d->set_parent_uuid(t.parent);
      d->set_name(t.name);
      d->set_description(
          "GPU jobs as the kernel's DRM GPU scheduler ran them on this ring: from drm_sched_job_run to "
          "drm_sched_job_done (or the job's dma_fence signal), named by the submitting process");
      break;
    case TrackKind::gpu_counter:
      d->set_parent_uuid(t.parent);
      d->set_name(t.name);
      d->set_description("sampled by gpuobs's GPU metrics sampler (NVML or AMD sysfs); holds until the next sample");
      d->mutable_counter();  // a counter track; its unit is in the name
      break;
    case TrackKind::memory_counter:
    case TrackKind::depth_counter:
      d->set_parent_uuid(t.parent);
      d->set_name(t.name);
      d->mutable_counter()->set_unit(t.kind == TrackKind::memory_counter ? pb::CounterDescriptor::UNIT_SIZE_BYTES
                                                                         : pb::CounterDescriptor::UNIT_COUNT);
      break;
  }
}

}  // namespace

Status write_perfetto(const TraceLayout& L, std::ostream& out) {
  PacketWriter w(out);
  pb::TracePacket p;
  {
    auto* snap = p.mutable_clock_snapshot();
    auto* c = snap->add_clocks();
    c->set_clock_id(kClockMonotonic);
    c->set_timestamp(static_cast<uint64_t>(L.start_ns));
    snap->set_primary_trace_clock(kClockMonotonic);
    p.set_timestamp(static_cast<uint64_t>(L.start_ns));
    p.set_timestamp_clock_id(kClockMonotonic);
    p.set_trusted_packet_sequence_id(kPerfettoSequenceId);
    w.write(p);
  }
  for (const Track& t : L.tracks) {
    p.Clear();
    p.set_trusted_packet_sequence_id(kPerfettoSequenceId);
    describe(t, p.mutable_track_descriptor());
    w.write(p);
  }
  std::vector<bool> name_sent(L.strings.size()), value_sent(L.strings.size());
  std::map<const char*, uint64_t> arg_iid;  // keys are the layout's string constants
  bool first = true;
  for (const TraceEvent& e : ordered_events(L)) {
    p.Clear();
    p.set_timestamp(static_cast<uint64_t>(e.ts_ns));
    p.set_timestamp_clock_id(kClockMonotonic);
    p.set_trusted_packet_sequence_id(kPerfettoSequenceId);
    p.set_sequence_flags(first ? kSeqIncrementalStateCleared | kSeqNeedsIncrementalState : kSeqNeedsIncrementalState);
    first = false;
    auto* ev = p.mutable_track_event();
    if (e.phase == TraceEvent::counter) {
      const CounterPoint& c = L.counters[e.index];
      ev->set_type(pb::TrackEvent::TYPE_COUNTER);
      ev->set_track_uuid(c.track);
      if (L.tracks[c.track - 1].kind == TrackKind::gpu_counter) ev->set_double_counter_value(c.real);
      else ev->set_counter_value(c.value);
      w.write(p);
      continue;
    }
    const Slice& s = L.slices[e.index];
    ev->set_track_uuid(s.track);
    if (e.phase == TraceEvent::end) {  // an END needs only its track
      ev->set_type(pb::TrackEvent::TYPE_SLICE_END);
      w.write(p);
      continue;
    }
    ev->set_type(e.phase == TraceEvent::instant ? pb::TrackEvent::TYPE_INSTANT : pb::TrackEvent::TYPE_SLICE_BEGIN);
    // iid = string index + 1: iids are non-zero.
    if (!name_sent[s.name]) {
      auto* n = p.mutable_interned_data()->add_event_names();
      n->set_iid(s.name + 1);
      n->set_name(L.strings[s.name]);
      name_sent[s.name] = true;
    }
    ev->set_name_iid(s.name + 1);
    for (const Arg& a : s.args) {
      auto [it, fresh] = arg_iid.emplace(a.key, arg_iid.size() + 1);
      if (fresh) {
        auto* n = p.mutable_interned_data()->add_debug_annotation_names();
        n->set_iid(it->second);
        n->set_name(a.key);
      }
      auto* d = ev->add_debug_annotations();
      d->set_name_iid(it->second);
      if (a.is_string) {
        // Interned like the names: the same texts (APIs, the bounds note)
        // recur on every slice.
        auto i = static_cast<size_t>(a.value);
        if (!value_sent[i]) {
          auto* v = p.mutable_interned_data()->add_debug_annotation_string_values();
          v->set_iid(i + 1);
          v->set_str(L.strings[i]);
          value_sent[i] = true;
        }
        d->set_string_value_iid(i + 1);
      } else d->set_int_value(a.value);
    }
    for (uint64_t f : s.flows_out) ev->add_flow_ids(f);
    for (uint64_t f : s.flows_in) ev->add_terminating_flow_ids(f);
    w.write(p);
  }
  out.flush();
  if (!out) return make_error("cannot write the Perfetto trace (disk full?)");
  return {};
}

}  // namespace gpuobs::exporter
