#!/usr/bin/env bash
# The real gpuobsd's Prometheus endpoint, scraped by a real Prometheus:
#  - without metrics_listen the daemon has no listening socket;
#  - with --metrics-listen 127.0.0.1:PORT, Prometheus (scrape every 1 s) must
#    show up == 1 and exactly the launches a workload of user nobody made, on
#    a series labelled with its pid and comm;
#  - the GPU metrics sampler (issue 19), reading the fake NVML: one
#    gpuobs_gpu_info per GPU and gpuobs_gpu_metric with the fake's values.
# usage: daemon_metrics_test.sh GPUOBSD FAKE_LIBCUDA FAKE_NVML_DIR   (root, BPF)
set -euo pipefail
gpuobsd=$1 fake=$2 fake_nvml_dir=$3
n=50
tmp=$(mktemp -d /tmp/gpuobs-dmetrics.XXXXXX)
chmod 0755 "$tmp"
pids=()
cleanup() {
  set +e
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; for f in "$tmp"/*.log; do echo "== $f" >&2; tail -20 "$f" >&2; done; exit 1; }
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
listening() { ss -Hltnp | grep -F "pid=$1," || true; }
cp "$fake" "$tmp/libcuda.so.1" && chmod 0755 "$tmp/libcuda.so.1"
common=(--libcuda "$tmp/libcuda.so.1" --config /dev/null)

# 1. Default: no socket.
"$gpuobsd" "${common[@]}" --state-dir "$tmp/s1" --status-file "$tmp/s1.json" >"$tmp/d1.log" 2>&1 &
d1=$!; pids+=($d1)
sleep 2
kill -0 $d1 2>/dev/null || fail "gpuobsd (default) exited"
[[ -z $(listening $d1) ]] || fail "gpuobsd listens without metrics_listen: $(listening $d1)"
kill -TERM $d1; wait $d1 || fail "gpuobsd (default) exit status $?"

# 2. With the endpoint (and the fake NVML, two GPUs, sampled at 20 Hz).
mport=$(free_port)
LD_LIBRARY_PATH="$fake_nvml_dir" "$gpuobsd" "${common[@]}" --metrics-hz 20 --state-dir "$tmp/s2" --status-file "$tmp/s2.json" --metrics-listen "127.0.0.1:$mport" \
  >"$tmp/daemon.log" 2>&1 &
d=$!; pids+=($d)
for _ in $(seq 50); do [[ -n $(listening $d) ]] && break; sleep 0.1; done
got=$(listening $d | awk '{print $4}')
[[ $got == "127.0.0.1:$mport" ]] || fail "gpuobsd listens on '$got', want 127.0.0.1:$mport only"

pport=$(free_port)
mkdir "$tmp/prom"
printf 'global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: gpuobsd\n    static_configs:\n      - targets: [\x27127.0.0.1:%s\x27]\n' \
  "$mport" > "$tmp/prom/prometheus.yml"
prometheus --config.file="$tmp/prom/prometheus.yml" --storage.tsdb.path="$tmp/prom/data" \
  --web.listen-address="127.0.0.1:$pport" >"$tmp/prometheus.log" 2>&1 &
pids+=($!)

sleep 1
cat > "$tmp/workload.py" <<'PY'
import ctypes, sys, time
lib = ctypes.CDLL(sys.argv[1])
lib.cuInit(0)
time.sleep(0.2)
for _ in range(int(sys.argv[2])):
    lib.cuLaunchKernel(None, 1, 1, 1, 1, 1, 1, 0, None, None, None)
time.sleep(60)  # alive until the test has its answer: an exited process leaves the snapshot
PY
setpriv --reuid=nobody --regid=nogroup --clear-groups -- /usr/bin/python3 "$tmp/workload.py" "$tmp/libcuda.so.1" $n &
w=$!
pids+=($w)

query() {  # PromQL -> "labels value" lines
  curl -sf --get "http://127.0.0.1:$pport/api/v1/query" --data-urlencode "query=$1" 2>/dev/null |
    /usr/bin/python3 -c 'import json,sys
for r in json.load(sys.stdin)["data"]["result"]:
    m = {k: v for k, v in r["metric"].items() if k not in ("job", "instance", "__name__")}
    print(",".join(f"{k}={m[k]}" for k in sorted(m)), r["value"][1])' || true
}
want_l="comm=python3,pid=$w $n"
up= l=
for _ in $(seq 120); do
  up=$(query 'up{job="gpuobsd"}')
  l=$(query "gpuobs_process_launches_total{pid=\"$w\"}")
  [[ $up == " 1" && $l == "$want_l" ]] && break
  sleep 0.25
done
[[ $up == " 1" ]] || fail "prometheus: up is '$up', want 1"
[[ $l == "$want_l" ]] || fail "prometheus: launches of pid $w are '$l', want '$want_l'"
echo "prometheus: up 1; gpuobs_process_launches_total{$want_l}"
# The fake NVML's values (tests/fakes/fake_libnvidia_ml.c): GPU i draws 100000 + 1000 i mW at 40 + i C.
g=
for _ in $(seq 40); do
  g=$(query 'gpuobs_gpu_metric{metric=~"power_mw|temperature_c"}' | sort | tr '\n' ' ')
  [[ -n $g ]] && break
  sleep 0.25
done
want_g="gpu=GPU-fake-0000-0000,metric=power_mw 100000 gpu=GPU-fake-0000-0000,metric=temperature_c 40 \
gpu=GPU-fake-0000-0001,metric=power_mw 101000 gpu=GPU-fake-0000-0001,metric=temperature_c 41 "
[[ $g == "$want_g" ]] || fail "prometheus: GPU metrics are '$g', want '$want_g'"
info=$(query 'gpuobs_gpu_info' | sort | tr '\n' ' ')
[[ $info == "gpu=GPU-fake-0000-0000,name=Fake H100 0 1 gpu=GPU-fake-0000-0001,name=Fake H100 1 1 " ]] ||
  fail "prometheus: gpuobs_gpu_info is '$info'"
echo "prometheus: $g"
procs=$(query 'gpuobs_gpu_processes')
[[ ${procs##* } -ge 1 ]] || fail "gpuobs_gpu_processes is '$procs'"
