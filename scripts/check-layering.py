#!/usr/bin/env python3
"""Fails when a source file includes a header from a room above its own.

The rooms and their order are docs/design.md's (section "Layering"): every
#include "..." points down the list below or stays in its own room. Rooms on
one line are peers, and peers may NOT include each other: nothing in the tree
does today, and a peer arrow is the first step of a cycle.

    ./scripts/check-layering.py [REPO_ROOT]

Exit 0: every arrow points down. Exit 1: one line per wrong arrow,
"FILE:LINE: ROOM includes "HEADER" from ROOM (above|a peer)", and any other
problem (an include it cannot place, a room missing from LAYERS, a stale
allowlist entry). Registered as the CTest test `layering` (tests/CMakeLists.txt);
tests/unit/scripts/check_layering_test.sh (CTest `layering_check_fails`) proves it fails.
"""

import os
import re
import sys

# Bottom first. Must match docs/design.md, "Layering".
LAYERS = [
    ["bpf", "common"],
    # The API and ioctl catalogues (ApiSpec, the ioctl rule table, driver_from_name),
    # moving out of decode/ (issue 16): below everything that reads them.
    ["catalogue"],
    ["stacks"],
    # Peers: the loader attaches probes and hands out ring bytes, the decoder
    # reads them; neither needs the other (the tables both read are the catalogue's).
    # gpu_metrics (NVML, AMD sysfs, the sampler) needs only common; the store writes its samples.
    # gpu_time (the CUPTI activity file, its reader and the join; docs/gpu_time.md) needs only common.
    ["decode", "loader", "gpu_metrics", "gpu_time"],
    ["store"],
    ["capture", "report", "replay", "daemon_state", "diff"],
    ["export", "fleet"],
    # The two binaries are peers: what both need lives in a room below them
    # (daemon_state), never in one binary's directory.
    ["daemon", "cli"],
    # The bundled CUDA example: it includes nothing of ours; tests/gpu builds its PTX in.
    # inject: the CUPTI injection library (inject/cupti/), loaded into the traced program; it
    # includes only gpu_time/activity_format.h. Nothing includes it.
    # exec: the schedule executor (gpuobs_replay_exec); it reads the schedule's JSON, includes nothing of ours.
    ["examples", "inject", "exec"],
    # Tests and benchmarks: programs over the whole tree. A benchmark may reuse
    # a test workload's header (bench/pipeline_bench.cpp: its launch truth);
    # nothing includes a benchmark.
    ["tests"],
    ["bench"],
]
LEVEL = {room: i for i, line in enumerate(LAYERS) for room in line}

# Arrows that are wrong but known, each to be deleted by the change that fixes
# it: a listed arrow that is no longer in the tree fails the check too, so the
# list cannot outlive its reason.
ALLOWED: set = set()

# Where the files are read from, and the include directories CMake gives them
# (besides the including file's own directory), in search order.
SCAN = ["bpf", "userspace", "cli", "daemon", "examples", "inject", "exec", "bench", "tests"]
INCLUDE_DIRS = ["userspace", ".", "bpf", "bpf/vmlinux", "daemon", "tests", "tests/unit", "tests/integration",
                "tests/fuzz"]
# Headers generated at build time, by the room whose build makes them.
GENERATED = {
    "version.h": "common",          # userspace/version.h.in
    "gpuobs.skel.h": "bpf",         # bpftool gen skeleton
}
GENERATED_SUFFIX = {".pb.h": "export"}  # protoc, userspace/export/proto
SOURCE_EXT = (".c", ".cc", ".cpp", ".h", ".hpp")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def room_of(rel):
    """The room of a repository-relative path, or None outside the rooms."""
    parts = rel.split("/")
    if parts[0] == "userspace":
        return parts[1] if len(parts) > 2 else None
    if parts[0] in SCAN:
        return parts[0]
    return None


def resolve(root, src_rel, header):
    """The room of what `#include "header"` in src_rel names, or None."""
    here = os.path.dirname(src_rel)
    for d in [here] + INCLUDE_DIRS:
        cand = os.path.normpath(os.path.join(d, header))
        if not cand.startswith("..") and os.path.isfile(os.path.join(root, cand)):
            return room_of(cand)
    base = os.path.basename(header)
    if header in GENERATED:
        return GENERATED[header]
    for suffix, room in GENERATED_SUFFIX.items():
        if base.endswith(suffix):
            return room
    return None


def sources(root):
    for top in SCAN:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames[:] = sorted(d for d in dirnames if d not in ("vmlinux", "corpus"))
            for f in sorted(filenames):
                if f.endswith(SOURCE_EXT):
                    yield os.path.relpath(os.path.join(dirpath, f), root)


def check(root):
    errors, seen_allowed = [], set()
    for rel in sources(root):
        src_room = room_of(rel)
        if src_room is None:
            continue
        if src_room not in LEVEL:
            errors.append(f"{rel}: room '{src_room}' is not in LAYERS (scripts/check-layering.py, docs/design.md)")
            continue
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                m = INCLUDE_RE.match(line)
                if not m:
                    continue
                header = m.group(1)
                dst_room = resolve(root, rel, header)
                if dst_room is None:
                    errors.append(f"{rel}:{lineno}: cannot place \"{header}\" in a room")
                    continue
                if dst_room == src_room:
                    continue
                if dst_room not in LEVEL:
                    errors.append(f"{rel}:{lineno}: room '{dst_room}' of \"{header}\" is not in LAYERS")
                    continue
                if LEVEL[dst_room] < LEVEL[src_room]:
                    continue
                if (rel, header) in ALLOWED:
                    seen_allowed.add((rel, header))
                    continue
                how = "a peer" if LEVEL[dst_room] == LEVEL[src_room] else "above"
                errors.append(f"{rel}:{lineno}: {src_room} includes \"{header}\" from {dst_room} ({how}: "
                              f"{layer_text(src_room)} must include only rooms below it)")
    for rel, header in sorted(ALLOWED - seen_allowed):
        errors.append(f"{rel}: allowlisted include \"{header}\" is gone: delete it from ALLOWED "
                      f"(scripts/check-layering.py)")
    return errors


def layer_text(room):
    return f"{room} (layer {LEVEL[room]}: {', '.join(LAYERS[LEVEL[room]])})"


def main(argv):
    root = os.path.abspath(argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    errors = check(root)
    for e in errors:
        print(e)
    if errors:
        print(f"layering: {len(errors)} problem(s); the order is in docs/design.md, \"Layering\"", file=sys.stderr)
        return 1
    print("layering: every include points down: " + " -> ".join(", ".join(l) for l in LAYERS))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
