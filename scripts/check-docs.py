#!/usr/bin/env python3
"""Every repository path a document names exists (issue 40).

Scans the tracked Markdown files for `code spans` that look like paths into
this repository (their first component is a top-level entry of the tree)
and fails listing doc:line: path for each one that names nothing. A path
counts as existing when it is a tracked file or folder (relative to the
root or to the document's folder), a file configured from PATH.in, or a
program built from PATH.c/.cc/.cpp. Placeholders are left alone: a
component in capitals (NAME, ROOM, STEP), globs and braces.
  scripts/check-docs.py [ROOT]      exit 0: all exist; 1: stale paths listed
"""
import os
import re
import subprocess
import sys

SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".in", ".py", ".sh")


def tracked_files(root):
    out = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True, check=True).stdout
    return {p.decode() for p in out.split(b"\0") if p}


def folders_of(files):
    dirs = set()
    for f in files:
        d = os.path.dirname(f)
        while d and d not in dirs:
            dirs.add(d)
            d = os.path.dirname(d)
    return dirs


def is_placeholder(path):
    if any(c in path for c in "*?{}<>$"):
        return True
    # NAME.sql, tests/unit/ROOM/NAME_test.cpp: a capitalised word is a blank to fill in.
    return any(re.search(r"(^|[/_.])[A-Z]{3,}([/_.]|$)", part) for part in path.split("/"))


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    files = tracked_files(root)
    dirs = folders_of(files)
    tops = {f.split("/")[0] for f in files}

    def exists(p):
        return p in files or p in dirs or any(p + s in files for s in SOURCE_SUFFIXES)

    stale = []
    for doc in sorted(f for f in files if f.endswith(".md")):
        with open(os.path.join(root, doc), encoding="utf-8") as fh:
            text = fh.read()
        for m in re.finditer(r"`([A-Za-z0-9_.\-/*{}<>$?]+)`", text):
            p = m.group(1).rstrip("/")
            if p.startswith("./"):
                p = p[2:]
            if "/" not in p or p.startswith("/") or ".." in p or p.split("/")[0] not in tops:
                continue
            if is_placeholder(p) or exists(p) or exists(os.path.normpath(os.path.join(os.path.dirname(doc), p))):
                continue
            stale.append(f"{doc}:{text.count(chr(10), 0, m.start()) + 1}: {p}")
    for s in stale:
        print(s)
    if stale:
        print(f"check-docs: {len(stale)} path(s) named by the documents do not exist", file=sys.stderr)
        return 1
    print(f"check-docs: every repository path named by {sum(f.endswith('.md') for f in files)} documents exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
