// gpuobs export html: one self-contained HTML file (no network, no external
// script or font) with the capture's summary, its top tables, a flame graph of
// its stacks by measure (search, click to zoom) and the timeline of a window
// (host calls per thread, replayed GPU windows per stream, device memory and
// queue depth counters). The page's code is html/report.html (embedded at
// build time); the data goes in as one JSON document (docs/export.md, "HTML").
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>

#include "common/result.h"
#include "replay/replay.h"
#include "store/db.h"

namespace gpuobs::exporter {

struct HtmlOptions {
  // The timeline's window, in seconds since the capture started (none: all).
  std::optional<double> since_s, until_s;
  // At most this many slices in the timeline (the earliest of the window).
  size_t max_slices = 50000;
  // Flame graph nodes below this share of a measure's total are merged into
  // their parent's "(other)": a training run has hundreds of thousands of frames.
  double min_share = 0.0005;
};

Status write_html(Db& capture, const replay::Result& replayed, const HtmlOptions& options, std::ostream& out);

// The JSON made safe inside a <script> element: '<', '>' and '&' as \u
// escapes (a traced kernel or process name holding "</script>" must not end
// the element), and U+2028/U+2029 escaped for old JavaScript parsers.
std::string script_safe_json(const std::string& json);

}  // namespace gpuobs::exporter
