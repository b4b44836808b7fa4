#!/usr/bin/env bash
# Issue 17: reading the 3000-step capture back (kernel_launches_between, the view, a
# windowed report, replay, Perfetto) and issue 15 kill -9, on the machine that ran
# run_issue17_record3000.sh. usage: as root, from the repo root.
B=.device-build; OUT=/tmp/o
t() { local s; s=$(date +%s.%N); timeout 120 "$@" > /dev/null 2>&1; echo "rc $? $(python3 -c "print(round($(date +%s.%N) - $s, 2))") s: ${*:2:3}"; }
"$B/gpuobs" sql "SELECT name, sum(pgsize) AS bytes, round(sum(pgsize) * 1.0 / (SELECT sum(launches) FROM launch_agg), 2) AS per_launch FROM dbstat GROUP BY name ORDER BY bytes DESC LIMIT 6" "$OUT/train3000.gpuobs"
t "$B/gpuobs" sql "SELECT count(*) FROM kernel_launches_between()" "$OUT/train3000.gpuobs"
t "$B/gpuobs" sql "SELECT count(*) FROM kernel_launches" "$OUT/train3000.gpuobs"
t "$B/gpuobs" report kern_sum --since 10 --until 20 "$OUT/train3000.gpuobs"
t "$B/gpuobs" report kern_sum "$OUT/train3000.gpuobs"
t "$B/gpuobs" replay "$OUT/train3000.gpuobs"
t "$B/gpuobs" export perfetto -o "$OUT/t.pftrace" "$OUT/train3000.gpuobs"
ls -la $OUT/t.pftrace
rm -f "$OUT/t.pftrace"
B=$B bash bench/h100/run_issue15_kill.sh "$OUT" 1
B=$B bash bench/h100/run_issue15_kill.sh "$OUT" 4
