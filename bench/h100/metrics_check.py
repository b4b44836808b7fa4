"""Compares the GPU metrics gpuobs stored with nvidia-smi's samples taken in
the same run, phase by phase (bench/h100/torch_busy.py's windows).

usage: metrics_check.py CAPTURE SMI_CSV PHASES_JSON
SMI_CSV: nvidia-smi --query-gpu=timestamp,utilization.gpu,power.draw,clocks.sm,memory.used
         --format=csv,noheader,nounits -lms 100
"""
import datetime
import json
import sqlite3
import sys

cap, smi_csv, phases_json = sys.argv[1:4]
db = sqlite3.connect(f"file:{cap}?mode=ro", uri=True)
offset = db.execute("SELECT clock_offset_ns FROM capture").fetchone()[0]
phases = json.load(open(phases_json))["phases"]

smi = []  # (mono ns, util, power W, sm MHz, mem MiB)
for line in open(smi_csv):
    parts = [p.strip() for p in line.split(",")]
    if len(parts) < 5:
        continue
    try:
        wall = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
        smi.append((int(wall * 1e9) - offset, float(parts[1]), float(parts[2]), float(parts[3]), float(parts[4])))
    except ValueError:
        continue


def gpuobs_mean(metric, lo, hi):
    """Time-weighted mean of the stored series over [lo, hi] (rows hold until the next)."""
    rows = db.execute(
        "SELECT ts_mono_ns, until_mono_ns, value FROM gpu_metrics WHERE gpu_id = 1 AND metric = ?"
        " AND until_mono_ns > ? AND ts_mono_ns < ?", (metric, lo, hi)).fetchall()
    num = den = 0
    for a, b, v in rows:
        d = min(b, hi) - max(a, lo)
        if d > 0:
            num += v * d
            den += d
    return num / den if den else float("nan")


def smi_mean(col, lo, hi):
    vals = [r[col] for r in smi if lo <= r[0] <= hi]
    return (sum(vals) / len(vals), len(vals)) if vals else (float("nan"), 0)


print(f"{'phase':8} {'metric':16} {'gpuobs':>10} {'nvidia-smi':>11} {'smi n':>6}")
ok = True
for p in phases:
    # Skip the first and last 0.5 s: both tools average over their own periods.
    lo, hi = p["start_mono_ns"] + 500_000_000, p["end_mono_ns"] - 500_000_000
    for metric, col, scale, tol in (("gpu_util_pct", 1, 1, 10.0), ("power_mw", 2, 1000, 0.10),
                                    ("sm_clock_mhz", 3, 1, 0.05), ("mem_used_bytes", 4, 1 << 20, 0.02)):
        g = gpuobs_mean(metric, lo, hi) / scale
        s, n = smi_mean(col, lo, hi)
        agree = abs(g - s) <= tol if metric == "gpu_util_pct" else abs(g - s) <= tol * max(abs(s), 1)
        ok &= agree
        print(f"{p['name']:8} {metric:16} {g:10.1f} {s:11.1f} {n:6} {'ok' if agree else 'DIFFERS'}")
    for metric in ("sm_active_pct", "tensor_active_pct", "dram_bw_util_pct", "pcie_tx_mibps"):
        print(f"{p['name']:8} {metric:16} {gpuobs_mean(metric, lo, hi):10.1f}")
print("agreement with nvidia-smi:", "yes" if ok else "NO")
