# The optional Prometheus endpoint of gpuobsd (daemon/metrics_server.cpp says
# why Boost.Beast): its own library so the tests serve a known snapshot
# without BPF. Included by the top CMakeLists.txt after daemon/.
find_package(Boost 1.74 REQUIRED)
add_library(gpuobsd_metrics STATIC
  ${PROJECT_SOURCE_DIR}/daemon/metrics_text.cpp
  ${PROJECT_SOURCE_DIR}/daemon/metrics_server.cpp)
target_include_directories(gpuobsd_metrics PUBLIC ${PROJECT_SOURCE_DIR}/daemon ${PROJECT_SOURCE_DIR}/userspace)
target_link_libraries(gpuobsd_metrics PUBLIC gpuobs_daemon_state Boost::headers fmt::fmt-header-only Threads::Threads)
target_link_libraries(gpuobsd PRIVATE gpuobsd_metrics)
