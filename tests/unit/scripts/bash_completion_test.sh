#!/usr/bin/env bash
# packaging/bash-completion/gpuobs completes what the binary offers: its
# subcommands, export formats, report names (one, or the next after a comma),
# each subcommand's options, and option values (issue 20). Runs the real
# completion function against the built gpuobs, without bash-completion
# installed (the script falls back to COMP_WORDS).
# usage: bash_completion_test.sh SOURCE_DIR GPUOBS_BIN
set -uo pipefail
src=$1 gpuobs=$2
# shellcheck source=/dev/null
source "$src/packaging/bash-completion/gpuobs"
failed=0
# complete "WORD WORD ... CUR": the candidates for the last word, sorted, one line.
complete_line() {
  read -r -a COMP_WORDS <<<"$1"
  [[ $1 == *" " ]] && COMP_WORDS+=("")
  COMP_WORDS[0]=$gpuobs
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  _gpuobs
  printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' '
}
expect() {  # expect "LINE" WORD...: every WORD is a candidate
  local line=$1 got
  shift
  got=$(complete_line "$line")
  for w in "$@"; do
    [[ " $got" == *" $w "* ]] || { echo "FAIL: '$line' does not offer '$w' (got: $got)"; failed=1; }
  done
}
expect_not() {
  local line=$1 got
  shift
  got=$(complete_line "$line")
  for w in "$@"; do
    [[ " $got" != *" $w "* ]] || { echo "FAIL: '$line' offers '$w' (got: $got)"; failed=1; }
  done
}
expect "gpuobs " record report sql stacks export replay status segments check upgrade
expect "gpuobs re" record report replay
expect_not "gpuobs re" sql
expect "gpuobs export " folded perfetto chrome pprof html
expect "gpuobs report k" kern_sum
expect "gpuobs report kern_sum,api" kern_sum,api_sum
expect "gpuobs report " api_sum capture top_stacks
expect "gpuobs report --format csv k" kern_sum
# After the name (a flag without a value between them), capture files.
touch "${TMPDIR:-/tmp}/gpuobs-completion-test.gpuobs"
expect "gpuobs report --wide kern_sum ${TMPDIR:-/tmp}/gpuobs-completion-te" "${TMPDIR:-/tmp}/gpuobs-completion-test.gpuobs"
rm -f "${TMPDIR:-/tmp}/gpuobs-completion-test.gpuobs"
expect "gpuobs record --st" --stack-depth --stack-copy
expect "gpuobs record --unwind " fp dwarf bpf
expect "gpuobs report kern_sum --format " table json csv
expect "gpuobs export pprof --by" --by --by-process
expect "gpuobs stacks --by " launches blocked ioctls
expect "gpuobs sql --" --format --param --wide
expect_not "gpuobs record -- py" record
[[ $failed == 0 ]] && echo "bash completion ok"
exit $failed
