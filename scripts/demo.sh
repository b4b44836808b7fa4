#!/usr/bin/env bash
# The main job on a real example, from a fresh Debian 12 machine, as root:
# install dependencies, build, record the bundled 4-stream CUDA example with
# `gpuobs record`, and report what was captured.
#   With an NVIDIA driver (libcuda.so.1 present) the example runs on the GPU.
#   Without one it drives the CUDA toolkit's stub libcuda.so, so the probes,
#   the ring buffer and the store all run for real.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "demo.sh: run as root (BPF needs it): sudo $0" >&2; exit 1; }
./scripts/install-deps.sh
./scripts/build.sh >/dev/null
./scripts/mount-tracefs.sh

out=${GPUOBS_DEMO_OUTPUT:-/tmp/gpuobs-demo.gpuobs}
example=build/examples/cuda_streams/cuda_streams
stub=/usr/local/cuda/lib64/stubs/libcuda.so
if ldconfig -p | grep -q 'libcuda.so.1 (libc6,x86-64)' || [ -e /usr/local/nvidia/lib64/libcuda.so.1 ]; then
  echo "== NVIDIA driver found: recording the example on the GPU"
  lib_args=()
  example_args=()
elif [ -e "$stub" ]; then
  echo "== no NVIDIA driver: recording the example against the CUDA toolkit's stub $stub"
  lib_args=(--libcuda "$stub")
  example_args=(--lib "$stub")
else
  fake=build/tests/libcuda.so.1
  echo "== no NVIDIA driver and no CUDA toolkit: recording the example against gpuobs's fake $fake"
  lib_args=(--libcuda "$fake")
  example_args=(--lib "$PWD/$fake")
fi
build/cli/gpuobs record -f -o "$out" "${lib_args[@]}" -- "$example" "${example_args[@]}" --launches 20000 --streams 4
echo
echo "== gpuobs report capture $out"
build/cli/gpuobs report capture "$out"
echo
echo "== gpuobs report launches $out"
build/cli/gpuobs report launches "$out"
echo
echo "== gpuobs report api_sum $out"
build/cli/gpuobs report api_sum "$out"
echo
echo "== gpuobs stacks $out --top 1   (where the launches came from)"
build/cli/gpuobs stacks "$out" --top 1
echo
echo "(also: gpuobs report --list; gpuobs sql \"SELECT ...\" $out; gpuobs export folded $out)"
