#include "daemon/drm_engine_health.h"

#include <fstream>
#include <map>
#include <tuple>

namespace gpuobs {
namespace {

std::string proc_comm(uint32_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string s;
  std::getline(in, s);
  return s;
}

}  // namespace

std::vector<DrmEngineHealth> drm_engine_health(const std::vector<gpumetrics::DrmClientSample>& samples,
                                               const std::function<std::string(uint32_t)>& comm_of) {
  // A process with two DRM files (two devices, or a compositor's several
  // clients) adds up per driver and engine: the counters stay monotonic
  // while its files stay open.
  std::map<std::tuple<uint32_t, std::string, std::string>, DrmEngineHealth> sum;
  std::map<uint32_t, std::string> comms;
  for (const auto& s : samples)
    for (const auto& e : s.info.engines) {
      auto& h = sum[{s.pid, s.info.driver, e.engine}];
      if (h.driver.empty()) {
        h.tgid = s.pid;
        h.driver = s.info.driver;
        h.engine = e.engine;
        auto c = comms.find(s.pid);
        if (c == comms.end()) c = comms.emplace(s.pid, comm_of ? comm_of(s.pid) : proc_comm(s.pid)).first;
        h.comm = c->second;
      }
      if (e.busy_ns) {
        h.has_busy = true;
        h.busy_ns += *e.busy_ns;
      }
      if (e.cycles) {
        h.has_cycles = true;
        h.cycles += *e.cycles;
      }
    }
  std::vector<DrmEngineHealth> out;
  for (auto& [key, h] : sum) out.push_back(std::move(h));
  return out;
}

}  // namespace gpuobs
