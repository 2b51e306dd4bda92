#!/usr/bin/env bash
# Debian 13 (trixie)'s bird2 (BIRD 2.17, which speaks TCP-AO through
# Linux's TCP_AO_* socket options) and the shared libraries it needs,
# unpacked into a tree that run-qemu.sh lays over the guest's initramfs.
# The host's package state is not touched: the packages are fetched with a
# sources file, lists and cache of their own under the cache directory,
# and unpacked with dpkg -x, never installed.
#
# Usage: harness/kernellab/fetch-bird.sh CACHEDIR
#
# Prints the tree's path (CACHEDIR/root-<key>; usr/sbin/bird, usr/sbin/birdc,
# usr/lib/..., lib -> usr/lib, lib64 -> usr/lib64) on stdout, and what it
# does on stderr. A tree fetched before is reused without the network
# (like the kernel build, keyed by the recipe below).
#
# Exit codes: 0 ready, 77 cannot be had here (the reason on stdout, as
# "SKIP: ..."), 1 a failure.
#
# Env: TCPSIG_DEBIAN_MIRROR (the Debian archive's URI; default: the first
# one the host's own apt sources name), TCPSIG_BIRD_SUITES (default
# "trixie trixie-updates"; the security suite is added from the host's
# security source when it has one).
set -euo pipefail

SKIP=77
[ $# = 1 ] || { echo "usage: $0 CACHEDIR" >&2; exit 2; }
CACHE=$1
log() { echo "[fetch-bird] $*" >&2; }
skip() { echo "SKIP: $*"; exit $SKIP; }

# What the guest needs (tried in the lab guest: BIRD 2.17.6 configures the
# kernel's TCP-AO with these and nothing more). birdc links readline.
PKGS=(bird2 libc6 libreadline8t64 readline-common libtinfo6 libssh-4 libssl3t64
	libgssapi-krb5-2 libkrb5-3 libk5crypto3 libcom-err2 libkrb5support0 libkeyutils1
	zlib1g libzstd1 libgcc-s1)
RECIPE=v2
KEY=$(echo "$RECIPE ${PKGS[*]}" | sha256sum | cut -c1-12)
ROOT=$CACHE/root-$KEY
if [ -f "$ROOT/.done" ]; then
	log "cached: $ROOT ($(cat "$ROOT/.version"))"
	echo "$ROOT"
	exit 0
fi

command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null ||
	skip "no apt-get/dpkg-deb on this machine: cannot fetch Debian's bird2"

# The archive's URI: the host's own (so the machine's mirror is used),
# unless TCPSIG_DEBIAN_MIRROR says otherwise.
host_uris() {
	{
		cat /etc/apt/sources.list.d/*.sources 2>/dev/null | sed -n 's/^URIs:[[:space:]]*//p' | tr ' ' '\n'
		grep -h '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | sed 's/\[[^]]*\]//' | awk '{print $2}'
	} | sed 's#/*$##' | awk 'NF' | awk '!seen[$0]++'
}
MIRROR=${TCPSIG_DEBIAN_MIRROR:-$(host_uris | grep -E '/debian$' | head -1 || true)}
SECURITY=$(host_uris | grep -E '/debian-security$' | head -1 || true)
[ -n "$MIRROR" ] || skip "no Debian archive among the host's apt sources (set TCPSIG_DEBIAN_MIRROR)"

W=$CACHE/apt
mkdir -p "$W/lists/partial" "$W/cache/archives/partial" "$W/debs"
{
	for s in ${TCPSIG_BIRD_SUITES:-trixie trixie-updates}; do echo "deb $MIRROR $s main"; done
	[ -z "$SECURITY" ] || echo "deb $SECURITY trixie-security main"
} >"$W/sources.list"
# An empty dpkg status of its own too: the host's installed versions are
# no candidates (apt would otherwise offer bookworm's own libraries).
: >"$W/status"
APT=(apt-get -q -o "Dir::Etc::SourceList=$W/sources.list" -o Dir::Etc::SourceParts=/dev/null
	-o "Dir::State::Lists=$W/lists" -o "Dir::State::status=$W/status" -o "Dir::Cache=$W/cache"
	-o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null
	-o APT::Architecture=amd64 -o APT::Architectures::=amd64)
log "apt-get update with $W/sources.list ($(tr '\n' ';' <"$W/sources.list"))"
if ! "${APT[@]}" update >"$W/update.log" 2>&1; then
	tail -5 "$W/update.log" >&2
	skip "apt-get update for trixie failed (see $W/update.log): Debian 13's bird2 cannot be fetched"
fi
grep -q '^W: .*\(NO_PUBKEY\|not signed\)' "$W/update.log" &&
	skip "trixie's lists are not signed by a key this host trusts (debian-archive-keyring too old?): see $W/update.log"
rm -f "$W"/debs/*.deb
if ! (cd "$W/debs" && "${APT[@]}" download "${PKGS[@]}" >"$W/download.log" 2>&1); then
	tail -5 "$W/download.log" >&2
	skip "apt-get download of bird2 and its libraries from trixie failed (see $W/download.log)"
fi
VER=$(dpkg-deb -f "$W"/debs/bird2_*.deb Version)
case $VER in
2.1[7-9]* | 2.[2-9][0-9]*) ;;
*) skip "trixie's bird2 is $VER, not 2.17 or later (no TCP-AO)" ;;
esac

rm -rf "$ROOT.tmp"
mkdir -p "$ROOT.tmp"
for d in "$W"/debs/*.deb; do dpkg-deb -x "$d" "$ROOT.tmp"; done
# merged /usr, as on trixie: a package that still ships /lib or /lib64
# files has them moved under usr/ before the links are made
for l in lib lib64; do
	if [ -d "$ROOT.tmp/$l" ] && [ ! -L "$ROOT.tmp/$l" ]; then
		mkdir -p "$ROOT.tmp/usr/$l"
		cp -a "$ROOT.tmp/$l/." "$ROOT.tmp/usr/$l/"
		rm -rf "${ROOT:?}.tmp/$l"
	fi
	mkdir -p "$ROOT.tmp/usr/$l"
	ln -sfn "usr/$l" "$ROOT.tmp/$l"
done
# nothing the guest reads: documentation, translations, iconv modules
rm -rf "$ROOT.tmp"/usr/share/{doc,man,info,locale,lintian,bug} "$ROOT.tmp"/usr/lib/x86_64-linux-gnu/gconv "$ROOT.tmp"/etc/bird
# the guest has busybox's /bin; these come along with libc6 and are not needed
rm -rf "$ROOT.tmp"/usr/bin "$ROOT.tmp"/usr/libexec "$ROOT.tmp"/usr/lib/systemd

# Check on the host, with trixie's own loader, that nothing is missing.
LD=$ROOT.tmp/usr/lib64/ld-linux-x86-64.so.2
LP=$ROOT.tmp/usr/lib/x86_64-linux-gnu
[ -x "$LD" ] || { echo "FAIL: no loader at $LD" >&2; exit 1; }
for b in bird birdc; do
	if "$LD" --library-path "$LP" --list "$ROOT.tmp/usr/sbin/$b" | grep 'not found' >&2; then
		echo "FAIL: $b needs a library the list above lacks (add its package to PKGS in $0)" >&2
		exit 1
	fi
done
BV=$("$LD" --library-path "$LP" "$ROOT.tmp/usr/sbin/bird" --version 2>&1 | head -1)
echo "bird2 $VER ($BV), $(du -sh "$ROOT.tmp" | cut -f1)" >"$ROOT.tmp/.version"
for d in "$W"/debs/*.deb; do basename "$d"; done >"$ROOT.tmp/.packages"
touch "$ROOT.tmp/.done"
rm -rf "$ROOT"
mv "$ROOT.tmp" "$ROOT"
rm -rf "$W/debs"
# trees of earlier recipes
find "$CACHE" -maxdepth 1 -name 'root-*' ! -name "root-$KEY" ! -name "root-$KEY.tmp" -exec rm -rf {} +
log "ready: $ROOT ($(cat "$ROOT/.version"))"
echo "$ROOT"
