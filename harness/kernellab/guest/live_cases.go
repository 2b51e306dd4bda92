//go:build linux

package main

// Engine <-> kernel, live: a userspace TCP endpoint (harness/usertcp) whose
// every segment is signed and verified by packetauth.Layer (TCP-AO) talks
// to kernel sockets with TCP-AO keys across a TUN device, each case in a
// network namespace of its own. The kernel really checks: it drops what does
// not verify and counts it (TcpExt TCPAOGood/TCPAOBad of the namespace,
// /proc/thread-self/net/netstat); a wrong key must move TCPAOBad and deliver
// nothing. The cases record no captures; run only them with
// TCPSIG_CASES=live. Names are live-<alg>-<v4|v6>[-maclenN][-exclopt]-<mode>:
//
//	engine-dials            the engine connects to a kernel listener, sends a
//	                        request, reads the reply; TCPAOGood rises by exactly
//	                        the segments it sent, TCPAOBad stays 0
//	kernel-dials-greeting   the kernel connects to the engine's ao listener, which
//	                        answers with a SYN-ACK carrying a greeting: one SYN,
//	                        one SYN-ACK, the kernel establishes (it verified it)
//	wrongkey-engine-syn     the engine's SYNs under a wrong key: TCPAOBad +4, no reply
//	wrongkey-engine-data    data under a wrong key after a good handshake:
//	                        TCPAOBad +4, nothing to read on the kernel socket
//	wrongkey-kernel-syn     the kernel's SYNs under a wrong key: the engine's
//	                        listener counts each bad and sends nothing
//	rotate-engine-setrnext  Conn.SetRNext on the engine moves the kernel's current key
//	rotate-kernel-setrnext  TCP_AO_INFO set_rnext on the kernel moves the engine's
//	default-key             three MKTs for the peer added in one order on both
//	                        sides, none set current: the kernel's SYN and the
//	                        engine's name the same one, the newest
//	zero-checksum           a signed data segment whose TCP checksum is zero:
//	                        Linux refuses it with the field 0x0000 (TCPAOBad +1,
//	                        it hashes the pseudo-header the other way round) and
//	                        takes it as 0xFFFF, what segment.TCPChecksum writes
//	listen-rst              a signed ACK for no connection to a kernel listener:
//	                        its RST (SendID == RecvID) reproduced byte for byte
//	                        by a TrafficKey as a Linux listener derives it (listenerReset), none with SendID ≠ RecvID

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/harness/kstat"
	"github.com/tcpsig/tcpsig/harness/netns"
	"github.com/tcpsig/tcpsig/harness/usertcp"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/linuxsock"
	"github.com/tcpsig/tcpsig/packetauth"
	"github.com/tcpsig/tcpsig/segment"
)

const liveKind = "engine-kernel"

type liveMode int

const (
	engineDials    liveMode = iota // the engine connects to a kernel listener: request, reply, close
	kernelDials                    // the kernel connects to the engine, which greets in its SYN-ACK
	wrongKeySYN                    // the engine's SYNs carry a wrong key: the kernel drops them all
	wrongKeyData                   // a good handshake, then data under a wrong key: dropped, not delivered
	wrongKeyKernel                 // the kernel's SYNs carry a wrong key: the engine's listener drops them
	rotateEngine                   // mid-connection, the engine's SetRNext moves the kernel's current key
	rotateKernel                   // mid-connection, the kernel's set_rnext moves the engine's current key
	defaultKey                     // with several MKTs and none set current, both sides start with the newest
	listenReset                    // a kernel listener's RST to an ACK for no connection, reproduced by the engine
	zeroChecksum                   // a data segment whose TCP checksum is zero: refused as 0x0000, accepted as 0xFFFF
)

var liveSuffix = map[liveMode]string{
	engineDials:    "engine-dials",
	kernelDials:    "kernel-dials-greeting",
	wrongKeySYN:    "wrongkey-engine-syn",
	wrongKeyData:   "wrongkey-engine-data",
	wrongKeyKernel: "wrongkey-kernel-syn",
	rotateEngine:   "rotate-engine-setrnext",
	rotateKernel:   "rotate-kernel-setrnext",
	defaultKey:     "default-key",
	listenReset:    "listen-rst",
	zeroChecksum:   "zero-checksum",
}

type liveCase struct {
	name    string
	alg     algSpec
	v6      bool
	maclen  int
	exclude bool
	mode    liveMode
}

func init() {
	var cs []liveCase
	for _, a := range allAlgs {
		for _, v6 := range []bool{false, true} {
			cs = append(cs, liveCase{alg: a, v6: v6, maclen: 12, mode: engineDials},
				liveCase{alg: a, v6: v6, maclen: 12, mode: kernelDials})
		}
	}
	cs = append(cs,
		// options excluded from the MAC (the SYNs' MSS, SACK-perm, TS, WS)
		liveCase{alg: hmacSHA1, maclen: 12, exclude: true, mode: engineDials},
		liveCase{alg: hmacSHA1, maclen: 12, exclude: true, mode: kernelDials},
		liveCase{alg: cmacAES128, v6: true, maclen: 12, exclude: true, mode: engineDials},
		liveCase{alg: hmacMD5, v6: true, maclen: 12, exclude: true, mode: kernelDials},
		// other MAC lengths (10: the MAC ends inside the padding word)
		liveCase{alg: hmacSHA512, v6: true, maclen: 16, mode: engineDials},
		liveCase{alg: hmacMD5, maclen: 4, mode: engineDials},
		liveCase{alg: hmacMD5, maclen: 16, mode: kernelDials},
		liveCase{alg: hmacSHA1, v6: true, maclen: 10, mode: kernelDials},
		// the kernel checks: wrong keys
		liveCase{alg: hmacSHA256, maclen: 12, mode: wrongKeySYN},
		liveCase{alg: cmacAES128, v6: true, maclen: 12, mode: wrongKeySYN},
		liveCase{alg: hmacSHA256, v6: true, maclen: 12, mode: wrongKeyData},
		liveCase{alg: cmacAES128, maclen: 12, mode: wrongKeyData},
		liveCase{alg: hmacSHA1, maclen: 12, mode: wrongKeyKernel},
		// key rotation mid-connection, driven from each side
		liveCase{alg: hmacSHA256, maclen: 12, mode: rotateEngine},
		liveCase{alg: cmacAES128, v6: true, maclen: 12, mode: rotateEngine},
		liveCase{alg: hmacSHA256, v6: true, maclen: 12, mode: rotateKernel},
		liveCase{alg: hmacSHA1, maclen: 12, mode: rotateKernel},
		// which MKT a new connection starts with
		liveCase{alg: hmacSHA1, maclen: 12, mode: defaultKey},
		liveCase{alg: hmacSHA256, v6: true, maclen: 12, mode: defaultKey},
		// a RST from a listening socket
		liveCase{alg: hmacSHA1, maclen: 12, mode: listenReset},
		liveCase{alg: cmacAES128, v6: true, maclen: 12, mode: listenReset},
		liveCase{alg: hmacSHA3512, maclen: 12, mode: listenReset},
		// a TCP checksum of zero
		liveCase{alg: hmacSHA1, maclen: 12, mode: zeroChecksum},
		liveCase{alg: cmacAES128, v6: true, maclen: 12, mode: zeroChecksum},
	)
	for _, c := range cs {
		c.name = c.defaultName()
		register(Case{Name: c.name, Kind: liveKind, Run: c.run})
	}
}

func (c liveCase) defaultName() string {
	fam := "v4"
	if c.v6 {
		fam = "v6"
	}
	n := fmt.Sprintf("live-%s-%s", c.alg.short, fam)
	if c.maclen != 12 {
		n += fmt.Sprintf("-maclen%d", c.maclen)
	}
	if c.exclude {
		n += "-exclopt"
	}
	return n + "-" + liveSuffix[c.mode]
}

// liveReport collects a case's findings on the namespace's goroutine; they
// reach the *T only if the case finishes in time.
type liveReport struct {
	errs, logs []string
}

func (r *liveReport) errorf(format string, a ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, a...))
}
func (r *liveReport) logf(format string, a ...any) {
	r.logs = append(r.logs, fmt.Sprintf(format, a...))
}

// Bounds. A healthy case takes well under a second (the wrong-key ones a
// few seconds of retransmissions); a broken one gives up after liveIO,
// and once liveMaxFailures attempts have failed the remaining live cases
// fail at once, so that a broken engine cannot push the guest past its
// timeout and lose the whole table.
const (
	liveIO          = 10 * time.Second // connect, accept, read and write deadlines
	liveTimeout     = 60 * time.Second // one case, whatever it waits for
	liveMaxFailures = 6
)

// liveEngine is the endpoint's retransmission policy: 0.2+0.4+...+3.2 s,
// 6.2 s in all before it gives up.
var liveEngine = usertcp.Config{RTO: 200 * time.Millisecond, MaxRetries: 4}

var liveFailures atomic.Int32

func (c liveCase) run(t *T) {
	if n := liveFailures.Load(); n >= liveMaxFailures {
		t.Errorf("not run: %d attempts of live cases failed already", n)
		return
	}
	defer func() {
		if len(t.errs) > 0 {
			liveFailures.Add(1)
		}
	}()
	r := &liveReport{}
	done := make(chan error, 1)
	go func() {
		done <- netns.Run(func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
				}
			}()
			n, err := newLiveNet(c.v6)
			if err != nil {
				return err
			}
			defer n.tun.Close()
			err = c.body(r, n)
			// The namespace is the case's own: its counters are the case's.
			if st, serr := readAOStats(); serr != nil {
				r.errorf("%v", serr)
			} else if err != nil {
				err = fmt.Errorf("%w (kernel: %v)", err, st)
			}
			return err
		})
	}()
	select {
	case err := <-done:
		for _, l := range r.logs {
			t.Logf("%s", l)
		}
		for _, e := range r.errs {
			t.Errorf("%s", e)
		}
		if err != nil {
			t.Errorf("%v", err)
		}
	case <-time.After(liveTimeout):
		t.Errorf("case timed out after %v", liveTimeout)
	}
}

func (c liveCase) body(r *liveReport, n *liveNet) error {
	switch c.mode {
	case engineDials:
		return c.runEngineDials(r, n)
	case kernelDials:
		return c.runKernelDials(r, n)
	case wrongKeySYN:
		return c.runWrongKeySYN(r, n)
	case wrongKeyData:
		return c.runWrongKeyData(r, n)
	case wrongKeyKernel:
		return c.runWrongKeyKernel(r, n)
	case rotateEngine, rotateKernel:
		return c.runRotation(r, n)
	case defaultKey:
		return c.runDefaultKey(r, n)
	case listenReset:
		return c.runListenReset(r, n)
	case zeroChecksum:
		return c.runZeroChecksum(r, n)
	}
	return fmt.Errorf("unknown mode %d", c.mode)
}

// ----------------------------------------------------------- the network

const (
	liveKernelPort = 179
	liveEnginePort = 40000
)

// liveNet is a fresh namespace: a TUN device whose prefix is routed to the
// engine, the kernel's address on it, and the engine's.
type liveNet struct {
	tun          *usertcp.TUN
	link         *tap
	kaddr, uaddr netip.Addr
}

func newLiveNet(v6 bool) (*liveNet, error) {
	tun, err := usertcp.OpenTUN("ao0")
	if err != nil {
		return nil, err
	}
	n := &liveNet{tun: tun, link: &tap{Link: tun}}
	p := netip.MustParsePrefix("10.99.0.1/24")
	n.uaddr = netip.MustParseAddr("10.99.0.2")
	if v6 {
		p = netip.MustParsePrefix("2001:db8:99::1/64")
		n.uaddr = netip.MustParseAddr("2001:db8:99::2")
	}
	n.kaddr = p.Addr()
	// Up before the address: an IPv6 address on a down link becomes
	// usable only later (see netns.AddAddr).
	if err := netns.LinkUp(tun.Name()); err != nil {
		tun.Close()
		return nil, err
	}
	if err := netns.AddAddr(tun.Name(), p); err != nil {
		tun.Close()
		return nil, err
	}
	return n, nil
}

func (n *liveNet) kernelAP() netip.AddrPort { return netip.AddrPortFrom(n.kaddr, liveKernelPort) }
func (n *liveNet) engineAP() netip.AddrPort { return netip.AddrPortFrom(n.uaddr, liveEnginePort) }

// tap records every packet the engine writes to and reads from the link.
type tap struct {
	usertcp.Link
	mu  sync.Mutex
	log []tapped
}

type tapped struct {
	out bool // written by the engine
	pkt []byte
}

func (t *tap) WritePacket(pkt []byte) error {
	t.record(true, pkt)
	return t.Link.WritePacket(pkt)
}

func (t *tap) ReadPacket(b []byte, deadline time.Time) (int, error) {
	n, err := t.Link.ReadPacket(b, deadline)
	if err == nil {
		t.record(false, b[:n])
	}
	return n, err
}

func (t *tap) record(out bool, pkt []byte) {
	t.mu.Lock()
	t.log = append(t.log, tapped{out, bytes.Clone(pkt)})
	t.mu.Unlock()
}

// mark returns a position in the log, for segments(since).
func (t *tap) mark() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.log)
}

// liveSeg is a TCP segment of the log, summarised.
type liveSeg struct {
	out          bool
	flags        segment.Flags
	seq          uint32
	payload      []byte
	ao           bool
	keyID, rnext uint8
}

// segments returns the TCP segments logged since mark (other packets, such
// as the kernel's IPv6 router solicitations, are left out).
func (t *tap) segments(since int) []liveSeg {
	t.mu.Lock()
	log := t.log[since:]
	t.mu.Unlock()
	var out []liveSeg
	for _, p := range log {
		s, err := segment.ParsePacket(p.pkt)
		if err != nil {
			continue
		}
		ls := liveSeg{out: p.out, flags: s.Header().Flags(), seq: s.Header().Seq(), payload: s.Payload()}
		if s.Auth().AO > 0 {
			ls.ao, ls.keyID, ls.rnext = true, s.Header()[s.Auth().AO+2], s.Header()[s.Auth().AO+3]
		}
		out = append(out, ls)
	}
	return out
}

// lastOut returns the last packet the engine wrote.
func (t *tap) lastOut() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := len(t.log) - 1; i >= 0; i-- {
		if t.log[i].out {
			return t.log[i].pkt
		}
	}
	return nil
}

// sent counts the segments the engine wrote.
func (t *tap) sent() int {
	n := 0
	for _, s := range t.segments(0) {
		if s.out {
			n++
		}
	}
	return n
}

// ---------------------------------------------------------------- keys

// liveMKT is an MKT as the engine sees it; the kernel's copy swaps the IDs.
type liveMKT struct {
	key        []byte
	send, recv uint8
	bits       int // peer prefix length; 0: the peer's address alone
}

// peer is the MKT's peer prefix for a peer at a.
func (m liveMKT) peer(a netip.Addr) netip.Prefix {
	if m.bits == 0 {
		return hostPrefix(a)
	}
	return netip.PrefixFrom(a, m.bits).Masked()
}

func (c liveCase) mkts(rotation bool) []liveMKT {
	ms := []liveMKT{{key: keyMaterial(c.name, "A", c.alg.keyLen, false), send: 100, recv: 200}}
	if rotation {
		ms = append(ms, liveMKT{key: keyMaterial(c.name, "B", c.alg.keyLen, false), send: 101, recv: 201})
	}
	return ms
}

func (c liveCase) wrongMKTs() []liveMKT {
	return []liveMKT{{key: keyMaterial(c.name, "wrong", c.alg.keyLen, false), send: 100, recv: 200}}
}

func (c liveCase) kernelKeys(n *liveNet, ms []liveMKT) []aoKey {
	var ks []aoKey
	for _, m := range ms {
		ks = append(ks, aoKey{AO: keys.AO{Peer: m.peer(n.uaddr), Algorithm: c.alg.alg, SendID: m.recv, RecvID: m.send,
			MACLen: c.maclen, Key: m.key, ExcludeOptions: c.exclude}})
	}
	return ks
}

func (c liveCase) engineRing(n *liveNet, ms []liveMKT) (*ao.Keyring, error) {
	ring := ao.NewKeyring(nil)
	for _, m := range ms {
		if _, err := ring.Add(keys.AO{Peer: m.peer(n.kaddr), SendID: m.send, RecvID: m.recv, Algorithm: c.alg.alg,
			Key: m.key, MACLen: c.maclen, ExcludeOptions: c.exclude}); err != nil {
			return nil, fmt.Errorf("engine MKT %d/%d: %w", m.send, m.recv, err)
		}
	}
	return ring, nil
}

// keyControl adds TCP-AO keys to a socket before it binds (net.Dialer and
// net.ListenConfig Control).
func keyControl(keys []aoKey) func(network, address string, rc syscall.RawConn) error {
	return func(network, address string, rc syscall.RawConn) error {
		for _, k := range keys {
			if err := linuxsock.AddAOKey(linuxsock.Raw(rc), k.AO, k.sel); err != nil {
				return fmt.Errorf("maclen %d: %w", k.MACLen, err)
			}
		}
		return nil
	}
}

func kernelListen(n *liveNet, keys []aoKey) (*net.TCPListener, error) {
	lc := net.ListenConfig{Control: keyControl(keys), KeepAlive: -1}
	ln, err := lc.Listen(context.Background(), "tcp", n.kernelAP().String())
	if err != nil {
		return nil, err
	}
	return ln.(*net.TCPListener), nil
}

func kernelDial(n *liveNet, keys []aoKey, timeout time.Duration) (*net.TCPConn, error) {
	d := net.Dialer{Control: keyControl(keys), KeepAlive: -1, Timeout: timeout,
		LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(n.kaddr, 0))}
	c, err := d.Dial("tcp", n.engineAP().String())
	if err != nil {
		return nil, err
	}
	return c.(*net.TCPConn), nil
}

func acceptOne(ln *net.TCPListener) (*net.TCPConn, error) {
	ln.SetDeadline(time.Now().Add(liveIO))
	c, err := ln.AcceptTCP()
	if err != nil {
		return nil, fmt.Errorf("kernel accept: %w", err)
	}
	c.SetDeadline(time.Now().Add(liveIO))
	return c, nil
}

// --------------------------------------------------------------- counters

// aoStats are the namespace's TcpExt TCP-AO counters.
type aoStats struct{ good, bad, keyNotFound, required int64 }

func readAOStats() (aoStats, error) {
	m, err := kstat.TCPExt() // /proc/thread-self/net/netstat: this namespace
	if err != nil {
		return aoStats{}, err
	}
	if _, ok := m["TCPAOGood"]; !ok {
		return aoStats{}, errors.New("no TCPAOGood in /proc/thread-self/net/netstat")
	}
	return aoStats{int64(m["TCPAOGood"]), int64(m["TCPAOBad"]), int64(m["TCPAOKeyNotFound"]), int64(m["TCPAORequired"])}, nil
}

func (a aoStats) minus(b aoStats) aoStats {
	return aoStats{a.good - b.good, a.bad - b.bad, a.keyNotFound - b.keyNotFound, a.required - b.required}
}

func (a aoStats) String() string {
	return fmt.Sprintf("TCPAOGood +%d TCPAOBad +%d TCPAOKeyNotFound +%d TCPAORequired +%d", a.good, a.bad, a.keyNotFound, a.required)
}

// checkClean: nothing failed in the kernel, and (if good >= 0) exactly good
// segments verified.
func checkClean(r *liveReport, what string, d aoStats, good int) {
	if d.bad != 0 || d.keyNotFound != 0 || d.required != 0 {
		r.errorf("%s: kernel %v", what, d)
	}
	if d.good <= 0 {
		r.errorf("%s: TCPAOGood did not rise (%v)", what, d)
	} else if good >= 0 && d.good != int64(good) {
		r.errorf("%s: TCPAOGood rose by %d, but the engine sent %d segments", what, d.good, good)
	}
}

// checkEngine: every segment the engine processed verified with ao.
func checkEngine(r *liveReport, c *usertcp.Conn, a *engineAuth, greeted bool) {
	conn := a.connOf(c)
	if conn == nil {
		r.errorf("engine: the layer tracks no TCP-AO connection %v-%v", c.LocalAddr(), c.RemoteAddr())
		return
	}
	st, ct := c.Stats(), conn.Counters()
	want := uint64(st.Received)
	if greeted {
		want-- // the SYN was verified by the listener, not the connection
	}
	if st.AuthDropped != 0 || ct.Bad != 0 || ct.KeyNotFound != 0 || ct.AORequired != 0 || ct.Good != want {
		r.errorf("engine: %d segments received, %d dropped by Verify; ao counters %+v", st.Received, st.AuthDropped, ct)
	}
}

func kernelInfo(r *liveReport, kc *net.TCPConn) linuxsock.AOInfo {
	i, err := aoInfo(kc)
	if err != nil {
		r.errorf("kernel TCP_AO_INFO: %v", err)
	}
	return i
}

// ------------------------------------------------------------------ data

var (
	liveRequest  = pattern("engine->kernel|", 5000) // several segments
	liveReply    = pattern("kernel->engine|", 3000)
	liveGreeting = []byte("220 tcpsig ao engine ready\r\n")
)

func readExactly(rd io.Reader, want []byte, what string) error {
	got := make([]byte, len(want))
	if _, err := io.ReadFull(rd, got); err != nil {
		return fmt.Errorf("%s: read: %w", what, err)
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("%s: %d bytes arrived damaged", what, len(want))
	}
	return nil
}

func randISN() uint32 { return rand.Uint32() | 1 }

// dialEngine connects the engine to the kernel listener.
func (c liveCase) dialEngine(n *liveNet, auth usertcp.Auth, isn uint32, cfg usertcp.Config) (*usertcp.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), liveIO)
	defer cancel()
	cfg.Local, cfg.Remote, cfg.Auth, cfg.ISS = n.engineAP(), n.kernelAP(), auth, isn
	uc, err := usertcp.Dial(ctx, n.link, cfg)
	if err != nil {
		return nil, fmt.Errorf("engine dial: %w", err)
	}
	uc.SetDeadline(time.Now().Add(liveIO))
	return uc, nil
}

// engineAuth is the engine's packet layer: a packetauth.Layer over the
// engine's keyring, which learns the connection from the SYN it signs (a
// client) or verifies (a server), and the connection's addresses, to find
// its ao.Conn.
type engineAuth struct {
	*packetauth.Layer
	local, remote netip.AddrPort
}

func newEngineAuth(n *liveNet, ring *ao.Keyring) (*engineAuth, error) {
	l, err := packetauth.New(packetauth.Config{AO: ring})
	if err != nil {
		return nil, err
	}
	return &engineAuth{l, n.engineAP(), n.kernelAP()}, nil
}

// conn returns the TCP-AO state of the connection the engine dials, nil
// before the handshake.
func (a *engineAuth) conn() *ao.Conn {
	c, _ := a.Conn(a.local, a.remote)
	return c
}

// connOf returns the TCP-AO state of uc's connection (a server's peer
// port is the kernel's choice), nil if uc is nil or not tracked.
func (a *engineAuth) connOf(uc *usertcp.Conn) *ao.Conn {
	if uc == nil {
		return nil
	}
	c, _ := a.Conn(uc.LocalAddr(), uc.RemoteAddr())
	return c
}

// closeKernelFirst: the kernel closes, the engine reads EOF and closes.
func closeKernelFirst(kc *net.TCPConn, uc *usertcp.Conn) error {
	if err := kc.Close(); err != nil {
		return err
	}
	if n, err := uc.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		return fmt.Errorf("engine after the kernel's FIN: read %d, %v; want EOF", n, err)
	}
	return uc.Close()
}

// engineClient is the common start of the cases where the engine dials:
// a kernel listener holding kernelMKTs, the engine's keyring over
// engineMKTs (the same ones, or wrong ones), and the engine's client Auth
// for a fresh ISN.
type engineClient struct {
	ln   *net.TCPListener
	ring *ao.Keyring
	auth *engineAuth
	isn  uint32
}

func (c liveCase) newEngineClient(n *liveNet, kernelMKTs, engineMKTs []liveMKT) (*engineClient, error) {
	ln, err := kernelListen(n, c.kernelKeys(n, kernelMKTs))
	if err != nil {
		return nil, err
	}
	ring, err := c.engineRing(n, engineMKTs)
	if err != nil {
		ln.Close()
		return nil, err
	}
	isn := randISN()
	auth, err := newEngineAuth(n, ring)
	if err != nil {
		ln.Close()
		return nil, err
	}
	return &engineClient{ln: ln, ring: ring, auth: auth, isn: isn}, nil
}

func (e *engineClient) close() {
	e.auth.Close()
	e.ln.Close()
}

// connect dials the kernel with auth (e.auth or a wrapper of it) and
// accepts the kernel's end.
func (e *engineClient) connect(c liveCase, n *liveNet, auth usertcp.Auth, cfg usertcp.Config) (*usertcp.Conn, *net.TCPConn, error) {
	uc, err := c.dialEngine(n, auth, e.isn, cfg)
	if err != nil {
		return nil, nil, err
	}
	kc, err := acceptOne(e.ln)
	return uc, kc, err
}

// ----------------------------------------------------------------- cases

// runEngineDials: the engine connects to a kernel listener with the MKT,
// sends a request, reads the reply; the kernel verified every segment the
// engine sent (TCPAOGood rose by exactly that many), failed none, and the
// engine verified every segment of the kernel's.
func (c liveCase) runEngineDials(r *liveReport, n *liveNet) error {
	ms := c.mkts(false)
	e, err := c.newEngineClient(n, ms, ms)
	if err != nil {
		return err
	}
	defer e.close()
	auth := e.auth
	before, err := readAOStats()
	if err != nil {
		return err
	}
	uc, kc, err := e.connect(c, n, auth, liveEngine)
	if err != nil {
		return err
	}
	defer kc.Close()
	if err := requestReply(uc, kc); err != nil {
		return err
	}
	mid, err := readAOStats()
	if err != nil {
		return err
	}
	sent := n.link.sent()
	checkClean(r, "after the data", mid.minus(before), sent)
	ki := kernelInfo(r, kc)
	if ki.Counters.Bad != 0 || ki.Counters.KeyNotFound != 0 || ki.Counters.Required != 0 {
		r.errorf("kernel socket TCP_AO_INFO: %+v", ki)
	}
	checkEngine(r, uc, auth, false)
	if err := closeKernelFirst(kc, uc); err != nil {
		return err
	}
	after, err := readAOStats()
	if err != nil {
		return err
	}
	checkClean(r, "after the close", after.minus(before), -1)
	c.checkWire(r, n.link.segments(0))
	r.logf("engine sent %d segments, kernel %v before the close, %v in all; engine %+v, ao %+v",
		sent, mid.minus(before), after.minus(before), uc.Stats(), auth.conn().Counters())
	return nil
}

// requestReply: the engine sends liveRequest, the kernel reads it and
// answers liveReply, the engine reads that.
func requestReply(uc *usertcp.Conn, kc *net.TCPConn) error {
	if _, err := uc.Write(liveRequest); err != nil {
		return fmt.Errorf("engine write: %w", err)
	}
	if err := readExactly(kc, liveRequest, "kernel"); err != nil {
		return err
	}
	if _, err := kc.Write(liveReply); err != nil {
		return fmt.Errorf("kernel write: %w", err)
	}
	return readExactly(uc, liveReply, "engine")
}

// checkWire: every segment both ways signed, with the KeyIDs of the MKT
// 100/200 as configured.
func (c liveCase) checkWire(r *liveReport, segs []liveSeg) { checkWireIDs(r, segs, 100, 200) }

// checkWireIDs: every segment both ways signed under the engine's MKT
// send/recv: the engine sends KeyID send, RNextKeyID recv, the kernel the
// reverse.
func checkWireIDs(r *liveReport, segs []liveSeg, send, recv uint8) {
	for i, s := range segs {
		want := [2]uint8{recv, send}
		if s.out {
			want = [2]uint8{send, recv}
		}
		if !s.ao || [2]uint8{s.keyID, s.rnext} != want {
			r.errorf("segment %d (engine sent: %v, %v): AO %v KeyID %d RNextKeyID %d, want %v", i+1, s.out, s.flags, s.ao, s.keyID, s.rnext, want)
			return
		}
	}
}

// runKernelDials: the kernel connects to the engine's listener; the engine
// answers with a SYN-ACK carrying a greeting, signed by ao. Linux discards
// data on a SYN-ACK but must verify it first: the connection is
// established on the first SYN-ACK (the kernel sent one SYN, the engine one
// SYN-ACK), TCPAOGood rose, TCPAOBad did not; the engine then sends the
// greeting again as data, and request/reply follow.
func (c liveCase) runKernelDials(r *liveReport, n *liveNet) error {
	ms := c.mkts(false)
	ring, err := c.engineRing(n, ms)
	if err != nil {
		return err
	}
	isn := randISN()
	auth, err := newEngineAuth(n, ring)
	if err != nil {
		return err
	}
	defer auth.Close()
	ctx, cancel := context.WithTimeout(context.Background(), liveIO)
	defer cancel()
	type result struct {
		st  usertcp.Stats
		err error
	}
	engine := make(chan result, 1)
	var established atomic.Pointer[usertcp.Conn]
	go func() {
		cfg := liveEngine
		cfg.Local, cfg.Auth, cfg.ISS, cfg.Greeting = n.engineAP(), auth, isn, liveGreeting
		uc, err := usertcp.Accept(ctx, n.link, cfg)
		if err != nil {
			engine <- result{err: fmt.Errorf("engine accept: %w", err)}
			return
		}
		established.Store(uc)
		uc.SetDeadline(time.Now().Add(liveIO))
		err = func() error {
			if err := readExactly(uc, liveRequest, "engine"); err != nil {
				return err
			}
			if _, err := uc.Write(liveReply); err != nil {
				return fmt.Errorf("engine write: %w", err)
			}
			if n, err := uc.Read(make([]byte, 1)); n != 0 || err != io.EOF {
				return fmt.Errorf("engine: read %d, %v; want EOF", n, err)
			}
			return uc.Close()
		}()
		engine <- result{uc.Stats(), err}
	}()

	before, err := readAOStats()
	if err != nil {
		return err
	}
	kerr := func() error {
		kc, err := kernelDial(n, c.kernelKeys(n, ms), liveIO)
		if err != nil {
			return fmt.Errorf("kernel connect: %w", err)
		}
		defer kc.Close()
		hs, err := readAOStats()
		if err != nil {
			return err
		}
		d := hs.minus(before)
		if d.good < 1 || d.bad != 0 || d.keyNotFound != 0 || d.required != 0 {
			r.errorf("handshake: kernel %v; want the SYN-ACK verified", d)
		}
		if ki := kernelInfo(r, kc); ki.Counters.Good < 1 || ki.Counters.Bad != 0 {
			r.errorf("kernel socket after connect: TCP_AO_INFO %+v", ki)
		}
		kc.SetDeadline(time.Now().Add(liveIO))
		if err := readExactly(kc, liveGreeting, "kernel (greeting)"); err != nil {
			return err
		}
		if _, err := kc.Write(liveRequest); err != nil {
			return fmt.Errorf("kernel write: %w", err)
		}
		if err := readExactly(kc, liveReply, "kernel"); err != nil {
			return err
		}
		mid, err := readAOStats()
		if err != nil {
			return err
		}
		checkClean(r, "after the data", mid.minus(before), n.link.sent())
		r.logf("handshake: kernel %v; after the data: kernel %v, engine sent %d", d, mid.minus(before), n.link.sent())
		return kc.Close()
	}()
	if kerr != nil {
		cancel()
	}
	res := <-engine
	switch {
	case kerr != nil && res.err != nil:
		return fmt.Errorf("%v; %v", kerr, res.err)
	case kerr != nil:
		return kerr
	case res.err != nil:
		return res.err
	}
	after, err := readAOStats()
	if err != nil {
		return err
	}
	checkClean(r, "after the close", after.minus(before), -1)
	if uc := established.Load(); uc != nil {
		checkEngine(r, uc, auth, true)
	}
	if lc := auth.Counters(); lc.Started != 1 || lc.Dropped.BadMAC != 0 {
		r.errorf("engine layer counters %+v, want one good SYN", lc)
	}

	// The wire: one SYN, one SYN-ACK with the greeting, then the greeting
	// again as data right after the SYN.
	segs := n.link.segments(0)
	var syns, synacks int
	resent := false
	for _, s := range segs {
		switch {
		case !s.out && s.flags&(segment.SYN|segment.ACK) == segment.SYN:
			syns++
		case s.out && s.flags&(segment.SYN|segment.ACK) == segment.SYN|segment.ACK:
			synacks++
			if !bytes.Equal(s.payload, liveGreeting) || s.seq != isn {
				r.errorf("SYN-ACK seq %d with %d bytes, want seq %d with the %d-byte greeting", s.seq, len(s.payload), isn, len(liveGreeting))
			}
		case s.out && s.seq == isn+1 && bytes.Equal(s.payload, liveGreeting):
			resent = true
		}
	}
	if len(segs) == 0 || segs[0].out || segs[0].flags&segment.SYN == 0 {
		r.errorf("the capture does not start with the kernel's SYN")
	}
	if syns != 1 || synacks != 1 {
		r.errorf("%d SYNs from the kernel, %d SYN-ACKs from the engine; want one each (a SYN-ACK the kernel drops is retransmitted)", syns, synacks)
	}
	if !resent {
		r.errorf("the engine did not send the greeting again as data")
	}
	c.checkWire(r, segs)
	r.logf("in all: kernel %v; engine %+v, ao %+v, layer %+v", after.minus(before), res.st, auth.connOf(established.Load()).Counters(), auth.Counters())
	return nil
}

// failFast bounds the wrong-key cases: each segment is sent 1+3 times.
var failFast = usertcp.Config{RTO: 150 * time.Millisecond, MaxRetries: 3}

// runWrongKeySYN: the engine signs with a key the kernel does not have
// (same KeyIDs): every SYN is dropped and counted in TCPAOBad, the kernel
// answers nothing and accepts no connection.
func (c liveCase) runWrongKeySYN(r *liveReport, n *liveNet) error {
	e, err := c.newEngineClient(n, c.mkts(false), c.wrongMKTs())
	if err != nil {
		return err
	}
	defer e.close()
	before, err := readAOStats()
	if err != nil {
		return err
	}
	_, err = c.dialEngine(n, e.auth, e.isn, failFast)
	if !errors.Is(err, usertcp.ErrTimeout) {
		r.errorf("engine dial with a wrong key: %v, want a timeout", err)
	}
	after, err := readAOStats()
	if err != nil {
		return err
	}
	d := after.minus(before)
	segs := n.link.segments(0)
	var syns, fromKernel int
	for _, s := range segs {
		if s.out {
			syns++
		} else {
			fromKernel++
		}
	}
	if want := 1 + failFast.MaxRetries; syns != want || d.bad != int64(syns) || d.good != 0 {
		r.errorf("%d SYNs sent (want %d), kernel %v: want TCPAOBad +%d and no TCPAOGood", syns, want, d, syns)
	}
	if fromKernel != 0 {
		r.errorf("the kernel answered %d times", fromKernel)
	}
	if kstat.Pending(e.ln) {
		r.errorf("the kernel completed a connection")
	}
	r.logf("%d SYNs with a wrong key: kernel %v", syns, d)
	return nil
}

// runWrongKeyData: a good handshake and a first exchange, then the engine's
// connection state is carried over (ao.Conn Export/Import: same ISNs, SNEs,
// KeyIDs) onto a keyring whose MKT has a wrong key: every data segment is
// dropped and counted in TCPAOBad, and the kernel's socket has nothing to
// read.
func (c liveCase) runWrongKeyData(r *liveReport, n *liveNet) error {
	ms := c.mkts(false)
	e, err := c.newEngineClient(n, ms, ms)
	if err != nil {
		return err
	}
	defer e.close()
	auth := e.auth
	wrongRing, err := c.engineRing(n, c.wrongMKTs())
	if err != nil {
		return err
	}
	sw := &usertcp.SwitchAuth{Good: auth}
	cfg := failFast
	cfg.RTO = 300 * time.Millisecond // the good part must not give up under TCG
	uc, kc, err := e.connect(c, n, sw, cfg)
	if err != nil {
		return err
	}
	defer kc.Close()
	if err := hello(uc, kc, "hello with the right key"); err != nil {
		return err
	}
	ep, ok := auth.Export(auth.local, auth.remote)
	if !ok {
		return errors.New("the engine's layer has no established connection to export")
	}
	badAuth, err := newEngineAuth(n, wrongRing)
	if err != nil {
		return err
	}
	defer badAuth.Close()
	if err := badAuth.Seed(ep); err != nil {
		return fmt.Errorf("seed onto the wrong key: %w", err)
	}
	before, err := readAOStats()
	if err != nil {
		return err
	}
	mark := n.link.mark()
	sw.Switch(badAuth)
	if _, err := uc.Write([]byte("must not arrive")); !errors.Is(err, usertcp.ErrTimeout) {
		r.errorf("engine write with a wrong key: %v, want a timeout", err)
	}
	after, err := readAOStats()
	if err != nil {
		return err
	}
	d := after.minus(before)
	sent := 0
	for _, s := range n.link.segments(mark) {
		if s.out {
			sent++
		}
	}
	if want := 1 + failFast.MaxRetries; sent != want || d.bad != int64(sent) || d.good != 0 {
		r.errorf("%d data segments with a wrong key (want %d), kernel %v: want TCPAOBad +%d and no TCPAOGood", sent, want, d, sent)
	}
	if ki := kernelInfo(r, kc); ki.Counters.Bad != uint64(sent) {
		r.errorf("kernel socket TCP_AO_INFO pkt_bad %d, want %d", ki.Counters.Bad, sent)
	}
	if got, err := readable(kc); err != nil {
		return err
	} else if got != nil {
		r.errorf("the kernel socket read %d bytes (%v); want nothing (EAGAIN)", got.n, got.err)
	}
	r.logf("%d data segments with a wrong key: kernel %v, nothing to read", sent, d)
	return nil
}

// runWrongKeyKernel: the kernel connects with a key the engine does not
// have: the engine's listener drops every SYN (ao.Listener counts them
// bad) and sends nothing; the kernel's connect times out.
func (c liveCase) runWrongKeyKernel(r *liveReport, n *liveNet) error {
	ring, err := c.engineRing(n, c.mkts(false))
	if err != nil {
		return err
	}
	isn := randISN()
	auth, err := newEngineAuth(n, ring)
	if err != nil {
		return err
	}
	defer auth.Close()
	ctx, cancel := context.WithTimeout(context.Background(), liveIO)
	defer cancel()
	engine := make(chan error, 1)
	go func() {
		_, err := usertcp.Accept(ctx, n.link, usertcp.Config{Local: n.engineAP(), Auth: auth, ISS: isn, Greeting: liveGreeting})
		engine <- err
	}()
	// Linux resends a SYN after 1 s, then 3 s: two SYNs in 2.5 s.
	kc, err := kernelDial(n, c.kernelKeys(n, c.wrongMKTs()), 2500*time.Millisecond)
	if err == nil {
		kc.Close()
		r.errorf("the kernel connected with a wrong key")
	}
	cancel()
	if err := <-engine; err == nil {
		r.errorf("the engine accepted a connection")
	}
	var syns, sent int
	for _, s := range n.link.segments(0) {
		if s.out {
			sent++
		} else if s.flags&segment.SYN != 0 {
			syns++
		}
	}
	lc := auth.Counters()
	if syns < 1 || lc.Dropped.BadMAC != uint64(syns) || lc.Started != 0 || sent != 0 {
		r.errorf("%d SYNs from the kernel, engine layer %+v, engine sent %d; want every SYN bad and nothing sent", syns, lc, sent)
	}
	r.logf("kernel connect: %v; %d SYNs, engine layer %+v", err, syns, lc)
	return nil
}

// runRotation: two MKTs (A 100/200, B 101/201 as the engine sees them),
// A in use. rotate-engine: the engine's SetRNext(201) makes the kernel's
// current key B (its segments then carry KeyID 201, verified with ao's
// MKT B). rotate-kernel: the kernel's set_rnext 101 makes the engine's
// current key B (Conn.Current().SendID() == 101), and the kernel verifies
// the engine's segments with its MKT B.
func (c liveCase) runRotation(r *liveReport, n *liveNet) error {
	ms := c.mkts(true)
	// The engine's keyring holds B, then A: the layer's connection starts
	// on the MKT added last (as ao.Conn.Init and Linux), A, current and
	// RNext 100/200.
	e, err := c.newEngineClient(n, ms, []liveMKT{ms[1], ms[0]})
	if err != nil {
		return err
	}
	defer e.close()
	ring, auth := e.ring, e.auth
	before, err := readAOStats()
	if err != nil {
		return err
	}
	uc, kc, err := e.connect(c, n, auth, liveEngine)
	if err != nil {
		return err
	}
	defer kc.Close()
	conn := auth.conn()
	if conn == nil {
		return errors.New("the engine's layer tracks no connection after the handshake")
	}
	exchange := func(size int, tag string) error {
		req, rep := pattern("e2k-"+tag+"|", size), pattern("k2e-"+tag+"|", size)
		if _, err := uc.Write(req); err != nil {
			return fmt.Errorf("engine write (%s): %w", tag, err)
		}
		if err := readExactly(kc, req, "kernel ("+tag+")"); err != nil {
			return err
		}
		if _, err := kc.Write(rep); err != nil {
			return fmt.Errorf("kernel write (%s): %w", tag, err)
		}
		return readExactly(uc, rep, "engine ("+tag+")")
	}
	state := func() string {
		ki := kernelInfo(r, kc)
		return fmt.Sprintf("engine current %d rnext %d, kernel current %d rnext %d",
			conn.Current().SendID(), conn.RNext().RecvID(), ki.Current, ki.RNext)
	}
	if err := exchange(1000, "A"); err != nil {
		return err
	}
	r.logf("on A: %s", state())
	if ki := kernelInfo(r, kc); ki.Current != 200 || ki.RNext != 100 {
		r.errorf("kernel before the rotation: current %d rnext %d, want 200/100", ki.Current, ki.RNext)
	}
	mark := n.link.mark()
	var wantOut, wantIn [2]uint8 // KeyID, RNextKeyID after the rotation
	var wantState [4]uint8       // engine current/rnext, kernel current/rnext
	switch c.mode {
	case rotateEngine:
		if err := conn.SetRNext(201); err != nil {
			return err
		}
		// The kernel learns 201 from the engine's next segment; the engine
		// still sends with A (the kernel's rnext is still 100).
		if err := exchange(1000, "rotated"); err != nil {
			return err
		}
		wantOut, wantIn, wantState = [2]uint8{100, 201}, [2]uint8{201, 100}, [4]uint8{100, 201, 201, 100}
	case rotateKernel:
		if err := linuxsock.SelectAOKeys(kc, linuxsock.RNext, 0, 101); err != nil {
			return fmt.Errorf("kernel set_rnext 101: %w", err)
		}
		// The engine learns 101 from the kernel's next segment: send from
		// the kernel first.
		rep := pattern("k2e-rotated|", 1000)
		if _, err := kc.Write(rep); err != nil {
			return err
		}
		if err := readExactly(uc, rep, "engine (rotated)"); err != nil {
			return err
		}
		if got := conn.Current().SendID(); got != 101 {
			r.errorf("engine current key %d after the kernel's set_rnext 101, want 101", got)
		}
		if err := exchange(1000, "rotated"); err != nil {
			return err
		}
		wantOut, wantIn, wantState = [2]uint8{101, 200}, [2]uint8{200, 101}, [4]uint8{101, 200, 200, 101}
	}
	ki := kernelInfo(r, kc)
	got := [4]uint8{conn.Current().SendID(), conn.RNext().RecvID(), ki.Current, ki.RNext}
	r.logf("rotated: %s", state())
	if got != wantState {
		r.errorf("after the rotation: engine current/rnext %d/%d, kernel %d/%d; want %d/%d and %d/%d",
			got[0], got[1], got[2], got[3], wantState[0], wantState[1], wantState[2], wantState[3])
	}
	// On the wire after the rotation: the engine's segments and the kernel's
	// (those after the first one that carried the new RNextKeyID) use the
	// new pair.
	asker := true // the engine asked (SetRNext); the kernel follows
	if c.mode == rotateKernel {
		asker = false
	}
	var nOut, nIn int
	switched := false
	for _, s := range n.link.segments(mark) {
		pair, want := [2]uint8{s.keyID, s.rnext}, wantIn
		if s.out {
			want = wantOut
			nOut++
		} else {
			nIn++
		}
		switch {
		case s.out == asker && pair != want:
			// every segment of the side that asked carries the new RNextKeyID
			r.errorf("a segment from the %s after its set_rnext: KeyID/RNext %v, want %v", side(s.out), pair, want)
		case s.out == asker:
		case pair == want:
			switched = true
		case switched:
			r.errorf("the %s went back to KeyID/RNext %v", side(s.out), pair)
		}
	}
	if !switched {
		r.errorf("the %s never sent with the new key", side(!asker))
	}
	// The new key verified segments on both sides.
	b := ring.LookupRecv(n.kaddr, 201, 0)
	if good, bad := b.Counters(); c.mode == rotateEngine && (good == 0 || bad != 0) {
		r.errorf("engine MKT B (RecvID 201): %d good, %d bad", good, bad)
	}
	if c.mode == rotateKernel {
		keys, err := kernelKeysOf(kc)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if k.RecvID == 101 && (k.Good == 0 || k.Bad != 0) {
				r.errorf("kernel MKT B (rcvid 101): %d good, %d bad", k.Good, k.Bad)
			}
		}
	}
	mid, err := readAOStats()
	if err != nil {
		return err
	}
	checkClean(r, "after the rotation", mid.minus(before), n.link.sent())
	checkEngine(r, uc, auth, false)
	if err := closeKernelFirst(kc, uc); err != nil {
		return err
	}
	r.logf("%d engine and %d kernel segments after the rotation; kernel %v", nOut, nIn, mid.minus(before))
	return nil
}

func side(out bool) string {
	if out {
		return "engine"
	}
	return "kernel"
}

func kernelKeysOf(kc *net.TCPConn) ([]linuxsock.AOKey, error) {
	return linuxsock.AOKeys(kc)
}

// runDefaultKey: three MKTs for the peer — its address alone, a wide
// prefix, then one in between — are added in that order on both sides and
// none is made current. Linux starts a connection with the newest matching
// MKT (its key list is newest first), which is neither the first added nor
// the most specific. A kernel client's SYN must carry that MKT's IDs, the
// engine's SYN (ao.Conn.Init) the same MKT's, and the engine's connection
// then runs on it against a kernel listener holding the same keys.
func (c liveCase) runDefaultKey(r *liveReport, n *liveNet) error {
	wide, mid := 8, 24
	if c.v6 {
		wide, mid = 16, 64
	}
	ms := []liveMKT{
		{key: keyMaterial(c.name, "host", c.alg.keyLen, false), send: 100, recv: 200},
		{key: keyMaterial(c.name, "wide", c.alg.keyLen, false), send: 101, recv: 201, bits: wide},
		{key: keyMaterial(c.name, "mid", c.alg.keyLen, false), send: 102, recv: 202, bits: mid},
	}
	newest := ms[len(ms)-1]

	// The kernel dials; nothing answers its SYN. (The dial stays on this
	// goroutine, whose thread is in the case's namespace.)
	mark := n.link.mark()
	found := make(chan *liveSeg, 1)
	go func() {
		buf := make([]byte, 65536)
		for deadline := time.Now().Add(liveIO); ; {
			if _, err := n.link.ReadPacket(buf, deadline); err != nil {
				found <- nil
				return
			}
			for _, s := range n.link.segments(mark) {
				if !s.out && s.flags&(segment.SYN|segment.ACK) == segment.SYN {
					found <- &s
					return
				}
			}
		}
	}()
	kc, err := kernelDial(n, c.kernelKeys(n, ms), time.Second)
	if err == nil {
		kc.Close()
		r.errorf("kernel dial connected, but nothing answers")
	} else if ne := net.Error(nil); !errors.As(err, &ne) || !ne.Timeout() {
		r.errorf("kernel dial with no answer: %v, want a timeout", err)
	}
	syn := <-found
	if syn == nil {
		return errors.New("no SYN from the kernel on the link")
	}
	// Drain the SYN's retransmissions (to the port the engine dials from).
	buf := make([]byte, 65536)
	for {
		if _, err := n.link.ReadPacket(buf, time.Now().Add(300*time.Millisecond)); err != nil {
			break
		}
	}
	if !syn.ao || syn.keyID != newest.recv || syn.rnext != newest.send {
		r.errorf("kernel SYN: AO %v KeyID %d RNextKeyID %d, want the newest MKT's %d/%d", syn.ao, syn.keyID, syn.rnext, newest.recv, newest.send)
	}

	// The engine dials the same keys, added in the same order.
	e, err := c.newEngineClient(n, ms, ms)
	if err != nil {
		return err
	}
	defer e.close()
	before, err := readAOStats()
	if err != nil {
		return err
	}
	mark = n.link.mark()
	uc, kc, err := e.connect(c, n, e.auth, liveEngine)
	if err != nil {
		return err
	}
	defer kc.Close()
	// The layer's connection started on the keys its SYN carried (the
	// wire check below); after the handshake they are still those.
	if conn := e.auth.conn(); conn == nil {
		r.errorf("engine: no tracked connection after the handshake")
	} else if cur, next := conn.Current(), conn.RNext(); cur.SendID() != newest.send || next.RecvID() != newest.recv {
		r.errorf("engine default keys: current %v, RNext %v; want SendID %d, RecvID %d", cur, next, newest.send, newest.recv)
	}
	if err := requestReply(uc, kc); err != nil {
		return err
	}
	segs := n.link.segments(mark)
	checkWireIDs(r, segs, newest.send, newest.recv)
	mid1, err := readAOStats()
	if err != nil {
		return err
	}
	checkClean(r, "after the data", mid1.minus(before), -1)
	checkEngine(r, uc, e.auth, false)
	if err := closeKernelFirst(kc, uc); err != nil {
		return err
	}
	r.logf("kernel SYN KeyID %d RNextKeyID %d; engine SYN KeyID %d RNextKeyID %d; %d segments on the MKT added last",
		syn.keyID, syn.rnext, segs[0].keyID, segs[0].rnext, len(segs))
	return nil
}

// runZeroChecksum: after a good exchange, the engine's next data segment is
// made (by its last two payload bytes) to have a TCP checksum of zero and is
// written twice: with the field 0x0000, Linux's tcp_ao_hash_pseudoheader
// takes it for one of its own outbound segments and hashes the addresses
// the other way round, so the kernel refuses it (TCPAOBad +1, nothing to
// read); with 0xFFFF, the other ones'-complement zero that
// segment.TCPChecksum writes, the kernel verifies it and delivers it.
func (c liveCase) runZeroChecksum(r *liveReport, n *liveNet) error {
	ms := c.mkts(false)
	e, err := c.newEngineClient(n, ms, ms)
	if err != nil {
		return err
	}
	defer e.close()
	uc, kc, err := e.connect(c, n, e.auth, liveEngine)
	if err != nil {
		return err
	}
	defer kc.Close()
	if err := hello(uc, kc, "hello before the zero checksum"); err != nil {
		return err
	}
	conn := e.auth.conn()
	if conn == nil {
		return errors.New("the engine's layer tracks no connection after the handshake")
	}
	last, err := segment.ParsePacket(n.link.lastOut())
	if err != nil {
		return fmt.Errorf("the engine's last segment: %w", err)
	}
	h := last.Header()
	f := segment.Fields{SrcPort: h.SrcPort(), DstPort: h.DstPort(), Seq: h.Seq() + uint32(len(last.Payload())),
		Ack: h.Ack(), Flags: segment.ACK | segment.PSH, Window: h.Window()}
	ip := segment.IP{Src: last.Src(), Dst: last.Dst()}
	payload := []byte("a segment whose checksum is 0..")
	var pkt []byte
	f.Options = [][]byte{ao.AppendOption(nil, c.maclen)}
	tries := 0
	for ; tries < 1<<22; tries++ {
		binary.BigEndian.PutUint32(payload[len(payload)-4:], uint32(tries))
		pkt, err = segment.AppendPacket(pkt[:0], ip, f, payload)
		if err != nil {
			return err
		}
		s, err := segment.ParsePacket(pkt)
		if err != nil {
			return err
		}
		if err := conn.Sign(&s); err != nil {
			return fmt.Errorf("sign: %w", err)
		}
		off, end := segment.TCPOffset(pkt, &s)
		tcp := segment.TCP(pkt[off:end])
		// 0xFFFF from TCPChecksum means the sum's complement is zero: TCP
		// data never sums to +0.
		if cs := segment.TCPChecksum(s.Src(), s.Dst(), tcp); cs == 0xffff {
			tcp.SetChecksum(0)
			break
		}
	}
	if tries == 1<<22 {
		return errors.New("no payload gave a zero checksum")
	}
	send := func(csum uint16) (aoStats, error) {
		s, _ := segment.ParsePacket(pkt)
		off, _ := segment.TCPOffset(pkt, &s)
		segment.TCP(pkt[off:]).SetChecksum(csum)
		before, err := readAOStats()
		if err != nil {
			return aoStats{}, err
		}
		if err := n.link.WritePacket(pkt); err != nil {
			return aoStats{}, err
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			after, err := readAOStats()
			if err != nil {
				return aoStats{}, err
			}
			if d := after.minus(before); d != (aoStats{}) || time.Now().After(deadline) {
				return d, nil
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	d, err := send(0)
	if err != nil {
		return err
	}
	if d != (aoStats{bad: 1}) {
		r.errorf("checksum 0x0000: kernel %v; want Linux 6.12 to refuse it (TCPAOBad +1)", d)
	}
	if got, err := readable(kc); err != nil {
		return err
	} else if got != nil {
		r.errorf("after the refused segment the kernel socket read %d bytes (%v); want nothing", got.n, got.err)
	}
	d, err = send(0xffff)
	if err != nil {
		return err
	}
	if d != (aoStats{good: 1}) {
		r.errorf("checksum 0xFFFF: kernel %v; want TCPAOGood +1", d)
	}
	if err := readExactly(kc, payload, "kernel"); err != nil {
		return err
	}
	r.logf("payload found after %d tries; checksum 0x0000 refused, 0xFFFF verified and delivered", tries+1)
	return nil
}

// hello has the engine send msg and the kernel socket read it.
func hello(uc *usertcp.Conn, kc *net.TCPConn, msg string) error {
	if _, err := uc.Write([]byte(msg)); err != nil {
		return fmt.Errorf("engine write: %w", err)
	}
	return readExactly(kc, []byte(msg), "kernel")
}

// readResult is what a read that should have found nothing found.
type readResult struct {
	n   int
	err error
}

// readable reads kc without waiting: nil when there is nothing to read
// (EAGAIN), else what the read returned.
func readable(kc *net.TCPConn) (*readResult, error) {
	rc, err := kc.SyscallConn()
	if err != nil {
		return nil, err
	}
	var got readResult
	rc.Control(func(fd uintptr) {
		got.n, _, got.err = syscall.Recvfrom(int(fd), make([]byte, 64), syscall.MSG_DONTWAIT)
	})
	if errors.Is(got.err, syscall.EAGAIN) {
		return nil, nil
	}
	return &got, nil
}
