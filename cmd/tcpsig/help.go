package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// The help texts: tcpsig help prints usage, tcpsig help TOPIC (or
// tcpsig CMD -h) one of topics. Each command's text gives its usage, its
// flags and an example.

const usage = `tcpsig verifies TCP-AO (RFC 5925) and TCP-MD5 (RFC 2385) signatures in
packet captures, byte for byte as Linux computes them; it also signs and
verifies a host's own TCP for a kernel without them (shim), and measures the
signing engine (bench).

Usage:

  tcpsig verify [-keys FILE] [-json] [-v] [-isn ENDPOINT=ISN ...] [-sne ENDPOINT=SNE ...] [CAPTURE ...]
  tcpsig verify -keys FILE -i IFACE [-port N] [-w FILE] [-every D] [-json] [-v]
  tcpsig bench [-json] [-time D] [-alg NAME]
  tcpsig shim -keys FILE [-queue N] [-queues K] [-status SOCK] [-state FILE] [-metrics ADDR] [-log-format F] [-v]
  tcpsig keys check [-at TIME] FILE [OTHER]
  tcpsig keys gen -a ADDR -b ADDR [-alg NAME | -md5] [-o FILE] [-a-file FILE] [-b-file FILE]
  tcpsig keys rotate FILE -peer P [-at TIME] [-overlap D] [-mirror OTHER | -self ADDR -mirror-out NEW]
  tcpsig keys import DOC -chain NAME=PEER … -o FILE | tcpsig keys export FILE -o DOC
  tcpsig version
  tcpsig help [verify | bench | shim | version | keys]

Commands:

  verify    judge every TCP-AO / TCP-MD5 segment of captures, or of an interface live
  bench     signing and verifying throughput per algorithm on this machine
  shim      sign and verify this host's own TCP with the keys file's peers (Linux)
  keys      check a keys file as the shim and Linux would; make a key for two ends;
            rotate a key on a schedule; ietf-key-chain documents in and out
  version   the module version, the commit and the Go version
  help      this text; tcpsig help CMD (or tcpsig CMD -h) for one command

  tcpsig help keys describes the keys file (JSON) that verify and shim read;
  tcpsig keys -h the keys command.

Exit status: 0 success; 1 verify judged a segment not good (shim: it
stopped on an error); 2 a usage, keys-file or capture error; 3 verify
verified nothing. Under "go run" every status but 0 is reported as 1: build
the binary (go build ./cmd/tcpsig) to see them.

Example:

  tcpsig verify      # verifies a Linux TCP-AO capture built into the binary
`

const verifyHelp = `usage: tcpsig verify [-keys FILE] [-json] [-v] [-explain] [-isn ENDPOINT=ISN ...] [-sne ENDPOINT=SNE ...] [CAPTURE ...]
       tcpsig verify -keys FILE -i IFACE [-port N] [-w FILE] [-every D] [-json] [-v] [-explain]
       tcpsig verify -explain [-json] [-isn ENDPOINT=ISN ...] CAPTURE ...   (no -keys; -i IFACE too)

verify judges every segment that carries a TCP-AO or TCP-MD5 option, and
every unsigned segment of a flow a key covers, in pcap or pcapng files
(gzipped or not; "-" is standard input), or live on an interface. With no
CAPTURE it verifies a capture built into the binary, with its keys.

Flags:

  -keys FILE   the keys configured on one or both endpoints (JSON; "-" is
               standard input): tcpsig help keys. An entry belongs to the
               endpoint whose peer is "peer"; a segment is judged with its
               receiver's keys.
  -json        one JSON object per judged segment, then a summary object
  -v           list good segments too
  -explain     name why each flow direction that did not verify failed, with
               one word (algorithm, options, key-id, mac-length, key-encoding,
               secret, auth-kind, peer-address, tampered, unsigned, isn) and a
               one-line fix naming the entry and field: a "diagnosis" section,
               or with -json "diagnoses" in the summary object. Without
               -keys (CAPTURE or -i) only what the wire shows is named:
               unsigned (one direction signs, the other sends no option),
               auth-kind (TCP-MD5 one way, TCP-AO the other) and isn; every
               signed segment is no-key, the other causes need -keys, and
               the exit status is 1 when a cause is named, else 3
  -isn E=ISN   the ISN of endpoint E (ip:port, [ipv6]:port; decimal or 0x hex)
               for captures without the handshake; once per endpoint
  -sne E=SNE   the SNE of E's send direction at its first captured segment
               (default 0)
  -i IFACE     verify the packets that pass IFACE as they come (Linux; needs
               CAP_NET_RAW): a line per segment that is not good, the flow
               table every -every (default 5s) and at Ctrl-C or SIGTERM
  -port N      with -i: only TCP segments from or to port N
  -w FILE      with -i: also write the packets as pcapng, for "verify FILE"
  -every D     with -i: how often the flow table is printed (default 5s); with
               -json it is a {"table": …} object

Verdicts: good, bad (MAC mismatch), no-key (no key with that KeyID for the
peer), unsigned (no option though a key covers the peer), malformed,
unknown-isn (TCP-AO without the handshake and no -isn), untracked (a flow
past the 65,536 covered flows a verifier tracks per capture: not checked).

Exit status: 0 when every checked segment is good (and one was); 1 when any
is bad, no-key, unsigned, malformed or untracked; 2 on a usage, keys-file or capture
error; 3 when nothing was verified: no segment carried an option or came from
a covered peer, or every one was unknown-isn (give -isn). Under "go run"
every status but 0 is reported as 1.

Example (from a clone of the repository):

  tcpsig verify -keys cmd/tcpsig/testdata/demo.keys.json cmd/tcpsig/testdata/demo.pcap
`

const benchHelp = `usage: tcpsig bench [-json] [-time D] [-alg NAME]

bench measures signing and verifying per algorithm and payload size (0,
64, 536, 1448, 8948 bytes) under both pool backends: clone (every context
loads the key's prepared template, the default) and rekey (every context
runs the key schedule again per segment, as Linux does). Each cell runs in
rounds of about 250 µs (7 to 101 of them), clone and rekey in turn, first
on one goroutine, then on one per GOMAXPROCS at once. A figure is the
median of its rounds, printed with their spread (min-max); REKEY/CLONE is
the ratio of the two medians. An all-cores round counts only when its
goroutines waited for a core 10% of the time or less (on Linux, each
thread's run delay), and a cell with fewer than a quarter of such rounds
prints "-", with the reason under the table. An algorithm whose backends
do the same work says why.

Flags:

  -json        the CPU as one JSON object, then one per measurement
  -time D      how long each backend runs a cell, on one core and again on
               all (default 30ms, at least 1ms)
  -alg NAME    only this algorithm (repeatable): a TCP-AO algorithm's Linux,
               RFC 5926 or draft-ietf-tcpm-tcp-ao-algs name (HMAC-SHA256-128,
               KMAC256-128), or md5 for TCP-MD5

Example:

  tcpsig bench -alg 'hmac(sha1)' -alg md5 -time 100ms
`

const shimHelp = `usage: tcpsig shim -keys FILE [-queue N] [-queues K] [-status SOCK] [-state FILE]
                   [-metrics ADDR] [-log-format text|json] [-v]
       tcpsig shim -uninstall [-queue N]

shim signs and verifies the TCP-AO / TCP-MD5 sessions of this host's own TCP
(a BGP daemon configured without a password, say) with the peers of the
keys file, for a kernel that cannot: netfilter rules of its own queue TCP to
and from those peers to it; it inserts the option and signs what leaves,
verifies and strips what arrives, and drops (and counts) what fails.
Linux only; needs CAP_NET_ADMIN.

Flags:

  -keys FILE     the keys file (as for verify: tcpsig help keys); its peers
                 are the peers covered. Refused if group or others may read
                 or write it (chmod 600), or if a user other than root and
                 the shim's owns it (chown root)
  -queue N       the netfilter queue number (default 7911); the rules live in
                 the nftables tables "tcpsig-shim-N" (ip and ip6)
  -queues K      use queues N .. N+K-1, one reader thread each, a
                 connection's packets both ways on one (default: one per
                 CPU, at most 8)
  -status SOCK   serve the status as JSON over HTTP on this unix socket:
                 curl --unix-socket SOCK http://shim/ (a stale socket there
                 is replaced; any other file there is an error), and the
                 metrics at http://shim/metrics
  -state FILE    keep the TCP-AO sessions' ISNs and SNEs here (no keys), so a
                 restarted shim resumes them; read at start
  -metrics ADDR  also serve the metrics (Prometheus' text format) at
                 /metrics on this TCP address, 127.0.0.1:9180 say (default:
                 none; the status is never served there)
  -log-format F  text (default) or json: the log's lines, through log/slog
  -v             debug logging (every dropped packet; without it each drop
                 reason logs a burst of 10 lines, then one per 6 s, each
                 with the drops it stands for)
  -uninstall     remove the rules of queue N and exit: from then on the
                 covered peers' packets reach the kernel unchecked

Signals: SIGHUP reloads the keys file, applied whole or refused whole
(sessions stay up; a session whose key is gone moves to another key of its
peer, or, without one, has its packets dropped until it ends; the last
TCP-AO key of a peer in the file becomes its sessions' RNext: the peer is
asked to send with it, and the shim sends with the key the peer asks for),
SIGUSR1 logs the status, SIGTERM / SIGINT exit. Every exit leaves the
rules in place: with no shim reading the queue, the kernel drops the
covered peers' packets, so nobody can inject into a covered session while
no shim runs. The next shim takes the rules over (and resumes TCP-AO
sessions from -state); only -uninstall removes them.

Under systemd (NOTIFY_SOCKET set) it says READY=1 once the rules are in and
the keys loaded, and RELOADING=1, then READY=1, around a reload: see
contrib/systemd/tcpsig-shim.service and docs/shim-service.md.

Example:

  tcpsig shim -keys keys.json -status /run/tcpsig.sock &
  curl --unix-socket /run/tcpsig.sock http://shim/
`

const versionHelp = `usage: tcpsig version

version prints tcpsig's release (a semantic version: CHANGELOG.md's newest
entry), then the module version ("(devel)" or a pseudo-version when built
from a clone; left out when it is the release, as from a tagged commit), the
commit the binary was built from and its time, whether the tree had
uncommitted changes, and the Go version. It takes no flags.

Example:

  tcpsig version
`

const keysHelp = `The keys file (tcpsig verify -keys, tcpsig shim -keys) is JSON: the TCP-AO
MKTs and TCP-MD5 keys configured on one or more endpoints, in Linux's terms.

  {"ao":  [{"name": "r1-v1", "alg": "hmac(sha1)", "key": "hex:0a0b0c",
            "sndid": 1, "rcvid": 2, "peer": "192.0.2.0/24",
            "maclen": 12, "exclude_options": false, "ifindex": 4}],
   "md5": [{"name": "r2", "peer": "192.0.2.1", "key": "text:secret"}]}

An entry is configured on the endpoint whose peer is "peer" (it sends KeyID
sndid, receives KeyID rcvid); a segment is judged with its receiver's keys.
Fields of an "ao" entry:

  name             optional label, used in messages
  alg              required: a Linux name ("hmac(sha256)", "cmac(aes128)")
                   or an RFC 5926 name ("HMAC-SHA-1-96")
  key              required: "hex:…" or "text:…", 1..80 bytes
  sndid, rcvid     required: the KeyIDs sent and expected, 0..255
  peer             required: an address or a prefix with host bits zero
  maclen           optional: 1..16 bytes and at most the digest; absent or 0
                   means 12
  exclude_options  optional: true leaves TCP options out of the MAC
  ifindex          optional: binds the key to an L3 domain, the ifindex of
                   a VRF device (0: the default domain); shim and keys
                   check refuse an index that is no VRF (verify ignores it)

An "md5" entry has name, peer, key and ifindex, with the same meaning.

Lifetimes (RFC 8177), optional, on either kind of entry:

  lifetime         {"start": TIME, "end": TIME}: the send and the accept
                   lifetime at once; TIME is RFC 3339 (2027-01-01T00:00:00Z);
                   either bound may be left out (since always, for ever)
  send_lifetime    the same, for signing only
  accept_lifetime  the same, for verifying only
  accept_tolerance seconds (0..4294967295) by which the accept lifetime is
                   widened on both sides; on the file's top level, every
                   entry's unless it gives its own

A key signs from its send start up to, not including, its send end, and
verifies only inside its accept lifetime widened by the tolerance. An entry
without lifetimes signs and verifies always, as before. The top-level
"clock_skew" (seconds) is how far the file assumes the ends' clocks differ:
keys check warns of a tolerance smaller than it. Two "md5" entries may name
the same peer when both have lifetimes (a schedule). An end at or before its
start, a time that is not RFC 3339 or a negative tolerance is exit 2, naming
the entry and field. tcpsig shim does not honour lifetimes yet and refuses
a file with one, naming the entry; tcpsig verify judges a capture with every
key, whatever its lifetimes.

Reading is strict: an unknown or repeated field, a missing or bad value, two
"ao" entries for the same peer with the same sndid or rcvid, or two "md5"
entries for the same peer is exit 2, naming the entry and field, never the
key. A file over 4 MiB is refused. A program reads the same file with
package github.com/tcpsig/tcpsig/keyfile (the README's "Using tcpsig from
your module"; go doc ./keyfile in a clone).

Example:

  tcpsig verify -keys cmd/tcpsig/testdata/demo.keys.json cmd/tcpsig/testdata/demo.pcap
`

// topics are the texts of tcpsig help TOPIC.
var topics = map[string]string{
	"verify":  verifyHelp,
	"bench":   benchHelp,
	"shim":    shimHelp,
	"version": versionHelp,
	"keys":    keysHelp,
	"help":    usage,
}

// runHelp is tcpsig help [TOPIC].
func runHelp(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		fmt.Fprint(stdout, usage)
		return 0
	case len(args) > 1:
		return failf(stderr, "help: one topic at a time, got %q", strings.Join(args, " "))
	}
	text, ok := topics[args[0]]
	switch args[0] {
	case "-h", "-help", "--help": // tcpsig help -h: help on help
		text, ok = usage, true
	}
	if !ok {
		return failf(stderr, "help: no topic %q: want verify, bench, shim, version or keys", args[0])
	}
	fmt.Fprint(stdout, text)
	return 0
}

// runVersion is tcpsig version.
func runVersion(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	switch err := fs.Parse(args); {
	case err == flag.ErrHelp:
		fmt.Fprint(stdout, versionHelp)
		return 0
	case err != nil:
		return failf(stderr, "version: %v (see tcpsig help version)", err)
	case fs.NArg() > 0:
		return failf(stderr, "version: unexpected argument %q (see tcpsig help version)", fs.Arg(0))
	}
	fmt.Fprintln(stdout, version())
	return 0
}
