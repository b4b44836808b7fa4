#!/usr/bin/env bash
# Copies the self-contained binaries (debug info stripped) into .device-build/,
# the folder carried to a GPU host by the device tool (and usable with scp).
set -euo pipefail
cd "$(dirname "$0")/.."
# BUILD=DIR: stage another configured build directory (built here) instead of ./build.
if [ -n "${BUILD:-}" ]; then cmake --build "$BUILD" >/dev/null; else ./scripts/build.sh >/dev/null; fi
b=${BUILD:-build}
rm -rf .device-build && mkdir -p .device-build
for f in $b/cli/gpuobs $b/daemon/gpuobsd $b/bench/gpuobs_bench $b/bench/pipeline_bench $b/bench/report_bench $b/bench/writer_bench $b/bench/metrics_bench $b/examples/cuda_streams/cuda_streams $b/examples/stream_pipeline/stream_pipeline \
         $b/tests/libcuda.so.1 $b/tests/launch_workload $b/tests/lib_needed_workload $b/bench/startup_bench $b/tests/all_families $b/tests/nccl_single_rank $b/tests/stack_workload $b/inject/cupti/libgpuobs_cupti_inject.so; do
  objcopy --strip-debug "$f" ".device-build/$(basename "$f")"
done
git rev-parse --short HEAD > .device-build/COMMIT  # the build's commit, for the figures
du -sh .device-build
