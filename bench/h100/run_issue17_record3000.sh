#!/usr/bin/env bash
# Issue 17: a 3000-step PyTorch recording alone, with a thread snapshot at 45 s (the
# full script once stopped at its time limit there). usage: as root, from the repo root.
B=.device-build; OUT=/tmp/o; mkdir -p $OUT; PY=/opt/torch/.venv/bin/python3
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing
( sleep 45; echo "--- at 45 s"; top -b -n1 -H | head -25 ) &
timeout 150 "$B/gpuobs" record -f -o "$OUT/train3000.gpuobs" -- $PY bench/h100/torch_transformer_train.py 3000 2>&1 | tail -5
echo "record rc ${PIPESTATUS[0]}"
ls -la $OUT/
"$B/gpuobs" report capture "$OUT/train3000.gpuobs" 2>&1 | grep -E "state|stored_launch|dropped_store|failed"
