#!/usr/bin/env bash
# The launch probe's own run time with and without Python frames (issue 18),
# from the kernel's BPF statistics (kernel.bpf_stats_enabled: run_time_ns /
# run_cnt per program), so the uprobe trap's noise is not in the figure:
# bench/python/launch_cost.py DEPTH frames deep under gpuobs record, the
# probe's mean ns per run read while the process lingers. A depth of
# "torch" runs PyTorch's tiny-op loop instead (bench/h100/torch_tiny_ops.py,
# one x.add_ per launch, through the real libcuda: issue 18's target bench).
# As root.
# usage: [ROUNDS=N] bench/python/bpf_cost.sh [PYTHON] [ITERS] [DEPTHS...]  (medians over ROUNDS)
set -euo pipefail
B=${B:-build}
GPUOBS=${GPUOBS:-$([ -x "$B/cli/gpuobs" ] && echo "$B/cli/gpuobs" || echo "$B/gpuobs")}
LIB=${LIB:-$([ -e "$B/tests/libcuda.so.1" ] && echo "$B/tests/libcuda.so.1" || echo "$B/libcuda.so.1")}
PY=${1:-python3}
ITERS=${2:-100000}
shift 2 || true
DEPTHS=("${@:-1 10 40}")
read -r -a DEPTHS <<< "${DEPTHS[*]}"
T=$(mktemp -d)
old=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -qw kernel.bpf_stats_enabled=1
trap 'sysctl -qw kernel.bpf_stats_enabled=$old; rm -rf "$T"' EXIT
# The launch program's mean ns per run, from the fdinfo of gpuobs's BPF
# program descriptors (run_time_ns, run_cnt; no bpftool needed): the one
# that ran about as many times as there were launches.
probe_ns() {
  "$PY" - "$1" "$2" <<'PYX'
import glob, sys
pid, want = sys.argv[1], int(sys.argv[2])
best = None
for f in glob.glob(f"/proc/{pid}/fdinfo/*"):
    try:
        kv = dict(l.split(":", 1) for l in open(f) if ":" in l)
    except OSError:
        continue
    if "prog_id" not in kv or "run_cnt" not in kv:
        continue
    n, t = int(kv["run_cnt"]), int(kv["run_time_ns"])
    if n and (best is None or abs(n - want) < abs(best[0] - want)):
        best = (n, t)
print(f"{best[1] / best[0]:.1f} ns/run over {best[0]} runs" if best else "no program found")
PYX
}
ROUNDS=${ROUNDS:-1}
echo "launch probe (cu_launch_kernel) mean run time, $ITERS launches per run, $ROUNDS round(s)"
for r in $(seq 1 "$ROUNDS"); do
  for depth in "${DEPTHS[@]}"; do
    # Off and on in alternating order from round to round.
    if (( r % 2 )); then order=(off on); else order=(on off); fi
    for mode in "${order[@]}"; do
      if [ "$depth" = torch ]; then
        "$GPUOBS" record -f --python-stacks "$mode" -o "$T/c.gpuobs" -- \
          "$PY" bench/h100/torch_tiny_ops.py --iters "$ITERS" --warmup 1000 --linger 3 > "$T/out" 2>&1 &
        done_word=us_per_op
      else
        "$GPUOBS" record -f --libcuda "$LIB" --python-stacks "$mode" -o "$T/c.gpuobs" -- \
          "$PY" bench/python/launch_cost.py "$LIB" --iters "$ITERS" --depth "$depth" --linger 3 > "$T/out" 2>&1 &
        done_word=ns_per_launch
      fi
      pid=$!
      for _ in $(seq 1 600); do grep -q $done_word "$T/out" 2>/dev/null && break; sleep 0.1; done
      sleep 0.5
      line=$(probe_ns "$(pgrep -n -f "gpuobs record -f .*--python-stacks $mode")" $((ITERS + 1000)))
      echo "  depth $depth  python $mode: $line"
      echo "$depth $mode $line" >> "$T/runs"
      wait $pid
    done
  done
done
# Medians per depth and mode, and on - off.
"$PY" - "$T/runs" <<'PYX'
import statistics, sys, collections
v = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 3 and f[2] != "no":
        v[(f[0], f[1])].append(float(f[2]))
for d in sorted({d for d, _ in v}, key=lambda d: (not d.isdigit(), int(d) if d.isdigit() else 0)):
    off, on = statistics.median(v[(d, "off")]), statistics.median(v[(d, "on")])
    what = "PyTorch tiny-op loop" if d == "torch" else f"{d} Python frames deep (+3 of the harness)"
    print(f"median, {what}: off {off:.1f} ns, on {on:.1f} ns, "
          f"Python frames add {on - off:.1f} ns/launch ({len(v[(d, 'on')])} runs each)")
PYX
