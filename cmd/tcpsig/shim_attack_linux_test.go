//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/harness/kstat"
	"github.com/tcpsig/tcpsig/harness/netns"
	"github.com/tcpsig/tcpsig/harness/onpath"
	"github.com/tcpsig/tcpsig/harness/proc"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/linuxsock"
	"github.com/tcpsig/tcpsig/shim"
)

// The attack tests run in harness/onpath's three namespaces, B's own TCP
// behind tcpsig shim and M, the router between A and B, forging segments
// into B's sessions all along:
//
//	ns A: opA 192.0.2.1/24 (.3 too)  — the kernel signs TCP-MD5, or a
//	                                   second shim signs TCP-AO
//	ns M: 192.0.2.254 | 198.51.100.254 — routes, sniffs and forges
//	ns B: opB 198.51.100.2/24        — plain sockets and BIRD behind
//	                                   tcpsig shim
var (
	attackA2 = netip.MustParseAddr("192.0.2.3") // A's second address: the session whose key goes in phase (d)
	attackX  = netip.MustParseAddr("192.0.2.7") // a peer only the phase (c) reload names, forged by M
)

// TestShimAttack: protection never lapses under operation (DESIGN.md,
// "Rules under operation"). While M forges, every few milliseconds,
// unsigned data (a marker), RSTs at rcv_nxt and in the window, and SYNs
// into B's sessions with A (a plain socket pair moving known bytes both
// ways, a second one, and a BIRD BGP session when BIRD is installed), B's
// shim goes through
//
//	(a) SIGTERM, a pause with no shim, a restart with the same arguments;
//	(b) SIGKILL, a pause, a restart;
//	(c) a SIGHUP reload whose file adds the key kind absent at start, for a
//	    new peer 192.0.2.7 that M then forges SYNs and data from;
//	(d) a SIGHUP reload that removes the key of the second session's
//	    peer (192.0.2.3).
//
// Throughout: no forged byte reaches B's applications (each reads exactly
// its peer's stream), no reset is accepted (no socket error, BIRD stays
// Established, B's kernel counts no reset, abort or challenge ACK), B never
// sends an unsigned segment on a covered session nor answers 192.0.2.7
// once its key is in, the sessions carry on after each phase, and each
// shim that ran while M forged counts drops. The exits leave the rules in
// place (the kernel drops covered peers' packets until a shim reads the
// queue); only "tcpsig shim -uninstall" removes them.
//
// TCP-MD5: A's kernel signs. TCP-AO: the host kernel has no TCP-AO, so a
// second shim signs in A (the engine on both ends, as in
// TestShimReloadAO) and B's shim resumes its sessions from -state.
func TestShimAttack(t *testing.T) {
	needQueue(t)
	for _, kind := range []string{"TCP-MD5", "TCP-AO"} {
		t.Run(kind, func(t *testing.T) { attackScenario(t, kind == "TCP-AO") })
	}
}

// attackPause is how long no shim runs in phases (a) and (b): the
// scenario, not a bound on anything.
const attackPause = 1500 * time.Millisecond

func attackScenario(t *testing.T, isAO bool) {
	on, err := onpath.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(on.Close)
	nsA, nsB := &ns{on.A}, &ns{on.B}
	if err := nsA.Do(func() error { return netns.AddAddr(onpath.IfA, netip.PrefixFrom(attackA2, 24)) }); err != nil {
		t.Fatal(err)
	}
	att, err := onpath.Start(on.M, 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := att.Close(); err != nil {
			t.Errorf("attacker: %v", err)
		}
	})

	// The keys. B's shim covers A's two addresses with the scenario's kind;
	// phase (c) adds the other kind for 192.0.2.7, phase (d) drops .3.
	const secret1, secret2, secretX = "tcpsig-attack-one", "tcpsig-attack-two", "tcpsig-attack-x"
	aoKey := bytes.Repeat([]byte{0x6b}, 20)
	mkt := func(peer netip.Addr) string {
		return fmt.Sprintf(`{"alg": "hmac(sha256)", "key": "hex:%x", "sndid": 5, "rcvid": 5, "peer": "%v/32"}`, aoKey, peer)
	}
	md5 := func(peer netip.Addr, s string) string {
		return fmt.Sprintf(`{"peer": "%v/32", "key": "text:%s"}`, peer, s)
	}
	file := func(ao, md []string) string {
		return fmt.Sprintf(`{"ao": [%s], "md5": [%s]}`, strings.Join(ao, ", "), strings.Join(md, ", "))
	}
	kind, other := "md5", "ao"
	var start, added, removed string
	if isAO {
		kind, other = "ao", "md5"
		start = file([]string{mkt(onpath.AddrA), mkt(attackA2)}, nil)
		added = file([]string{mkt(onpath.AddrA), mkt(attackA2)}, []string{md5(attackX, secretX)})
		removed = file([]string{mkt(onpath.AddrA)}, []string{md5(attackX, secretX)})
	} else {
		start = file(nil, []string{md5(onpath.AddrA, secret1), md5(attackA2, secret2)})
		added = file([]string{mkt(attackX)}, []string{md5(onpath.AddrA, secret1), md5(attackA2, secret2)})
		removed = file([]string{mkt(attackX)}, []string{md5(onpath.AddrA, secret1)})
	}
	dirB := shortDir(t)
	keysB := writeKeys(t, dirB, "keys.json", start)
	queue := "47"
	args := []string{"-keys", keysB, "-queue", queue}
	state := filepath.Join(dirB, "state.json")
	if isAO {
		queue = "48"
		args = []string{"-keys", keysB, "-queue", queue, "-state", state}
		dirA := shortDir(t)
		startShim(t, nsA, dirA, "-keys", writeKeys(t, dirA, "keys.json", file([]string{mkt(onpath.AddrB)}, nil)), "-queue", queue)
	}
	table := "tcpsig-shim-" + queue
	shB, sockB := startShim(t, nsB, dirB, args...)

	// The sessions: B dials A's two addresses; A's kernel holds the
	// TCP-MD5 keys (none for TCP-AO: A's shim signs).
	lc := func(s string) *net.ListenConfig {
		if isAO {
			return &net.ListenConfig{}
		}
		return linuxsock.ListenConfig(linuxsock.Keys{MD5: []keys.MD5{{Peer: netip.PrefixFrom(onpath.AddrB, 32), Key: []byte(s)}}})
	}
	main := dialDuplex(t, nsA, nsB, "main", lc(secret1), onpath.AddrA, 1)
	second := dialDuplex(t, nsA, nsB, "second", lc(secret2), attackA2, 2)
	// A listener of B's for 192.0.2.7's forged SYNs, and a closed port.
	var lnX *net.TCPListener
	if err := nsB.Do(func() error {
		ln, err := net.Listen("tcp4", netip.AddrPortFrom(onpath.AddrB, 0).String())
		lnX, _ = ln.(*net.TCPListener)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lnX.Close() })
	xOpen := onpath.Flow{Peer: netip.AddrPortFrom(attackX, 40007), Target: netip.MustParseAddrPort(lnX.Addr().String())}
	xClosed := onpath.Flow{Peer: netip.AddrPortFrom(attackX, 40007), Target: netip.AddrPortFrom(onpath.AddrB, 9)}

	flows := []onpath.Flow{main.flow, second.flow}
	var bgp *birdWatch
	if why := birdMissing(); why != "" {
		t.Logf("no BGP session in this run: %s", why)
	} else {
		password := secret1
		if isAO {
			password = ""
		}
		bgp = startBGP(t, nsA, nsB, password)
		flows = append(flows, bgp.flow)
	}
	exchange(t, 16<<10, main, second)
	for _, f := range flows {
		if !waitFor(10*time.Second, func() bool { v := att.Tracker.View(f); return v.FromTarget.HasAck && v.FromPeer.Seen }) {
			t.Fatalf("M's sniffer did not learn %v: %+v", f, att.Tracker.View(f))
		}
	}
	g := newAttackGuard(t, nsB, att, flows, []*duplex{main, second}, bgp)
	for _, f := range flows {
		att.Inject(f, onpath.AllKinds)
	}
	t.Logf("%s: M forges into %d sessions every 5 ms: %v", kind, len(flows), flows)

	// drops is a shim's count of what it refused as unsigned, with a bad
	// MAC or without a session.
	drops := func(sock string) (shim.Status, uint64) {
		t.Helper()
		st, err := shimStatusOf(sock)
		if err != nil {
			t.Fatalf("shim status: %v", err)
		}
		d := st.Counters.Dropped
		return st, d.Unsigned + d.BadMAC + d.NoConn
	}
	awaitDrops := func(phase, sock string, base uint64) shim.Status {
		t.Helper()
		var st shim.Status
		if !waitFor(10*time.Second, func() bool { var n uint64; st, n = drops(sock); return n > base }) {
			t.Errorf("%s: the shim counted no drop while M forged %v; dropped %+v", phase, att.Total(), st.Counters.Dropped)
		}
		return st
	}
	endPhase := func(phase string) {
		t.Helper()
		g.check(phase)
		if t.Failed() {
			t.FailNow()
		}
	}

	// (a) and (b): the shim exits; its rules stay and nothing reads the
	// queue, so the kernel drops both ways what the rules queue; a new
	// shim with the same arguments takes over.
	for _, x := range []struct {
		phase string
		sig   syscall.Signal
	}{{"(a) SIGTERM", syscall.SIGTERM}, {"(b) SIGKILL", syscall.SIGKILL}} {
		exchange(t, 64<<10, main, second)
		if isAO && x.sig == syscall.SIGKILL {
			// The shim writes -state every few seconds: a SIGKILL before
			// it wrote a session loses that session.
			awaitState(t, state, flows)
		}
		sent0 := att.Total()
		if x.sig == syscall.SIGTERM {
			if err := stopShim(shB); err != nil {
				t.Errorf("%s: shim exit: %v", x.phase, err)
			}
		} else {
			if err := shB.Signal(x.sig); err != nil {
				t.Fatal(err)
			}
			<-shB.Done()
		}
		if !rulesExist(t, nsB, table) {
			t.Errorf("%s: the shim's exit removed its rules (%s): until a new shim runs, B's kernel takes anyone's unsigned segments for the covered peers' open sessions", x.phase, table)
		}
		readers := queueReaders(t, nsB)
		time.Sleep(attackPause)
		gap := att.Total().Sub(sent0)
		shB, sockB = startShim(t, nsB, dirB, args...)
		exchange(t, 64<<10, main, second)
		st := awaitDrops(x.phase, sockB, 0)
		t.Logf("%s: no shim for %v (netfilter queues with a reader: %q), M forged %v meanwhile; the new shim (%d TCP-AO sessions resumed) dropped %s; M forged %v in all",
			x.phase, attackPause, readers, gap, st.Seeded, dropLine(st.Counters.Dropped), att.Total().Sub(sent0))
		endPhase(x.phase)
	}

	// (c): a reload adds the kind absent at start, for 192.0.2.7. First
	// the control: uncovered, 192.0.2.7's SYN to a closed port draws B's
	// RST, so M sees it when B answers.
	if err := att.SendOnce(xClosed, onpath.SYN); err != nil {
		t.Fatal(err)
	}
	if !waitFor(10*time.Second, func() bool { return att.Tracker.View(xClosed).FromTarget.RST > 0 }) {
		t.Fatalf("(c): B never answered 192.0.2.7 before the reload either (sent %v): the check below would show nothing", att.Sent(xClosed))
	}
	sent0 := att.Total()
	_, dropped0 := drops(sockB)
	writeKeys(t, dirB, "keys.json", added)
	inFlight := exchangeStart(64<<10, main, second)
	if err := shB.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	awaitKeys(t, "(c)", sockB, map[string]int{kind: 2, other: 1})
	g.answersOf(lnX, xOpen, xClosed)
	att.Inject(xOpen, onpath.SYN|onpath.Data)
	att.Inject(xClosed, onpath.SYN|onpath.Data)
	exchangeEnd(t, inFlight)
	exchange(t, 64<<10, main, second)
	if !waitFor(10*time.Second, func() bool { return att.Sent(xOpen).Total() >= 100 }) {
		t.Fatalf("(c): M did not forge from 192.0.2.7: %v", att.Sent(xOpen))
	}
	st := awaitDrops("(c)", sockB, dropped0)
	exchange(t, 16<<10, main, second)
	t.Logf("(c) SIGHUP adding %s for %v: M forged %v (from 192.0.2.7: %v); the shim dropped %s",
		other, attackX, att.Total().Sub(sent0), att.Sent(xOpen), dropLine(st.Counters.Dropped))
	endPhase("(c)")

	// (d): a reload removes the key of the second session's peer. The
	// session is revoked: what A sends on it is dropped, what B sends is
	// never sent unsigned, M's forgeries into it are dropped; the main
	// session carries on.
	exchange(t, 16<<10, main, second)
	sent0 = att.Total()
	_, dropped0 = drops(sockB)
	writeKeys(t, dirB, "keys.json", removed)
	if err := shB.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	awaitKeys(t, "(d)", sockB, map[string]int{kind: 1, other: 1})
	got0 := second.toB.got.Load()
	seen0 := att.Tracker.View(second.flow).FromPeer
	second.writeAB(8 << 10)
	second.writeBA(8 << 10)
	exchange(t, 64<<10, main)
	// A retransmits: its data was never acknowledged.
	if !waitFor(20*time.Second, func() bool { return att.Tracker.View(second.flow).FromPeer.Data >= seen0.Data+2 }) {
		t.Errorf("(d): A did not retransmit on the revoked session: %v", att.Tracker.View(second.flow).FromPeer)
	}
	if got := second.toB.got.Load(); got != got0 {
		t.Errorf("(d): B's application read %d bytes on the session whose key was removed", got-got0)
	}
	st = awaitDrops("(d)", sockB, dropped0)
	for _, c := range st.Conns {
		if c.Remote.Addr() == attackA2 {
			t.Logf("(d): the revoked session in the status: %+v", c)
		}
	}
	t.Logf("(d) SIGHUP removing %v's %s key: M forged %v (into the revoked session: %v); the shim dropped %s; A sent %d data segments on it since",
		attackA2, kind, att.Total().Sub(sent0), att.Sent(second.flow), dropLine(st.Counters.Dropped), att.Tracker.View(second.flow).FromPeer.Data-seen0.Data)
	endPhase("(d)")

	// The end: M stops; the main session closes cleanly, each side having
	// read exactly the other's stream; the last shim's SIGTERM leaves the
	// rules, and only -uninstall removes them.
	att.StopAll()
	exchange(t, 16<<10, main)
	g.check("end")
	main.close(t)
	if err := stopShim(shB); err != nil {
		t.Errorf("shim exit on SIGTERM: %v", err)
	}
	if !rulesExist(t, nsB, table) {
		t.Errorf("SIGTERM removed the rules (%s)", table)
	}
	out, err := runShimOnce(t, nsB, "-uninstall", "-queue", queue)
	if err != nil {
		t.Errorf("tcpsig shim -uninstall -queue %s: %v\n%s", queue, err, out)
	}
	if rulesExist(t, nsB, table) {
		t.Errorf("rules left after tcpsig shim -uninstall -queue %s:\n%s", queue, out)
	}
	t.Logf("tcpsig shim -uninstall -queue %s: %s", queue, strings.TrimSpace(out))
	t.Logf("%s: M forged %v in all; B's kernel counters %v", kind, att.Total(), g.counters())
}

// dropLine formats a shim's drops for the log.
func dropLine(d shim.Drops) string {
	return fmt.Sprintf("%d (unsigned %d, bad MAC %d, no session %d, key not found %d, other %d)",
		d.Total(), d.Unsigned, d.BadMAC, d.NoConn, d.KeyNotFound, d.Total()-d.Unsigned-d.BadMAC-d.NoConn-d.KeyNotFound)
}

// awaitKeys waits until the shim's status shows the reloaded file's
// entries.
func awaitKeys(t *testing.T, phase, sock string, want map[string]int) {
	t.Helper()
	var st shim.Status
	if !waitFor(10*time.Second, func() bool {
		var err error
		st, err = shimStatusOf(sock)
		return err == nil && st.Keys["ao"] == want["ao"] && st.Keys["md5"] == want["md5"]
	}) {
		t.Fatalf("%s: the reload was not applied: keys %v, want %v", phase, st.Keys, want)
	}
}

// awaitState waits until the -state file holds each flow's session.
func awaitState(t *testing.T, path string, flows []onpath.Flow) {
	t.Helper()
	var b []byte
	if !waitFor(10*time.Second, func() bool {
		b, _ = os.ReadFile(path)
		for _, f := range flows {
			if !bytes.Contains(b, []byte(`"`+f.Target.String()+`"`)) || !bytes.Contains(b, []byte(`"`+f.Peer.String()+`"`)) {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("the shim did not write its sessions %v to its state file:\n%s", flows, b)
	}
}

// queueReaders is B's /proc/net/netfilter/nfnetlink_queue: one line per
// queue a process reads ("" when none).
func queueReaders(t *testing.T, n *ns) string {
	t.Helper()
	var b []byte
	if err := n.Do(func() (err error) {
		b, err = os.ReadFile("/proc/thread-self/net/netfilter/nfnetlink_queue")
		return err
	}); err != nil {
		t.Logf("nfnetlink_queue: %v", err)
	}
	return strings.TrimSpace(string(b))
}

// runShimOnce runs tcpsig shim with args in n to its exit.
func runShimOnce(t *testing.T, n *ns, args ...string) (string, error) {
	t.Helper()
	j, _ := json.Marshal(append([]string{"shim"}, args...))
	p := n.start(t, "tcpsig shim "+strings.Join(args, " "), []string{"TCPSIG_SHIM_HELPER=1", "TCPSIG_SHIM_ARGS=" + string(j)},
		os.Args[0], "-test.run=^TestShimHelperProcess$", "-test.v=false")
	select {
	case <-p.Done():
	case <-time.After(20 * time.Second):
		p.Kill()
		return p.Log(), proc.ErrTimeout
	}
	return p.Log(), p.Err()
}

// streamByte is byte i of the stream seed: what each end of a duplex
// writes and the other checks.
func streamByte(seed byte, i int64) byte { return byte(i) ^ byte(i>>8)*29 ^ byte(i>>16)*101 ^ seed }

// stream is one direction of a duplex: what its writer wrote and what
// its reader read, checked byte by byte.
type stream struct {
	name string
	seed byte
	sent int64 // bytes handed to Write (the test's goroutine only)
	got  atomic.Int64

	mu  sync.Mutex
	err error // the first wrong byte or read error
	eof bool
}

func (s *stream) read(c net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		off := s.got.Load()
		for i, b := range buf[:n] {
			if want := streamByte(s.seed, off+int64(i)); b != want {
				rest := buf[i:n]
				note := ""
				if bytes.Contains(buf[:n], []byte(onpath.Marker)) {
					note = ": M's forged marker was delivered"
				}
				s.fail(fmt.Errorf("%s: byte %d read %#x, want %#x (%q…)%s", s.name, off+int64(i), b, want, rest[:min(len(rest), 24)], note))
				return
			}
		}
		s.got.Add(int64(n))
		if err == io.EOF {
			s.mu.Lock()
			s.eof = true
			s.mu.Unlock()
			return
		}
		if err != nil {
			s.fail(fmt.Errorf("%s: read after %d bytes: %w", s.name, s.got.Load(), err))
			return
		}
	}
}

func (s *stream) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
}

// status is the first error, and whether the stream ended cleanly.
func (s *stream) status() (eof bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.eof, s.err
}

// next is the next n bytes of the stream, counted as sent.
func (s *stream) next(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = streamByte(s.seed, s.sent+int64(i))
	}
	s.sent += int64(n)
	return b
}

// duplex is a TCP connection between A (listening) and B (dialing, behind
// the shim) carrying a known byte stream each way.
type duplex struct {
	name       string
	a, b       *net.TCPConn
	toB, toA   *stream
	flow       onpath.Flow // M impersonates A to B
	writeErrs  chan error
	pendingOut sync.WaitGroup
}

// dialDuplex listens in A on addr with lc and dials from B.
func dialDuplex(t *testing.T, a, b *ns, name string, lc *net.ListenConfig, addr netip.Addr, seed byte) *duplex {
	t.Helper()
	var ln net.Listener
	if err := a.Do(func() (err error) {
		ln, err = lc.Listen(t.Context(), "tcp4", netip.AddrPortFrom(addr, 0).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		acc <- c
	}()
	d := &duplex{name: name, toB: &stream{name: name + " A→B", seed: seed}, toA: &stream{name: name + " B→A", seed: ^seed}, writeErrs: make(chan error, 64)}
	if err := b.Do(func() error {
		dl := net.Dialer{Timeout: 10 * time.Second, LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(onpath.AddrB, 0))}
		c, err := dl.Dial("tcp4", ln.Addr().String())
		if err == nil {
			d.b = c.(*net.TCPConn)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-acc:
		if c == nil {
			t.Fatal("accept failed")
		}
		d.a = c.(*net.TCPConn)
	case <-time.After(10 * time.Second):
		t.Fatal("A accepted no connection")
	}
	t.Cleanup(func() { d.a.Close(); d.b.Close() })
	d.flow = onpath.Flow{Peer: d.a.LocalAddr().(*net.TCPAddr).AddrPort(), Target: d.b.LocalAddr().(*net.TCPAddr).AddrPort()}
	go d.toB.read(d.b)
	go d.toA.read(d.a)
	return d
}

func (d *duplex) write(c *net.TCPConn, s *stream, n int) {
	data := s.next(n)
	d.pendingOut.Add(1)
	go func() {
		defer d.pendingOut.Done()
		_ = c.SetWriteDeadline(time.Now().Add(60 * time.Second))
		if _, err := c.Write(data); err != nil {
			d.writeErrs <- fmt.Errorf("%s: write: %w", s.name, err)
		}
	}()
}

func (d *duplex) writeAB(n int) { d.write(d.a, d.toB, n) }
func (d *duplex) writeBA(n int) { d.write(d.b, d.toA, n) }

// delivered reports whether both directions read all that was written,
// or the first error.
func (d *duplex) delivered() (bool, error) {
	select {
	case err := <-d.writeErrs:
		return false, err
	default:
	}
	for _, s := range []*stream{d.toB, d.toA} {
		if _, err := s.status(); err != nil {
			return false, err
		}
	}
	return d.toB.got.Load() == d.toB.sent && d.toA.got.Load() == d.toA.sent, nil
}

// exchangeStart writes n more bytes each way on each duplex.
func exchangeStart(n int, ds ...*duplex) []*duplex {
	for _, d := range ds {
		d.writeAB(n)
		d.writeBA(n)
	}
	return ds
}

// exchangeEnd waits until each duplex delivered all it was given, or
// marks t failed (the phase's checks still run).
func exchangeEnd(t *testing.T, ds []*duplex) {
	t.Helper()
	for _, d := range ds {
		var err error
		if !waitFor(30*time.Second, func() bool { var ok bool; ok, err = d.delivered(); return ok || err != nil }) {
			err = fmt.Errorf("stalled: B read %d of %d, A read %d of %d", d.toB.got.Load(), d.toB.sent, d.toA.got.Load(), d.toA.sent)
		}
		if err != nil {
			t.Errorf("session %s: %v", d.name, err)
		}
	}
}

// exchange moves n more bytes each way on each duplex and waits for them.
func exchange(t *testing.T, n int, ds ...*duplex) {
	t.Helper()
	exchangeEnd(t, exchangeStart(n, ds...))
}

// close shuts both directions and checks that each side read exactly
// the other's stream to its end.
func (d *duplex) close(t *testing.T) {
	t.Helper()
	d.pendingOut.Wait()
	if err := d.a.CloseWrite(); err != nil {
		t.Error(err)
	}
	if err := d.b.CloseWrite(); err != nil {
		t.Error(err)
	}
	for _, s := range []*stream{d.toB, d.toA} {
		if !waitFor(30*time.Second, func() bool { eof, err := s.status(); return eof || err != nil }) {
			t.Errorf("%s: no end of stream after %d of %d bytes", s.name, s.got.Load(), s.sent)
			continue
		}
		if _, err := s.status(); err != nil {
			t.Error(err)
		} else if got := s.got.Load(); got != s.sent {
			t.Errorf("%s: read %d bytes to its end, the writer wrote %d", s.name, got, s.sent)
		}
	}
}

// attackCounters are B's kernel counters that rise when a forged segment
// reaches its TCP: a reset or abort of an established connection, a
// challenge ACK drawn by an in-window RST or SYN (RFC 5961).
var attackCounters = []string{"Tcp:EstabResets", "TcpExt:TCPAbortOnData", "TcpExt:TCPChallengeACK", "TcpExt:TCPSYNChallenge"}

// tcpCounters reads attackCounters in n's namespace.
func tcpCounters(t *testing.T, n *ns) map[string]uint64 {
	t.Helper()
	m := map[string]uint64{}
	if err := n.Do(func() error {
		ext, err := kstat.TCPExt()
		if err != nil {
			return err
		}
		b, err := os.ReadFile("/proc/thread-self/net/snmp")
		if err != nil {
			return err
		}
		tcp, err := snmpSection(b, "Tcp")
		if err != nil {
			return err
		}
		for _, c := range attackCounters {
			sec, name, _ := strings.Cut(c, ":")
			v, ok := ext[name]
			if sec == "Tcp" {
				v, ok = tcp[name]
			}
			if !ok {
				return fmt.Errorf("no %s counter", c)
			}
			m[c] = v
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return m
}

// snmpSection parses one section of /proc/net/snmp: a line of names, a
// line of values.
func snmpSection(b []byte, section string) (map[string]uint64, error) {
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != section+":" {
			continue
		}
		if names == nil {
			names = f[1:]
			continue
		}
		m := make(map[string]uint64, len(names))
		for i, s := range f[1:] {
			if i < len(names) {
				v, _ := strconv.ParseInt(s, 10, 64) // MaxConn is -1
				m[names[i]] = uint64(v)
			}
		}
		return m, nil
	}
	return nil, fmt.Errorf("no %s section in snmp", section)
}

// attackGuard holds what must not change while M forges, and checks it.
type attackGuard struct {
	t        *testing.T
	b        *ns
	att      *onpath.Attacker
	flows    []onpath.Flow
	base     map[onpath.Flow]onpath.View
	duplexes []*duplex
	kernel   map[string]uint64
	bird     *birdWatch
	quiet    map[onpath.Flow]uint64 // flows B must not answer from now on: what it had sent
	listener *net.TCPListener       // where those flows' SYNs go
}

func newAttackGuard(t *testing.T, b *ns, att *onpath.Attacker, flows []onpath.Flow, ds []*duplex, bird *birdWatch) *attackGuard {
	g := &attackGuard{t: t, b: b, att: att, flows: flows, duplexes: ds, bird: bird,
		base: map[onpath.Flow]onpath.View{}, quiet: map[onpath.Flow]uint64{}}
	for _, f := range flows {
		g.base[f] = att.Tracker.View(f)
	}
	g.kernel = tcpCounters(t, b)
	return g
}

func (g *attackGuard) counters() map[string]uint64 { return tcpCounters(g.t, g.b) }

// answersOf makes check refuse any further segment from B on flows, and
// any connection on ln.
func (g *attackGuard) answersOf(ln *net.TCPListener, flows ...onpath.Flow) {
	g.listener = ln
	for _, f := range flows {
		g.quiet[f] = g.att.Tracker.View(f).FromTarget.Packets
	}
}

func (g *attackGuard) check(phase string) {
	t := g.t
	t.Helper()
	for _, d := range g.duplexes {
		for _, s := range []*stream{d.toB, d.toA} {
			if eof, err := s.status(); err != nil || eof {
				t.Errorf("%s: %v (end of stream: %v)", phase, err, eof)
			}
		}
	}
	now := g.counters()
	for _, c := range attackCounters {
		if now[c] != g.kernel[c] {
			t.Errorf("%s: B's kernel %s %d -> %d: a forged segment reached its TCP", phase, c, g.kernel[c], now[c])
		}
	}
	for _, f := range g.flows {
		b, v := g.base[f], g.att.Tracker.View(f)
		if n := v.FromTarget.Unsigned - b.FromTarget.Unsigned; n != 0 {
			t.Errorf("%s: B sent %d unsigned segments on the covered session %v", phase, n, f)
		}
		if n := v.FromPeer.Unsigned - b.FromPeer.Unsigned; n != 0 {
			t.Errorf("%s: A sent %d unsigned segments on %v (the sniffer saw M's own?)", phase, n, f)
		}
		for _, x := range []struct {
			who      string
			now, was onpath.Half
		}{{"B", v.FromTarget, b.FromTarget}, {"A", v.FromPeer, b.FromPeer}} {
			if x.now.RST != x.was.RST || x.now.FIN != x.was.FIN {
				t.Errorf("%s: %s sent %d RST and %d FIN on %v: the session ended", phase, x.who, x.now.RST-x.was.RST, x.now.FIN-x.was.FIN, f)
			}
		}
	}
	if len(g.quiet) > 0 && kstat.Pending(g.listener) {
		t.Errorf("%s: B's listener accepted a connection from M's forged 192.0.2.7 (its SYNs answered, its ACK taken)", phase)
	}
	for f, n := range g.quiet {
		if got := g.att.Tracker.View(f).FromTarget.Packets; got != n {
			t.Errorf("%s: B answered %d of M's segments on %v once 192.0.2.7 was covered: %v", phase, got-n, f, g.att.Tracker.View(f).FromTarget)
		}
	}
	if g.bird != nil {
		if err := g.bird.err(); err != nil {
			t.Errorf("%s: %v", phase, err)
		}
	}
	if err := g.att.Err(); err != nil {
		t.Errorf("%s: attacker: %v", phase, err)
	}
}

// birdMissing says why the BGP part cannot run, or "".
func birdMissing() string {
	for _, b := range []string{"bird", "birdc"} {
		if _, err := exec.LookPath(b); err != nil {
			return fmt.Sprintf("BIRD 2 is not installed (%s not in PATH; Debian: apt-get install bird2)", b)
		}
	}
	return ""
}

// birdWatch is a BGP session A ↔ B (B passive, behind the shim) and a
// poller that records any sign of it leaving Established.
type birdWatch struct {
	a, b *bird
	nsB  *ns
	flow onpath.Flow // A's end (M impersonates it) to B's port 179
	was  [2]string   // each side's "show protocols" line when established

	mu    sync.Mutex
	first error
	stop  chan struct{}
	done  chan struct{}
}

// startBGP runs the two BIRDs (A with the kernel TCP-MD5 password, or
// none), waits for Established and starts watching.
func startBGP(t *testing.T, nsA, nsB *ns, password string) *birdWatch {
	t.Helper()
	dir := shortDir(t)
	conf := func(me, them netip.Addr, as, peer int, route, extra string) string {
		// Hold time 30 s: the scenario's pauses are 1.5 s, and a keepalive
		// lost in one is retransmitted with backoff after it.
		return fmt.Sprintf(`router id %s;
timeformat protocol iso long ms;
log stderr all;
protocol device { scan time 1; }
protocol static { ipv4; route %s blackhole; }
protocol bgp peer {
	local %s as %d;
	neighbor %s as %d;
	multihop 2;
	%s
	hold time 30; keepalive time 3;
	connect retry time 1; connect delay time 1; error wait time 1, 2;
	ipv4 { import all; export all; };
}
`, me, route, me, as, them, peer, extra)
	}
	run := func(n *ns, name, cfg string) *bird {
		path := filepath.Join(dir, name+".conf")
		if err := writeConf(path, cfg); err != nil {
			t.Fatal(err)
		}
		b := &bird{name: name, sock: filepath.Join(dir, name+".ctl")}
		b.p = n.start(t, "bird "+name, nil, "bird", "-f", "-c", path, "-s", b.sock, "-P", filepath.Join(dir, name+".pid"))
		return b
	}
	extraA := ""
	if password != "" {
		extraA = fmt.Sprintf("password %q;", password)
	}
	w := &birdWatch{nsB: nsB, stop: make(chan struct{}), done: make(chan struct{})}
	w.b = run(nsB, "b", conf(onpath.AddrB, onpath.AddrA, 65002, 65001, "203.0.113.128/25", "passive on;"))
	w.a = run(nsA, "a", conf(onpath.AddrA, onpath.AddrB, 65001, 65002, "203.0.113.0/25", extraA))
	if !waitFor(30*time.Second, func() bool { return w.a.established() && w.b.established() }) {
		t.Fatalf("no Established BGP session:\nA: %s\nB: %s", w.a.birdc("show", "protocols", "all", "peer"), w.b.birdc("show", "protocols", "all", "peer"))
	}
	w.was = [2]string{w.line(w.a), w.line(w.b)}
	if w.was[0] == "" || w.was[1] == "" {
		t.Fatalf("birdc failed: %q, %q", w.a.birdc("show", "protocols", "peer"), w.b.birdc("show", "protocols", "peer"))
	}
	var err error
	if w.flow, err = bgpFlow(nsB); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.close)
	go w.poll()
	t.Logf("BGP session %v established: %q / %q", w.flow, w.was[0], w.was[1])
	return w
}

// line is b's "show protocols" line of the session without its "since"
// time (which BIRD moves once more as the session's channels come up),
// "" when birdc failed (no word on the session; the TCP connection and
// M's view of its segments still tell).
func (w *birdWatch) line(b *bird) string {
	out := b.birdc("show", "protocols", "peer")
	if strings.HasPrefix(out, "birdc: ") {
		return ""
	}
	return birdSince.ReplaceAllString(lastLine(out), "")
}

// birdSince is a time as "timeformat protocol iso long ms" prints it.
var birdSince = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\s+`)

// poll compares each side's protocol line (state, since, info) with the
// one at establishment until close.
func (w *birdWatch) poll() {
	defer close(w.done)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		for i, b := range []*bird{w.a, w.b} {
			if l := w.line(b); l != "" && l != w.was[i] {
				w.mu.Lock()
				if w.first == nil {
					w.first = fmt.Errorf("BIRD %s left the established session: %q, was %q\n%s", b.name, l, w.was[i], b.birdc("show", "protocols", "all", "peer"))
				}
				w.mu.Unlock()
			}
		}
	}
}

// err is the first sign of the session leaving Established, also
// checked now: BIRD's word, and B's BGP connection being the same TCP
// connection (a session that went down and up again is a new one).
func (w *birdWatch) err() error {
	if f, err := bgpFlow(w.nsB); err != nil || f != w.flow {
		return fmt.Errorf("B's BGP connection is no longer %v: %v %v", w.flow, f, err)
	}
	for i, b := range []*bird{w.a, w.b} {
		if l := w.line(b); l != "" && l != w.was[i] {
			return fmt.Errorf("BIRD %s left the established session: %q, was %q", b.name, l, w.was[i])
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.first
}

func (w *birdWatch) close() {
	close(w.stop)
	<-w.done
}

// bgpFlow finds B's established BGP connection (local port 179) in its
// /proc/net/tcp, as a flow from A's end to B's.
func bgpFlow(n *ns) (onpath.Flow, error) {
	var b []byte
	if err := n.Do(func() (err error) { b, err = os.ReadFile("/proc/thread-self/net/tcp"); return err }); err != nil {
		return onpath.Flow{}, err
	}
	// "sl local_address rem_address st ...": addresses as the hex of a
	// __be32 read as a native integer, ports in hex; st 01 is
	// ESTABLISHED.
	parse := func(s string) (netip.AddrPort, error) {
		h, p, _ := strings.Cut(s, ":")
		a, err := strconv.ParseUint(h, 16, 32)
		if err != nil {
			return netip.AddrPort{}, err
		}
		port, err := strconv.ParseUint(p, 16, 16)
		if err != nil {
			return netip.AddrPort{}, err
		}
		var ip [4]byte
		binary.NativeEndian.PutUint32(ip[:], uint32(a))
		return netip.AddrPortFrom(netip.AddrFrom4(ip), uint16(port)), nil
	}
	for _, l := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(l)
		if len(f) < 4 || f[3] != "01" {
			continue
		}
		local, err1 := parse(f[1])
		remote, err2 := parse(f[2])
		if err1 == nil && err2 == nil && local.Port() == 179 && remote.Addr() == onpath.AddrA {
			return onpath.Flow{Peer: remote, Target: local}, nil
		}
	}
	return onpath.Flow{}, fmt.Errorf("no established BGP connection in B's /proc/net/tcp:\n%s", b)
}
