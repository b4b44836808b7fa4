// A timeline as a Perfetto native protobuf trace (ui.perfetto.dev,
// trace_processor): packets streamed one by one, names interned.
#pragma once

#include <ostream>

#include "common/result.h"
#include "export/trace_layout.h"

namespace gpuobs::exporter {

// The one packet sequence every event is written on.
inline constexpr uint32_t kPerfettoSequenceId = 1;

Status write_perfetto(const TraceLayout& layout, std::ostream& out);

}  // namespace gpuobs::exporter
