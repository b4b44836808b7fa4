#!/usr/bin/env bash
# The systemd unit as systemd itself judges it:
#  - `systemd-analyze security --offline=true`: prints the table, fails above
#    the exposure target of issue 8 (2.0);
#  - LimitNOFILE, TasksMax and MemoryMax are set (issue 15);
#  - `systemd-analyze verify`: no unknown directive, bad value or missing
#    binary (ExecStart pointed at the built gpuobsd; man pages not required
#    here: the package test checks them).
# UNIT is the template systemd/gpuobsd.service.in, judged as the .deb installs
# it (@GPUOBS_BINDIR@ = /usr/bin).
# usage: unit_security_test.sh UNIT_TEMPLATE GPUOBSD_BIN
set -euo pipefail
template=$1 gpuobsd=$2
max=2.0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
grep -q '^ExecStart=@GPUOBS_BINDIR@/gpuobsd ' "$template" || { echo "FAIL: ExecStart is not @GPUOBS_BINDIR@/gpuobsd" >&2; exit 1; }
mkdir "$tmp/usr"
unit=$tmp/usr/gpuobsd.service
sed 's|@GPUOBS_BINDIR@|/usr/bin|' "$template" > "$unit"
grep -qE '@[A-Z_]+@' "$unit" && { echo "FAIL: unfilled @VAR@ in the unit" >&2; exit 1; }

out=$(systemd-analyze security --offline=true --no-pager "$unit" 2>&1) || true
printf '%s\n' "$out"
level=$(printf '%s\n' "$out" | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
if [[ -z $level ]]; then
  echo "FAIL: no exposure level in the output of systemd-analyze security" >&2
  exit 1
fi
if awk -v l="$level" -v m="$max" 'BEGIN { exit !(l > m) }'; then
  echo "FAIL: exposure $level is above $max" >&2
  exit 1
fi
echo "exposure $level <= $max"

# Resource ceilings (issue 15): without them a flood of metrics connections
# or a leak could take every fd, task or byte of the host.
for key in LimitNOFILE TasksMax MemoryMax; do
  grep -qE "^$key=[0-9]+[KMG]?$" "$unit" || { echo "FAIL: the unit sets no $key" >&2; exit 1; }
done
echo "resource limits: $(grep -E '^(LimitNOFILE|TasksMax|MemoryMax)=' "$unit" | tr '\n' ' ')"

sed "s|^ExecStart=/usr/bin/gpuobsd |ExecStart=$gpuobsd |" "$unit" > "$tmp/gpuobsd.service"
if ! verify=$(systemd-analyze verify --man=no "$tmp/gpuobsd.service" 2>&1) || [[ -n $verify ]]; then
  printf 'FAIL: systemd-analyze verify:\n%s\n' "$verify" >&2
  exit 1
fi
echo "systemd-analyze verify: clean"
