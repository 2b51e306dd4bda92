// Command tcpsig verifies TCP-AO (RFC 5925) and TCP-MD5 (RFC 2385)
// signatures in packet captures, byte for byte as Linux computes them, and
// measures the signing engine.
//
//	tcpsig verify [-keys FILE] [-json] [-v] [-isn ENDPOINT=ISN ...] [-sne ENDPOINT=SNE ...] [CAPTURE ...]
//	tcpsig verify -keys FILE -i IFACE [-port N] [-w FILE] [-every D] [-json] [-v]
//	tcpsig bench [-json] [-time D] [-alg NAME]
//	tcpsig shim -keys FILE [-queue N] [-status SOCK] [-state FILE] [-v]
//	tcpsig version
//
// Run "tcpsig help" for the details.
package main

import (
	"fmt"
	"io"
	"os"
)

const usage = `tcpsig verifies TCP-AO (RFC 5925) and TCP-MD5 (RFC 2385) signatures in
packet captures, byte for byte as Linux computes them.

Usage:

  tcpsig verify [-keys FILE] [-json] [-v] [-isn ENDPOINT=ISN ...] [-sne ENDPOINT=SNE ...] [CAPTURE ...]
  tcpsig verify -keys FILE -i IFACE [-port N] [-w FILE] [-every D] [-json] [-v]
  tcpsig bench [-json] [-time D] [-alg NAME]
  tcpsig shim -keys FILE [-queue N] [-status SOCK] [-state FILE] [-v]   (Linux; tcpsig shim -h)
  tcpsig version
  tcpsig help

verify judges every segment that carries a TCP-AO or TCP-MD5 option, and
every unsigned segment of a flow a key covers, in pcap or pcapng files
(gzipped or not; "-" is standard input). With no CAPTURE it verifies a
capture built into the binary, with its keys.

  -keys FILE   the keys configured on one or both endpoints (JSON; "-" is
               standard input):
               {"ao":  [{"alg": "hmac(sha1)", "key": "hex:0a0b…", "sndid": 1, "rcvid": 1,
                         "peer": "192.0.2.0/24", "maclen": 12, "exclude_options": false}],
                "md5": [{"peer": "192.0.2.1/32", "key": "text:secret"}]}
               An entry belongs to the endpoint whose peer is "peer"; a segment
               is judged with its receiver's keys. "key" is hex:… or text:…;
               maclen absent or 0 means 12, exclude_options defaults to false;
               "name" is an optional label; "ifindex" is accepted and ignored
               (a capture does not say which VRF a segment was in). Every
               field: go doc github.com/tcpsig/tcpsig/keyfile.
  -json        one JSON object per judged segment, then a summary object
  -v           list good segments too
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
unknown-isn (TCP-AO without the handshake and no -isn).
Exit status: 0 when every checked segment is good (and one was); 1 when any
is bad, no-key, unsigned or malformed; 2 on a usage, keys-file or capture
error; 3 when nothing was verified: no segment carried an option or came from
a covered peer, or every one was unknown-isn (give -isn).

bench measures signing and verifying per algorithm, payload size (0, 64,
536, 1448, 8948 bytes) and pool backend (clone, rekey), on one core and on
all cores.

  -json        the CPU as one JSON object, then one per measurement
  -time D      how long to run each measurement (default 30ms, at least 1ms)
  -alg NAME    only this algorithm (repeatable): a TCP-AO algorithm's Linux or
               RFC 5926 name, or md5 for TCP-MD5

version prints the module version, the commit it was built from and the Go
version.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command: it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return failf(stderr, "needs a command: verify, bench, version or help (tcpsig help for usage)")
	}
	switch args[0] {
	case "verify":
		return runVerify(args[1:], stdout, stderr)
	case "bench":
		return runBench(args[1:], stdout, stderr)
	case "version", "-version", "--version":
		fmt.Fprintln(stdout, version())
		return 0
	case "shim":
		return runShim(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "tcpsig: unknown command %q: want verify, bench, version or help\n", args[0])
	return 2
}

// failf prints one line to stderr and returns exit status 2.
func failf(stderr io.Writer, format string, a ...any) int {
	fmt.Fprintf(stderr, "tcpsig "+format+"\n", a...)
	return 2
}
