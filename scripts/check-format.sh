#!/usr/bin/env bash
# The tree is clang-format clean (issue 40): every C and C++ source in its
# room's style (.clang-format at the root: Google, 120 columns; bpf/ and
# tests/fakes/: the kernel style of their own .clang-format; the C test
# workloads, which clang-format 14 cannot tell from C++ by name, in
# bpf/.clang-format's). Lists each file that is not and exits 1.
#   scripts/check-format.sh [--fix]    --fix: format them in place
# Run by ctest (test `format`), so by CI.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "check-format: clang-format missing: scripts/install-deps.sh all" >&2; exit 1; }
mapfile -t cxx < <(git ls-files 'userspace/*.cpp' 'userspace/*.h' 'cli/*.cpp' 'cli/*.h' 'daemon/*.cpp' 'daemon/*.h' \
  'bench/*.cpp' 'bench/*.h' 'tests/*.cpp' 'tests/*.h' 'inject/*.cpp' 'inject/*.h' 'exec/*.cpp' 'exec/*.h' 'examples/*.cpp' 'examples/*.h' \
  'bpf/*.c' 'bpf/*.h' 'tests/fakes/*.c' ':!bpf/vmlinux/*')
mapfile -t c_workloads < <(git ls-files 'tests/workloads/*.c')
if [ "${1:-}" = --fix ]; then
  clang-format -i "${cxx[@]}"
  clang-format -i --style=file:bpf/.clang-format "${c_workloads[@]}"
  exit 0
fi
# One clang-format per style over all its files: each finding is a
# "FILE:LINE:COL: error: code should be clang-formatted" line.
mapfile -t bad < <( { clang-format --dry-run -Werror "${cxx[@]}" 2>&1 || true
                      clang-format --dry-run -Werror --style=file:bpf/.clang-format "${c_workloads[@]}" 2>&1 || true; } |
                    sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' | sort -u)
if ((${#bad[@]})); then
  printf 'check-format: not clang-format clean: %s\n' "${bad[@]}"
  echo "check-format: ${#bad[@]} of $(( ${#cxx[@]} + ${#c_workloads[@]} )) files; scripts/check-format.sh --fix formats them" >&2
  exit 1
fi
echo "check-format: $(( ${#cxx[@]} + ${#c_workloads[@]} )) files clang-format clean"
