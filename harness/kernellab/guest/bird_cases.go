//go:build linux

package main

// The BIRD cases: a real BGP daemon that nobody here wrote, BIRD 2.17
// (Debian 13's bird2, unpacked into the initramfs by fetch-bird.sh), with
// the guest kernel's TCP-AO in one namespace, and a BIRD without
// authentication behind tcpsig shim (the binary, /tcpsig, run as an
// operator runs it: keys file, -state, SIGHUP, SIGTERM) in another, joined
// by a veth pair:
//
//	ns K: bK 192.0.2.1/24 2001:db8::1/64  BIRD, authentication ao (AS 65001)
//	ns S: bS 192.0.2.2/24 2001:db8::2/64  BIRD, no authentication (AS 65002),
//	                                        tcpsig shim -keys (peer 192.0.2.1, 2001:db8::1)
//
// Each BIRD runs two sessions, peer4 (IPv4) and peer6 (IPv6), and
// originates one route of each family. The MKTs have SendID != RecvID
// (BIRD sends 10 and receives 20 with MKT a, 11 and 21 with MKT b), so a
// swapped direction cannot verify by accident.
//
//	bird-<alg>-ao-dials, bird-<alg>-shim-dials  hmac(sha1), cmac(aes128),
//	    hmac(sha256): one side passive; both sessions Established, routes
//	    both ways, the opener as named, nothing refused by either end
//	bird-<alg>-wrongkey  the two ends disagree on the secret: never
//	    Established, the shim's bad-MAC count and the kernel's TCPAOBad rise
//	bird-<alg>-rotation  MKT a -> b -> a mid-session, moved by BIRD's
//	    preferred key (birdc configure) and by the shim's keys file (SIGHUP),
//	    each in turn: the sessions never drop, nothing is withdrawn, the
//	    KeyIDs switch both ways on the wire, and tcpsig verify judges the
//	    whole capture (handshakes to FINs) good with both MKTs
//	bird-hmac-sha1-restart  the TCP-AO BIRD restarted, then SIGKILLed and started
//	    again; the shim SIGTERMed, then SIGKILLed, and started again with its
//	    -state file: each time the sessions come back, the shim untouched by
//	    the first two

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tcpsig/tcpsig/harness/capture"
	"github.com/tcpsig/tcpsig/harness/kstat"
	"github.com/tcpsig/tcpsig/harness/netns"
	"github.com/tcpsig/tcpsig/harness/proc"
	"github.com/tcpsig/tcpsig/segment"
	"github.com/tcpsig/tcpsig/shim"
)

const (
	birdBin   = "/usr/sbin/bird"
	birdcBin  = "/usr/sbin/birdc"
	tcpsigBin = "/tcpsig"
	birdKind  = "bird-shim"
)

var (
	birdK4, birdS4 = netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	birdK6, birdS6 = netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::2")
)

// birdAlgs maps the kernel's algorithm names to BIRD's.
var birdAlgs = map[string]string{"hmac(sha1)": "hmac sha1", "cmac(aes128)": "cmac aes128", "hmac(sha256)": "hmac sha256"}

func init() {
	for _, alg := range []string{"hmac(sha1)", "cmac(aes128)", "hmac(sha256)"} {
		for _, aoDials := range []bool{true, false} {
			name := "bird-" + algSlug(alg) + "-shim-dials"
			if aoDials {
				name = "bird-" + algSlug(alg) + "-ao-dials"
			}
			register(Case{Name: name, Kind: birdKind, Timeout: 200 * time.Second, Run: func(t *T) { birdSession(t, alg, aoDials) }})
		}
		register(Case{Name: "bird-" + algSlug(alg) + "-wrongkey", Kind: birdKind, Timeout: 200 * time.Second, Run: func(t *T) { birdWrongKey(t, alg) }})
		register(Case{Name: "bird-" + algSlug(alg) + "-rotation", Kind: birdKind, Timeout: 500 * time.Second, Run: func(t *T) { birdRotation(t, alg) }})
	}
	register(Case{Name: "bird-hmac-sha1-restart", Kind: birdKind, Timeout: 600 * time.Second, Run: birdRestart})
	register(Case{Name: "bird-hmac-sha1-schedule", Kind: birdKind, Timeout: 600 * time.Second, Run: func(t *T) { birdSchedule(t, "hmac(sha1)") }})
	register(Case{Name: "bird-explain", Kind: birdKind, Timeout: 600 * time.Second, Run: birdExplain})
}

// needBIRD skips the case where run-qemu.sh could not lay BIRD and
// tcpsig into the initramfs, with fetch-bird.sh's reason.
func needBIRD(t *T) {
	for _, p := range []string{birdBin, birdcBin, tcpsigBin} {
		if _, err := os.Stat(p); err != nil {
			why, _ := os.ReadFile("/bird-skip.txt")
			if len(why) == 0 {
				why = []byte("run-qemu.sh did not put it into the initramfs")
			}
			t.Skipf("no %s: %s", p, strings.TrimSpace(string(why)))
		}
	}
}

// birdMKT is one TCP-AO key as BIRD names its parts; the shim's entry for
// it has the IDs the other way round.
type birdMKT struct {
	name           string
	send, recv     uint8 // BIRD's
	secret         string
	alg            string // the kernel's name
	preferred, bad bool   // bad: the shim's copy has another secret
}

func birdMKTs(alg string) []birdMKT {
	s := algSlug(alg)
	return []birdMKT{
		{name: "a", send: 10, recv: 20, secret: "tcpsig-bird-" + s + "-a", alg: alg},
		{name: "b", send: 11, recv: 21, secret: "tcpsig-bird-" + s + "-b", alg: alg},
	}
}

// birdLab is the two namespaces of a case and what runs in them.
type birdLab struct {
	t          *T
	k, s       *netns.Keeper
	dir        string
	birdK      *birdProc
	birdS      *birdProc
	shim       *proc.Proc
	shimSock   string
	shimState  string
	shimKeys   string
	queue      int
	capt       *capture.Capture
	before     map[string]uint64 // ns K's TcpExt at the start
	procs      []*proc.Proc
	shimStarts int
	transcript strings.Builder // configs and counters as the case saw them, for docs/interop.md
}

// addTranscript adds a titled text to the case's transcript
// (<case>-transcript.txt in the results).
func (l *birdLab) addTranscript(title, text string) {
	fmt.Fprintf(&l.transcript, "==== %s\n%s\n", title, strings.TrimRight(text, "\n"))
}

func (l *birdLab) addTranscriptFile(title, path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		b = []byte(err.Error())
	}
	l.addTranscript(title, string(b))
}

// snapshot adds to the transcript what each end shows now: both BIRDs'
// sessions (birdc), the shim's status and ns K's TCP-AO counters.
func (l *birdLab) snapshot(label string) {
	fmt.Fprintf(&l.transcript, "\n######## %s\n", label)
	for _, b := range []*birdProc{l.birdK, l.birdS} {
		if b == nil {
			continue
		}
		l.addTranscript(fmt.Sprintf("birdc -s %s.ctl show protocols", b.name), b.birdc("show", "protocols"))
		for _, p := range birdProtos {
			l.addTranscript(fmt.Sprintf("birdc -s %s.ctl show protocols all %s", b.name, p), b.birdc("show", "protocols", "all", p))
		}
	}
	if st, err := l.status(); err == nil {
		j, _ := json.MarshalIndent(struct {
			Counters any `json:"counters"`
			Conns    any `json:"conns"`
			Seeded   any `json:"ao_resumed"`
		}{st.Counters, st.Conns, st.Seeded}, "", "  ")
		l.addTranscript("tcpsig shim status (counters, conns, ao_resumed)", string(j))
	} else {
		l.addTranscript("tcpsig shim status", err.Error())
	}
	now := l.tcpExt()
	var sb strings.Builder
	for _, c := range []string{"TCPAOGood", "TCPAOBad", "TCPAOKeyNotFound", "TCPAORequired", "TCPAODroppedIcmps"} {
		fmt.Fprintf(&sb, "TcpExt%s %d (+%d since the case began)\n", c, now[c], now[c]-l.before[c])
	}
	l.addTranscript("ns K (BIRD with TCP-AO): /proc/net/netstat", sb.String())
}

type birdProc struct {
	name, conf, sock string
	p                *proc.Proc
}

func newBirdLab(t *T) *birdLab {
	needBIRD(t)
	l := &birdLab{t: t, k: newShimNS(t), s: newShimNS(t), queue: 40}
	var err error
	l.dir, err = os.MkdirTemp("", "bird")
	t.check(err, "temp dir")
	t.check(l.k.Do(func() error { return netns.AddVeth("bK", "bS", l.s.FD()) }), "veth")
	for _, x := range []struct {
		n     *netns.Keeper
		dev   string
		a, a6 netip.Addr
	}{{l.k, "bK", birdK4, birdK6}, {l.s, "bS", birdS4, birdS6}} {
		t.check(x.n.Do(func() error {
			if err := netns.LinkUp(x.dev); err != nil {
				return err
			}
			if err := netns.AddAddr(x.dev, netip.PrefixFrom(x.a, 24)); err != nil {
				return err
			}
			return netns.AddAddr(x.dev, netip.PrefixFrom(x.a6, 64))
		}), "addresses")
	}
	t.check(l.k.Do(func() (err error) { l.before, err = kstat.TCPExt(); return err }), "TcpExt")
	// Every BGP segment that crosses the veth, both directions.
	t.check(l.k.Do(func() (err error) {
		l.capt, err = capture.Start(capture.Options{Interface: "bK", Filter: capture.TCPPorts(179)})
		return err
	}), "capture")
	l.shimSock = filepath.Join(l.dir, "shim.sock")
	l.shimState = filepath.Join(l.dir, "shim.state")
	l.shimKeys = filepath.Join(l.dir, "shim-keys.json")
	return l
}

// close stops everything; on a failure it logs the daemons' output and
// the segments captured.
func (l *birdLab) close() {
	failed := len(l.t.errs) > 0
	for _, b := range []*birdProc{l.birdK, l.birdS} {
		if b != nil && failed {
			l.t.Logf("%s: show protocols all:\n%s", b.name, b.birdc("show", "protocols", "all"))
		}
	}
	if l.transcript.Len() > 0 {
		// what the daemons said about TCP-AO and their sessions, in the
		// order they were started
		for _, p := range l.procs {
			var keep []string
			for _, line := range strings.Split(strings.TrimRight(p.Log(), "\n"), "\n") {
				if strings.HasPrefix(p.Name, "tcpsig") || strings.Contains(line, "TCP-AO") || strings.Contains(line, "tate changed") ||
					strings.Contains(line, "onfigur") || strings.Contains(line, "Shutting down") {
					keep = append(keep, line)
				}
			}
			what := "log of " + p.Name
			if !strings.HasPrefix(p.Name, "tcpsig") {
				what += " (its TCP-AO, state and configuration lines)"
			}
			l.addTranscript(what, strings.Join(keep, "\n"))
		}
	}
	for i := len(l.procs) - 1; i >= 0; i-- {
		p := l.procs[i]
		p.Stop(syscall.SIGTERM, 10*time.Second)
		if failed {
			l.t.Logf("--- %s output:\n%s", p.Name, lastLines(p.Log(), 60))
		}
	}
	if l.capt != nil {
		l.capt.Stop()
		if failed {
			for _, line := range l.segments(40) {
				l.t.Logf("wire: %s", line)
			}
		}
	}
	l.k.Close()
	l.s.Close()
	os.RemoveAll(l.dir)
	if l.transcript.Len() > 0 {
		l.t.addResultFile(l.t.name+"-transcript.txt", []byte(l.transcript.String()))
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// segments describes the last n captured segments.
func (l *birdLab) segments(n int) []string {
	var out []string
	pkts := l.capt.Packets()
	for i, p := range pkts[max(0, len(pkts)-n):] {
		s, err := parseFrame(p.Data)
		if err != nil {
			out = append(out, fmt.Sprintf("%d: %v", i, err))
			continue
		}
		out = append(out, fmt.Sprintf("%s %v", p.Time.Format("15:04:05.000"), s))
	}
	return out
}

// start runs argv in n, its output kept for the log.
func (l *birdLab) start(n *netns.Keeper, name string, argv ...string) *proc.Proc {
	var p *proc.Proc
	l.t.check(n.Do(func() (err error) {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = []string{"PATH=/usr/sbin:/bin", "HOME=/tmp"}
		cmd.Dir = l.dir
		p, err = proc.Start(name, cmd)
		return err
	}), "start "+name)
	l.procs = append(l.procs, p)
	return p
}

// birdSide is one BIRD's configuration.
type birdSide struct {
	name     string
	routerID string
	as, peer int
	me, them [2]netip.Addr // IPv4, IPv6
	routes   [2]string     // originated: IPv4, IPv6
	passive  bool
	mkts     []birdMKT // authentication ao with these keys; none: no authentication
}

func birdSides() (k, s birdSide) {
	k = birdSide{name: "bird-ao", routerID: "192.0.2.1", as: 65001, peer: 65002, me: [2]netip.Addr{birdK4, birdK6}, them: [2]netip.Addr{birdS4, birdS6},
		routes: [2]string{"198.51.100.0/25", "2001:db8:a::/48"}}
	s = birdSide{name: "bird-plain", routerID: "192.0.2.2", as: 65002, peer: 65001, me: [2]netip.Addr{birdS4, birdS6}, them: [2]netip.Addr{birdK4, birdK6},
		routes: [2]string{"198.51.100.128/25", "2001:db8:b::/48"}}
	return k, s
}

// config is the side's bird.conf. Timers: BGP's need room under TCG (hold
// 30 s rides out a stall that hold 9 s does not), and BIRD's default
// connect retry (120 s) would make every restart slow.
func (b birdSide) config() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "router id %s;\nlog stderr all;\ndebug protocols { states, events };\nprotocol device { scan time 10; }\n", b.routerID)
	for i, fam := range []string{"ipv4", "ipv6"} {
		fmt.Fprintf(&sb, "protocol static static%c { %s; route %s blackhole; }\n", "46"[i], fam, b.routes[i])
	}
	for i, fam := range []string{"ipv4", "ipv6"} {
		fmt.Fprintf(&sb, "protocol bgp peer%c {\n", "46"[i])
		fmt.Fprintf(&sb, "\tlocal %s as %d;\n\tneighbor %s as %d;\n", b.me[i], b.as, b.them[i], b.peer)
		sb.WriteString("\thold time 30; keepalive time 3;\n\tconnect retry time 2; connect delay time 1; error wait time 1, 4;\n")
		if b.passive {
			sb.WriteString("\tpassive on;\n")
		}
		if len(b.mkts) > 0 {
			sb.WriteString("\tauthentication ao;\n\tkeys {\n")
			for _, m := range b.mkts {
				fmt.Fprintf(&sb, "\t\tkey { send id %d; recv id %d; secret %q; algorithm %s;", m.send, m.recv, m.secret, birdAlgs[m.alg])
				if m.preferred {
					sb.WriteString(" preferred;")
				}
				sb.WriteString(" };\n")
			}
			sb.WriteString("\t};\n")
		}
		fmt.Fprintf(&sb, "\t%s { import all; export all; };\n}\n", fam)
	}
	return sb.String()
}

// startBIRD writes b's config and runs BIRD in n.
func (l *birdLab) startBIRD(n *netns.Keeper, b birdSide) *birdProc {
	bp := &birdProc{name: b.name, conf: filepath.Join(l.dir, b.name+".conf"), sock: filepath.Join(l.dir, b.name+".ctl")}
	l.t.check(os.WriteFile(bp.conf, []byte(b.config()), 0o600), "bird config")
	bp.p = l.start(n, b.name, birdBin, "-f", "-c", bp.conf, "-s", bp.sock, "-P", filepath.Join(l.dir, b.name+".pid"))
	l.t.check(bp.p.WaitReady("its control socket", 60*time.Second, func() bool {
		return strings.Contains(bp.birdc("show", "status"), "Daemon is up")
	}), b.name)
	return bp
}

// restart starts BIRD again with the same config and control socket,
// once the old one has exited.
func (l *birdLab) restartBIRD(n *netns.Keeper, bp *birdProc) {
	bp.p = l.start(n, bp.name, birdBin, "-f", "-c", bp.conf, "-s", bp.sock, "-P", filepath.Join(l.dir, bp.name+".pid"))
	l.t.check(bp.p.WaitReady("its control socket", 60*time.Second, func() bool {
		return strings.Contains(bp.birdc("show", "status"), "Daemon is up")
	}), bp.name)
}

// birdc runs a birdc command; a failure is its text.
func (b *birdProc) birdc(args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, birdcBin, append([]string{"-s", b.sock}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("birdc %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// state is the session's state and info columns in "show protocols".
func (b *birdProc) state(proto string) string {
	for _, line := range strings.Split(b.birdc("show", "protocols", proto), "\n") {
		if f := strings.Fields(line); len(f) >= 4 && f[0] == proto {
			return strings.Join(f[3:], " ")
		}
	}
	return "?"
}

func (b *birdProc) established(proto string) bool {
	return strings.Contains(b.state(proto), "Established")
}

// hasRoute reports whether b learnt prefix from proto.
func (b *birdProc) hasRoute(proto, prefix string) bool {
	return strings.Contains(b.birdc("show", "route", "protocol", proto), prefix)
}

// withdrawsReceived is the "Import withdraws" received count of proto's
// channel ("show protocols all"), -1 when not shown.
func (b *birdProc) withdrawsReceived(proto string) int {
	for _, line := range strings.Split(b.birdc("show", "protocols", "all", proto), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == "Import" && f[1] == "withdraws:" {
			var n int
			if _, err := fmt.Sscan(f[2], &n); err == nil {
				return n
			}
		}
	}
	return -1
}

// aoInfo is the TCP-AO part of "show protocols all" (BIRD reads it with
// TCP_AO_INFO from the session's socket).
func (b *birdProc) aoInfo(proto string) string {
	var out []string
	for _, line := range strings.Split(b.birdc("show", "protocols", "all", proto), "\n") {
		line = strings.TrimSpace(line)
		for _, k := range []string{"Current key:", "RNext key:", "Good packets:", "Bad packets:"} {
			if strings.HasPrefix(line, k) {
				out = append(out, k+" "+strings.TrimSpace(strings.TrimPrefix(line, k)))
			}
		}
	}
	return strings.Join(out, ", ")
}

// writeShimKeys writes the shim's keys file: for each MKT, in order, an
// entry per family (the peer's last entry is what the shim asks for).
func (l *birdLab) writeShimKeys(mkts []birdMKT) {
	l.t.check(writeKeysJSON(l.shimKeys, shimEntries(mkts)), "shim keys file")
}

type keyEntry struct {
	Name    string `json:"name"`
	Alg     string `json:"alg"`
	Key     string `json:"key"`
	SndID   uint8  `json:"sndid"`
	RcvID   uint8  `json:"rcvid"`
	Peer    string `json:"peer"`
	Exclude bool   `json:"exclude_options,omitempty"`
	// The entry's lifetimes (tcpsig help keys), when it has them.
	Send   *window `json:"send_lifetime,omitempty"`
	Accept *window `json:"accept_lifetime,omitempty"`
}

// window is a lifetime of the keys file: RFC 3339 times, either may be
// absent.
type window struct {
	Start string `json:"start,omitempty"`
	End   string `json:"end,omitempty"`
}

// shimEntries are the shim's MKTs (peer: BIRD's addresses).
func shimEntries(mkts []birdMKT) []keyEntry {
	var es []keyEntry
	for _, peer := range []netip.Addr{birdK4, birdK6} {
		for _, m := range mkts {
			secret := m.secret
			if m.bad {
				secret += "-wrong"
			}
			es = append(es, keyEntry{Name: m.name + familyTag(peer), Alg: m.alg, Key: "text:" + secret,
				SndID: m.recv, RcvID: m.send, Peer: hostPrefix(peer).String()})
		}
	}
	return es
}

// birdEntries are BIRD's MKTs as a keys-file's entries (peer: the shim
// side's addresses), for tcpsig verify.
func birdEntries(mkts []birdMKT) []keyEntry {
	var es []keyEntry
	for _, peer := range []netip.Addr{birdS4, birdS6} {
		for _, m := range mkts {
			es = append(es, keyEntry{Name: "bird-" + m.name + familyTag(peer), Alg: m.alg, Key: "text:" + m.secret,
				SndID: m.send, RcvID: m.recv, Peer: hostPrefix(peer).String()})
		}
	}
	return es
}

func familyTag(a netip.Addr) string {
	if a.Is4() {
		return "-v4"
	}
	return "-v6"
}

func writeKeysJSON(path string, es []keyEntry) error {
	b, err := json.MarshalIndent(map[string][]keyEntry{"ao": es}, "", "  ")
	if err != nil {
		return err
	}
	// written whole, then renamed: a SIGHUP never reads half a file
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// startShim runs tcpsig shim in ns S and waits for its status socket.
// One queue: the lab kernel lacks NFT_HASH, which several need.
func (l *birdLab) startShim() {
	l.shimStarts++
	l.shim = l.start(l.s, fmt.Sprintf("tcpsig shim (start %d)", l.shimStarts), tcpsigBin, "shim", "-keys", l.shimKeys,
		"-queue", fmt.Sprint(l.queue), "-queues", "1", "-status", l.shimSock, "-state", l.shimState)
	l.t.check(l.shim.WaitReady("serving its status", 60*time.Second, func() bool { _, err := l.status(); return err == nil }), "tcpsig shim")
}

func (l *birdLab) status() (shim.Status, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return shim.ReadStatus(ctx, l.shimSock)
}

func (l *birdLab) mustStatus() shim.Status {
	st, err := l.status()
	l.t.check(err, "shim status")
	return st
}

// tcpExt is ns K's TcpExt now.
func (l *birdLab) tcpExt() map[string]uint64 {
	var m map[string]uint64
	l.t.check(l.k.Do(func() (err error) { m, err = kstat.TCPExt(); return err }), "TcpExt")
	return m
}

// waitFor polls cond every 500 ms for up to d.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(500 * time.Millisecond)
	}
}

var birdProtos = []string{"peer4", "peer6"}

// waitUp waits until both BIRDs have both sessions Established and each
// has the other's two routes.
func (l *birdLab) waitUp(what string, k, s birdSide, d time.Duration) {
	t0 := time.Now()
	if !waitFor(d, func() bool {
		for _, p := range birdProtos {
			if !l.birdK.established(p) || !l.birdS.established(p) {
				return false
			}
		}
		return true
	}) {
		l.t.Fatalf("%s: sessions not Established within %v: bird-ao %s / %s, bird-plain %s / %s", what, d,
			l.birdK.state("peer4"), l.birdK.state("peer6"), l.birdS.state("peer4"), l.birdS.state("peer6"))
	}
	up := time.Since(t0)
	if !waitFor(d, func() bool {
		for i, p := range birdProtos {
			if !l.birdK.hasRoute(p, s.routes[i]) || !l.birdS.hasRoute(p, k.routes[i]) {
				return false
			}
		}
		return true
	}) {
		l.t.Fatalf("%s: routes not exchanged within %v:\nbird-ao: %s\nbird-plain: %s", what, d, l.birdK.birdc("show", "route"), l.birdS.birdc("show", "route"))
	}
	l.t.Logf("%s: both sessions Established after %.1fs, routes both ways after %.1fs", what, up.Seconds(), time.Since(t0).Seconds())
}

// checkSteady checks, after what, that the sessions w watched never left
// Established on their TCP connections, that no route was withdrawn, and
// that neither end refused a segment (checkClean).
func (l *birdLab) checkSteady(w *watch, what string) {
	w.poll()
	if len(w.drops) > 0 {
		l.t.Errorf("the sessions dropped during the %s: %v", what, w.drops)
	}
	for _, bp := range []*birdProc{l.birdK, l.birdS} {
		for _, p := range birdProtos {
			if n := bp.withdrawsReceived(p); n != 0 {
				l.t.Errorf("%s %s: %d withdraws received, want 0", bp.name, p, n)
			}
		}
	}
	l.checkClean(what)
}

// checkClean checks that neither end refused a segment since the start:
// the kernel's TCPAOBad, TCPAOKeyNotFound and TCPAORequired, the shim's
// drops.
func (l *birdLab) checkClean(what string) {
	now := l.tcpExt()
	for _, c := range []string{"TCPAOBad", "TCPAOKeyNotFound", "TCPAORequired"} {
		if now[c] != l.before[c] {
			l.t.Errorf("%s: kernel %s %d -> %d", what, c, l.before[c], now[c])
		}
	}
	if now["TCPAOGood"] == l.before["TCPAOGood"] {
		l.t.Errorf("%s: kernel TCPAOGood did not rise", what)
	}
	st := l.mustStatus()
	if st.Counters.Dropped.BadMAC != 0 || st.Counters.Dropped.KeyNotFound != 0 || st.Counters.Dropped.Unsigned != 0 || st.Counters.Signed == 0 || st.Counters.Verified == 0 {
		l.t.Errorf("%s: shim counters %+v: want signed and verified, no bad MAC, unknown key or unsigned", what, st.Counters)
	}
	l.t.Logf("%s: kernel TCPAOGood +%d TCPAOBad +%d; shim signed %d verified %d dropped %+v; bird-ao peer4 %s; peer6 %s", what,
		now["TCPAOGood"]-l.before["TCPAOGood"], now["TCPAOBad"]-l.before["TCPAOBad"], st.Counters.Signed, st.Counters.Verified,
		st.Counters.Dropped, l.birdK.aoInfo("peer4"), l.birdK.aoInfo("peer6"))
}

// sessions is the shim's tracked TCP-AO sessions that are established.
func sessions(st shim.Status) []shim.ConnStatus {
	var out []shim.ConnStatus
	for _, c := range st.Conns {
		if c.Kind == "TCP-AO" && c.State == "established" && !c.Revoked {
			out = append(out, c)
		}
	}
	return out
}

// birdSession is bird-<alg>-<ao|shim>-dials.
func birdSession(t *T, alg string, aoDials bool) {
	l := newBirdLab(t)
	defer l.close()
	k, s := birdSides()
	mkts := birdMKTs(alg)[:1]
	k.mkts = mkts
	s.passive, k.passive = aoDials, !aoDials
	l.writeShimKeys(mkts)
	l.startShim()
	l.birdS = l.startBIRD(l.s, s)
	l.birdK = l.startBIRD(l.k, k)
	l.addTranscript("bird-ao.conf", k.config())
	l.addTranscript("bird-plain.conf", s.config())
	l.addTranscriptFile("shim-keys.json", l.shimKeys)
	l.waitUp(alg, k, s, 120*time.Second)
	// The opener: the shim's side of a session BIRD-AO opened is port 179.
	ss := sessions(l.mustStatus())
	if len(ss) != 2 {
		t.Errorf("shim tracks %d established TCP-AO sessions, want 2 (IPv4, IPv6): %+v", len(ss), ss)
	}
	for _, c := range ss {
		if got := c.Local.Port() == 179; got != aoDials {
			t.Errorf("session %v <-> %v: opened by the wrong side (want the %s side)", c.Local, c.Remote, map[bool]string{true: "TCP-AO", false: "shim"}[aoDials])
		}
		if c.CurrentKeyID != mkts[0].recv || c.RNextKeyID != mkts[0].send {
			t.Errorf("session %v <-> %v: shim keys %d/%d, want %d/%d", c.Local, c.Remote, c.CurrentKeyID, c.RNextKeyID, mkts[0].recv, mkts[0].send)
		}
	}
	l.checkClean(alg)
	l.snapshot("Established")
}

// birdWrongKey is bird-<alg>-wrongkey: the shim's secret differs, both
// sides open.
func birdWrongKey(t *T, alg string) {
	l := newBirdLab(t)
	defer l.close()
	k, s := birdSides()
	mkts := birdMKTs(alg)[:1]
	k.mkts = mkts
	wrong := slices.Clone(mkts)
	wrong[0].bad = true
	l.writeShimKeys(wrong)
	l.startShim()
	l.birdS = l.startBIRD(l.s, s)
	l.birdK = l.startBIRD(l.k, k)
	l.addTranscript("bird-ao.conf", k.config())
	l.addTranscript("bird-plain.conf", s.config())
	l.addTranscriptFile("shim-keys.json (its secret differs)", l.shimKeys)
	// Both open: BIRD-AO's SYNs reach the shim, which must count them as
	// bad MACs; the shim side's SYNs reach the kernel, which must count
	// TCPAOBad. Until both have been seen twice, neither BIRD may ever be
	// Established.
	var st shim.Status
	var ext map[string]uint64
	var states []string
	seen := func() bool {
		for _, b := range []*birdProc{l.birdK, l.birdS} {
			for _, p := range birdProtos {
				if s := b.state(p); strings.Contains(s, "Established") {
					states = append(states, b.name+" "+p+": "+s)
				}
			}
		}
		st, ext = l.mustStatus(), l.tcpExt()
		return st.Counters.Dropped.BadMAC >= 4 && ext["TCPAOBad"]-l.before["TCPAOBad"] >= 4
	}
	if !waitFor(120*time.Second, seen) {
		t.Errorf("within 120s: shim bad MACs %d, kernel TCPAOBad +%d; want both at least 4", st.Counters.Dropped.BadMAC, ext["TCPAOBad"]-l.before["TCPAOBad"])
	}
	if len(states) > 0 {
		t.Errorf("Established with the wrong key: %v", states)
	}
	if st.Counters.Verified != 0 {
		t.Errorf("the shim verified %d segments from BIRD with the wrong key", st.Counters.Verified)
	}
	if ext["TCPAOGood"] != l.before["TCPAOGood"] {
		t.Errorf("the kernel verified %d segments from the shim with the wrong key", ext["TCPAOGood"]-l.before["TCPAOGood"])
	}
	for _, p := range birdProtos {
		if l.birdK.hasRoute(p, s.routes[0]) || l.birdK.hasRoute(p, s.routes[1]) {
			t.Errorf("bird-ao learnt a route over %s", p)
		}
	}
	l.snapshot("wrong key")
	t.Logf("wrong key: never Established; shim dropped %+v (bad MAC %d); kernel TCPAOBad +%d TCPAOGood +%d TCPAOKeyNotFound +%d; bird-ao peer4: %s; bird-plain peer4: %s",
		st.Counters.Dropped, st.Counters.Dropped.BadMAC, ext["TCPAOBad"]-l.before["TCPAOBad"], ext["TCPAOGood"]-l.before["TCPAOGood"],
		ext["TCPAOKeyNotFound"]-l.before["TCPAOKeyNotFound"], l.birdK.state("peer4"), l.birdS.state("peer4"))
}

// watch polls both BIRDs' sessions and the shim's while a step runs, and
// records anything but Established on the same TCP connections.
type watch struct {
	l     *birdLab
	conns map[netip.AddrPort]shim.ConnStatus // by the shim's local end
	drops []string
}

func (l *birdLab) watch() *watch {
	w := &watch{l: l, conns: map[netip.AddrPort]shim.ConnStatus{}}
	for _, c := range sessions(l.mustStatus()) {
		w.conns[c.Local] = c
	}
	if len(w.conns) != 2 {
		l.t.Errorf("shim tracks %d established sessions, want 2", len(w.conns))
	}
	return w
}

// poll notes a session that is not Established, or whose TCP connection
// is not the one it was.
func (w *watch) poll() {
	for _, b := range []*birdProc{w.l.birdK, w.l.birdS} {
		for _, p := range birdProtos {
			if s := b.state(p); !strings.Contains(s, "Established") {
				w.drops = append(w.drops, b.name+" "+p+": "+s)
			}
		}
	}
	st, err := w.l.status()
	if err != nil {
		w.drops = append(w.drops, "shim status: "+err.Error())
		return
	}
	now := map[netip.AddrPort]bool{}
	for _, c := range sessions(st) {
		now[c.Local] = true
		if o, ok := w.conns[c.Local]; !ok || o.Remote != c.Remote || o.LocalISN != c.LocalISN || o.RemoteISN != c.RemoteISN {
			w.drops = append(w.drops, fmt.Sprintf("a new connection %v <-> %v", c.Local, c.Remote))
		}
	}
	for a := range w.conns {
		if !now[a] {
			w.drops = append(w.drops, fmt.Sprintf("connection %v gone", a))
		}
	}
}

// until polls until cond holds (or d passes).
func (w *watch) until(d time.Duration, cond func(shim.Status) bool) bool {
	return waitFor(d, func() bool {
		w.poll()
		st, err := w.l.status()
		return err == nil && cond(st)
	})
}

// allKeys reports whether every established session of st sends with
// KeyID cur and asks for rnext.
func allKeys(cur, rnext uint8) func(shim.Status) bool {
	return func(st shim.Status) bool {
		ss := sessions(st)
		for _, c := range ss {
			if c.CurrentKeyID != cur || c.RNextKeyID != rnext {
				return false
			}
		}
		return len(ss) == 2
	}
}

// wireLast is the condition that each of the four directions' latest
// signed segment carries the (KeyID, RNextKeyID) pair fromK (from
// BIRD-AO) or fromS (from the shim).
func (l *birdLab) wireLast(fromK, fromS [2]uint8) func(shim.Status) bool {
	return func(shim.Status) bool {
		dirs, seq := wirePairs(l.capt.Packets())
		for _, d := range dirs {
			want := fromS
			if d.src.Addr() == birdK4 || d.src.Addr() == birdK6 {
				want = fromK
			}
			if p := seq[d]; p[len(p)-1] != want {
				return false
			}
		}
		return len(dirs) == 4
	}
}

// wireDir is one direction of a captured session.
type wireDir struct{ src, dst netip.AddrPort }

// wirePairs is, per direction (in the order they appear), the signed
// segments' (KeyID, RNextKeyID) pairs in the order they appeared.
func wirePairs(pkts []capture.Packet) ([]wireDir, map[wireDir][][2]uint8) {
	seq := map[wireDir][][2]uint8{}
	var order []wireDir
	for _, p := range pkts {
		sg, err := parseFrame(p.Data)
		if err != nil || !sg.hasAO {
			continue
		}
		d := wireDir{sg.srcAP(), sg.dstAP()}
		pair := [2]uint8{sg.keyID, sg.rnextID}
		if _, ok := seq[d]; !ok {
			order = append(order, d)
		}
		if s := seq[d]; len(s) == 0 || s[len(s)-1] != pair {
			seq[d] = append(s, pair)
		}
	}
	return order, seq
}

// rotationStep is one move of bird-<alg>-rotation: who moves, and the
// keys each end of the shim's sessions then sends with (KeyID) and asks
// for (RNextKeyID).
type rotationStep struct {
	what      string
	bird      string // the key BIRD prefers after the step ("" : unchanged)
	shimLast  string // the key the shim's file lists last after it ("" : unchanged)
	cur, next uint8  // the shim's sessions' KeyID and RNextKeyID after it
}

// birdRotation is bird-<alg>-rotation: MKT a -> b -> a mid-session, each
// way moved once from each end. BIRD's preferred key (birdc configure)
// makes it ask for that key (RNext); the shim's keys file listing a key
// last (SIGHUP) makes the shim ask for it; each end switches its own
// KeyID when the other asks. The sessions stay up throughout, nothing is
// withdrawn, and the whole capture (handshakes to FINs) verifies.
func birdRotation(t *T, alg string) {
	l := newBirdLab(t)
	defer l.close()
	k, s := birdSides()
	a, b := birdMKTs(alg)[0], birdMKTs(alg)[1]
	a.preferred = true
	k.mkts = []birdMKT{a, b}
	s.passive = true
	byName, pref := map[string]birdMKT{"a": a, "b": b}, "a"
	shimOrder := func(last string) []birdMKT {
		if last == "a" {
			return []birdMKT{b, a}
		}
		return []birdMKT{a, b}
	}
	l.writeShimKeys(shimOrder("a"))
	l.startShim()
	l.birdS = l.startBIRD(l.s, s)
	l.birdK = l.startBIRD(l.k, k)
	l.addTranscript("bird-ao.conf", k.config())
	l.addTranscript("bird-plain.conf", s.config())
	l.addTranscriptFile("shim-keys.json (start)", l.shimKeys)
	l.waitUp("MKT a", k, s, 120*time.Second)
	w := l.watch()
	if !w.until(60*time.Second, allKeys(a.recv, a.send)) {
		t.Fatalf("the shim's sessions are not on MKT a (%d/%d): %+v", a.recv, a.send, sessions(l.mustStatus()))
	}
	l.snapshot("on MKT a")
	steps := []rotationStep{
		{what: "birdc configure, b preferred", bird: "b", cur: b.recv, next: a.send},
		{what: "shim keys file with b last, SIGHUP", shimLast: "b", cur: b.recv, next: b.send},
		{what: "shim keys file with a last, SIGHUP", shimLast: "a", cur: b.recv, next: a.send},
		{what: "birdc configure, a preferred", bird: "a", cur: a.recv, next: a.send},
	}
	for _, st := range steps {
		if st.bird != "" {
			for i := range k.mkts {
				k.mkts[i].preferred = k.mkts[i].name == st.bird
			}
			t.check(os.WriteFile(l.birdK.conf, []byte(k.config()), 0o600), "bird config")
			if out := l.birdK.birdc("configure"); !strings.Contains(out, "Reconfigured") {
				t.Fatalf("%s: birdc configure: %s", st.what, out)
			}
		} else {
			l.writeShimKeys(shimOrder(st.shimLast))
			t.check(l.shim.Signal(syscall.SIGHUP), "SIGHUP")
		}
		if !w.until(90*time.Second, allKeys(st.cur, st.next)) {
			t.Fatalf("%s: the shim's sessions are not on %d/%d: %+v", st.what, st.cur, st.next, sessions(l.mustStatus()))
		}
		if st.bird != "" {
			pref = st.bird
		}
		// BIRD's sockets send with the key the shim asks for once a
		// segment from the shim has asked; the step is done when every
		// direction's latest segment carries the step's pair (an
		// intermediate pair may otherwise never reach the wire).
		fromK, fromS := [2]uint8{st.next, byName[pref].recv}, [2]uint8{st.cur, st.next}
		if !w.until(90*time.Second, l.wireLast(fromK, fromS)) {
			t.Errorf("%s: the wire does not show %v from bird-ao and %v from the shim: bird-ao peer4 %s; peer6 %s", st.what, fromK, fromS,
				l.birdK.aoInfo("peer4"), l.birdK.aoInfo("peer6"))
		}
		l.snapshot("after " + st.what)
	}
	// a few keepalives more on the last keys, both ways
	n := l.capt.Len()
	waitFor(60*time.Second, func() bool { w.poll(); return l.capt.Len() >= n+8 })
	l.checkSteady(w, "rotation")
	l.snapshot("at the end")

	// The end of the sessions: BIRD-AO stops (a Cease, then FINs both ways),
	// so the capture holds them whole, handshakes to FINs.
	if err := l.birdK.p.Stop(syscall.SIGTERM, 30*time.Second); err != nil {
		t.Errorf("bird-ao on SIGTERM: %v", err)
	}
	l.capt.WaitIdle(time.Second, 20*time.Second)

	// The wire: per session and direction, the (KeyID, RNextKeyID) pairs
	// in the order they appeared.
	pkts := l.capt.Packets()
	order, seq := wirePairs(pkts)
	fins := map[wireDir]bool{}
	for i, p := range pkts {
		sg, err := parseFrame(p.Data)
		if err != nil {
			t.Errorf("segment %d: %v", i+1, err)
			continue
		}
		if !sg.hasAO {
			t.Errorf("segment %d unsigned: %v", i+1, sg)
		}
		if sg.flags&segment.FIN != 0 {
			fins[wireDir{sg.srcAP(), sg.dstAP()}] = true
		}
	}
	fromK := [][2]uint8{{a.send, a.recv}, {a.send, b.recv}, {b.send, b.recv}, {a.send, b.recv}, {a.send, a.recv}}
	fromS := [][2]uint8{{a.recv, a.send}, {b.recv, a.send}, {b.recv, b.send}, {b.recv, a.send}, {a.recv, a.send}}
	for _, d := range order {
		want := fromS
		if d.src.Addr() == birdK4 || d.src.Addr() == birdK6 {
			want = fromK
		}
		if !slices.Equal(seq[d], want) {
			t.Errorf("wire %v > %v: KeyID/RNextKeyID went %v, want %v", d.src, d.dst, seq[d], want)
		} else {
			t.Logf("wire %v > %v: KeyID/RNextKeyID %v", d.src, d.dst, seq[d])
		}
	}
	if len(order) != 4 || len(fins) != 4 {
		t.Errorf("%d directions on the wire, %d with a FIN; want 4 and 4 (two sessions, each closed both ways)", len(order), len(fins))
	}

	// The whole capture, judged by tcpsig verify with both ends' MKTs.
	name := "bird-" + algSlug(alg) + "-rotation"
	pcap := filepath.Join(l.dir, name+".pcap")
	keysPath := filepath.Join(l.dir, name+"-keys.json")
	t.check(capture.WriteFile(pcap, l.capt.LinkType(), pkts), "pcap")
	t.check(writeKeysJSON(keysPath, append(birdEntries([]birdMKT{a, b}), shimEntries([]birdMKT{a, b})...)), "keys")
	out, err := exec.Command(tcpsigBin, "verify", "-keys", keysPath, pcap).CombinedOutput()
	if err != nil {
		t.Errorf("tcpsig verify of the whole sessions (%d segments): %v\n%s", len(pkts), err, lastLines(string(out), 20))
	} else {
		t.Logf("tcpsig verify of %d segments: %s", len(pkts), strings.ReplaceAll(lastLines(string(out), 3), "\n", " | "))
	}
	l.addTranscript("tcpsig verify -keys "+filepath.Base(keysPath)+" "+filepath.Base(pcap), string(out))
	for _, f := range []string{pcap, keysPath} {
		if b, err := os.ReadFile(f); err == nil {
			t.addResultFile(filepath.Base(f), b)
		}
	}
}

// birdRestart is bird-restart.
func birdRestart(t *T) {
	const alg = "hmac(sha1)"
	l := newBirdLab(t)
	defer l.close()
	k, s := birdSides()
	mkts := birdMKTs(alg)[:1]
	k.mkts = mkts
	s.passive = true
	l.writeShimKeys(mkts)
	l.startShim()
	shimPID := l.shim.Cmd.Process.Pid
	l.birdS = l.startBIRD(l.s, s)
	l.birdK = l.startBIRD(l.k, k)
	l.addTranscript("bird-ao.conf", k.config())
	l.addTranscript("bird-plain.conf", s.config())
	l.addTranscriptFile("shim-keys.json", l.shimKeys)
	l.waitUp("start", k, s, 120*time.Second)
	l.snapshot("Established")

	// 1. and 2.: BIRD-AO stopped (SIGTERM: it closes its sessions with a
	// Cease) and started again; then SIGKILLed (the kernel closes its
	// sockets, no BGP goodbye) and started again. The shim is not touched.
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		old := l.birdK.p
		if err := old.Stop(sig, 30*time.Second); err != nil && !isSignalExit(err) {
			t.Errorf("bird-ao on %v: %v", sig, err)
		}
		t.Logf("bird-ao %s: bird-plain peer4 %s", unix.SignalName(sig), l.birdS.state("peer4"))
		l.restartBIRD(l.k, l.birdK)
		l.waitUp("bird-ao after "+unix.SignalName(sig), k, s, 180*time.Second)
		l.snapshot("bird-ao " + unix.SignalName(sig) + " and started again")
	}
	if l.shim.Cmd.Process.Pid != shimPID || l.shimStarts != 1 {
		t.Errorf("the shim was restarted")
	}
	l.checkClean("after the BIRD restarts")

	// 3. and 4.: the shim SIGTERMed, then SIGKILLed (either way its rules
	// stay: while none runs, the peers' packets are dropped) and started
	// again with the same -state file (written every 2 s and on exit),
	// from which it resumes the sessions.
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		before := l.mustStatus()
		if err := l.shim.Stop(sig, 30*time.Second); err != nil && !isSignalExit(err) {
			t.Errorf("shim on %v: %v", sig, err)
		}
		l.startShim()
		st := l.mustStatus()
		l.waitUp("after the shim's "+unix.SignalName(sig), k, s, 180*time.Second)
		// the new shim carries the sessions on: it signs and verifies
		// their keepalives
		var st2 shim.Status
		if !waitFor(60*time.Second, func() bool {
			st2 = l.mustStatus()
			return st2.Counters.Signed >= 4 && st2.Counters.Verified >= 4
		}) {
			t.Errorf("the shim started after %v signed %d and verified %d segments in 60s, want 4 each", sig, st2.Counters.Signed, st2.Counters.Verified)
		}
		same := 0
		for _, c := range sessions(st2) {
			for _, o := range sessions(before) {
				if c.Local == o.Local && c.Remote == o.Remote && c.LocalISN == o.LocalISN {
					same++
				}
			}
		}
		t.Logf("shim %s and started again: %d sessions resumed from the state file, %d of 2 still the same TCP connections; dropped meanwhile %+v",
			unix.SignalName(sig), st.Seeded, same, st2.Counters.Dropped)
		if st.Seeded == 0 {
			t.Errorf("the shim started after %v resumed no session from its state file", sig)
		}
		l.checkClean("after the shim's " + unix.SignalName(sig))
		l.snapshot("the shim " + unix.SignalName(sig) + " and started again with -state")
	}
}

// isSignalExit reports whether err is a process's exit by a signal.
func isSignalExit(err error) bool {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok {
			return ws.Signaled()
		}
	}
	return false
}

// birdSchedule is bird-<alg>-schedule (issue 40): BIRD-AO holds MKTs a
// (preferred) and b in the kernel; the shim's keys file gives them
// lifetimes: a sends until T and is accepted until T+1m, b sends from T.
// With no signal and no reload, at T the wire moves to b both ways (the
// shim makes b its current key and asks for it; the kernel follows the
// RNextKeyID), with no refused segment and no flap, and tcpsig verify
// judges the whole capture good; after T+1m the shim lists a outside both
// lifetimes.
func birdSchedule(t *T, alg string) {
	l := newBirdLab(t)
	defer l.close()
	k, s := birdSides()
	a, b := birdMKTs(alg)[0], birdMKTs(alg)[1]
	a.preferred = true
	k.mkts = []birdMKT{a, b}
	s.passive = true
	T := time.Now().UTC().Add(150 * time.Second).Truncate(time.Second)
	const f = time.RFC3339
	es := shimEntries([]birdMKT{a, b})
	for i := range es {
		if strings.HasPrefix(es[i].Name, "a") {
			es[i].Send, es[i].Accept = &window{End: T.Format(f)}, &window{End: T.Add(time.Minute).Format(f)}
		} else {
			es[i].Send, es[i].Accept = &window{Start: T.Format(f)}, &window{Start: T.Add(-time.Hour).Format(f)}
		}
	}
	t.check(writeKeysJSON(l.shimKeys, es), "shim keys file")
	l.startShim()
	l.birdS = l.startBIRD(l.s, s)
	l.birdK = l.startBIRD(l.k, k)
	l.addTranscript("bird-ao.conf", k.config())
	l.addTranscriptFile("shim-keys.json (a schedule: b sends from "+T.Format(f)+")", l.shimKeys)
	l.waitUp("MKT a", k, s, 120*time.Second)
	w := l.watch()
	if !w.until(30*time.Second, allKeys(a.recv, a.send)) {
		t.Fatalf("the shim's sessions are not on MKT a (%d/%d): %+v", a.recv, a.send, sessions(l.mustStatus()))
	}
	if left := time.Until(T); left < 10*time.Second {
		t.Fatalf("the sessions came up %v before b's send start: too late to watch the switch", left)
	}
	l.snapshot("on MKT a, before b's send start")
	waitFor(time.Until(T)+time.Minute, func() bool { w.poll(); return time.Now().After(T) })
	if !w.until(90*time.Second, allKeys(b.recv, b.send)) {
		t.Fatalf("after b's send start the shim's sessions are not on %d/%d: %+v", b.recv, b.send, sessions(l.mustStatus()))
	}
	// The wire: b both ways (BIRD keeps asking for its preferred a, which
	// the shim no longer may send with).
	fromK, fromS := [2]uint8{b.send, a.recv}, [2]uint8{b.recv, b.send}
	if !w.until(90*time.Second, l.wireLast(fromK, fromS)) {
		t.Errorf("the wire does not show %v from bird-ao and %v from the shim: bird-ao peer4 %s; peer6 %s", fromK, fromS,
			l.birdK.aoInfo("peer4"), l.birdK.aoInfo("peer6"))
	}
	l.snapshot("after b's send start")
	waitFor(time.Until(T.Add(time.Minute))+30*time.Second, func() bool { w.poll(); return time.Now().After(T.Add(time.Minute + 5*time.Second)) })
	l.checkSteady(w, "scheduled rotation")
	for _, m := range l.mustStatus().MKTs {
		wantActive := m.SendID == b.recv
		if m.SendActive != wantActive || m.AcceptActive != wantActive {
			t.Errorf("after a's accept end: MKT %d/%d send-active %v accept-active %v", m.SendID, m.RecvID, m.SendActive, m.AcceptActive)
		}
	}
	if err := l.birdK.p.Stop(syscall.SIGTERM, 30*time.Second); err != nil {
		t.Errorf("bird-ao on SIGTERM: %v", err)
	}
	l.capt.WaitIdle(time.Second, 20*time.Second)
	pkts := l.capt.Packets()
	name := "bird-" + algSlug(alg) + "-schedule"
	pcap := filepath.Join(l.dir, name+".pcap")
	keysPath := filepath.Join(l.dir, name+"-keys.json")
	t.check(capture.WriteFile(pcap, l.capt.LinkType(), pkts), "pcap")
	t.check(writeKeysJSON(keysPath, append(birdEntries([]birdMKT{a, b}), shimEntries([]birdMKT{a, b})...)), "keys")
	out, err := exec.Command(tcpsigBin, "verify", "-keys", keysPath, pcap).CombinedOutput()
	if err != nil {
		t.Errorf("tcpsig verify of the whole sessions (%d segments): %v\n%s", len(pkts), err, lastLines(string(out), 20))
	} else {
		t.Logf("tcpsig verify of %d segments: %s", len(pkts), strings.ReplaceAll(lastLines(string(out), 3), "\n", " | "))
	}
	l.addTranscript("tcpsig verify -keys "+filepath.Base(keysPath)+" "+filepath.Base(pcap), string(out))
}

// birdExplain is bird-explain (issue 39): BIRD-AO's kernel TCP-AO
// configured with another algorithm than the shim's file, then the shim's
// file excluding options where the kernel includes them, then BIRD
// sending with another KeyID: each time the session does not come up and
// the shim names the cause (its status, from the diagnosis its log and
// metric carry too). Then the right configuration: Established.
func birdExplain(t *T) {
	for _, c := range []struct {
		cause string
		bird  func(*birdMKT)   // BIRD-AO's mistake
		shim  func([]keyEntry) // or the shim's
	}{
		{"algorithm", func(m *birdMKT) { m.alg = "hmac(sha256)" }, nil},
		{"options", nil, func(es []keyEntry) {
			for i := range es {
				es[i].Exclude = true
			}
		}},
		{"key-id", func(m *birdMKT) { m.send = 99 }, nil},
		{"", nil, nil}, // the right configuration
	} {
		l := newBirdLab(t)
		k, s := birdSides()
		a := birdMKTs("hmac(sha1)")[0]
		a.preferred = true
		es := shimEntries([]birdMKT{a})
		if c.shim != nil {
			c.shim(es)
		}
		if c.bird != nil {
			c.bird(&a)
		}
		k.mkts = []birdMKT{a}
		s.passive = true
		t.check(writeKeysJSON(l.shimKeys, es), "shim keys file")
		l.startShim()
		l.birdS = l.startBIRD(l.s, s)
		l.birdK = l.startBIRD(l.k, k)
		if c.cause == "" {
			l.waitUp("the right configuration", k, s, 120*time.Second)
			l.close()
			continue
		}
		var got []shim.DiagnosisStatus
		if !waitFor(90*time.Second, func() bool {
			st, err := l.status()
			if err != nil {
				return false
			}
			got = st.Diagnoses
			return slices.ContainsFunc(got, func(d shim.DiagnosisStatus) bool { return d.Cause == c.cause })
		}) {
			t.Errorf("%s: the shim names no such cause: %+v", c.cause, got)
		}
		for _, d := range got {
			t.Logf("%s: the shim says %s: %s (entry %s)", c.cause, d.Cause, d.Message, d.Entry)
			if d.Cause != c.cause {
				t.Errorf("%s: the shim also names %s: %s", c.cause, d.Cause, d.Message)
			}
		}
		for _, p := range birdProtos {
			if l.birdK.established(p) {
				t.Errorf("%s: BIRD-AO's %s is Established with a mistake on one end", c.cause, p)
			}
		}
		l.close()
	}
}
