#!/usr/bin/env bash
# A member of group gpuobs reads gpuobsd's capture without root, while the
# daemon writes it (live WAL: read-only -wal/-shm) and after it stopped; a user
# outside the group cannot. The daemon runs as the unit runs it: uid 0,
# group gpuobs, umask 0027, in a 0750 root:gpuobs directory (tmpfiles.d).
# The launches of a process of a third user must all be visible to the reader.
# usage: group_access_test.sh GPUOBSD GPUOBS FAKE_LIBCUDA   (root, BPF)
set -euo pipefail
gpuobsd=$1 gpuobs=$2 fake=$3
reader=gpuobs-test-reader outsider=gpuobs-test-outsider
n=50
tmp=$(mktemp -d /tmp/gpuobs-access.XXXXXX)
chmod 0755 "$tmp"
daemon=
cleanup() {
  set +e
  [[ -n $daemon ]] && kill -TERM "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  userdel "$reader" 2>/dev/null || true
  userdel "$outsider" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [[ -f $tmp/daemon.log ]] && cat "$tmp/daemon.log" >&2; exit 1; }

getent group gpuobs >/dev/null || groupadd --system gpuobs
userdel "$reader" 2>/dev/null || true; userdel "$outsider" 2>/dev/null || true
useradd --no-create-home --no-user-group --gid nogroup --groups gpuobs "$reader"
useradd --no-create-home --no-user-group --gid nogroup "$outsider"
as() { local u=$1; shift; setpriv --reuid="$u" --regid=nogroup --init-groups -- "$@"; }

state=$tmp/state
install -d -m 0750 -o root -g gpuobs "$state"
cp "$fake" "$tmp/libcuda.so.1" && chmod 0755 "$tmp/libcuda.so.1"
db=$state/capture.gpuobs
setpriv --regid=gpuobs --clear-groups -- sh -c "umask 0027; exec '$gpuobsd' --db '$db' --libcuda '$tmp/libcuda.so.1'" \
  >"$tmp/daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do [[ -f $db-wal ]] && break; sleep 0.1; done
[[ -f $db-wal ]] || fail "gpuobsd wrote no live capture"
# Probes attached: the capture file exists before the BPF object is loaded
# and verified (1.6 s on the 2-core VM since the Python walk; a fixed 1 s
# sleep lost every launch).
for _ in $(seq 300); do grep -q "capturing to" "$tmp/daemon.log" && break; sleep 0.1; done
grep -q "capturing to" "$tmp/daemon.log" || fail "gpuobsd did not start capturing"

cat > "$tmp/workload.py" <<'PY'
import ctypes, sys, time
lib = ctypes.CDLL(sys.argv[1])
lib.cuInit(0)
time.sleep(0.2)
for _ in range(int(sys.argv[2])):
    lib.cuLaunchKernel(None, 1, 1, 1, 1, 1, 1, 0, None, None, None)
PY
setpriv --reuid=nobody --regid=nogroup --clear-groups -- /usr/bin/python3 "$tmp/workload.py" "$tmp/libcuda.so.1" $n &
wpid=$!
wait $wpid

for f in "$db" "$db-wal" "$db-shm"; do
  got=$(stat -c '%a %U %G' "$f")
  [[ $got == "640 root gpuobs" ]] || fail "$f is '$got', want '640 root gpuobs'"
done
[[ $(stat -c '%a %U %G' "$state") == "750 root gpuobs" ]] || fail "state dir is $(stat -c '%a %U %G' "$state")"

q="SELECT count(*) AS n FROM kernel_launches WHERE tgid = $wpid"
got=
for _ in $(seq 100); do  # the writer commits in batches
  got=$(as "$reader" "$gpuobs" sql "$q" "$db" --format csv | tail -n1) || fail "reader: gpuobs sql on the live capture"
  [[ $got == "$n" ]] && break
  sleep 0.1
done
[[ $got == "$n" ]] || fail "reader saw $got launches of pid $wpid in the live capture, want $n"
echo "live capture: the reader sees $got launches"
as "$reader" "$gpuobs" report capture "$db" >/dev/null || fail "reader: gpuobs report capture (live)"
if out=$(as "$outsider" "$gpuobs" sql "$q" "$db" --format csv 2>&1); then
  fail "a user outside group gpuobs read the capture: $out"
fi
echo "outsider refused: $out"

kill -TERM "$daemon"; wait "$daemon" || fail "gpuobsd exited with $?"
daemon=
got=$(as "$reader" "$gpuobs" sql "$q" "$db" --format csv | tail -n1) || fail "reader: gpuobs sql on the finished capture"
[[ $got == "$n" ]] || fail "reader saw $got launches in the finished capture, want $n"
[[ $(stat -c '%a %U %G' "$db") == "640 root gpuobs" ]] || fail "finished capture is $(stat -c '%a %U %G' "$db")"
echo "finished capture: the reader sees $got launches"
