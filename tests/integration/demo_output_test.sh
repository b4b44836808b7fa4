#!/usr/bin/env bash
# The demo's screen (issue 38): scripts/demo.sh on the suite's build tells its
# example's story in one 100-column screen of at most 40 lines, with no zero
# counters, and names the capture and the HTML report, which both exist.
# Real BPF: the example is recorded as the README's command records it.
# usage: demo_output_test.sh REPO_ROOT BUILD_DIR   (root)
set -euo pipefail
repo=$1
export GPUOBS_DEMO_BUILD=$2
tmp=$(mktemp -d /tmp/gpuobs-demo-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; echo "--- the demo printed:" >&2; cat "$tmp/out" >&2; exit 1; }
cd "$repo"
# Twice: with the toolkit's stub libcuda where it is installed (the calls
# fail), and with gpuobs's fake one (what a fresh machine without the CUDA
# toolkit runs: the fake lacked cuCtxSetCurrent and the demo failed there).
picks=(fake)
[ -e /usr/local/cuda/lib64/stubs/libcuda.so ] && picks+=(stub)
for pick in "${picks[@]}"; do
rm -f "$tmp"/demo.*
GPUOBS_DEMO_LIBCUDA=$pick GPUOBS_DEMO_SKIP_BUILD=1 GPUOBS_DEMO_OUTPUT="$tmp/demo.gpuobs" ./scripts/demo.sh \
  >"$tmp/out" 2>&1 || fail "demo.sh ($pick libcuda) exited $?"
lines=$(wc -l <"$tmp/out")
((lines <= 40)) || fail "$lines lines (at most 40)"
widest=$(awk '{ if (length($0) > w) w = length($0) } END { print w + 0 }' "$tmp/out")
((widest <= 100)) || fail "a line of $widest columns (at most 100)"
# No zero counters: "0 events dropped", "counter.x  0", ": 0", "0/0".
if grep -nE '(^|[ (:])0 [a-z]|[[:space:]]0$|: 0([,;.]|$)|0/0' "$tmp/out"; then fail "a zero counter"; fi
grep -q "$tmp/demo.gpuobs" "$tmp/out" || fail "the capture is not named"
grep -q "HTML report: $tmp/demo.html" "$tmp/out" || fail "the HTML report is not named"
[[ -s $tmp/demo.gpuobs && -s $tmp/demo.html ]] || fail "the capture or the HTML report is missing"
# The story: what ran, what was seen (launches by kernel, streams, syncs,
# copies, the top stack with file:line), and what to try next.
for want in "What ran" "cuda_streams" "20,000 kernel launches on 4 streams" "What gpuobs saw" "kernel " \
  "streams:" "syncs: " "copies and memsets:" "top stack: 20,000 launches (100.0%) from main (" \
  "cuda_streams.cpp:" "Next" "gpuobs report kern_sum $tmp/demo.gpuobs" "gpuobs stacks $tmp/demo.gpuobs"; do
  grep -qF -- "$want" "$tmp/out" || fail "no '$want'"
done
grep -q 'probes attached' "$tmp/out" && fail "internal probe counts on the screen (--verbose only)"
echo "ok ($pick libcuda): $lines lines, at most $widest columns"
done
