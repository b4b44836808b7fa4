# cmake -DIN=report.html -DOUT=html_template.cpp -P embed_html.cmake: the page
# as a C++ raw string (userspace/export/html_template.h).
file(READ ${IN} page)
string(FIND "${page}" ")gpuobs_page\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string delimiter )gpuobs_page\"")
endif()
file(WRITE ${OUT} "// Generated from ${IN} by cmake/embed_html.cmake.\n#include \"export/html_template.h\"\n\nnamespace gpuobs::exporter {\n\nstd::string_view html_template() {\n  static constexpr std::string_view page = R\"gpuobs_page(${page})gpuobs_page\";\n  return page;\n}\n\n}  // namespace gpuobs::exporter\n")
