#!/usr/bin/env bash
# Copies the self-contained binaries (debug info stripped) into .device-build/,
# the folder carried to a GPU host by the device tool (and usable with scp).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh >/dev/null
rm -rf .device-build && mkdir -p .device-build
for f in build/cli/gpuobs build/daemon/gpuobsd build/bench/gpuobs_bench build/bench/pipeline_bench build/bench/writer_bench build/bench/metrics_bench build/examples/cuda_streams/cuda_streams build/examples/stream_pipeline/stream_pipeline \
         build/tests/libcuda.so.1 build/tests/launch_workload build/tests/lib_needed_workload build/bench/startup_bench build/tests/all_families build/tests/nccl_single_rank build/tests/stack_workload build/inject/cupti/libgpuobs_cupti_inject.so; do
  objcopy --strip-debug "$f" ".device-build/$(basename "$f")"
done
du -sh .device-build
