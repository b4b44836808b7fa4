#!/usr/bin/env bash
# The final build's GPU check (as root, from the repo root; logs in OUT):
# Python frames of the main thread are now taken only while it waits, so
# issue 18's training-loop coverage and issue 24's DDP runs (straggler's
# Python call site, stall, communicator tracks) are measured again.
set -uo pipefail
OUT=${OUT:-/tmp/round}
mkdir -p "$OUT"
export B=${B:-.device-build}
nvidia-smi -L; nproc
PART=coverage timeout 200 bash bench/h100/run_issue18.sh >"$OUT/issue18-coverage-final.log" 2>&1
PART=ddp timeout 200 bash bench/h100/run_issue22_24.sh >"$OUT/issue24-ddp-final.log" 2>&1
tail -n 3 "$OUT"/*.log
