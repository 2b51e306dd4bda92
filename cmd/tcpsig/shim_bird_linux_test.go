//go:build linux

package main

import (
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/harness/proc"
)

// bird is one BIRD daemon of a test.
type bird struct {
	name, sock string
	p          *proc.Proc
}

// birdSide describes one BGP speaker.
type birdSide struct {
	me, them netip.Addr
	as, peer int
	route    string // the prefix it originates and exports
	password string // kernel TCP-MD5 key; "" for none
	passive  bool   // waits for the other side to connect
}

func needBIRD(t *testing.T) {
	t.Helper()
	needRoot(t)
	for _, b := range []string{"bird", "birdc"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Skipf("needs BIRD 2 (%s not in PATH; Debian: apt-get install bird2)", b)
		}
	}
}

// startBIRD writes a config for s and runs BIRD in n with its own config,
// control socket and pid file.
func startBIRD(t *testing.T, n *ns, dir, name string, s birdSide) *bird {
	t.Helper()
	channel := "ipv4"
	if s.me.Is6() {
		channel = "ipv6"
	}
	var extra []string
	if s.password != "" {
		extra = append(extra, fmt.Sprintf("password %q;", s.password))
	}
	if s.passive {
		extra = append(extra, "passive on;")
	}
	// Router IDs: 192.0.2.1 or .2 whatever the session's family.
	rid := "192.0.2.1"
	if s.as != 65001 {
		rid = "192.0.2.2"
	}
	conf := fmt.Sprintf(`router id %s;
log stderr all;
protocol device { scan time 1; }
protocol static { %s; route %s blackhole; }
protocol bgp peer {
	local %s as %d;
	neighbor %s as %d;
	%s
	hold time 6; keepalive time 2;
	connect retry time 1; connect delay time 1; error wait time 1, 2;
	%s { import all; export all; };
}
`, rid, channel, s.route, s.me, s.as, s.them, s.peer, strings.Join(extra, "\n\t"), channel)
	cfg := filepath.Join(dir, name+".conf")
	if err := writeConf(cfg, conf); err != nil {
		t.Fatal(err)
	}
	b := &bird{name: name, sock: filepath.Join(dir, name+".ctl")}
	b.p = n.start(t, "bird "+name, nil, "bird", "-f", "-c", cfg, "-s", b.sock, "-P", filepath.Join(dir, name+".pid"))
	return b
}

// birdc runs a birdc command against b.
func (b *bird) birdc(args ...string) string {
	out, err := exec.Command("birdc", append([]string{"-s", b.sock}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("birdc: %v: %s", err, out)
	}
	return string(out)
}

// state is the BGP session's state, as "show protocols" says it.
func (b *bird) established() bool {
	return strings.Contains(b.birdc("show", "protocols", "peer"), "Established")
}

// hasRoute reports whether b's table has prefix from BGP.
func (b *bird) hasRoute(prefix string) bool {
	out := b.birdc("show", "route", "for", prefix, "all")
	return strings.Contains(out, "BGP") && strings.Contains(out, "peer")
}

// waitFor polls cond every 100 ms up to d.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// birdPair is the two speakers of a session in family v6 or not.
func birdPair(v6 bool) (a, b birdSide) {
	a = birdSide{me: addrA4, them: addrB4, as: 65001, peer: 65002, route: "198.51.100.0/25"}
	b = birdSide{me: addrB4, them: addrA4, as: 65002, peer: 65001, route: "198.51.100.128/25"}
	if v6 {
		a.me, a.them, a.route = addrA6, addrB6, "2001:db8:a::/48"
		b.me, b.them, b.route = addrB6, addrA6, "2001:db8:b::/48"
	}
	return a, b
}

// TestBIRDPlain: two BIRDs without passwords reach Established and learn
// each other's route: the harness itself, without the shim.
func TestBIRDPlain(t *testing.T) {
	needBIRD(t)
	nsA, nsB := newPair(t)
	dir := shortDir(t)
	sa, sb := birdPair(false)
	sb.passive = true
	b := startBIRD(t, nsB, dir, "b", sb)
	a := startBIRD(t, nsA, dir, "a", sa)
	if !waitFor(30*time.Second, func() bool { return a.established() && b.established() }) {
		t.Fatalf("no Established session:\nA: %s\nB: %s", a.birdc("show", "protocols", "all", "peer"), b.birdc("show", "protocols", "all", "peer"))
	}
	if !waitFor(10*time.Second, func() bool { return a.hasRoute(sb.route) && b.hasRoute(sa.route) }) {
		t.Errorf("routes not exchanged:\nA: %s\nB: %s", a.birdc("show", "route"), b.birdc("show", "route"))
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
