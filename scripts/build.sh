#!/usr/bin/env bash
# Configures and builds gpuobs into ./build: one configuration for demo.sh,
# test.sh, CI and a developer's checkout, so each reuses what the other built
# (the demo builds what it runs, test.sh adds the rest).
#   scripts/build.sh [TARGET...]      default: everything
# RelWithDebInfo, warnings are errors (GPUOBS_WERROR), line tables only
# (GPUOBS_DEBUG_LINES_ONLY: half the compile time), static third-party
# libraries, and a unity build (CMake batches of 16 sources per compiler run:
# ~8.5 instead of ~12.75 minutes for everything on 2 cores). GPUOBS_UNITY=0
# compiles one file per run (faster rebuilds of one file; per-file commands
# for clang-tidy); the build directory is reconfigured when it changes.
set -euo pipefail
cd "$(dirname "$0")/.."
unity=ON
[ "${GPUOBS_UNITY:-1}" = 0 ] && unity=OFF
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUOBS_WERROR=ON -DGPUOBS_DEBUG_LINES_ONLY=ON
  -DCMAKE_UNITY_BUILD=$unity -DCMAKE_UNITY_BUILD_BATCH_SIZE=16)
cached() { sed -n "s/^$1:[A-Z]*=//p" build/CMakeCache.txt 2>/dev/null; }
if [ ! -f build/CMakeCache.txt ]; then
  cmake -S . -B build "${gen[@]}" "${flags[@]}"
elif [ "$(cached CMAKE_UNITY_BUILD)" != "$unity" ] || [ "$(cached GPUOBS_WERROR)" != ON ] ||
  [ "$(cached GPUOBS_DEBUG_LINES_ONLY)" != ON ]; then
  cmake -S . -B build "${flags[@]}"
fi
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build build -j"$(nproc)" "${targets[@]}"
