#!/usr/bin/env bash
# The main job on a real example, from a fresh Debian 12 machine: install
# what the build needs, build gpuobs and the bundled 4-stream CUDA example,
# record it with `gpuobs record`, write its HTML report, and tell what was
# captured on one screen (`gpuobs summary`).
#   ./scripts/demo.sh [--verbose]     as root, or a user with sudo
#   With an NVIDIA driver (libcuda.so.1 present) the example runs on the GPU.
#   Without one it drives the CUDA toolkit's stub libcuda.so (or gpuobs's
#   fake one), so the probes, the ring buffer and the store all run for real.
# --verbose: record's details (probe counts, absent GPU metrics) and the
# capture's counters. The build shares ./build with scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/steps.sh
as_root "$@"
verbose=0
[ "${1:-}" = --verbose ] && verbose=1

out=${GPUOBS_DEMO_OUTPUT:-/tmp/gpuobs-demo.gpuobs}
html=${out%.gpuobs}.html
example=build/examples/cuda_streams/cuda_streams
stub=/usr/local/cuda/lib64/stubs/libcuda.so

STEP_TOTAL=3
[ "${GPUOBS_DEMO_SKIP_BUILD:-0}" = 1 ] && STEP_TOTAL=1
if [ "${GPUOBS_DEMO_SKIP_BUILD:-0}" != 1 ]; then  # the demo-output test reuses the suite's build
  step install-deps "installing the build dependencies (Debian 12 packages)" ./scripts/install-deps.sh build
  step build "building gpuobs and the example" ./scripts/build.sh gpuobs cuda_streams
fi
./scripts/mount-tracefs.sh

if ldconfig -p | grep -q 'libcuda.so.1 (libc6,x86-64)' || [ -e /usr/local/nvidia/lib64/libcuda.so.1 ]; then
  where="on the GPU"
  lib_args=()
  example_args=()
elif [ -e "$stub" ]; then
  where="with the CUDA toolkit's stub libcuda (no GPU)"
  lib_args=(--libcuda "$stub")
  example_args=(--lib "$stub")
else
  fake=build/tests/libcuda.so.1
  [ -e "$fake" ] || ./scripts/build.sh fake_cuda >/dev/null
  where="with gpuobs's fake libcuda (no GPU, no CUDA toolkit)"
  lib_args=(--libcuda "$fake")
  example_args=(--lib "$PWD/$fake")
fi
verbose_args=()
((verbose)) && verbose_args=(--verbose)
record() {
  build/cli/gpuobs record -f -o "$out" "${verbose_args[@]}" "${lib_args[@]}" -- \
    "$example" "${example_args[@]}" --launches 20000 --streams 4
  build/cli/gpuobs export html -f "$out" -o "$html"
}
echo "the example runs $where"
step record "recording the 4-stream example" record
steps_done
# The capture's story (record's own summary is in build/logs/record.log).
case $where in
  *stub*) echo "(no GPU here: the stub libcuda fails every call, so the kernels have no names and copies fail)" ;;
esac
echo
build/cli/gpuobs summary "$out" --html "$html"
if ((verbose)); then
  echo
  build/cli/gpuobs report capture "$out"
fi
