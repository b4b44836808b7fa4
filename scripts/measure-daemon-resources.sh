#!/usr/bin/env bash
# Measures what gpuobsd holds under a busy run, for the systemd unit's
# LimitNOFILE, TasksMax and MemoryMax (docs/operations.md, "Resource
# limits"): gpuobsd (segments of 4 MB, the metrics endpoint on) in a memory
# cgroup of its own (v1 or v2, so that BPF maps and page cache charged to it
# are seen), while WORKLOADS launch workloads (2 threads, LAUNCHES each) run
# at once and 16 clients scrape /metrics in a loop. Samples every 100 ms and
# prints the peaks: open fds, tasks (threads), VmHWM, cgroup memory peak,
# and the segments written. Run as root.
# usage: [WORKLOADS=4] [LAUNCHES=500000] measure-daemon-resources.sh GPUOBSD LAUNCH_WORKLOAD FAKE_LIBCUDA
set -uo pipefail
gpuobsd=$1 workload=$2 lib=$3
workloads=${WORKLOADS:-4} launches=${LAUNCHES:-500000}
work=$(mktemp -d /tmp/gpuobs-res.XXXXXX)
cg=
cleanup() {
  [[ -n ${pid:-} ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  [[ -n $cg ]] && rmdir "$cg" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
if [[ -d /sys/fs/cgroup/memory ]]; then       # v1
  cg=/sys/fs/cgroup/memory/gpuobs-measure.$$ peak_file=memory.max_usage_in_bytes
elif [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then  # v2
  cg=/sys/fs/cgroup/gpuobs-measure.$$ peak_file=memory.peak
fi
[[ -n $cg ]] && mkdir "$cg"
: > "$work/gpuobsd.conf"
# The shell joins the cgroup, then becomes gpuobsd: its maps are charged there.
sh -c "${cg:+echo \$\$ > $cg/cgroup.procs;} exec $gpuobsd --config $work/gpuobsd.conf --state-dir $work/state \
  --status-file $work/status.json --libcuda $lib --no-gpu-devices --segment-max-bytes 4MB \
  --metrics-listen 127.0.0.1:0" 2> "$work/log" &
pid=$!
for _ in $(seq 100); do grep -q "capturing to" "$work/log" && break; sleep 0.1; done
port=$(sed -n 's|.*metrics on http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$work/log")
[[ -n $port ]] || { cat "$work/log"; exit 1; }

peak_fd=0 peak_tasks=0
sample() {
  local fds tasks
  fds=$(ls /proc/$pid/fd 2>/dev/null | wc -l)
  tasks=$(ls /proc/$pid/task 2>/dev/null | wc -l)
  (( fds > peak_fd )) && peak_fd=$fds
  (( tasks > peak_tasks )) && peak_tasks=$tasks
}
sample
echo "idle: $peak_fd fds, $peak_tasks tasks, $(awk '/VmRSS/ {print $2, $3}' /proc/$pid/status) RSS"
workers=()
for i in $(seq "$workloads"); do
  "$workload" --lib "$lib" --threads 2 --launches "$launches" > /dev/null &
  workers+=($!)
done
scrapers=()
for i in $(seq 16); do
  ( while :; do curl -s -o /dev/null "http://127.0.0.1:$port/metrics" || true; done ) &
  scrapers+=($!)
done
start=$(date +%s.%N)
running() { local w; for w in "${workers[@]}"; do kill -0 "$w" 2>/dev/null && return 0; done; return 1; }
while running; do sample; sleep 0.1; done
end=$(date +%s.%N)
wait "${workers[@]}"
kill "${scrapers[@]}" 2>/dev/null
wait "${scrapers[@]}" 2>/dev/null
sleep 1
sample
echo "busy: $workloads workloads x 2 threads x $launches launches in $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') s, 16 scrapers"
echo "peak open fds:   $peak_fd (soft limit $(awk '/Max open files/ {print $4}' /proc/$pid/limits))"
echo "peak tasks:      $peak_tasks"
echo "peak RSS:        $(awk '/VmHWM/ {print $2, $3}' /proc/$pid/status)"
[[ -n $cg ]] && echo "cgroup peak:     $(( $(cat $cg/$peak_file) / 1048576 )) MiB (RSS, BPF maps, page cache of the segments)"
echo "status:          $(tr -d '\n ' < "$work/status.json" | grep -oE '"(events_total|drops_total|store_failed)":[0-9]*' | tr '\n' ' ')"
echo "segments:        $(ls "$work/state" | grep -c '\.gpuobs$') ($(du -sh "$work/state" | cut -f1))"
