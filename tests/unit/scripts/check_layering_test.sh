#!/usr/bin/env bash
# scripts/check-layering.py can fail: on a copy of the tree with one wrong
# include it exits 1 and names the file, the line and both rooms. Three
# cases: an include from a room above (store -> cli), from a peer
# (cli -> daemon: the arrow issue 16 removed), and one it cannot place.
# Usage: check_layering_test.sh SOURCE_DIR
set -euo pipefail
src=${1:?source dir}
check=$src/scripts/check-layering.py
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# One copy of the scanned rooms (the script scans nothing else); each case
# edits one file and restore puts it back.
mkdir "$tmp/tree"
for d in bpf userspace cli daemon examples inject exec bench tests; do cp -r "$src/$d" "$tmp/tree/"; done
edit() { cp "$tmp/tree/$1" "$tmp/saved"; edited=$1; }
restore() { cp "$tmp/saved" "$tmp/tree/$edited"; }
# expect_fail FILE EXPECTED: the check exits 1 and prints EXPECTED.
expect_fail() {
  local rc=0
  "$check" "$tmp/tree" >"$tmp/out" 2>&1 || rc=$?
  cat "$tmp/out"
  [ "$rc" = 1 ] || fail "check exited $rc, want 1"
  grep -qF -- "$1" "$tmp/out" || fail "output does not say: $1"
  [ "$(grep -c ':[0-9]*: ' "$tmp/out")" = 1 ] || fail "want exactly one finding"
}

"$check" "$tmp/tree" >/dev/null || fail "the unchanged copy does not pass"

# A room above: the store including the CLI.
edit userspace/store/db.h
echo '#include "cli/commands.h"' >>"$tmp/tree/userspace/store/db.h"
line=$(wc -l <"$tmp/tree/userspace/store/db.h")
expect_fail "userspace/store/db.h:$line: store includes \"cli/commands.h\" from cli (above"

restore

# A peer: the CLI including the daemon's code again.
edit cli/status.cpp
sed -i '0,/#include "daemon_state\/segments.h"/s//#include "daemon\/config.h"/' "$tmp/tree/cli/status.cpp"
line=$(grep -n '#include "daemon/config.h"' "$tmp/tree/cli/status.cpp" | cut -d: -f1)
[ -n "$line" ] || fail "cli/status.cpp no longer includes daemon_state/segments.h: update this test"
expect_fail "cli/status.cpp:$line: cli includes \"daemon/config.h\" from daemon (a peer"

restore

# An include the script cannot place is a failure, not a pass.
edit userspace/common/log.h
echo '#include "nowhere/missing.h"' >>"$tmp/tree/userspace/common/log.h"
line=$(wc -l <"$tmp/tree/userspace/common/log.h")
expect_fail "userspace/common/log.h:$line: cannot place \"nowhere/missing.h\""
restore
"$check" "$tmp/tree" >/dev/null || fail "the restored copy does not pass"
echo "PASS: the layering check fails on an include from above, from a peer and from nowhere"
