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
# GPUOBS_DEMO_BUILD: the build directory whose binaries run (the demo-output
# test passes its own; demo.sh builds ./build).
bd=${GPUOBS_DEMO_BUILD:-build}
example=$bd/examples/cuda_streams/cuda_streams
stub=/usr/local/cuda/lib64/stubs/libcuda.so

STEP_TOTAL=3
[ "${GPUOBS_DEMO_SKIP_BUILD:-0}" = 1 ] && STEP_TOTAL=1
if [ "${GPUOBS_DEMO_SKIP_BUILD:-0}" != 1 ]; then  # the demo-output test reuses the suite's build
  step install-deps "installing the build dependencies (Debian 12 packages)" ./scripts/install-deps.sh build
  step build "building gpuobs and the example" ./scripts/build.sh gpuobs cuda_streams fake_cuda
fi
./scripts/mount-tracefs.sh

# Which libcuda the example drives: the driver's, else the CUDA toolkit's
# stub, else gpuobs's fake (a fresh machine has neither). GPUOBS_DEMO_LIBCUDA
# =fake|stub picks one (the demo-output test checks both paths).
pick=${GPUOBS_DEMO_LIBCUDA:-}
if [ -z "$pick" ]; then
  if ldconfig -p | grep -q 'libcuda.so.1 (libc6,x86-64)' || [ -e /usr/local/nvidia/lib64/libcuda.so.1 ]; then pick=gpu
  elif [ -e "$stub" ]; then pick=stub
  else pick=fake
  fi
fi
case $pick in
  gpu)
    where="on the GPU"
    lib_args=()
    example_args=() ;;
  stub)
    where="with the CUDA toolkit's stub libcuda (no GPU)"
    lib_args=(--libcuda "$stub")
    example_args=(--lib "$stub") ;;
  *)
    fake=$bd/tests/libcuda.so.1
    where="with gpuobs's fake libcuda (no GPU, no CUDA toolkit)"
    lib_args=(--libcuda "$fake")
    example_args=(--lib "$(realpath "$fake")" --no-verify) ;;  # the fake runs no kernels
esac
verbose_args=()
((verbose)) && verbose_args=(--verbose)
record() {
  "$bd/cli/gpuobs" record -f -o "$out" "${verbose_args[@]}" "${lib_args[@]}" -- \
    "$example" "${example_args[@]}" --launches 20000 --streams 4
  "$bd/cli/gpuobs" export html -f "$out" -o "$html"
}
echo "the example runs $where"
step record "recording the 4-stream example" record
steps_done
# The capture's story (record's own summary is in build/logs/record.log).
case $where in
  *stub*) echo "(no GPU here: the stub libcuda fails every call, so the kernels have no names and copies fail)" ;;
esac
echo
"$bd/cli/gpuobs" summary "$out" --html "$html"
if ((verbose)); then
  echo
  "$bd/cli/gpuobs" report capture "$out"
fi
