#!/usr/bin/env bash
# Installs gpuobs's build and test dependencies: Debian 12 packages only.
# Runs apt only when something is missing, so it is cheap to call every time.
set -euo pipefail
# Two sets: what building gpuobs (and so demo.sh) needs, and what the whole
# test suite adds (test.sh, CI): a real Prometheus, ClickHouse and Chromium
# for the tests that drive them, the HIP runtime, clang-tidy, the fuzzers'
# runtimes. The demo does not wait for the second set's ~1 GB.
#   scripts/install-deps.sh [build|all]   default: all
set_name=${1:-all}
build_packages=(
  g++ cmake make ninja-build pkg-config
  clang llvm bpftool libbpf-dev libelf-dev zlib1g-dev libdw-dev liblzma-dev libbz2-dev
  binutils xz-utils
  libsqlite3-dev sqlite3 libspdlog-dev libfmt-dev libcli11-dev nlohmann-json3-dev
  libgtest-dev libbenchmark-dev
  util-linux
  libprotobuf-dev protobuf-compiler  # the exporters (Perfetto, pprof): static libprotobuf.a and protoc
  libboost-dev   # Boost.Beast/Asio, header-only: gpuobsd's optional Prometheus endpoint
  libcurl4-openssl-dev  # curl/curl.h: the fleet's ClickHouse client (libcurl itself is loaded at run time)
  help2man       # man pages from --help (cmake/packaging.cmake): found when the build is configured, so here
  libze-dev      # the Level Zero loader and its headers (pulls libze1): the Level Zero test driver and workload
)
test_packages=(
  clang-tidy clang-format  # scripts/tidy-changed.sh (CI) and .clang-format
  libclang-rt-14-dev  # libFuzzer and the ASan/UBSan runtimes: the fuzz targets (scripts/fuzz.sh)
  libamdhip64-5  # a real HIP runtime for the HIP probe tests (no GPU needed)
  libc6-dbg      # libc's symbols: the stack tests name __libc_start_call_main (a fresh Debian 12 has none)
  prometheus     # a real Prometheus scrapes that endpoint in gpuobs_metrics_tests
  man-db         # package_deb reads the man pages it packages (man -l)
  curl iproute2 python3 passwd systemd  # the daemon tests: scrape queries, ss, JSON checks, useradd, systemd-analyze
  clickhouse-server     # gpuobs_fleet_tests start a throwaway server on loopback (Debian's 18.16)
  chromium       # gpuobs_html_tests load `gpuobs export html` headless: no console error, the flame graph's frames, a screenshot
)
case $set_name in
  build) packages=("${build_packages[@]}") ;;
  all) packages=("${build_packages[@]}" "${test_packages[@]}") ;;
  *) echo "install-deps.sh: unknown set '$set_name' (build or all)" >&2; exit 2 ;;
esac
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing ${#missing[@]} packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# The package starts a ClickHouse server as a service where systemd runs;
# the tests start their own, on free ports, so a fresh install's is stopped
# and disabled rather than left listening on 8123 and 9000.
if [[ " ${missing[*]-} " == *" clickhouse-server "* ]]; then
  systemctl disable --now clickhouse-server.service >/dev/null 2>&1 || true
fi
