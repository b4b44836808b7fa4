// The page of `gpuobs export html` (userspace/export/html/report.html),
// embedded at build time by cmake/embed_html.cmake: its data placeholder
// "/*GPUOBS_DATA*/null" is where html_writer puts the capture's JSON.
#pragma once

#include <string_view>

namespace gpuobs::exporter {

std::string_view html_template();

}  // namespace gpuobs::exporter
