#!/usr/bin/env bash
# The whole test suite, as root: install dependencies, build (warnings are
# errors), clang-tidy on changed files, run every test (the layering check too),
# then the fuzz targets for a short fixed time (scripts/fuzz.sh).
# BPF tests run for real and fail (never skip) where BPF cannot load.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "test.sh: run as root (the BPF tests need it): sudo $0" >&2; exit 1; }
./scripts/install-deps.sh
# C++ warnings are errors here (CMake option GPUOBS_WERROR), so CI fails on them;
# line tables only (GPUOBS_DEBUG_LINES_ONLY) halve the compile time.
# GPUOBS_UNITY=1 (.ci/run sets it): a unity build (CMake batches of 16
# sources per compiler run): about 8.5 instead of 12.75 minutes on 2 cores; its
# compile database has no per-file commands, so tidy-changed cannot check a
# changed file there (it says so). Local runs keep one compile per file.
unity=OFF
[ "${GPUOBS_UNITY:-0}" = 1 ] && unity=ON
./scripts/build.sh -DGPUOBS_WERROR=ON -DGPUOBS_DEBUG_LINES_ONLY=ON -DCMAKE_UNITY_BUILD=$unity \
  -DCMAKE_UNITY_BUILD_BATCH_SIZE=16
# clang-tidy on the C++ files changed against origin/main (none changed: passes).
[ "${GPUOBS_TIDY:-1}" = 0 ] || ./scripts/tidy-changed.sh
./scripts/mount-tracefs.sh
(cd build && ctest --output-on-failure --timeout 120 "$@")
# The fuzz targets (tests/fuzz/README.md): their own clang build, then each
# for GPUOBS_FUZZ_SECONDS (default 20, all at once); any crash fails.
# GPUOBS_FUZZ_SECONDS=0 leaves them out (a quick local run of a few tests).
if [ "${GPUOBS_FUZZ_SECONDS:-20}" != 0 ]; then
  ./scripts/fuzz.sh "${GPUOBS_FUZZ_SECONDS:-20}"
fi
