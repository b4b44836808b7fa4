#!/usr/bin/env bash
# scripts/check-docs.py can fail: in a small git repository whose document
# names one file that exists, one folder, one program built from a .cpp,
# one configured .in file and placeholders, it passes; after one more
# path that names nothing, it exits 1 and names the document, the line and
# the path.
# Usage: check_docs_test.sh SOURCE_DIR
set -euo pipefail
check=${1:?source dir}/scripts/check-docs.py
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$tmp"
git init -q .
mkdir -p docs src/tools systemd
touch src/main.cpp src/tools/gen.cpp systemd/unit.service.in
cat > docs/guide.md <<'MD'
The code is in `src/main.cpp` and `src/tools/`; run `src/tools/gen`.
The unit `systemd/unit.service` comes from its `.in` file. A report is
`src/NAME.sql`; any `src/*.cpp`; outside the tree: `/etc/gpuobs/x.conf`.
MD
git add -A
"$check" "$tmp" || fail "the document names only what exists"
printf 'Line four.\nSee `src/gone.cpp` too.\n' >> docs/guide.md
rc=0
"$check" "$tmp" > out 2>&1 || rc=$?
cat out
[ "$rc" = 1 ] || fail "exited $rc, want 1"
grep -qx 'docs/guide.md:5: src/gone.cpp' out || fail "does not name docs/guide.md:5: src/gone.cpp"
echo "check_docs_test: ok"
