// A timeline as Chrome JSON trace events ({"traceEvents": [...]}), for tools
// that read only that format (chrome://tracing, older Perfetto UIs, scripts).
#pragma once

#include <ostream>

#include "common/result.h"
#include "export/trace_layout.h"

namespace gpuobs::exporter {

// Stream lanes have no thread: they are drawn as synthetic threads of their
// process, numbered from here (above any Linux tid, pid_max <= 2^22).
inline constexpr uint32_t kLaneTidBase = 1u << 30;

Status write_chrome_json(const TraceLayout& layout, std::ostream& out);

}  // namespace gpuobs::exporter
