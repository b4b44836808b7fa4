#!/usr/bin/env bash
# Syscall tracepoints are attached through tracefs: mount it if it is missing.
set -euo pipefail
if [ ! -d /sys/kernel/tracing/events/syscalls ] && [ ! -d /sys/kernel/debug/tracing/events/syscalls ]; then
  mount -t tracefs tracefs /sys/kernel/tracing
fi
