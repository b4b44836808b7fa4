#!/usr/bin/env bash
# Issue 39: what a GPU host shows of DRM: render nodes and their drivers, the
# kernel's GPU-scheduler and dma_fence tracepoints (names and formats), which
# processes hold DRM fds and their fdinfo. Prints only; changes nothing.
#   bench/h100/drm_host_check.sh     (root)
set -u
echo "kernel $(uname -r)"
echo "--- /dev/dri"; ls -la /dev/dri 2>&1
echo "--- /sys/class/drm"
for n in /sys/class/drm/*; do
  [ -e "$n/dev" ] || continue
  printf '%s dev=%s driver=%s\n' "$(basename "$n")" "$(cat "$n/dev")" "$(basename "$(readlink -f "$n/device/driver" 2>/dev/null)")"
done
echo "--- /proc/devices"; grep -i -E "drm|nvidia" /proc/devices
echo "--- modules"; grep -E "^(drm|nvidia|gpu_sched|drm_kms)" /proc/modules | cut -d' ' -f1,3,4
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
echo "--- tracepoint systems"; ls /sys/kernel/tracing/events | grep -i -E "drm|sched|fence|gpu|nvidia"
for sys in gpu_scheduler dma_fence drm; do
  [ -d /sys/kernel/tracing/events/$sys ] || { echo "--- $sys: none"; continue; }
  echo "--- $sys: $(ls /sys/kernel/tracing/events/$sys | grep -v -E '^(enable|filter)$' | tr '\n' ' ')"
done
for f in /sys/kernel/tracing/events/gpu_scheduler/*/format; do [ -f "$f" ] && { echo "--- $f"; cat "$f"; }; done
echo "--- drm_sched symbols"; grep -c " drm_sched_" /proc/kallsyms
echo "--- DRM fds and their fdinfo"
for p in /proc/[0-9]*; do
  for f in "$p"/fd/*; do
    l=$(readlink "$f" 2>/dev/null) || continue
    case $l in /dev/dri/*) echo "$p $(cat "$p/comm") $f -> $l"; cat "$p/fdinfo/${f##*/}";; esac
  done
done 2>/dev/null | head -40
