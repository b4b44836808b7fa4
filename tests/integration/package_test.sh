#!/usr/bin/env bash
# The .deb as an administrator would check it: cpack builds it from this build
# tree; dpkg-deb must list every installed file and the control fields; the
# unpacked gpuobsd must run (--version) and its unit must verify against the
# unpacked tree.
# usage: package_test.sh BUILD_DIR VERSION
set -euo pipefail
build=$1 version=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cpack -G DEB -B "$tmp/out" --config "$build/CPackConfig.cmake" >"$tmp/cpack.log" 2>&1 || { cat "$tmp/cpack.log"; fail "cpack"; }
deb=$tmp/out/gpuobs_${version}_amd64.deb
[[ -f $deb ]] || { ls "$tmp/out"; fail "no $deb"; }

listing=$(dpkg-deb -c "$deb")
printf '%s\n' "$listing"
for f in ./usr/bin/gpuobs ./usr/bin/gpuobsd ./usr/lib/systemd/system/gpuobsd.service \
         ./usr/lib/sysusers.d/gpuobs.conf ./usr/lib/tmpfiles.d/gpuobs.conf ./etc/gpuobs/gpuobsd.conf \
         ./usr/share/man/man8/gpuobsd.8 ./usr/share/man/man1/gpuobs.1 ./usr/share/doc/gpuobs/operations.md \
         ./usr/share/man/man1/gpuobs-record.1 ./usr/share/man/man1/gpuobs-report.1 ./usr/share/man/man1/gpuobs-sql.1 \
         ./usr/share/man/man1/gpuobs-stacks.1 ./usr/share/man/man1/gpuobs-export-perfetto.1 \
         ./usr/share/man/man1/gpuobs-export-chrome.1 ./usr/share/man/man1/gpuobs-export-pprof.1 ./usr/share/man/man1/gpuobs-export-html.1 \
         ./usr/share/man/man1/gpuobs-export-folded.1 ./usr/share/man/man1/gpuobs-replay.1 \
         ./usr/share/man/man1/gpuobs-status.1 ./usr/share/man/man1/gpuobs-segments.1 \
         ./usr/share/man/man1/gpuobs-check.1 ./usr/share/man/man1/gpuobs-upgrade.1 \
         ./usr/share/doc/gpuobs/schema.md ./usr/share/doc/gpuobs/reports.md ./usr/share/doc/gpuobs/export.md \
         ./usr/share/bash-completion/completions/gpuobs \
         ./usr/share/doc/gpuobs/examples/gpuobsd-metrics.conf ./usr/lib/gpuobs/gpuobs_replay_exec \
         ./usr/lib/gpuobs/libgpuobs_cupti_inject.so; do
  grep -qE " $f\$" <<<"$listing" || fail "$f is not in the package"
done
grep -qE '^-rwxr-xr-x root/root .* \./usr/bin/gpuobsd$' <<<"$listing" || fail "gpuobsd is not 0755 root:root"

info=$(dpkg-deb -I "$deb")
printf '%s\n' "$info"
field() { dpkg-deb -f "$deb" "$1"; }
[[ $(field Package) == gpuobs ]] || fail "Package: $(field Package)"
[[ $(field Version) == "$version" ]] || fail "Version: $(field Version)"
[[ $(field Architecture) == amd64 ]] || fail "Architecture: $(field Architecture)"
[[ $(field Depends) == "libc6 (>= 2.36)" ]] || fail "Depends: $(field Depends)"
[[ $(field Section) == admin ]] || fail "Section: $(field Section)"
[[ -n $(field Maintainer) && -n $(field Description) ]] || fail "no Maintainer or Description"

mkdir "$tmp/ctl" "$tmp/root"
dpkg-deb -e "$deb" "$tmp/ctl"
[[ $(cat "$tmp/ctl/conffiles") == /etc/gpuobs/gpuobsd.conf ]] || fail "conffiles: $(cat "$tmp/ctl/conffiles")"
grep -q 'systemd-sysusers /usr/lib/sysusers.d/gpuobs.conf' "$tmp/ctl/postinst" || fail "postinst runs no systemd-sysusers"
grep -q 'systemd-tmpfiles --create /usr/lib/tmpfiles.d/gpuobs.conf' "$tmp/ctl/postinst" || fail "postinst runs no systemd-tmpfiles"
grep -qE 'systemctl (enable|start)' "$tmp/ctl/postinst" && fail "postinst enables or starts the service"
[[ -x $tmp/ctl/prerm ]] || fail "no executable prerm"
grep -q 'deb-systemd-invoke stop gpuobsd.service' "$tmp/ctl/prerm" || fail "prerm does not stop gpuobsd.service"

dpkg-deb -x "$deb" "$tmp/root"
got=$("$tmp/root/usr/bin/gpuobsd" --version)
[[ $got == "$version" ]] || fail "gpuobsd --version: '$got'"
got=$("$tmp/root/usr/bin/gpuobs" --version)
[[ $got == "$version" ]] || fail "gpuobs --version: '$got'"
# Only glibc is shared (GPUOBS_STATIC): nothing else is needed on the host.
needed=$(objdump -p "$tmp/root/usr/bin/gpuobsd" | awk '/NEEDED/ {print $2}' | sort | tr '\n' ' ')
for lib in $needed; do
  [[ $lib =~ ^(libc|libm|libpthread|libdl|librt|ld-linux-x86-64)\.so ]] || fail "gpuobsd needs $lib"
done
echo "gpuobsd NEEDED: $needed"
# The packaged unit starts the packaged binary.
exec_start=$(sed -n 's/^ExecStart=\([^ ]*\) .*/\1/p' "$tmp/root/usr/lib/systemd/system/gpuobsd.service")
[[ $exec_start == /usr/bin/gpuobsd && -x $tmp/root$exec_start ]] || fail "packaged unit's ExecStart: '$exec_start'"
# `cmake --install --prefix /usr/local`: the unit names /usr/local/bin/gpuobsd.
DESTDIR=$tmp/local cmake --install "$build" --prefix /usr/local >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "cmake --install"; }
exec_start=$(sed -n 's/^ExecStart=\([^ ]*\) .*/\1/p' "$tmp/local/usr/local/lib/systemd/system/gpuobsd.service")
[[ $exec_start == /usr/local/bin/gpuobsd && -x $tmp/local$exec_start ]] || fail "--prefix /usr/local unit's ExecStart: '$exec_start'"
echo "ExecStart: /usr/bin/gpuobsd (.deb), /usr/local/bin/gpuobsd (--prefix /usr/local)"
# verify needs the host's units (sysinit.target): the packaged unit, pointed
# at the packaged binary.
sed "s|^ExecStart=/usr/bin/gpuobsd |ExecStart=$tmp/root/usr/bin/gpuobsd |" \
  "$tmp/root/usr/lib/systemd/system/gpuobsd.service" > "$tmp/gpuobsd.service"
if ! v=$(systemd-analyze verify --man=no "$tmp/gpuobsd.service" 2>&1) || [[ -n $v ]]; then
  fail "systemd-analyze verify of the packaged unit: $v"
fi
man -l "$tmp/root/usr/share/man/man8/gpuobsd.8" 2>/dev/null | grep -q -- '--config' || fail "gpuobsd.8 does not document --config"
# Each subcommand's page documents its own options and points to the schema.
page=$(man -l "$tmp/root/usr/share/man/man1/gpuobs-record.1" 2>/dev/null)
grep -q -- '--stack-depth' <<<"$page" || fail "gpuobs-record.1 does not document --stack-depth"
grep -q 'gpuobs record \[OPTIONS\]' <<<"$page" || fail "gpuobs-record.1 synopsis: $(head -8 <<<"$page")"
grep -q 'schema.md' <<<"$page" || fail "gpuobs-record.1 does not point to schema.md"
man -l "$tmp/root/usr/share/man/man1/gpuobs-export-pprof.1" 2>/dev/null | grep -q -- '--by-process' ||
  fail "gpuobs-export-pprof.1 does not document --by-process"
echo "package ok: $deb"
