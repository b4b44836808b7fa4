// Small vocabularies that are words only where they reach SQL or the command
// line: each an enum class with one to_string/parse pair. Everything between
// the option parser and the SQL binding uses the enum.
#pragma once

#include <optional>
#include <string_view>

namespace gpuobs {

// probes.status: what became of one planned probe.
enum class ProbeStatus {
  attached,
  missing,  // no such symbol or library
  failed,   // the attach failed (errno in the row), or the symbol cannot be probed
};

// --unwind: how user stacks are walked.
enum class UnwindMode {
  fp,     // frame pointers, in BPF
  dwarf,  // a stack copy per event, unwound with .eh_frame in user space
  bpf,    // unwound in BPF from .eh_frame tables user space loads
};

// capture.mode: who wrote the capture.
enum class CaptureMode {
  record,  // gpuobs record
  daemon,  // gpuobsd
};

constexpr std::string_view to_string(ProbeStatus s) {
  switch (s) {
    case ProbeStatus::attached: return "attached";
    case ProbeStatus::missing: return "missing";
    case ProbeStatus::failed: return "failed";
  }
  return "failed";
}

constexpr std::string_view to_string(UnwindMode m) {
  switch (m) {
    case UnwindMode::fp: return "fp";
    case UnwindMode::dwarf: return "dwarf";
    case UnwindMode::bpf: return "bpf";
  }
  return "fp";
}

constexpr std::string_view to_string(CaptureMode m) {
  switch (m) {
    case CaptureMode::record: return "record";
    case CaptureMode::daemon: return "daemon";
  }
  return "record";
}

// The inverse of to_string; nullopt for any other word.
template <typename Enum>
constexpr std::optional<Enum> parse(std::string_view word);

namespace modes_detail {
template <typename Enum, typename... E>
constexpr std::optional<Enum> match(std::string_view word, E... values) {
  std::optional<Enum> out;
  ((to_string(values) == word ? (void)(out = values) : (void)0), ...);
  return out;
}
}  // namespace modes_detail

template <>
constexpr std::optional<ProbeStatus> parse<ProbeStatus>(std::string_view word) {
  return modes_detail::match<ProbeStatus>(word, ProbeStatus::attached, ProbeStatus::missing, ProbeStatus::failed);
}
template <>
constexpr std::optional<UnwindMode> parse<UnwindMode>(std::string_view word) {
  return modes_detail::match<UnwindMode>(word, UnwindMode::fp, UnwindMode::dwarf, UnwindMode::bpf);
}
template <>
constexpr std::optional<CaptureMode> parse<CaptureMode>(std::string_view word) {
  return modes_detail::match<CaptureMode>(word, CaptureMode::record, CaptureMode::daemon);
}

}  // namespace gpuobs
