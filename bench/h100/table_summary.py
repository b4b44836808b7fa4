"""The table of bench/h100/run_table.sh (issue 42): medians of its rounds,
each figure beside the floor or peer measured in the same run, and the
target it is held to. Prints markdown.

usage: table_summary.py RESULTS.jsonl GPUTIME.txt METRICS.txt
"""
import json
import re
import statistics
import sys

rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
gputime = open(sys.argv[2]).read() if len(sys.argv) > 2 else ""
metrics = open(sys.argv[3]).read() if len(sys.argv) > 3 else ""


def med(section, mode):
    v = [r["run"]["us_per_op"] for r in rows if r.get("section") == section and r.get("mode") == mode and r.get("run")]
    return (statistics.median(v), len(v)) if v else (None, 0)


out = []
p = out.append
p("| measure | gpuobs | floor / peer (same run) | target | verdict |")
p("|---|---|---|---|---|")

none, n_none = med("tiny", "none")
floor, _ = med("tiny", "floor")
floor_added = floor - none if none is not None and floor is not None else None
p(f"| tiny-op loop, no observer | {none:.3f} us/op ({n_none} runs) | | | |" if none else "| tiny-op loop | not run | | | |")
if floor_added is not None:
    p(f"| empty uprobe on the same symbols (the floor) | | +{floor_added:.3f} us/op | | |")
targets = {"default": 1.2, "bpf": 1.5}
labels = {"default": "gpuobs record (default, Python frames)", "bpf": "record --unwind bpf",
          "gputime": "record --gpu-time", "daemon": "gpuobsd running",
          "profiler": "torch.profiler", "profiler_stack": "torch.profiler with_stack",
          "nsys": "nsys profile --trace=cuda"}
for mode, label in labels.items():
    m, n = med("tiny", mode)
    if m is None:
        if mode == "nsys":
            p("| nsys profile --trace=cuda | | not installed on the host | | |")
        continue
    added = m - none
    ratio = added / floor_added if floor_added else float("nan")
    peer = mode.startswith("profiler") or mode == "nsys"
    tgt = targets.get(mode)
    verdict = "" if tgt is None else ("met" if ratio <= tgt else f"missed by {ratio - tgt:.2f}x")
    if peer:
        p(f"| {label} (peer) | | {m:.3f} us/op, +{added:.3f} = {ratio:.2f}x the floor | | |")
    else:
        p(f"| {label} | {m:.3f} us/op, +{added:.3f} = {ratio:.2f}x the floor | floor +{floor_added:.3f} | "
          f"{'<= %.1fx the floor' % tgt if tgt else ''} | {verdict} |")

mm_none, _ = med("matmul", "none")
mm_g, n_mm = med("matmul", "default")
if mm_none and mm_g:
    pct = (mm_g - mm_none) / mm_none * 100
    p(f"| 4096^2 bf16 matmul loop | {mm_g:.1f} us/op ({pct:+.2f}%) | no observer {mm_none:.1f} us/op | <= 0.3% | "
      f"{'met' if pct <= 0.3 else 'missed by %.2f points' % (pct - 0.3)} |")

for r in rows:
    if r.get("section") != "disk" or not r["launches"]:
        continue
    b = r["bytes"] / r["launches"]
    share = 100 * r["python_launches"] / r["launches"]
    what = "tiny-op loop" if r["capture"] == "default" else "300 training steps"
    p(f"| bytes on disk per launch, {what} | {b:.2f} B ({r['launches']} launches) | | <= 16 B | "
      f"{'met' if b <= 16 else 'missed by %.2f B' % (b - 16)} |")
    p(f"| launches with Python file:line frames, {what} | {share:.2f}% | | >= 99% | "
      f"{'met' if share >= 99 else 'missed by %.2f points' % (99 - share)} |")

for r in sorted((r for r in rows if r.get("section") == "daemon"), key=lambda r: r["rate"]):
    us = r["ns_per_event"] / 1000
    ok = us <= 0.5 and r["drop_kinds"] == 0 and r["stored_pct"] >= 100
    p(f"| gpuobsd at {r['rate'] / 1e6:.1f} M launches/s offered | {us:.3f} us CPU per event, "
      f"{r['stored_pct']:.3f}% stored, {r['drop_kinds']} drop counters > 0 | offered {r['offered']}/s | "
      f"<= 0.5 us, 0 drops | {'met' if ok else 'missed'} |")

m = re.search(r"largest per-kernel median difference: ([0-9.]+)%", gputime)
matched = len([l for l in gputime.splitlines() if re.search(r"\s-?[0-9.]+%$", l)])
if m:
    p(f"| --gpu-time vs CUPTI (torch.profiler), per kernel median | worst {m.group(1)}% | {matched} kernels matched | "
      f"within 1% | {'met' if float(m.group(1)) <= 1 else 'missed'} |")
agree = re.search(r"agreement with nvidia-smi: (\S+)", metrics)
if agree:
    p(f"| NVML/GPM samples vs nvidia-smi (utilization, power, SM clock) | {agree.group(1)} | nvidia-smi -lms 100 | "
      f"agree | {'met' if agree.group(1) == 'yes' else 'missed'} |")

# Reports read aggregates (launch_agg), not every launch: the honest figure
# is report_bench's on a written capture of 10 M launches, times 10.
big = [r for r in rows if r.get("section") == "report_bench"]
if big:
    worst = max(big, key=lambda r: r["ms"])
    n = worst["launches"] or 1
    est = worst["ms"] * 1e8 / n / 1000
    p(f"| gpuobs report, slowest of {len(big)} on {n} launches (report_bench) | {worst['report']} "
      f"{worst['ms']:.0f} ms | 100 M launches, linear: {est:.2f} s | < 1 s | {'met' if est < 1 else 'missed'} |")
reps = [r for r in rows if r.get("section") == "report"]
if reps:
    worst = max(reps, key=lambda r: r["ms"])
    n = worst["launches"] or 1
    per = worst["ms"] / n
    p(f"| gpuobs report (the CLI, process start included), slowest of {len(reps)} on the run's largest capture "
      f"({n} launches) | {worst['report']} {worst['ms']} ms | | | |")
print("\n".join(out))
