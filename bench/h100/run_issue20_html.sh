#!/usr/bin/env bash
# Issue 20 on the lent H100, second run: gpuobs export html of a PyTorch
# training capture (size, time), the HTML's flame graph roots, the
# never-proven markers of the Perfetto export, report --timeunit.
# usage: bench/h100/run_issue20_html.sh [OUTDIR]   (as root, from the repo root)
set -uo pipefail
B=${B:-.device-build}
OUT=${1:-/tmp/gpuobs-issue20}
PY=${PY:-$( [ -x /opt/torch/.venv/bin/python3 ] && echo /opt/torch/.venv/bin/python3 || echo python3)}
mkdir -p "$OUT"
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing
f=$OUT/torch.gpuobs
"$B/gpuobs" record -f -o "$f" -- "$PY" bench/h100/torch_transformer_train.py 300 2>&1 | tail -1
for i in 1 2 3; do
  /usr/bin/time -f "export html: %e s wall, %M KiB max RSS" "$B/gpuobs" export html "$f" -f -o "$OUT/torch.html"
done
ls -l "$OUT/torch.html" | awk '{print "html bytes", $5}'
python3 - "$OUT/torch.html" <<'PY'
import json, re, sys
page = open(sys.argv[1]).read()
data = json.loads(re.search(r'<script id="gpuobs-data" type="application/json">(.*?)</script>', page, re.S).group(1))
for m, f in data["flame"].items():
    def count(n): return 1 + sum(count(c) for c in n["c"])
    print(f"flame {m}: total {f['tree']['v']} {f['unit']}, {count(f['tree'])} nodes, roots {[c['n'] for c in f['tree']['c']][:3]}")
t = data["timeline"]
print(f"timeline: {len(t['tracks'])} tracks, {t['slices_kept']} of {t['slices_in_window']} slices, {len(t['counters'])} counter tracks")
print("open markers:", [s for s in t["slices"] if "open" in s[4]][:2])
print("tables:", {k: len(v["rows"]) for k, v in data["tables"].items()})
PY
/usr/bin/time -f "export html --since 1 --until 1.5: %e s wall" "$B/gpuobs" export html "$f" -f -o "$OUT/torch-window.html" --since 1 --until 1.5
ls -l "$OUT/torch-window.html" | awk '{print "windowed html bytes", $5}'
"$B/gpuobs" report sync_sum,calls "$f" --timeunit ms | head -20
