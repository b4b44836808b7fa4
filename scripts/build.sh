#!/usr/bin/env bash
# Configures and builds gpuobs into ./build (RelWithDebInfo, static third-party libraries).
# Arguments are passed to cmake's configure step (scripts/test.sh: -DGPUOBS_WERROR=ON).
set -euo pipefail
cd "$(dirname "$0")/.."
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
if [ ! -f build/CMakeCache.txt ]; then
  cmake -S . -B build "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
elif (($#)); then
  cmake -S . -B build "$@" >/dev/null
fi
cmake --build build -j"$(nproc)"
