#!/usr/bin/env bash
# The whole test suite: install what the tests need, build everything
# (warnings are errors), clang-tidy on changed files, every test (the
# layering check too), then the fuzz targets for a short fixed time.
#   ./scripts/test.sh [CTEST ARGS...]     as root, or a user with sudo
# BPF tests run for real and fail (never skip) where BPF cannot load.
# The build is scripts/build.sh's, the one demo.sh made: what the demo built
# is reused. Each step's output goes to build/logs/STEP.log.
#   GPUOBS_FUZZ_SECONDS=N   seconds per fuzz target (default 20; 0: none)
#   GPUOBS_TIDY=0           no clang-tidy
#   GPUOBS_TEST_JOBS=N      tests run at once (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/steps.sh
as_root "$@"
fuzz=${GPUOBS_FUZZ_SECONDS:-20}
tidy=${GPUOBS_TIDY:-1}
STEP_TOTAL=$((3 + (tidy != 0) + (fuzz != 0)))
step install-deps "installing the test dependencies (Debian 12 packages)" ./scripts/install-deps.sh all
step build "building everything (warnings are errors)" ./scripts/build.sh
# clang-tidy on the C++ files changed against origin/main (none changed:
# passes). A unity build has no per-file compile commands: it says so.
((tidy == 0)) || step tidy "clang-tidy on the changed files" ./scripts/tidy-changed.sh
./scripts/mount-tracefs.sh
# Two tests at a time; those that must run alone (gpuobsd sees every
# process; a few measure keeping up under load) are RUN_SERIAL
# (tests/CMakeLists.txt, GPUOBS_ALONE_TESTS).
run_tests() { cd build && ctest --output-on-failure --timeout 120 -j "${GPUOBS_TEST_JOBS:-2}" "$@"; }
step tests "running the test suite (ctest)" run_tests "$@"
grep -E '^[0-9]+% tests passed|Total Test time' build/logs/tests.log || true
# The fuzz targets (tests/fuzz/README.md): their own clang build, then each
# for GPUOBS_FUZZ_SECONDS, all at once; any crash fails.
((fuzz == 0)) || step fuzz "fuzz targets, ${fuzz} s each" ./scripts/fuzz.sh "$fuzz"
steps_done
