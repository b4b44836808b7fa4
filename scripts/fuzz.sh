#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (clang++, ASan + UBSan) into
# ./build-fuzz and runs each for a fixed time, all at once, starting from the
# seed corpus in tests/fuzz/corpus/<target>/ (read, never written: new inputs
# go to build-fuzz/work/<target>/). Fails on any crash, sanitizer report,
# leak or input slower than 10 s, and prints each target's executions.
#   scripts/fuzz.sh [SECONDS [TARGET...]]     default: 20 s, every target
# A crash leaves its input in build-fuzz/crashes/; reproduce it with
#   build-fuzz/tests/fuzz/<target> build-fuzz/crashes/<target>-crash-<sha1>
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(fuzz_decoder fuzz_ioctl fuzz_api_args fuzz_unwind_table fuzz_cfi_unwind fuzz_config fuzz_python_lines fuzz_activity_file fuzz_gpu_trace)

gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
[ -f build-fuzz/CMakeCache.txt ] ||
  cmake -S . -B build-fuzz "${gen[@]}" -DGPUOBS_FUZZ=ON -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]}"

mkdir -p build-fuzz/crashes build-fuzz/logs
pids=()
for t in "${targets[@]}"; do
  mkdir -p "build-fuzz/work/$t"
  build-fuzz/tests/fuzz/"$t" -max_total_time="$secs" -timeout=10 -print_final_stats=1 \
    -artifact_prefix="build-fuzz/crashes/$t-" "build-fuzz/work/$t" "tests/fuzz/corpus/$t" \
    >"build-fuzz/logs/$t.log" 2>&1 &
  pids+=($!)
done
failed=0
for i in "${!targets[@]}"; do
  t=${targets[$i]}
  rc=0
  wait "${pids[$i]}" || rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "build-fuzz/logs/$t.log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "build-fuzz/logs/$t.log" | tail -1)
  if ((rc == 0)); then
    echo "fuzz: $t: ${runs:-0} executions in ${secs} s, ${cov:-cov: ?}, no crash"
  else
    failed=1
    echo "fuzz: $t: FAILED (exit $rc) after ${runs:-?} executions; log build-fuzz/logs/$t.log:" >&2
    grep -E -A40 '^==[0-9]+==ERROR|runtime error|^SUMMARY|deadly signal|Test unit written|ERROR: libFuzzer' \
      "build-fuzz/logs/$t.log" | head -80 >&2
  fi
done
exit "$failed"
