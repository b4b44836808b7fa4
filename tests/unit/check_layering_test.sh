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

# A fresh copy of the scanned rooms (the script scans nothing else).
fresh() {
  rm -rf "$tmp/tree" && mkdir "$tmp/tree"
  for d in bpf userspace cli daemon examples bench tests; do cp -r "$src/$d" "$tmp/tree/"; done
}
# expect_fail FILE EXPECTED: the check exits 1 and prints EXPECTED.
expect_fail() {
  local rc=0
  "$check" "$tmp/tree" >"$tmp/out" 2>&1 || rc=$?
  cat "$tmp/out"
  [ "$rc" = 1 ] || fail "check exited $rc, want 1"
  grep -qF -- "$1" "$tmp/out" || fail "output does not say: $1"
  [ "$(grep -c ':[0-9]*: ' "$tmp/out")" = 1 ] || fail "want exactly one finding"
}

fresh
"$check" "$tmp/tree" >/dev/null || fail "the unchanged copy does not pass"

# A room above: the store including the CLI.
echo '#include "cli/commands.h"' >>"$tmp/tree/userspace/store/db.h"
line=$(wc -l <"$tmp/tree/userspace/store/db.h")
expect_fail "userspace/store/db.h:$line: store includes \"cli/commands.h\" from cli (above"

# A peer: the CLI including the daemon's code again.
fresh
sed -i '0,/#include "daemon_state\/segments.h"/s//#include "daemon\/config.h"/' "$tmp/tree/cli/status.cpp"
line=$(grep -n '#include "daemon/config.h"' "$tmp/tree/cli/status.cpp" | cut -d: -f1)
[ -n "$line" ] || fail "cli/status.cpp no longer includes daemon_state/segments.h: update this test"
expect_fail "cli/status.cpp:$line: cli includes \"daemon/config.h\" from daemon (a peer"

# An include the script cannot place is a failure, not a pass.
fresh
echo '#include "nowhere/missing.h"' >>"$tmp/tree/userspace/common/log.h"
line=$(wc -l <"$tmp/tree/userspace/common/log.h")
expect_fail "userspace/common/log.h:$line: cannot place \"nowhere/missing.h\""
echo "PASS: the layering check fails on an include from above, from a peer and from nowhere"
