// Every scalar field of gpuobsd's health snapshot, listed once: its key in
// the status file, the Prometheus family it is exported as (if any), its
// type and help text, and which gpuobsd first wrote it. The status file's
// writer and reader (health_json.cpp), the Prometheus text
// (daemon/metrics_text.cpp), `gpuobs status --format json` and the docs'
// tables (docs/operations.md, checked by tests/unit/daemon_state) all read
// this list, so a new field is one line here and its member in health.h.
// Per-process, per-library and per-GPU series stay hand-written: they are
// lists, not fields.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <variant>

#include "daemon_state/health.h"

namespace gpuobs {

struct HealthField {
  // Key in the status file; "diff.x" and "ship.x" live in those objects.
  const char* key;
  std::variant<uint64_t HealthSnapshot::*, int64_t HealthSnapshot::*, uint32_t HealthSnapshot::*,
               double HealthSnapshot::*, std::string HealthSnapshot::*>
      member;
  // Prometheus family name, or nullptr: in the status file only.
  const char* metric = nullptr;
  const char* type = "gauge";  // "counter" or "gauge"
  const char* help = "";
  // Where the family is exported: always, or only while diff_baseline /
  // ship_url is set (their series mean nothing otherwise).
  enum class When : uint8_t { always, diff_on, ship_on } when = When::always;
  // Required in every status file (written since the first gpuobsd); the
  // others are read with their default from an older one.
  bool required = false;
};

std::span<const HealthField> health_fields();

}  // namespace gpuobs
