#include "export/chrome_writer.h"

#include <cinttypes>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace gpuobs::exporter {
namespace {

using json = nlohmann::json;

// Microseconds with the nanoseconds kept exactly: "1234.567" (a double would
// round large monotonic times).
std::string micros(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s%" PRId64 ".%03" PRId64, ns < 0 ? "-" : "", (ns < 0 ? -ns : ns) / 1000,
                (ns < 0 ? -ns : ns) % 1000);
  return buf;
}

class EventWriter {
 public:
  explicit EventWriter(std::ostream& out) : out_(out) { out_ << "{\"traceEvents\":[\n"; }
  // One event per line; times are spliced in as exact decimal numbers.
  void write(const json& e, const char* time_keys = "", int64_t ts = 0, int64_t dur = -1) {
    std::string s = e.dump(-1, ' ', false, json::error_handler_t::replace);
    std::string times;
    if (*time_keys) {
      times = "\"ts\":" + micros(ts);
      if (dur >= 0) times += ",\"dur\":" + micros(dur);
      times += s.size() > 2 ? "," : "";
    }
    out_ << (first_ ? "" : ",\n") << '{' << times << s.substr(1);
    first_ = false;
  }
  void finish() { out_ << "\n]}\n"; }

 private:
  std::ostream& out_;
  bool first_ = true;
};

const char* category(TrackKind k) {
  if (k == TrackKind::lane) return "gpu";
  if (k == TrackKind::rank) return "nccl";
  return "host";
}

}  // namespace

Status write_chrome_json(const TraceLayout& L, std::ostream& out) {
  EventWriter w(out);
  std::vector<uint32_t> pid(L.tracks.size()), tid(L.tracks.size());
  for (const Track& t : L.tracks) {
    size_t i = t.uuid - 1;
    pid[i] = t.pid;
    tid[i] = t.kind == TrackKind::lane ? kLaneTidBase + static_cast<uint32_t>(t.uuid) : t.tid;
    if (t.kind == TrackKind::process || t.kind == TrackKind::gpu || t.kind == TrackKind::communicator)
      w.write({{"ph", "M"}, {"name", "process_name"}, {"pid", t.pid}, {"args", {{"name", t.name}}}});
    else if (t.kind == TrackKind::thread || t.kind == TrackKind::lane || t.kind == TrackKind::rank ||
             t.kind == TrackKind::ring)
      w.write({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid[i]}, {"tid", tid[i]}, {"args", {{"name", t.name}}}});
  }
  for (const TraceEvent& e : ordered_events(L)) {
    if (e.phase == TraceEvent::end) continue;
    if (e.phase == TraceEvent::counter) {
      const CounterPoint& c = L.counters[e.index];
      const Track& t = L.tracks[c.track - 1];
      if (t.kind == TrackKind::gpu_counter) {
        w.write({{"ph", "C"}, {"name", t.name}, {"pid", t.pid}, {"args", {{"value", c.real}}}}, "ts", c.ts_ns);
        continue;
      }
      const char* key = t.kind == TrackKind::memory_counter ? "bytes" : "depth";
      w.write({{"ph", "C"}, {"name", t.name}, {"pid", t.pid}, {"args", {{key, c.value}}}}, "ts", c.ts_ns);
      continue;
    }
    const Slice& s = L.slices[e.index];
    size_t ti = s.track - 1;
    json args = json::object();
    for (const Arg& a : s.args) {
      if (a.is_string) args[a.key] = L.strings[static_cast<size_t>(a.value)];
      else args[a.key] = a.value;
    }
    // Entry-only calls and zero-length windows: complete events of no duration.
    w.write({{"ph", "X"},
             {"name", L.strings[s.name]},
             {"cat", category(L.tracks[ti].kind)},
             {"pid", pid[ti]},
             {"tid", tid[ti]},
             {"args", args}},
            "ts", s.start_ns, s.end_ns - s.start_ns);
    // Flow v1: "s" binds to the slice enclosing its time on its thread, "f"
    // with bp "e" to the enclosing slice too (not the next one).
    for (uint64_t f : s.flows_out)
      w.write({{"ph", "s"}, {"name", "flow"}, {"cat", "flow"}, {"id", f}, {"pid", pid[ti]}, {"tid", tid[ti]}}, "ts",
              s.start_ns);
    for (uint64_t f : s.flows_in)
      w.write(
          {{"ph", "f"}, {"bp", "e"}, {"name", "flow"}, {"cat", "flow"}, {"id", f}, {"pid", pid[ti]}, {"tid", tid[ti]}},
          "ts", s.start_ns);
  }
  w.finish();
  out.flush();
  if (!out) return make_error("cannot write the JSON trace (disk full?)");
  return {};
}

}  // namespace gpuobs::exporter
