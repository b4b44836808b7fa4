// HealthSnapshot <-> JSON: the status file gpuobsd writes and `gpuobs status` reads.
#pragma once

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "daemon_state/health.h"

namespace gpuobs {

nlohmann::json to_json(const HealthSnapshot& h);
Result<HealthSnapshot> health_from_json(const nlohmann::json& j);

}  // namespace gpuobs
