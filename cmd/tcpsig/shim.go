package main

import (
	"flag"
	"fmt"
	"io"
)

const shimUsage = `usage: tcpsig shim -keys FILE [-queue N] [-status SOCK] [-state FILE] [-v]

shim signs and verifies the TCP-AO / TCP-MD5 sessions of this host's own TCP
(a BGP daemon configured without a password, say) with the peers of the
keys file, for a kernel that cannot: netfilter rules of its own queue TCP to
and from those peers to it; it inserts the option and signs what leaves,
verifies and strips what arrives, and drops (and counts) what fails.
Linux only; needs CAP_NET_ADMIN.

  -keys FILE     the keys file (as for verify); its peers are the peers covered
  -queue N       the netfilter queue number (default 7911); the rules live in
                 the nftables tables "tcpsig-shim-N" (ip and ip6)
  -status SOCK   serve the status (JSON) on this unix socket
  -state FILE    keep the TCP-AO sessions' ISNs and SNEs here (no keys), so a
                 restarted shim resumes them; read at start
  -v             debug logging (every dropped packet)

Signals: SIGHUP reloads the keys file (sessions stay up; the last TCP-AO key
of a peer in the file becomes its sessions' RNext: the peer is asked to send
with it, and the shim sends with the key the peer asks for), SIGUSR1 logs
the status, SIGTERM / SIGINT remove the rules and exit. Rules left by a
killed shim are replaced at the next start.
`

// shimFlags are the parsed arguments of tcpsig shim.
type shimFlags struct {
	keys, status, state string
	queue               uint
	verbose             bool
}

// parseShimFlags parses the arguments; it returns false after printing
// usage or an error.
func parseShimFlags(args []string, stderr io.Writer) (shimFlags, int, bool) {
	var f shimFlags
	fs := flag.NewFlagSet("shim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, shimUsage) }
	fs.StringVar(&f.keys, "keys", "", "keys file")
	fs.UintVar(&f.queue, "queue", 7911, "netfilter queue number")
	fs.StringVar(&f.status, "status", "", "status socket")
	fs.StringVar(&f.state, "state", "", "state file")
	fs.BoolVar(&f.verbose, "v", false, "debug logging")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return f, 0, false
		}
		return f, 2, false
	}
	if fs.NArg() > 0 {
		return f, failf(stderr, "shim: unexpected argument %q", fs.Arg(0)), false
	}
	if f.keys == "" {
		return f, failf(stderr, "shim: -keys FILE is required"), false
	}
	if f.queue > 0xffff {
		return f, failf(stderr, "shim: -queue %d: want 0..65535", f.queue), false
	}
	return f, 0, true
}
