#include "daemon_state/health_json.h"

#include <type_traits>
#include <variant>

#include "daemon_state/health_fields.h"

namespace gpuobs {
namespace {

// "diff.comparisons" -> j["diff"]["comparisons"], made as needed.
nlohmann::json& slot(nlohmann::json& j, std::string_view key) {
  size_t dot = key.find('.');
  if (dot == std::string_view::npos) return j[std::string(key)];
  return j[std::string(key.substr(0, dot))][std::string(key.substr(dot + 1))];
}

const nlohmann::json* find(const nlohmann::json& j, std::string_view key) {
  size_t dot = key.find('.');
  std::string head(key.substr(0, dot));
  auto it = j.find(head);
  if (it == j.end()) return nullptr;
  if (dot == std::string_view::npos) return &*it;
  if (!it->is_object()) return nullptr;
  auto in = it->find(std::string(key.substr(dot + 1)));
  return in == it->end() ? nullptr : &*in;
}

}  // namespace

nlohmann::json to_json(const HealthSnapshot& h) {
  nlohmann::json libs = nlohmann::json::array(), procs = nlohmann::json::array();
  for (const auto& l : h.libraries)
    libs.push_back({{"path", l.path},
                    {"dev", l.dev},
                    {"inode", l.inode},
                    {"probes_attached", l.probes_attached},
                    {"probes_failed", l.probes_failed}});
  for (const auto& p : h.processes)
    procs.push_back({{"tgid", p.tgid},
                     {"comm", p.comm},
                     {"container_id", p.container_id},
                     {"launches", p.launches},
                     {"bytes_copied", p.bytes_copied},
                     {"device_bytes_live", p.device_bytes_live}});
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : h.gpus) {
    nlohmann::json m = nlohmann::json::object();
    for (const auto& [name, v] : g.metrics) m[name] = v;
    gpus.push_back({{"uuid", g.uuid}, {"name", g.name}, {"metrics", m}});
  }
  nlohmann::json j = {{"libraries", libs}, {"processes", procs}, {"gpus", gpus}};
  // Every scalar field from the one list (daemon_state/health_fields.cpp).
  for (const HealthField& f : health_fields()) std::visit([&](auto member) { slot(j, f.key) = h.*member; }, f.member);
  return j;
}

Result<HealthSnapshot> health_from_json(const nlohmann::json& j) {
  try {
    HealthSnapshot h;
    // The scalars: a required one missing is a malformed file; one added
    // since the first gpuobsd keeps its default (an older daemon's file).
    for (const HealthField& f : health_fields()) {
      const nlohmann::json* v = find(j, f.key);
      if (!v && f.required) j.at(f.key);  // throws: "key 'NAME' not found"
      if (!v) continue;
      std::visit(
          [&](auto member) {
            using T = std::remove_reference_t<decltype(h.*member)>;
            h.*member = v->get<T>();
          },
          f.member);
    }
    for (const auto& l : j.at("libraries"))
      h.libraries.push_back(LibraryHealth{l.at("path").get<std::string>(), l.at("dev").get<uint64_t>(),
                                          l.at("inode").get<uint64_t>(), l.at("probes_attached").get<int>(),
                                          l.at("probes_failed").get<int>()});
    for (const auto& p : j.at("processes"))
      h.processes.push_back(ProcessHealth{p.at("tgid").get<uint32_t>(), p.at("comm").get<std::string>(),
                                          p.at("container_id").get<std::string>(), p.at("launches").get<uint64_t>(),
                                          p.at("bytes_copied").get<uint64_t>(),
                                          p.at("device_bytes_live").get<int64_t>()});
    // Added in issue 19.
    if (j.contains("gpus"))
      for (const auto& g : j.at("gpus")) {
        GpuHealth gh{g.at("uuid").get<std::string>(), g.at("name").get<std::string>(), {}};
        for (const auto& [k, val] : g.at("metrics").items()) gh.metrics.emplace_back(k, val.get<double>());
        h.gpus.push_back(std::move(gh));
      }
    return h;
  } catch (const nlohmann::json::exception& e) {
    return make_error(std::string("malformed status file: ") + e.what(), "", 2);
  }
}

}  // namespace gpuobs
