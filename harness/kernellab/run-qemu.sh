#!/usr/bin/env bash
# TCP-AO against a real Linux 6.12 with CONFIG_TCP_AO under qemu (the host
# kernel and Debian's packaged images lack it): kernel <-> kernel captures on
# lo, and live cases where the ao engine talks to the kernel over TUN.
#
# Usage: harness/kernellab/run-qemu.sh [--update] [--kernel-only]
#
#   (no flag)      build (or reuse) the kernel, boot it, run every guest case,
#                  check every capture on the host, print the table. Exit 0
#                  only if every case passed. Nothing in the tree is changed.
#   --update       also copy the fresh captures + manifest.json into
#                  testvectors/linux/ (for committing). Env: TCPSIG_UPDATE=1.
#   --kernel-only  install dependencies and build/cache the kernel, then stop.
#
# Exit codes: 0 pass, 1 failure, 77 skipped (qemu or the kernel source cannot
# be had on this machine; the reason is printed).
#
# Env: TCPSIG_CACHE (default <repo>/.cache/linux-ao), TCPSIG_GUEST_TIMEOUT
# (seconds, default 900, 2700 with netstack/'s tests), TCPSIG_CASES
# (comma-separated case-name filter passed to the guest; "netstack" also
# runs the gVisor tests of the netstack/ module), TCPSIG_NETSTACK=1 (those
# tests after a full run),
# TCPSIG_REPEAT (run each selected case that many times, no retry: to
# hunt a rare failure), TCPSIG_NETSTACK_RUN (the -test.run pattern of those, default
# ^TestKernelAO), TCPSIG_KERNEL_SRC_VERSION (Debian version of
# linux-source-6.12 to fetch, default 6.12.117-1~deb12u1, falls back to the
# candidate if that one is gone), TCPSIG_BIRD=0 (leave BIRD out: the bird-*
# cases skip), TCPSIG_DEBIAN_MIRROR (see fetch-bird.sh).
set -euo pipefail

SKIP=77
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CACHE=${TCPSIG_CACHE:-$ROOT/.cache/linux-ao}
# the captures and their manifest, the data this lab makes
DATA=$ROOT/testvectors/linux
WORK=$HERE/.build
GUEST_TIMEOUT=${TCPSIG_GUEST_TIMEOUT:-900}
SRC_PIN=${TCPSIG_KERNEL_SRC_VERSION:-6.12.117-1~deb12u1}
UPDATE=${TCPSIG_UPDATE:-0}
KERNEL_ONLY=0
for a in "$@"; do
	case "$a" in
	--update | -update) UPDATE=1 ;;
	--kernel-only) KERNEL_ONLY=1 ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
	*) echo "unknown argument: $a" >&2; exit 2 ;;
	esac
done

T0=$(date +%s)
log() { printf '[run-qemu %4ss] %s\n' "$(($(date +%s) - T0))" "$*"; }
skip() { echo "SKIP: $*"; exit $SKIP; }
die() { echo "FAIL: $*" >&2; exit 1; }

export PATH="$PATH:/usr/local/go/bin"
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo

# ---------------------------------------------------------------- packages
BUILD_PKGS=(build-essential flex bison bc libelf-dev libssl-dev xz-utils cpio gzip)
RUN_PKGS=(qemu-system-x86 busybox-static)
OPT_PKGS=(python3 python3-cryptography) # only for the independent crosscheck.py
missing_pkgs() {
	local p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || echo "$p"
	done
}
APT_LOG=${TMPDIR:-/tmp}/tcpsig-run-qemu-apt.log
apt_install() {
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$@" >>"$APT_LOG" 2>&1
}
install_pkgs() {
	local miss opt
	command -v dpkg-query >/dev/null || skip "not a Debian-like machine (no dpkg-query): install qemu-system-x86, busybox-static and a kernel toolchain by hand"
	miss=$(missing_pkgs "${BUILD_PKGS[@]}" "${RUN_PKGS[@]}")
	opt=$(missing_pkgs "${OPT_PKGS[@]}")
	[ -z "$miss$opt" ] && return 0
	if [ -n "$SUDO" ] && ! command -v sudo >/dev/null; then
		[ -z "$miss" ] || skip "packages missing ($(echo $miss)) and not root"
		return 0 # only the cross-check's packages are missing: go without
	fi
	log "installing: $(echo $miss $opt) (apt log: $APT_LOG)"
	: >"$APT_LOG"
	# A fresh machine has empty or stale package lists: update first, always.
	$SUDO apt-get update -qq >>"$APT_LOG" 2>&1 || log "apt-get update failed (continuing; see $APT_LOG)"
	# shellcheck disable=SC2086 # word splitting wanted
	[ -z "$miss" ] || apt_install $miss || true
	# Separately: python3-cryptography is only for crosscheck.py, and a
	# failure to get it must not stop the rest.
	# shellcheck disable=SC2086
	[ -z "$opt" ] || apt_install $opt || log "could not install $(echo $opt): crosscheck.py will be skipped"
	miss=$(missing_pkgs "${RUN_PKGS[@]}")
	[ -z "$miss" ] || { tail -5 "$APT_LOG"; skip "cannot install $(echo $miss) (no qemu/busybox for this machine)"; }
	miss=$(missing_pkgs "${BUILD_PKGS[@]}")
	[ -z "$miss" ] || { tail -20 "$APT_LOG"; die "cannot install build dependencies: $(echo $miss) (apt log: $APT_LOG)"; }
}
install_pkgs
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 not found"
[ -x /bin/busybox ] || skip "/bin/busybox (busybox-static) not found"
command -v go >/dev/null || die "go not found (expected /usr/local/go/bin)"

# ---------------------------------------------------------- kernel source
mkdir -p "$CACHE/dl"
fetch_source() {
	local deb
	deb=$(ls -1 "$CACHE"/dl/linux-source-6.12_*.deb 2>/dev/null | sort -V | tail -1 || true)
	if [ -n "$deb" ]; then echo "$deb"; return 0; fi
	(cd "$CACHE/dl" && { apt-get download "linux-source-6.12=$SRC_PIN" >/dev/null 2>&1 ||
		{ $SUDO apt-get update -qq >/dev/null 2>&1; apt-get download "linux-source-6.12=$SRC_PIN" >/dev/null 2>&1; } ||
		apt-get download linux-source-6.12 >/dev/null 2>&1; }) || return 1
	ls -1 "$CACHE"/dl/linux-source-6.12_*.deb 2>/dev/null | sort -V | tail -1
}
DEB=$(fetch_source) || skip "cannot download linux-source-6.12 (apt-get download failed; is bookworm-security reachable?)"
[ -n "$DEB" ] || skip "cannot download linux-source-6.12"
DEBVER=$(dpkg-deb -f "$DEB" Version)
SRC=$CACHE/src-$DEBVER
if [ ! -f "$SRC/.extracted" ]; then
	log "extracting linux-source-6.12 $DEBVER"
	rm -rf "$SRC" "$CACHE/pkg"
	mkdir -p "$SRC" "$CACHE/pkg"
	dpkg-deb -x "$DEB" "$CACHE/pkg"
	tar -xJf "$CACHE"/pkg/usr/src/linux-source-6.12.tar.xz -C "$SRC" --strip-components=1
	rm -rf "$CACHE/pkg"
	touch "$SRC/.extracted"
fi

# ------------------------------------------------------------------ kernel
FRAG=$HERE/kernel.config
KEY=$( { cat "$FRAG"; echo "$DEBVER"; echo "recipe-v1"; } | sha256sum | cut -c1-16)
KB=$CACHE/kbuild-$KEY
BZ=$CACHE/bzImage-$KEY
KERNEL_BUILD_SECS=cached
if [ ! -s "$BZ" ]; then
	log "building kernel $DEBVER (config $KEY) in $KB; ~9-20 min on 2 cores, cached afterwards"
	kt0=$(date +%s)
	rm -rf "$KB"
	mkdir -p "$KB"
	make -s -C "$SRC" O="$KB" tinyconfig >"$KB/config.log" 2>&1
	syms=$(grep -E '^CONFIG_[A-Z0-9_]+=y' "$FRAG" | sed 's/^CONFIG_//; s/=y$//')
	offs=$(grep -E '^# CONFIG_[A-Z0-9_]+ is not set' "$FRAG" | sed 's/^# CONFIG_//; s/ is not set$//')
	# some symbols only appear once their parents are on: apply, resolve, repeat
	for pass in 1 2 3; do
		for s in $syms; do "$SRC/scripts/config" --file "$KB/.config" --enable "$s"; done
		for s in $offs; do "$SRC/scripts/config" --file "$KB/.config" --disable "$s"; done
		make -s -C "$SRC" O="$KB" olddefconfig >>"$KB/config.log" 2>&1
	done
	bad=
	for s in $syms; do grep -q "^CONFIG_$s=y" "$KB/.config" || bad="$bad $s"; done
	for s in $offs; do grep -q "^CONFIG_$s=y" "$KB/.config" && bad="$bad !$s"; done
	[ -z "$bad" ] || die "kernel config symbols did not land:$bad (see $KB/.config)"
	TIMEFORMAT='%0R %0U %0S'
	if ! { time make -C "$SRC" O="$KB" -j"$(nproc)" bzImage >"$KB/build.log" 2>&1; } 2>"$KB/time.txt"; then
		tail -40 "$KB/build.log"
		die "kernel build failed (log: $KB/build.log)"
	fi
	read -r _ cpu_u cpu_s <"$KB/time.txt" || true
	cp "$KB/.config" "$BZ.config"
	KERNEL_BUILD_SECS=$(($(date +%s) - kt0))
	echo "$KERNEL_BUILD_SECS wall, $((cpu_u + cpu_s)) CPU seconds, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)" >"$BZ.buildtime"
	cp "$KB/arch/x86/boot/bzImage" "$BZ.tmp" && mv "$BZ.tmp" "$BZ"
	log "kernel built: $(cat "$BZ.buildtime")"
	# keep only the image: the object tree is ~1 GB and not needed again
	rm -rf "$KB"
else
	log "kernel cached: $BZ (built earlier: $(cat "$BZ.buildtime" 2>/dev/null || echo unknown))"
fi
[ "$KERNEL_ONLY" = 1 ] && { log "kernel ready: $BZ"; exit 0; }
if [ "$UPDATE" = 1 ] && [ -n "${TCPSIG_CASES:-}" ]; then
	die "--update rewrites the whole capture set: run it without TCPSIG_CASES"
fi

# -------------------------------------------------------------- initramfs
GT0=$(date +%s)
rm -rf "$WORK/initramfs" "$WORK/results"
mkdir -p "$WORK/initramfs"/{bin,dev,proc,sys,tmp,out} "$WORK/results"
(cd "$ROOT" && CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -o "$WORK/initramfs/guest" ./harness/kernellab/guest) ||
	die "building the guest program failed"
# package linuxsock's tests, run by the guest case linuxsock-gotest under this kernel
(cd "$ROOT" && CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go test -c -trimpath -o "$WORK/initramfs/linuxsock.test" ./linuxsock) ||
	die "building linuxsock's test binary failed"
# The netstack/ module (gVisor, a module of its own) adds its kernel tests
# as a second static program: its test binary, run after the guest's cases
# with TCPSIG_NETSTACK=1 (as CI does) or when TCPSIG_CASES names
# "netstack".
NETSTACK=0
if [ -f "$ROOT/netstack/go.mod" ] && { [ "${TCPSIG_NETSTACK:-0}" = 1 ] || [[ ",${TCPSIG_CASES:-}," == *,netstack* ]]; }; then
	(cd "$ROOT/netstack" && CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go test -c -trimpath -o "$WORK/initramfs/netstack.test" .) ||
		die "building the netstack test program failed"
	NETSTACK=1
	# Its bulk transfers (16 MiB each way, 12 connections) take about a
	# minute each under TCG.
	[ -n "${TCPSIG_GUEST_TIMEOUT:-}" ] || GUEST_TIMEOUT=$((GUEST_TIMEOUT + 1800))
fi
# BIRD 2.17 (Debian 13's bird2, which speaks TCP-AO) for the bird-* cases,
# beside the tcpsig binary they run as an operator does (tcpsig shim, tcpsig
# verify). fetch-bird.sh fetches and unpacks it once, without touching the
# host's package state, and caches the tree like the kernel; where it cannot
# be had the guest's bird-* cases are skipped, saying why.
BIRD_SKIP=
# (netstack/'s TestKernelAOBIRD uses it too)
if [ -z "${TCPSIG_CASES:-}" ] || [[ ",$TCPSIG_CASES," == *,b,* || ",$TCPSIG_CASES," == *,bi* || ",$TCPSIG_CASES," == *,netstack* ]]; then
	set +e
	if [ "${TCPSIG_BIRD:-1}" = 0 ]; then
		bird_root="SKIP: TCPSIG_BIRD=0 (BIRD left out on request)" rc=$SKIP
	else
		bird_root=$(bash "$HERE/fetch-bird.sh" "$CACHE/bird2")
		rc=$?
	fi
	set -e
	case $rc in
	0)
		cp -a "$bird_root"/. "$WORK/initramfs/"
		mv "$WORK/initramfs/.version" "$WORK/initramfs/bird-version.txt"
		rm -f "$WORK/initramfs/.done" "$WORK/initramfs/.packages"
		(cd "$ROOT" && CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -o "$WORK/initramfs/tcpsig" ./cmd/tcpsig) ||
			die "building tcpsig for the BIRD cases failed"
		log "BIRD for the guest: $(cat "$WORK/initramfs/bird-version.txt")"
		# BGP sessions wait on their timers: a few minutes under TCG
		[ -n "${TCPSIG_GUEST_TIMEOUT:-}" ] || GUEST_TIMEOUT=$((GUEST_TIMEOUT + 900))
		;;
	$SKIP)
		BIRD_SKIP=${bird_root#SKIP: }
		echo "$BIRD_SKIP" >"$WORK/initramfs/bird-skip.txt"
		log "no BIRD for the guest; its cases will be skipped: $BIRD_SKIP"
		;;
	*) die "fetch-bird.sh failed ($rc)" ;;
	esac
fi
cp /bin/busybox "$WORK/initramfs/bin/busybox"
ln -sf busybox "$WORK/initramfs/bin/sh"
cat >"$WORK/initramfs/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mount -t tmpfs tmp /tmp
cases=$(sed -n 's/.*tcpsig.cases=\([^ ]*\).*/\1/p' /proc/cmdline)
echo "TCPSIG-GUEST-START uptime=$(cut -d' ' -f1 /proc/uptime) cpu flags: $(grep -m1 -o -w -E 'aes|avx|avx2|sha_ni|pclmulqdq|ssse3' /proc/cpuinfo | tr '\n' ' ')"
repeat=$(sed -n 's/.*tcpsig.repeat=\([0-9]*\).*/\1/p' /proc/cmdline)
/guest run -out /dev/vda -cases "$cases" -repeat "${repeat:-1}"
echo "TCPSIG-GUEST-EXIT rc=$?"
if [ -x /netstack.test ]; then
	nsrun=$(sed -n 's/.*tcpsig.nsrun=\([^ ]*\).*/\1/p' /proc/cmdline)
	# gVisor writes to the TUN device in bursts that the emulated CPU
	# drains slowly: a longer input queue than 1000 packets.
	echo 20000 >/proc/sys/net/core/netdev_max_backlog
	(cd /tmp && /netstack.test -test.run "${nsrun:-^TestKernelAO}" -test.v -test.timeout 40m)
	echo "TCPSIG-NETSTACK-EXIT rc=$?"
fi
sync
reboot -f
EOF
chmod +x "$WORK/initramfs/init"
(cd "$WORK/initramfs" && find . | cpio -o -H newc --quiet | gzip -1 >"$WORK/initramfs.gz")
GUEST_BUILD_SECS=$(($(date +%s) - GT0))

# -------------------------------------------------------------------- boot
rm -f "$WORK/out.img"
truncate -s 256M "$WORK/out.img"
log "booting qemu (timeout ${GUEST_TIMEOUT}s)"
BT0=$(date +%s)
set +e
timeout --foreground -k 10 "$GUEST_TIMEOUT" qemu-system-x86_64 \
	-accel tcg,thread=multi -cpu "${TCPSIG_QEMU_CPU:-max}" -smp 2 -m 1024 -nographic -no-reboot \
	-kernel "$BZ" -initrd "$WORK/initramfs.gz" \
	-drive file="$WORK/out.img",format=raw,if=virtio \
	-append "console=ttyS0 panic=-1 quiet random.trust_cpu=on tcpsig.cases=${TCPSIG_CASES:-} tcpsig.nsrun=${TCPSIG_NETSTACK_RUN:-} tcpsig.repeat=${TCPSIG_REPEAT:-1}" \
	</dev/null >"$WORK/console.log" 2>&1
QRC=$?
set -e
QEMU_SECS=$(($(date +%s) - BT0))
if [ $QRC -ne 0 ]; then
	tail -50 "$WORK/console.log"
	[ $QRC = 124 ] && die "guest timed out after ${GUEST_TIMEOUT}s (console: $WORK/console.log)"
	die "qemu exited with $QRC (console: $WORK/console.log)"
fi
grep -q 'TCPSIG-GUEST-EXIT' "$WORK/console.log" || { tail -50 "$WORK/console.log"; die "guest did not finish (console: $WORK/console.log)"; }
tar -xf "$WORK/out.img" -C "$WORK/results" 2>/dev/null || { tail -50 "$WORK/console.log"; die "no results on the output disk"; }
[ -f "$WORK/results/manifest.json" ] || { tail -50 "$WORK/console.log"; die "guest wrote no manifest"; }

# ------------------------------------------------- host check and the table
set +e
(cd "$ROOT" && go run ./harness/kernellab/guest check -dir "$WORK/results" -console "$WORK/console.log" \
	-kernel-build "$KERNEL_BUILD_SECS" -qemu "$QEMU_SECS" -guest-build "$GUEST_BUILD_SECS")
CRC=$?
# independent MAC check of the fresh captures (crosscheck.py, not the Go engine)
# The first python3 on PATH may be a private one (pyenv, venv) without the
# cryptography module that apt installed for Debian's /usr/bin/python3.
PY=
for p in python3 /usr/bin/python3; do
	if command -v "$p" >/dev/null && "$p" -c 'import cryptography' 2>/dev/null; then PY=$p; break; fi
done
if [ -n "$PY" ]; then
	"$PY" "$HERE/crosscheck.py" "$WORK/results" || CRC=1
else
	echo "crosscheck: skipped (no python3 with the cryptography module; apt-get install python3-cryptography)"
fi
# kernel sockets configured through package linuxsock from a keys file:
# tcpsig verify must pass every segment of their capture with that very file
if [ -f "$WORK/results/linuxsock-ao.pcap" ]; then
	chmod 600 "$WORK/results/linuxsock-keys.json" # as for BIRD's below: tcpsig warns of a keys file others may read
	(cd "$ROOT" && go run ./cmd/tcpsig verify -keys "$WORK/results/linuxsock-keys.json" "$WORK/results/linuxsock-ao.pcap" | tail -3) ||
		{ echo "linuxsock: tcpsig verify failed on linuxsock-ao.pcap"; CRC=1; }
fi
# BIRD's session through the shim, captured whole across both rotations:
# tcpsig verify (built here, from this tree) must pass every segment
for p in "$WORK"/results/bird-*.pcap; do
	[ -f "$p" ] || continue
	chmod 600 "${p%.pcap}-keys.json" # the tar's 0644: tcpsig warns of a keys file others may read
	(cd "$ROOT" && go run ./cmd/tcpsig verify -keys "${p%.pcap}-keys.json" "$p" | tail -3) ||
		{ echo "bird: tcpsig verify failed on $(basename "$p")"; CRC=1; }
done
if [ "$NETSTACK" = 1 ]; then
	grep -E '^(=== RUN|--- |    |PASS|FAIL|ok )' "$WORK/console.log" | grep -v '^=== RUN' | sed -n '/TestKernel/,$p' | tail -80
	if grep -q 'TCPSIG-NETSTACK-EXIT rc=0' "$WORK/console.log"; then
		echo "netstack: gVisor + packetauth <-> the guest kernel's TCP-AO: PASS"
	else
		echo "netstack: FAIL (console: $WORK/console.log)"
		CRC=1
	fi
fi
set -e
if [ "$UPDATE" = 1 ]; then
	if [ $CRC -ne 0 ]; then
		log "not updating testvectors/linux/: some cases failed"
	else
		# drop captures of cases that no longer exist, then copy the fresh set
		find "$DATA" -maxdepth 1 -name '*.pcap' -delete
		cp "$WORK"/results/*.pcap "$WORK/results/manifest.json" "$DATA/"
		rm -f "$DATA/linuxsock-ao.pcap" # kept apart, with its keys file
		if [ -f "$WORK/results/linuxsock-ao.pcap" ]; then
			mkdir -p "$DATA/linuxsock"
			cp "$WORK/results/linuxsock-ao.pcap" "$WORK/results/linuxsock-keys.json" "$DATA/linuxsock/"
		fi
		log "updated $DATA (manifest.json + $(ls "$WORK"/results/*.pcap | wc -l) captures)"
	fi
fi
[ -z "$BIRD_SKIP" ] || echo "SKIPPED: the bird-* cases (BIRD 2.17 with the kernel's TCP-AO <-> tcpsig shim), counted as skipped, not passed: $BIRD_SKIP"
log "total $(($(date +%s) - T0))s"
exit $CRC
