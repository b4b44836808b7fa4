#!/usr/bin/env bash
# Measures which capabilities gpuobsd needs (docs/operations.md, "Security
# model"): runs it under setpriv with a reduced capability set, as root (the
# systemd unit's case: uid 0, CapabilityBoundingSet) and as an unprivileged
# user with ambient capabilities, while a process of ANOTHER user (nobody)
# makes 200 launches through a fake libcuda. Prints one line per set: exit
# status, launches stored for that process, /proc reads that failed, and the
# daemon's first error. Launches are given as A/B: A through the library
# named with --libcuda, B through a copy found in the process's maps. Run as root; needs a built gpuobsd (and gcc).
# usage: [ONLY="label ..."] measure-caps.sh GPUOBSD_BIN
set -uo pipefail
gpuobsd=$1
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/gpuobs-caps.XXXXXX)
chmod 0755 "$work"
trap 'rm -rf "$work"' EXIT
gcc -shared -fPIC -O1 -fno-omit-frame-pointer -fno-optimize-sibling-calls -fvisibility=hidden \
    -Wl,-soname,libcuda.so.1 -o "$work/libcuda.so.1" "$src/tests/fakes/fake_libcuda.c"
mkdir "$work/copy" && cp "$work/libcuda.so.1" "$work/copy/" && chmod 0755 "$work/copy"
cat > "$work/workload.py" <<'PY'
import ctypes, time
lib = ctypes.CDLL(__import__("sys").argv[1])
lib.cuInit(0)
time.sleep(0.3)  # let the daemon read our mappings
for _ in range(200):
    lib.cuLaunchKernel(None, 1, 1, 1, 1, 1, 1, 0, None, None, None)
time.sleep(0.2)
PY

# user "unit": uid 0 exactly as systemd/gpuobsd.service sets it up:
# SecureBits=noroot-locked (uid 0 gains nothing at execve), NoNewPrivileges,
# CapabilityBoundingSet = AmbientCapabilities = the caps given. With noroot
# only the ambient set survives the execve, so an empty ambient set ("unit_noamb")
# leaves gpuobsd with no capability at all.
run() {  # label, user (root|nobody|unit|unit_noamb), caps (comma list, no CAP_ prefix, lower case)
  local label=$1 user=$2 caps=$3 dir="$work/$1" spec="-all"
  [[ -n ${ONLY:-} && " $ONLY " != *" $label "* ]] && return 0
  for c in ${caps//,/ }; do spec+=",+$c"; done
  mkdir "$dir" && chmod 0777 "$dir"
  local who=() amb=$spec
  [[ $user == nobody ]] && who=(--reuid=65534 --regid=65534 --clear-groups)
  [[ $user == unit* ]] && who=(--securebits=+noroot,+noroot_locked --no-new-privs)
  [[ $user == unit_noamb ]] && amb="-all"
  setpriv "${who[@]}" --inh-caps="$spec" --ambient-caps="$amb" --bounding-set="$spec" -- \
    "$gpuobsd" --config /dev/null --db "$dir/c.gpuobs" --status-file "$dir/status.json" --libcuda "$work/libcuda.so.1" -v info >"$dir/log" 2>&1 &
  local d=$!
  sleep 2
  local capeff
  capeff=$(awk '/^CapEff/ {print $2}' /proc/$d/status 2>/dev/null)
  setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 "$work/workload.py" "$work/libcuda.so.1" &
  local w=$!
  wait $w
  # The same library copied elsewhere and preloaded: found only through /proc/PID/maps.
  setpriv --reuid=65534 --regid=65534 --clear-groups env LD_PRELOAD="$work/copy/libcuda.so.1" \
    /usr/bin/python3 "$work/workload.py" "$work/copy/libcuda.so.1" &
  local c=$!
  wait $c
  sleep 1
  kill -TERM $d 2>/dev/null
  wait $d
  local rc=$? launches="-" unreadable="-"
  if [[ -f $dir/c.gpuobs ]]; then
    launches=$(sqlite3 "$dir/c.gpuobs" "SELECT count(*) FROM kernel_launches WHERE tgid=$w" 2>/dev/null)/$(sqlite3 "$dir/c.gpuobs" "SELECT count(*) FROM kernel_launches WHERE tgid=$c" 2>/dev/null)
    unreadable=$(sqlite3 "$dir/c.gpuobs" "SELECT group_concat(name||'='||value) FROM counters WHERE value>0 AND (name LIKE '%unreadable%' OR name LIKE '%unopened%')" 2>/dev/null)
  fi
  local err
  err=$(grep -m1 -iE 'error|fail|denied|not permitted' "$dir/log" | cut -c1-150)
  printf '%-10s %-10s %-46s CapEff=%-16s rc=%-3s launches=%-4s proc=%-40s %s\n' "$label" "$user" "$caps" "${capeff:--}" "$rc" "$launches" "${unreadable:-ok}" "$err"
}

run all        root   "$(capsh --print | sed -n 's/^Bounding set =//p' | tr -d ' ' | sed 's/cap_//g')"
run none       root   ""
run bpf        root   bpf
run perfmon    root   perfmon
run sysadmin   root   sys_admin
run bp         root   bpf,perfmon
# CAP_SYS_RESOURCE: not in this test VM's bounding set; the "all" run shows it is not needed.
run bp_ptr     root   bpf,perfmon,sys_ptrace
run bp_ptr_dac root   bpf,perfmon,sys_ptrace,dac_read_search
run bp_ptr_adm root   bpf,perfmon,sys_ptrace,sys_admin
run u_bp_ptr   nobody bpf,perfmon,sys_ptrace
run u_bp_ptr_d nobody bpf,perfmon,sys_ptrace,dac_read_search
run u_bp_ptr_o nobody bpf,perfmon,sys_ptrace,dac_override
run u_all      nobody bpf,perfmon,sys_ptrace,dac_read_search,sys_admin
run unit       unit   bpf,perfmon,sys_ptrace
run unit_noamb unit_noamb bpf,perfmon,sys_ptrace
