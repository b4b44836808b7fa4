#include "exec/schedule_file.h"

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

namespace gpuobs::exec {
namespace {

const std::map<std::string, Kind>& kinds() {
  static const std::map<std::string, Kind> k{{"kernel", Kind::kernel},         {"graph", Kind::graph},
                                             {"host_func", Kind::host_func},   {"copy", Kind::copy},
                                             {"memset", Kind::memset},         {"event_record", Kind::event_record},
                                             {"event_wait", Kind::event_wait}, {"stream_sync", Kind::stream_sync},
                                             {"event_sync", Kind::event_sync}, {"context_sync", Kind::context_sync}};
  return k;
}

bool needs_stream(Kind k) { return k != Kind::event_sync && k != Kind::context_sync; }
bool needs_event(Kind k) { return k == Kind::event_record || k == Kind::event_wait || k == Kind::event_sync; }

}  // namespace

bool read_schedule(const std::string& path, ScheduleFile& out, std::string& why) {
  std::ifstream in(path);
  if (!in) {
    why = "cannot open " + path;
    return false;
  }
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    why = path + " is not JSON";
    return false;
  }
  if (j.value("format", "") != "gpuobs-schedule") {
    why = path + " is not a gpuobs schedule (write one with gpuobs replay FILE --schedule-out PATH)";
    return false;
  }
  if (j.value("version", 0) != 1) {
    why = path + ": schedule version " + std::to_string(j.value("version", 0)) + ", this executor reads version 1";
    return false;
  }
  try {
    out.events = j.at("events").get<int32_t>();
    out.duration_ns = j.value("duration_ns", int64_t{0});
    out.no_host_gaps = j.value("no_host_gaps", false);
    out.speed = j.value("speed", 1.0);
    if (!(out.speed > 0)) {
      why = path + ": speed must be positive";
      return false;
    }
    for (const auto& s : j.at("streams")) {
      Stream x;
      x.id = s.at("id").get<int32_t>();
      x.process_id = s.at("process_id").get<int64_t>();
      x.kind = s.at("kind").get<std::string>();
      x.non_blocking = s.value("non_blocking", false);
      x.priority = s.value("priority", 0);
      if (x.id != static_cast<int32_t>(out.streams.size())) {
        why = "stream ids must run 0, 1, ...: stream " + std::to_string(x.id);
        return false;
      }
      out.streams.push_back(x);
    }
    for (const auto& t : j.at("threads")) {
      Thread x;
      x.id = t.at("id").get<int32_t>();
      x.process_id = t.at("process_id").get<int64_t>();
      x.tid = t.at("tid").get<uint32_t>();
      if (x.id != static_cast<int32_t>(out.threads.size())) {
        why = "thread ids must run 0, 1, ...: thread " + std::to_string(x.id);
        return false;
      }
      out.threads.push_back(x);
    }
    for (const auto& s : j.at("steps")) {
      Step x;
      x.index = s.at("i").get<int64_t>();
      auto k = kinds().find(s.at("kind").get<std::string>());
      if (k == kinds().end()) {
        why = "step " + std::to_string(x.index) + ": unknown kind " + s.at("kind").get<std::string>();
        return false;
      }
      x.kind = k->second;
      x.thread = s.at("thread").get<int32_t>();
      x.stream = s.value("stream", -1);
      x.event = s.value("event", -1);
      x.at_ns = s.at("at_ns").get<int64_t>();
      x.gap_ns = s.at("gap_ns").get<int64_t>();
      x.host_ns = s.value("host_ns", int64_t{0});
      x.gpu_ns = s.value("gpu_ns", int64_t{0});
      x.bytes = s.value("bytes", uint64_t{0});
      x.direction = s.value("direction", "");
      x.async = s.value("async", false);
      std::string at = "step " + std::to_string(x.index) + ": ";
      if (x.index != static_cast<int64_t>(out.steps.size())) {
        why = at + "step indexes must run 0, 1, ...";
        return false;
      }
      if (x.thread < 0 || x.thread >= static_cast<int32_t>(out.threads.size())) {
        why = at + "no thread " + std::to_string(x.thread);
        return false;
      }
      if (needs_stream(x.kind) && (x.stream < 0 || x.stream >= static_cast<int32_t>(out.streams.size()))) {
        why = at + "no stream " + std::to_string(x.stream);
        return false;
      }
      if (needs_event(x.kind) && (x.event < 0 || x.event >= out.events)) {
        why = at + "no event " + std::to_string(x.event);
        return false;
      }
      if (x.gap_ns < 0 || x.gpu_ns < 0) {
        why = at + "negative time";
        return false;
      }
      out.steps.push_back(std::move(x));
    }
  } catch (const nlohmann::json::exception& e) {
    why = path + ": " + e.what();
    return false;
  }
  return true;
}

}  // namespace gpuobs::exec
