#!/usr/bin/env bash
# clang-tidy (the checks of .clang-tidy) on the C++ files changed against a
# base ref, with each file's own compile command. build/ is a unity build
# (scripts/build.sh), whose commands compile batches: the files are checked
# with the commands of build-tidy/, the same configuration one file per
# compiler run, configured here; only its generated sources (the BPF
# skeleton, protobuf, embedded SQL and HTML) are built, never the objects.
#   scripts/tidy-changed.sh [BASE]   BASE: a git ref; default origin/main, else main
# Changed means: differs between the merge base of BASE and HEAD, and the
# working tree (committed or not). A changed header is checked through the
# .cpp of the same name. Only files of this build are checked (the fuzz
# targets have their own clang build). Nothing changed, or no base ref to
# compare with: it says so and passes, so CI on main itself checks nothing.
# Called by scripts/test.sh (so by CI) after the build; GPUOBS_TIDY=0 skips it.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-tidy >/dev/null || { echo "tidy-changed: clang-tidy missing: scripts/install-deps.sh" >&2; exit 1; }

base=${1:-}
if [ -n "$base" ] && ! git rev-parse -q --verify "$base^{commit}" >/dev/null 2>&1; then
  echo "tidy-changed: $base is not a commit" >&2
  exit 2
fi
if [ -z "$base" ]; then
  for ref in origin/main main; do
    if git rev-parse -q --verify "$ref^{commit}" >/dev/null 2>&1; then base=$ref; break; fi
  done
fi
if [ -z "$base" ] || ! mb=$(git merge-base "$base" HEAD 2>/dev/null); then
  echo "tidy-changed: no base ref to compare with (origin/main, main): nothing to check"
  exit 0
fi

# Files changed since the merge base (deleted ones left out), .cpp for .h.
mapfile -t changed < <(git diff --name-only --diff-filter=ACMR "$mb" -- '*.cpp' '*.cc' '*.h' '*.hpp')
declare -A want=()
for f in "${changed[@]}"; do
  case $f in
    *.h|*.hpp) f=${f%.*}.cpp ;;
  esac
  [ -f "$f" ] && want[$PWD/$f]=1
done
if ((${#want[@]} == 0)); then
  echo "tidy-changed: no C++ file changed since $base ($mb): nothing to check"
  exit 0
fi
# Per-file compile commands: build-tidy/, configured like build/ but not unity.
tb=build-tidy
if [ ! -f "$tb/CMakeCache.txt" ]; then
  gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  cmake -S . -B "$tb" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUOBS_WERROR=ON -DGPUOBS_DEBUG_LINES_ONLY=ON \
    -DCMAKE_UNITY_BUILD=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
else
  cmake "$tb" >/dev/null
fi
# The sources and headers custom commands generate, which the files include.
mapfile -t generated < <(ninja -C "$tb" -t targets all | sed -n 's/^\(.*\.\(h\|cc\|cpp\)\): CUSTOM_COMMAND$/\1/p')
((${#generated[@]} == 0)) || ninja -C "$tb" "${generated[@]}" >/dev/null
db=$tb/compile_commands.json
# ... that this build compiles.
mapfile -t files < <(python3 - "$db" "${!want[@]}" <<'EOF'
import json, os, sys
built = {os.path.realpath(e["file"]) for e in json.load(open(sys.argv[1]))}
for f in sorted(set(sys.argv[2:])):
    if os.path.realpath(f) in built:
        print(f)
EOF
)
if ((${#files[@]} == 0)); then
  echo "tidy-changed: no C++ file of this build changed since $base ($mb): nothing to check"
  exit 0
fi
echo "tidy-changed: clang-tidy on ${#files[@]} file(s) changed since $base"
# The compile commands are gcc's: clang must not stop at a gcc-only warning flag.
printf '%s\0' "${files[@]}" |
  xargs -0 -P "$(nproc)" -n 1 clang-tidy -p "$tb" --quiet --extra-arg=-Wno-unknown-warning-option
echo "tidy-changed: clean"
