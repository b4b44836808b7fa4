#!/usr/bin/env bash
# Everything this round needs a GPU for, on one lent 2-GPU host (as root,
# from the repo root), in two calls of under 10 minutes each; logs in OUT.
#   CALL=1: issue 18's coverage and profiler agreement (tiny-op and training
#           loops, Python frames now also on the autograd thread), issue
#           17's PyTorch bytes per launch, issue 24's DDP runs (plain,
#           straggler, SIGSTOP stall) under gpuobsd, with the exports.
#   CALL=2: issue 24's overhead on a longer, GPU-bound DDP step (5 rounds,
#           no gpuobs / empty-uprobe floor / gpuobs) and issue 18's cost per
#           launch on the tiny-op loop (5 rounds, none / floor / Python
#           frames off / on).
set -uo pipefail
OUT=${OUT:-/tmp/round}
mkdir -p "$OUT"
export B=${B:-.device-build}
nvidia-smi -L; nproc
if [ "${CALL:-1}" = 1 ]; then
  PART=coverage timeout 200 bash bench/h100/run_issue18.sh >"$OUT/issue18-coverage.log" 2>&1
  timeout 150 bash bench/h100/run_issue17_torch.sh 200 /tmp/i17 >"$OUT/issue17-torch.log" 2>&1
  PART=ddp timeout 200 bash bench/h100/run_issue22_24.sh >"$OUT/issue24-ddp.log" 2>&1
else
  HIDDEN=8192 BATCH=512 STEPS=100 ROUNDS=5 PART=overhead timeout 330 bash bench/h100/run_issue22_24.sh \
    >"$OUT/issue24-overhead.log" 2>&1
  MODES="none floor nopy gpuobs" PART=cost ITERS=100000 ROUNDS=5 timeout 200 bash bench/h100/run_issue18.sh >"$OUT/issue18-cost.log" 2>&1
fi
tail -n 3 "$OUT"/*.log
