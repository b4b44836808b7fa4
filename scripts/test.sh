#!/usr/bin/env bash
# The whole test suite, as root: install dependencies, build, run every test.
# BPF tests run for real and fail (never skip) where BPF cannot load.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "test.sh: run as root (the BPF tests need it): sudo $0" >&2; exit 1; }
./scripts/install-deps.sh
./scripts/build.sh
./scripts/mount-tracefs.sh
cd build
ctest --output-on-failure --timeout 120 "$@"
