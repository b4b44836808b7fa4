# Sourced by demo.sh and test.sh: root (with or without sudo), and long
# steps that say which step, how far and how long, their output in a log
# the message names (a build that prints nothing for 16 minutes looks hung).
#   as_root "$@"           re-runs the script through sudo when not root
#   step LOG TITLE CMD...  runs CMD, its output into build/logs/LOG.log
# GPUOBS_QUIET_STEPS=1: no progress lines (tests of the demo's output).
# GPUOBS_STEP_LOG_ON_FAILURE=all: a failed step prints its whole log (CI,
# whose machine is gone afterwards), else its last 40 lines.

STEP_N=0
STEP_TOTAL=${STEP_TOTAL:-0}
STEP_T0=$(date +%s)

as_root() {
  [ "$(id -u)" = 0 ] && return 0
  if command -v sudo >/dev/null; then
    # The scripts cd to the repository's root before this: the script by that path.
    # Every GPUOBS_* setting goes along (sudo resets the environment).
    local keep
    keep=$(compgen -e | grep '^GPUOBS_' | paste -sd, -)
    exec sudo ${keep:+--preserve-env="$keep"} "$PWD/scripts/$(basename "$0")" "$@"
  fi
  echo "$(basename "$0"): BPF needs root, and sudo is not installed: run it as root (su -c '$PWD/scripts/$(basename "$0")')" >&2
  exit 1
}

_elapsed() { local s=$(( $(date +%s) - $1 )); printf '%dm%02ds' $((s / 60)) $((s % 60)); }

# How far a step is: ninja's "[k/n]", make's "[ p%]" or ctest's "k/n Test"
# from the end of its log.
_how_far() {
  local last
  last=$(tail -c 8192 "$1" 2>/dev/null | tr '\r' '\n' |
    grep -oE '^\[ *[0-9]+/[0-9]+\]|^\[ *[0-9]+%\]|^ *[0-9]+/ *[0-9]+ Test' | tail -1)
  [ -n "$last" ] || return 0
  if [[ $last =~ ([0-9]+)/([0-9]+) ]]; then
    local k=${BASH_REMATCH[1]} n=${BASH_REMATCH[2]}
    printf ' %d/%d (%d%%)' "$k" "$n" $((n ? 100 * k / n : 0))
  else
    printf ' %s' "$last"
  fi
}

step() {
  local log=$1 title=$2
  shift 2
  STEP_N=$((STEP_N + 1))
  mkdir -p build/logs
  local file=build/logs/$log.log t0 label
  t0=$(date +%s)
  label="[$STEP_N/$STEP_TOTAL] $title"
  [ "${GPUOBS_QUIET_STEPS:-0}" = 1 ] || printf '%s ...' "$label"
  "$@" >"$file" 2>&1 &
  local pid=$! tty=0 ticks=0
  [ -t 1 ] && tty=1
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    ticks=$((ticks + 1))
    [ "${GPUOBS_QUIET_STEPS:-0}" = 1 ] && continue
    if ((tty)); then
      printf '\r\033[K%s ...%s %s' "$label" "$(_how_far "$file")" "$(_elapsed "$t0")"
    elif ((ticks % 30 == 0)); then  # a log or CI: a line every 30 s
      printf '\n%s ...%s %s' "$label" "$(_how_far "$file")" "$(_elapsed "$t0")"
    fi
  done
  local rc=0
  wait "$pid" || rc=$?
  if ((rc)); then
    printf '\n%s: FAILED (exit %d) after %s; the last lines of %s:\n' "$label" "$rc" "$(_elapsed "$t0")" "$file" >&2
    if [ "${GPUOBS_STEP_LOG_ON_FAILURE:-tail}" = all ]; then cat "$file" >&2; else tail -n 40 "$file" >&2; fi
    exit "$rc"
  fi
  if [ "${GPUOBS_QUIET_STEPS:-0}" != 1 ]; then
    ((tty)) && printf '\r\033[K%s' "$label"
    printf ' done, %s (%s)\n' "$(_elapsed "$t0")" "$file"
  fi
}

steps_done() {
  [ "${GPUOBS_QUIET_STEPS:-0}" = 1 ] || printf 'all steps done in %s\n' "$(_elapsed "$STEP_T0")"
}
