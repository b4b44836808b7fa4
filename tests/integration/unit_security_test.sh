#!/usr/bin/env bash
# The systemd unit as systemd itself judges it:
#  - `systemd-analyze security --offline=true`: prints the table, fails above
#    the exposure target of issue 8 (2.0);
#  - `systemd-analyze verify`: no unknown directive, bad value or missing
#    binary (ExecStart pointed at the built gpuobsd; man pages not required
#    here: the package test checks them).
# usage: unit_security_test.sh UNIT GPUOBSD_BIN
set -euo pipefail
unit=$1 gpuobsd=$2
max=2.0

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

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
grep -q '^ExecStart=/usr/bin/gpuobsd ' "$unit" || { echo "FAIL: ExecStart is not /usr/bin/gpuobsd" >&2; exit 1; }
sed "s|^ExecStart=/usr/bin/gpuobsd |ExecStart=$gpuobsd |" "$unit" > "$tmp/gpuobsd.service"
if ! verify=$(systemd-analyze verify --man=no "$tmp/gpuobsd.service" 2>&1) || [[ -n $verify ]]; then
  printf 'FAIL: systemd-analyze verify:\n%s\n' "$verify" >&2
  exit 1
fi
echo "systemd-analyze verify: clean"
