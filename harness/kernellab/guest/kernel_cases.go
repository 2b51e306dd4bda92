//go:build linux

package main

import (
	"bytes"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/tcpsig/tcpsig/harness/capture"
	"github.com/tcpsig/tcpsig/harness/kstat"
	"github.com/tcpsig/tcpsig/harness/tcprepair"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/linuxsock"
	"github.com/tcpsig/tcpsig/segment"
)

// Kernel <-> kernel cases: two kernel TCP sockets with TCP-AO keys talk over
// lo while harness/capture records every segment. Each case writes one
// capture and one manifest entry.

// algSpec is an algorithm as configured with TCP_AO_ADD_KEY.
type algSpec struct {
	short  string // in case names
	alg    string // crypto API name
	keyLen int    // master key length used by default
}

var (
	hmacSHA1     = algSpec{"hmac-sha1", "hmac(sha1)", 20}
	cmacAES128   = algSpec{"cmac-aes128", "cmac(aes128)", 16}
	cmacAES128k5 = algSpec{"cmac-aes128-key5", "cmac(aes128)", 5}
	cmacAES12820 = algSpec{"cmac-aes128-key20", "cmac(aes128)", 20}
	cmacAES12880 = algSpec{"cmac-aes128-key80", "cmac(aes128)", 80}
	cmacAES32    = algSpec{"cmac-aes-key32", "cmac(aes)", 32}
	hmacSHA224   = algSpec{"hmac-sha224", "hmac(sha224)", 28}
	hmacSHA256   = algSpec{"hmac-sha256", "hmac(sha256)", 32}
	hmacSHA384   = algSpec{"hmac-sha384", "hmac(sha384)", 48}
	hmacSHA512   = algSpec{"hmac-sha512", "hmac(sha512)", 64}
	hmacSHA3256  = algSpec{"hmac-sha3-256", "hmac(sha3-256)", 32}
	hmacSHA3512  = algSpec{"hmac-sha3-512", "hmac(sha3-512)", 64}
	hmacMD5      = algSpec{"hmac-md5", "hmac(md5)", 16}
	hmacRMD160   = algSpec{"hmac-rmd160", "hmac(rmd160)", 20}

	allAlgs = []algSpec{hmacSHA1, cmacAES128, cmacAES128k5, cmacAES12820, cmacAES12880, cmacAES32,
		hmacSHA224, hmacSHA256, hmacSHA384, hmacSHA512, hmacSHA3256, hmacSHA3512, hmacMD5, hmacRMD160}
)

// aoCase is one kernel<->kernel connection with a handshake on the wire, or
// (repair) a pair restored with TCP_REPAIR just below the 2^32 wrap.
type aoCase struct {
	name     string
	alg      algSpec
	keyLen   int  // overrides alg.keyLen
	ascii    bool // key material is printable text (like a router passphrase)
	v6       bool
	sameAddr bool // both ends on 127.0.0.1 / ::1
	maclen   uint8
	exclude  bool // TCP_AO_KEYF_EXCLUDE_OPT
	rotate   bool // two MKTs per side, rotated from both sides mid-stream
	sack     bool // leave SACK on (Linux then drops TS after the SYN)
	sameID   bool // SendID == RecvID (7/7) on both ends, one shared key
	finish   string
	repair   bool   // TCP_REPAIR pair near the sequence wrap, no handshake
	sne0     uint32 // repair: starting SNE of both directions
	timewait bool   // after the FIN close, provoke an ACK from the TIME-WAIT socket
}

const (
	finFIN       = "fin"
	finRSTClient = "rst-client"
	finRSTServer = "rst-server"
)

func init() {
	var cs []aoCase
	// The matrix: every algorithm Linux accepts, IPv4 and IPv6, maclen 12,
	// data both ways, a rotation driven from each side, FIN close.
	for _, a := range allAlgs {
		for _, v6 := range []bool{false, true} {
			cs = append(cs, aoCase{alg: a, v6: v6, maclen: 12, rotate: true, ascii: !v6, finish: finFIN})
		}
	}
	cs = append(cs,
		// MAC lengths (4, 16 and two that leave NOP padding after the MAC)
		aoCase{alg: hmacSHA1, maclen: 4, finish: finFIN},
		aoCase{alg: hmacSHA1, v6: true, maclen: 16, finish: finFIN},
		aoCase{alg: hmacSHA1, maclen: 10, finish: finFIN},
		aoCase{alg: cmacAES128, maclen: 4, finish: finFIN},
		aoCase{alg: cmacAES128, v6: true, maclen: 16, finish: finFIN},
		aoCase{alg: cmacAES128, v6: true, maclen: 6, finish: finFIN},
		aoCase{alg: hmacSHA256, maclen: 16, finish: finFIN},
		aoCase{alg: hmacSHA512, v6: true, maclen: 4, finish: finFIN},
		aoCase{alg: hmacMD5, maclen: 16, finish: finFIN},
		// options excluded from the MAC
		aoCase{alg: hmacSHA1, maclen: 12, exclude: true, finish: finFIN},
		aoCase{alg: hmacSHA256, v6: true, maclen: 16, exclude: true, finish: finFIN},
		aoCase{alg: cmacAES128, maclen: 12, exclude: true, rotate: true, finish: finFIN},
		// signed RSTs (SO_LINGER {1,0})
		aoCase{alg: hmacSHA1, maclen: 12, finish: finRSTClient},
		aoCase{alg: hmacSHA256, v6: true, maclen: 12, finish: finRSTServer},
		aoCase{alg: cmacAES128, maclen: 4, finish: finRSTServer},
		// SNE: pairs restored just below the 2^32 wrap
		aoCase{alg: hmacSHA1, maclen: 12, repair: true, finish: finFIN},
		aoCase{alg: hmacSHA256, v6: true, maclen: 16, repair: true, finish: finFIN},
		aoCase{alg: cmacAES128, maclen: 12, repair: true, exclude: true, finish: finFIN},
		aoCase{alg: hmacSHA1, v6: true, maclen: 12, repair: true, sne0: 3, finish: finRSTClient},
		// both ends on one address
		aoCase{alg: hmacSHA1, maclen: 12, sameAddr: true, rotate: true, finish: finFIN},
		aoCase{alg: hmacSHA256, v6: true, maclen: 12, sameAddr: true, finish: finFIN},
		// SACK on: timestamps only in the SYN
		aoCase{alg: hmacSHA1, maclen: 12, sack: true, finish: finFIN},
		aoCase{alg: hmacSHA256, v6: true, maclen: 12, sack: true, finish: finFIN},
		// SendID == RecvID, one key on both ends (the usual router setup)
		aoCase{alg: hmacSHA1, maclen: 12, sameID: true, ascii: true, finish: finFIN},
		// an ACK from a TIME-WAIT socket (TS before AO)
		aoCase{alg: hmacSHA1, maclen: 12, timewait: true, finish: finFIN},
		aoCase{alg: hmacSHA256, v6: true, maclen: 16, timewait: true, finish: finFIN},
		// key lengths
		aoCase{alg: hmacSHA1, keyLen: 1, maclen: 12, finish: finFIN},
		aoCase{alg: hmacSHA1, v6: true, keyLen: 80, maclen: 12, finish: finFIN},
	)
	for _, c := range cs {
		c.name = c.defaultName()
		register(Case{Name: c.name, Kind: "kernel-kernel", Run: c.run})
	}
}

func (c aoCase) defaultName() string {
	n := fmt.Sprintf("%s-v4-maclen%d", c.alg.short, c.maclen)
	if c.v6 {
		n = fmt.Sprintf("%s-v6-maclen%d", c.alg.short, c.maclen)
	}
	if c.keyLen != 0 {
		n += fmt.Sprintf("-key%d", c.keyLen)
	}
	if c.exclude {
		n += "-exclopt"
	}
	if c.repair {
		n += "-snewrap"
		if c.sne0 != 0 {
			n += fmt.Sprintf("-sne%d", c.sne0)
		}
	}
	if c.sameAddr {
		n += "-sameaddr"
	}
	if c.sack {
		n += "-sack"
	}
	if c.sameID {
		n += "-sameid"
	}
	if c.finish == finRSTClient || c.finish == finRSTServer {
		n += "-" + c.finish
	}
	if c.timewait {
		n += "-timewait"
	}
	if c.rotate && (c.exclude || c.sameAddr) {
		n += "-rotation"
	}
	return n
}

var nextPort uint16 = 40001

// allocPorts returns (client port, server port); stable for a given case order.
func allocPorts() (uint16, uint16) {
	p := nextPort
	nextPort += 2
	return p, p + 1
}

// keyMaterial returns realistic key bytes: a printable passphrase or
// pseudo-random bytes, derived from the case name so reruns reuse them.
func keyMaterial(name, label string, n int, ascii bool) []byte {
	var out []byte
	seed := []byte("tcpsig linux capture " + name + " " + label)
	for len(out) < n {
		h := sha512.Sum512(seed)
		out = append(out, h[:]...)
		seed = h[:]
	}
	out = out[:n]
	if ascii {
		const alphabet = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789-_.!"
		for i := range out {
			out[i] = alphabet[int(out[i])%len(alphabet)]
		}
	}
	return out
}

// mkt is one MKT as seen from the client; the server's copy swaps the IDs.
type mkt struct {
	key          []byte
	sndID, rcvID uint8
}

func (c aoCase) addrs() (cli, srv netip.Addr) {
	switch {
	case c.sameAddr && c.v6:
		return netip.MustParseAddr("::1"), netip.MustParseAddr("::1")
	case c.sameAddr:
		return netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.1")
	case c.v6:
		return netip.MustParseAddr("fd00::2"), netip.MustParseAddr("fd00::1")
	}
	return netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.1")
}

func (c aoCase) mkts() []mkt {
	n := c.alg.keyLen
	if c.keyLen != 0 {
		n = c.keyLen
	}
	if c.sameID {
		return []mkt{{keyMaterial(c.name, "A", n, c.ascii), 7, 7}}
	}
	ms := []mkt{{keyMaterial(c.name, "A", n, c.ascii), 100, 200}}
	if c.rotate {
		ms = append(ms, mkt{keyMaterial(c.name, "B", n, c.ascii), 101, 201})
	}
	return ms
}

func hostPrefix(a netip.Addr) netip.Prefix { return netip.PrefixFrom(a, a.BitLen()) }

// sockKeys returns the TCP_AO_ADD_KEY commands for one end: server swaps
// the IDs. The first MKT (A) is added last and, on the client, made current
// and rnext explicitly.
func (c aoCase) sockKeys(server bool, peer netip.Addr, setCurrent bool) []aoKey {
	var ks []aoKey
	ms := c.mkts()
	for i := len(ms) - 1; i >= 0; i-- {
		m := ms[i]
		snd, rcv := m.sndID, m.rcvID
		if server {
			snd, rcv = rcv, snd
		}
		k := aoKey{AO: keys.AO{Peer: hostPrefix(peer), Algorithm: c.alg.alg, SendID: snd, RecvID: rcv,
			MACLen: int(c.maclen), ExcludeOptions: c.exclude, Key: m.key}}
		if setCurrent && i == 0 {
			k.sel = linuxsock.Current | linuxsock.RNext
		}
		ks = append(ks, k)
	}
	return ks
}

func manifestKeys(ks ...[]aoKey) KeysFile {
	var f KeysFile
	for _, side := range ks {
		for i := len(side) - 1; i >= 0; i-- { // A first
			k := side[i]
			f.AO = append(f.AO, AOKey{Alg: k.Algorithm, Key: "hex:" + hex.EncodeToString(k.Key), SndID: k.SendID, RcvID: k.RecvID,
				Peer: k.Peer.String(), MACLen: k.MACLen, ExcludeOptions: k.ExcludeOptions})
		}
	}
	return f
}

// ---------------------------------------------------------------- sockets

func family(a netip.Addr) int {
	if a.Is4() {
		return syscall.AF_INET
	}
	return syscall.AF_INET6
}

func sockaddr(ap netip.AddrPort) syscall.Sockaddr {
	if ap.Addr().Is4() {
		return &syscall.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	}
	return &syscall.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
}

func newSocket(local netip.AddrPort, keys []aoKey, repair bool) (int, error) {
	fd, err := syscall.Socket(family(local.Addr()), syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	fail := func(err error) (int, error) { syscall.Close(fd); return -1, err }
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		return fail(err)
	}
	tv := syscall.NsecToTimeval(int64(15 * time.Second))
	syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_SNDTIMEO, &tv)
	if repair {
		if err := tcprepair.SetMode(fd, tcprepair.On); err != nil {
			return fail(err)
		}
	}
	if err := syscall.Bind(fd, sockaddr(local)); err != nil {
		return fail(fmt.Errorf("bind %v: %w", local, err))
	}
	for _, k := range keys {
		if err := linuxsock.AddAOKey(fdSock(fd), k.AO, k.sel); err != nil {
			return fail(fmt.Errorf("maclen %d keylen %d: %w", k.MACLen, len(k.Key), err))
		}
	}
	return fd, nil
}

func listenAO(local netip.AddrPort, keys []aoKey) (*net.TCPListener, error) {
	fd, err := newSocket(local, keys, false)
	if err != nil {
		return nil, err
	}
	if err := syscall.Listen(fd, 8); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "listener")
	defer f.Close()
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, err
	}
	return ln.(*net.TCPListener), nil
}

// connectFD connects a blocking socket; a signal may interrupt connect(2),
// after which a second call waits for the same handshake.
func connectFD(fd int, remote netip.AddrPort) error {
	for {
		err := syscall.Connect(fd, sockaddr(remote))
		switch {
		case err == nil || errors.Is(err, syscall.EISCONN):
			return nil
		case errors.Is(err, syscall.EINTR) || errors.Is(err, syscall.EALREADY):
			time.Sleep(time.Millisecond)
			continue
		}
		return fmt.Errorf("connect %v: %w", remote, err)
	}
}

func fdConn(fd int) (*net.TCPConn, error) {
	f := os.NewFile(uintptr(fd), "conn")
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		return nil, err
	}
	tc := c.(*net.TCPConn)
	tc.SetNoDelay(true)
	return tc, nil
}

func dialAO(local, remote netip.AddrPort, keys []aoKey) (*net.TCPConn, error) {
	fd, err := newSocket(local, keys, false)
	if err != nil {
		return nil, err
	}
	if err := connectFD(fd, remote); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	return fdConn(fd)
}

func withFD(c syscall.Conn, fn func(fd int) error) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

func aoInfo(c linuxsock.Socket) (linuxsock.AOInfo, error) { return linuxsock.ReadAOInfo(c) }

// aoKey is one TCP_AO_ADD_KEY: an MKT, and whether it becomes the
// current and RNext key.
type aoKey struct {
	keys.AO
	sel linuxsock.Select
}

// fdSock is a socket file descriptor as a linuxsock.Socket.
type fdSock int

func (f fdSock) SyscallConn() (syscall.RawConn, error) { return fdRaw(f), nil }

// fdRaw is the syscall.RawConn of an fd used from one goroutine: Control
// is all linuxsock calls.
type fdRaw int

func (f fdRaw) Control(fn func(fd uintptr)) error { fn(uintptr(f)); return nil }
func (f fdRaw) Read(func(fd uintptr) bool) error  { return errors.ErrUnsupported }
func (f fdRaw) Write(func(fd uintptr) bool) error { return errors.ErrUnsupported }

// pattern returns n recognisable bytes (direction and step in the data).
func pattern(tag string, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = tag[i%len(tag)]
	}
	return b
}

// send writes n bytes on from and reads them on to, with a deadline.
func send(t *T, from, to *net.TCPConn, tag string, n int) {
	want := pattern(fmt.Sprintf("%s-%d|", tag, n), n)
	errc := make(chan error, 1)
	from.SetWriteDeadline(time.Now().Add(20 * time.Second))
	go func() { _, err := from.Write(want); errc <- err }()
	to.SetReadDeadline(time.Now().Add(20 * time.Second))
	got := make([]byte, n)
	_, rerr := io.ReadFull(to, got)
	werr := <-errc
	t.check(werr, fmt.Sprintf("write %d bytes (%s)", n, tag))
	t.check(rerr, fmt.Sprintf("read %d bytes (%s)", n, tag))
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes arrived corrupted", tag, n)
	}
}

// exchange: client sends n, then server answers m.
func exchange(t *T, c, s *net.TCPConn, n, m int) {
	send(t, c, s, "c2s", n)
	send(t, s, c, "s2c", m)
}

// ---------------------------------------------------------------- the case

// captureQuiet is how long the capture must see no new segment before a
// case moves on or stops it (Capture.WaitIdle waits in windows of this
// length, so the wait ends between one and two windows after the last
// segment). Closes and TIME-WAIT replies answer within milliseconds on lo;
// a segment sent after Stop would show up as TCPAOGood above the number of
// captured segments, and fail the case.
const captureQuiet = 200 * time.Millisecond

type conns struct {
	c, s     *net.TCPConn
	cli, srv netip.AddrPort
}

func (cs aoCase) run(t *T) {
	cliAddr, srvAddr := cs.addrs()
	cp, sp := allocPorts()
	cli, srv := netip.AddrPortFrom(cliAddr, cp), netip.AddrPortFrom(srvAddr, sp)
	cliKeys := cs.sockKeys(false, srvAddr, !cs.repair)
	srvKeys := cs.sockKeys(true, cliAddr, cs.repair)

	if cs.sack {
		t.check(sysctl("net/ipv4/tcp_sack", "1"), "sysctl")
		defer sysctl("net/ipv4/tcp_sack", "0")
	}
	ns0, err := kstat.TCPExt()
	t.check(err, "netstat")
	capt, err := capture.Start(capture.Options{Interface: "lo", Filter: capture.TCPPorts(cp, sp)})
	t.check(err, "capture")
	defer capt.Stop() // idempotent

	var cn conns
	var isn, sne map[string]uint32
	if cs.repair {
		cn, isn, sne = cs.restorePair(t, cli, srv, cliKeys, srvKeys)
	} else {
		ln, err := listenAO(srv, srvKeys)
		t.check(err, "listen")
		c, err := dialAO(cli, srv, cliKeys)
		if err != nil {
			ln.Close()
			t.Fatalf("connect: %v", err)
		}
		ln.SetDeadline(time.Now().Add(15 * time.Second))
		s, err := ln.AcceptTCP()
		ln.Close()
		if err != nil {
			c.Close()
			t.Fatalf("accept: %v", err)
		}
		s.SetNoDelay(true)
		cn = conns{c: c, s: s, cli: cli, srv: srv}
	}
	defer cn.c.Close()
	defer cn.s.Close()

	// data both ways in several sizes (lo MTU 1500: the larger ones span
	// several MSS-sized segments)
	sizes := []int{1, 100, 1000, 3000, 8000}
	if cs.repair {
		// the wrap is 1500 bytes (client) / 1000 bytes (server) ahead
		sizes = []int{100, 100, 1000, 100, 3000}
	}
	for _, n := range sizes {
		exchange(t, cn.c, cn.s, n, n)
	}
	if cs.rotate {
		cs.rotation(t, cn)
	}
	if cs.repair {
		cs.checkSNE(t, cn)
	}
	for _, side := range []struct {
		n string
		c *net.TCPConn
	}{{"client", cn.c}, {"server", cn.s}} {
		i, err := aoInfo(side.c)
		t.check(err, side.n+" TCP_AO_INFO")
		t.Logf("%s: current %d rnext %d good %d bad %d key_not_found %d", side.n, i.Current, i.RNext, i.Counters.Good, i.Counters.Bad, i.Counters.KeyNotFound)
		if i.Counters.Bad != 0 || i.Counters.KeyNotFound != 0 || i.Counters.Required != 0 || i.Counters.Good == 0 {
			t.Errorf("%s socket counters: good %d bad %d key_not_found %d ao_required %d", side.n, i.Counters.Good, i.Counters.Bad, i.Counters.KeyNotFound, i.Counters.Required)
		}
	}
	var twSnd, twRcv uint32
	var twRepair linuxsock.AORepair
	if cs.timewait {
		var err error
		twSnd, twRcv, twRepair, err = repairState(cn.s)
		t.check(err, "server repair state")
	}
	cs.close(t, cn)
	if cs.timewait {
		cs.timeWaitACK(t, capt, cn, srvKeys, twSnd, twRcv, twRepair)
	}
	capt.WaitIdle(captureQuiet, 5*time.Second)
	t.check(capt.Stop(), "capture")
	if lt := capt.LinkType(); lt != capture.LinkTypeEthernet {
		t.Fatalf("capture on lo has link type %v, want %v", lt, capture.LinkTypeEthernet)
	}
	pkts := capt.Packets()
	ns1, err := kstat.TCPExt()
	t.check(err, "netstat")

	entry := ManifestCapture{Name: cs.name, File: cs.name + ".pcap", Keys: manifestKeys(cliKeys, srvKeys), ISN: isn, SNE: sne}
	cs.analyse(t, pkts, cn, &entry)
	delta := func(k string) int64 { return int64(ns1[k]) - int64(ns0[k]) }
	for _, k := range []string{"TCPAOBad", "TCPAOKeyNotFound", "TCPAORequired", "TCPAODroppedIcmps"} {
		if d := delta(k); d != 0 {
			t.Errorf("netstat %s rose by %d", k, d)
		}
	}
	// Every segment the kernel verified must be in the capture (more would
	// mean the capture lost some). Fewer is normal: segments that reach a
	// TIME-WAIT or already closed socket are not verified.
	if d := delta("TCPAOGood"); d > int64(entry.AOSigned) {
		t.Errorf("netstat TCPAOGood rose by %d, but only %d signed segments were captured", d, entry.AOSigned)
	} else if d < int64(entry.AOSigned) {
		t.Logf("netstat TCPAOGood rose by %d for %d signed segments (the rest reached TIME-WAIT or closed sockets)", d, entry.AOSigned)
	}
	t.addCapture(entry, pkts)
}

// rotation changes keys mid-stream, driven from each side in turn; the
// RNextKeyID a side sends moves the peer's current key once it verifies.
func (cs aoCase) rotation(t *T, cn conns) {
	type want struct{ cCur, cNext, sCur, sNext uint8 }
	steps := []struct {
		what string
		do   func() error
		want want
	}{
		{"client asks for B (set_rnext 201)", func() error {
			return linuxsock.SelectAOKeys(cn.c, linuxsock.RNext, 0, 201)
		}, want{100, 201, 201, 100}},
		{"server asks for B (set_rnext 101)", func() error {
			return linuxsock.SelectAOKeys(cn.s, linuxsock.RNext, 0, 101)
		}, want{101, 201, 201, 101}},
		{"server asks for A again (set_rnext 100)", func() error {
			return linuxsock.SelectAOKeys(cn.s, linuxsock.RNext, 0, 100)
		}, want{100, 201, 201, 100}},
		{"client asks for A again (set_rnext 200)", func() error {
			return linuxsock.SelectAOKeys(cn.c, linuxsock.RNext, 0, 200)
		}, want{100, 200, 200, 100}},
		{"both switch to B (set_current + set_rnext)", func() error {
			if err := linuxsock.SelectAOKeys(cn.c, linuxsock.Current|linuxsock.RNext, 101, 201); err != nil {
				return err
			}
			return linuxsock.SelectAOKeys(cn.s, linuxsock.Current|linuxsock.RNext, 201, 101)
		}, want{101, 201, 201, 101}},
	}
	for i, st := range steps {
		t.check(st.do(), st.what)
		exchange(t, cn.c, cn.s, 100+i, 100+i)
		ci, err := aoInfo(cn.c)
		t.check(err, "client TCP_AO_INFO")
		si, err := aoInfo(cn.s)
		t.check(err, "server TCP_AO_INFO")
		got := want{ci.Current, ci.RNext, si.Current, si.RNext}
		if got != st.want {
			t.Errorf("rotation step %d (%s): client current/rnext %d/%d server %d/%d, want %d/%d and %d/%d",
				i+1, st.what, got.cCur, got.cNext, got.sCur, got.sNext, st.want.cCur, st.want.cNext, st.want.sCur, st.want.sNext)
		}
	}
}

func (cs aoCase) close(t *T, cn conns) {
	switch cs.finish {
	case finRSTClient, finRSTServer:
		a, b := cn.c, cn.s
		if cs.finish == finRSTServer {
			a, b = b, a
		}
		t.check(a.SetLinger(0), "SO_LINGER")
		a.Close()
		b.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := b.Read(make([]byte, 1))
		if !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("after the RST the peer read %v, want ECONNRESET", err)
		}
		b.Close()
	default:
		cn.c.Close()
		cn.s.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, err := cn.s.Read(make([]byte, 1))
		if n != 0 || err != io.EOF {
			t.Errorf("server after client FIN: read %d, %v; want EOF", n, err)
		}
		cn.s.Close()
	}
}

// ------------------------------------------------------- repair (SNE wrap)

const (
	cliSeqBelowWrap = 1<<32 - 1500 // client's next send sequence number
	srvSeqBelowWrap = 1<<32 - 1000
	cliISNBack      = 123457 // bytes the client "already sent": ISN = seq - this
	srvISNBack      = 98765
)

// restorePair builds an established pair with TCP_REPAIR (no packet on the
// wire): sequence numbers just below 2^32, ISNs and SNEs via TCP_AO_REPAIR.
func (cs aoCase) restorePair(t *T, cli, srv netip.AddrPort, cliKeys, srvKeys []aoKey) (conns, map[string]uint32, map[string]uint32) {
	cSeq, sSeq := uint32(cliSeqBelowWrap), uint32(srvSeqBelowWrap)
	cISN, sISN := cSeq-cliISNBack, sSeq-srvISNBack
	mss := cs.mss()
	cfd := restoreSocket(t, local(cli, srv, cliKeys), mss, linuxsock.AORepair{LocalISN: cISN, RemoteISN: sISN, SendSNE: cs.sne0, RecvSNE: cs.sne0}, cSeq, sSeq)
	sfd := restoreSocket(t, local(srv, cli, srvKeys), mss, linuxsock.AORepair{LocalISN: sISN, RemoteISN: cISN, SendSNE: cs.sne0, RecvSNE: cs.sne0}, sSeq, cSeq)
	// Leave repair mode only once both ends exist, without window probes, so
	// the first segments on the wire are the data below.
	for _, fd := range []int{cfd, sfd} {
		t.check(tcprepair.SetMode(fd, tcprepair.OffNoWP), "TCP_REPAIR off")
	}
	c, err := fdConn(cfd)
	t.check(err, "client conn")
	s, err := fdConn(sfd)
	t.check(err, "server conn")
	isn := map[string]uint32{cli.String(): cISN, srv.String(): sISN}
	sne := map[string]uint32{cli.String(): cs.sne0, srv.String(): cs.sne0}
	return conns{c: c, s: s, cli: cli, srv: srv}, isn, sne
}

type sockEnds struct {
	local, remote netip.AddrPort
	keys          []aoKey
}

func local(l, r netip.AddrPort, keys []aoKey) sockEnds { return sockEnds{l, r, keys} }

func (cs aoCase) mss() uint32 {
	if cs.v6 {
		return 1440
	}
	return 1460
}

// restoreSocket creates an established socket in repair mode without a
// packet on the wire: sequence numbers, then connect, then the TCP-AO ISNs
// and SNEs, options (MSS, timestamps) and window. The caller leaves repair
// mode.
func restoreSocket(t *T, e sockEnds, mss uint32, r linuxsock.AORepair, sndSeq, rcvSeq uint32) int {
	fd, err := newSocket(e.local, e.keys, true)
	t.check(err, "repair socket")
	steps := []struct {
		what string
		fn   func() error
	}{
		{"TCP_QUEUE_SEQ send", func() error { return tcprepair.SetQueueSeq(fd, tcprepair.SendQueue, sndSeq) }},
		{"TCP_QUEUE_SEQ recv", func() error { return tcprepair.SetQueueSeq(fd, tcprepair.RecvQueue, rcvSeq) }},
		{"repair connect", func() error { return connectFD(fd, e.remote) }},
		{"TCP_AO_REPAIR", func() error { return linuxsock.SetAORepair(fdSock(fd), r) }},
		{"TCP_REPAIR_OPTIONS", func() error {
			return tcprepair.SetOptions(fd, []tcprepair.Opt{{Code: tcprepair.OptMSS, Val: mss}, {Code: tcprepair.OptTimestamp}})
		}},
		{"TCP_REPAIR_WINDOW", func() error {
			return tcprepair.SetWindow(fd, tcprepair.Window{SndWL1: rcvSeq, SndWnd: 65535, MaxWindow: 65535, RcvWnd: 65535, RcvWup: rcvSeq})
		}},
	}
	for _, st := range steps {
		if err := st.fn(); err != nil {
			syscall.Close(fd)
			t.Fatalf("%s on %v: %v", st.what, e.local, err)
		}
	}
	if got, err := linuxsock.ReadAORepair(fdSock(fd)); err != nil || got != r {
		t.Errorf("TCP_AO_REPAIR read back %+v, %v; want %+v", got, err, r)
	}
	return fd
}

// repairState reads an established socket's sequence numbers and TCP-AO
// ISNs/SNEs (repair mode on, read, off).
func repairState(c *net.TCPConn) (snd, rcv uint32, r linuxsock.AORepair, err error) {
	err = withFD(c, func(fd int) error {
		if err := tcprepair.SetMode(fd, tcprepair.On); err != nil {
			return err
		}
		defer tcprepair.SetMode(fd, tcprepair.OffNoWP)
		var err error
		if snd, err = tcprepair.QueueSeq(fd, tcprepair.SendQueue); err != nil {
			return err
		}
		if rcv, err = tcprepair.QueueSeq(fd, tcprepair.RecvQueue); err != nil {
			return err
		}
		r, err = linuxsock.ReadAORepair(fdSock(fd))
		return err
	})
	return
}

// timeWaitACK provokes an ACK from the client's TIME-WAIT socket (Linux
// builds those with TS before AO, unlike full sockets): once the connection
// is closed, the server end is recreated with TCP_REPAIR from its final
// state and leaves repair mode with a window probe (seq = snd_una-1, signed
// with the same traffic keys); the TIME-WAIT socket answers it with a signed
// ACK. The recreated server then resets (SO_LINGER {1,0}).
func (cs aoCase) timeWaitACK(t *T, capt *capture.Capture, cn conns, srvKeys []aoKey, snd, rcv uint32, r linuxsock.AORepair) {
	capt.WaitIdle(captureQuiet, 5*time.Second)
	// both FINs consumed one sequence number
	fd := restoreSocket(t, local(cn.srv, cn.cli, srvKeys), cs.mss(), r, snd+1, rcv+1)
	if err := tcprepair.SetMode(fd, tcprepair.Off); err != nil { // sends the probe
		syscall.Close(fd)
		t.Fatalf("TCP_REPAIR off: %v", err)
	}
	c, err := fdConn(fd)
	t.check(err, "restored server")
	capt.WaitIdle(captureQuiet, 5*time.Second)
	c.SetLinger(0)
	c.Close()
}

// checkSNE reads both ends' SNEs back (TCP_REPAIR on, TCP_AO_REPAIR, off):
// both directions must have wrapped once.
func (cs aoCase) checkSNE(t *T, cn conns) {
	for _, side := range []struct {
		n string
		c *net.TCPConn
	}{{"client", cn.c}, {"server", cn.s}} {
		var r linuxsock.AORepair
		err := withFD(side.c, func(fd int) error {
			if err := tcprepair.SetMode(fd, tcprepair.On); err != nil {
				return err
			}
			var err error
			r, err = linuxsock.ReadAORepair(fdSock(fd))
			if err2 := tcprepair.SetMode(fd, tcprepair.OffNoWP); err == nil {
				err = err2
			}
			return err
		})
		t.check(err, side.n+" TCP_AO_REPAIR read")
		t.Logf("%s after the wrap: %+v", side.n, r)
		if r.SendSNE != cs.sne0+1 || r.RecvSNE != cs.sne0+1 {
			t.Errorf("%s: snd_sne %d rcv_sne %d after the wrap, want %d", side.n, r.SendSNE, r.RecvSNE, cs.sne0+1)
		}
	}
}

// ------------------------------------------------------ capture analysis

func (cs aoCase) analyse(t *T, pkts []capture.Packet, cn conns, e *ManifestCapture) {
	maclen := int(cs.maclen)
	if maclen == 0 {
		maclen = 12
	}
	type dir struct {
		keyIDs, rnext map[uint8]bool
		n, data       int
		preWrap, post int // data segments numerically above / below 2^31
		fin, rst, syn bool
	}
	c2s, s2c := &dir{keyIDs: map[uint8]bool{}, rnext: map[uint8]bool{}}, &dir{keyIDs: map[uint8]bool{}, rnext: map[uint8]bool{}}
	allTS := true
	aoNotFirst := false
	var segs []seg
	for i, p := range pkts {
		s, err := parseFrame(p.Data)
		if err != nil {
			t.Errorf("packet %d: %v", i+1, err)
			continue
		}
		segs = append(segs, s)
		e.Packets++
		var d *dir
		switch {
		case s.srcAP() == cn.cli && s.dstAP() == cn.srv:
			d = c2s
		case s.srcAP() == cn.srv && s.dstAP() == cn.cli:
			d = s2c
		default:
			t.Errorf("packet %d: foreign segment %v", i+1, s)
			continue
		}
		d.n++
		if !s.hasAO {
			t.Errorf("packet %d: no TCP-AO option: %v", i+1, s)
			continue
		}
		e.AOSigned++
		if s.aoLen != 4+maclen {
			t.Errorf("packet %d: AO option length %d, want %d", i+1, s.aoLen, 4+maclen)
		}
		d.keyIDs[s.keyID] = true
		d.rnext[s.rnextID] = true
		if !s.hasTS {
			allTS = false
		}
		if len(s.opts) > 0 && s.opts[0] != 29 {
			// full sockets write AO first; TIME-WAIT and reset replies
			// (tcp_v4_send_ack / tcp_v6_send_response) put TS first
			aoNotFirst = true
		}
		if s.payload > 0 {
			d.data++
			if s.seq >= 1<<31 {
				d.preWrap++
			} else {
				d.post++
			}
		}
		d.fin = d.fin || s.flags&segment.FIN != 0
		d.rst = d.rst || s.flags&segment.RST != 0
		d.syn = d.syn || s.flags&segment.SYN != 0
	}
	// expected KeyIDs
	ms := cs.mkts()
	var cSnd, cRcv []uint8
	for _, m := range ms {
		cSnd, cRcv = append(cSnd, m.sndID), append(cRcv, m.rcvID)
	}
	ids := func(m map[uint8]bool) []uint8 {
		var out []uint8
		for k := range m {
			out = append(out, k)
		}
		sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
		return out
	}
	expect := func(what string, got map[uint8]bool, want []uint8) {
		w := slices.Clone(want)
		slices.Sort(w)
		w = slices.Compact(w)
		if !slices.Equal(ids(got), w) {
			t.Errorf("%s: saw %v, want %v", what, ids(got), w)
		}
	}
	expect("client KeyIDs", c2s.keyIDs, cSnd)
	expect("client RNextKeyIDs", c2s.rnext, cRcv)
	expect("server KeyIDs", s2c.keyIDs, cRcv)
	expect("server RNextKeyIDs", s2c.rnext, cSnd)

	var feats []string
	if cs.v6 {
		feats = append(feats, "ipv6")
	} else {
		feats = append(feats, "ipv4")
	}
	if !cs.repair {
		if len(segs) < 2 || segs[0].flags&(segment.SYN|segment.ACK) != segment.SYN || segs[1].flags&(segment.SYN|segment.ACK) != segment.SYN|segment.ACK {
			t.Errorf("capture does not start with SYN, SYN-ACK")
		}
		feats = append(feats, "handshake")
	} else {
		if c2s.syn || s2c.syn {
			t.Errorf("SYN on the wire of a repaired pair")
		}
		for n, d := range map[string]*dir{"client": c2s, "server": s2c} {
			if d.preWrap == 0 || d.post == 0 {
				t.Errorf("%s data did not cross the wrap: %d segments before, %d after", n, d.preWrap, d.post)
			}
		}
		feats = append(feats, "no-handshake", "sne-wrap")
		if cs.sne0 != 0 {
			feats = append(feats, "sne-nonzero")
		}
	}
	feats = append(feats, "data")
	if cs.rotate {
		feats = append(feats, "rotation")
	}
	switch cs.finish {
	case finFIN:
		if !c2s.fin || !s2c.fin {
			t.Errorf("FIN missing: client %v server %v", c2s.fin, s2c.fin)
		}
		feats = append(feats, "fin")
	case finRSTClient, finRSTServer:
		d := c2s
		if cs.finish == finRSTServer {
			d = s2c
		}
		if !d.rst {
			t.Errorf("no RST from the %s", strings.TrimPrefix(cs.finish, "rst-"))
		}
		feats = append(feats, "rst")
	}
	if cs.exclude {
		feats = append(feats, "exclude-options")
	}
	if cs.sameAddr {
		feats = append(feats, "same-address")
	}
	if cs.sameID {
		feats = append(feats, "same-keyid")
	}
	if cs.sack {
		feats = append(feats, "sack")
		if len(segs) > 1 && (!segs[0].hasTS || !segs[0].hasSACKp || segs[1].hasTS) {
			t.Logf("SACK case: SYN TS %v SACK-perm %v, SYN-ACK TS %v", segs[0].hasTS, segs[0].hasSACKp, segs[1].hasTS)
		}
		if allTS {
			t.Errorf("with SACK on every segment still carries TS")
		}
	} else if !allTS {
		t.Errorf("a segment without timestamps although SACK is off")
	} else {
		feats = append(feats, "timestamps-all")
	}
	if maclen%4 != 0 {
		feats = append(feats, "maclen-unaligned")
	}
	if cs.timewait {
		if !aoNotFirst {
			t.Errorf("no ACK from the TIME-WAIT socket (TS before AO) in the capture")
		}
		if !s2c.rst {
			t.Errorf("no RST from the restored server")
		}
		feats = append(feats, "timewait-ack", "window-probe", "rst")
	}
	if aoNotFirst {
		feats = append(feats, "ao-after-ts")
	}
	e.Features = feats
	e.Notes = cs.describe(c2s.n, s2c.n)
}

func (cs aoCase) describe(nc, ns int) string {
	cli, srv := cs.addrs()
	var b strings.Builder
	n := cs.alg.keyLen
	if cs.keyLen != 0 {
		n = cs.keyLen
	}
	fmt.Fprintf(&b, "%s, %d-byte key", cs.alg.alg, n)
	if cs.ascii {
		b.WriteString(" (printable)")
	}
	fmt.Fprintf(&b, ", maclen %d; client %v, server %v; ", cs.maclen, cli, srv)
	if cs.repair {
		fmt.Fprintf(&b, "pair restored with TCP_REPAIR + TCP_AO_REPAIR, no handshake on the wire: client sends from seq %d, server from %d (2^32-1500 / 2^32-1000), both SNEs start at %d and become %d; ",
			uint32(cliSeqBelowWrap), uint32(srvSeqBelowWrap), cs.sne0, cs.sne0+1)
	} else {
		b.WriteString("kernel connect/accept; ")
	}
	if cs.repair {
		b.WriteString("data both ways 100, 100, 1000, 100, 3000 bytes: the server's 1000-byte and the client's 3000-byte sends cross 2^32 (a segment that starts below the wrap keeps the old SNE); ")
	} else {
		b.WriteString("data both ways 1, 100, 1000, 3000, 8000 bytes (lo MTU 1500); ")
	}
	if cs.rotate {
		b.WriteString("MKT A (100/200) then rotation from both sides via TCP_AO_INFO: client set_rnext 201, server set_rnext 101, server set_rnext 100, client set_rnext 200, both set_current+set_rnext B (101/201); ")
	}
	if cs.exclude {
		b.WriteString("TCP_AO_KEYF_EXCLUDE_OPT; ")
	}
	if cs.sack {
		b.WriteString("net.ipv4.tcp_sack=1: Linux drops TS from an AO SYN-ACK, so TS only in the SYN; ")
	} else {
		b.WriteString("net.ipv4.tcp_sack=0, TS on every segment; ")
	}
	if cs.timewait {
		b.WriteString("after the FIN close (client in TIME-WAIT) the server socket is recreated with TCP_REPAIR from its final state (same ISNs, SNE 0) and leaves repair mode with a window probe (seq = snd_una-1); the client's TIME-WAIT socket answers with a signed ACK whose options are NOP,NOP,TS,AO (TIME-WAIT replies put AO after TS; its KeyID is the probe's RNextKeyID); the recreated server then sends a signed RST; ")
	}
	switch cs.finish {
	case finRSTClient:
		b.WriteString("ends with a signed RST from the client (SO_LINGER {1,0})")
	case finRSTServer:
		b.WriteString("ends with a signed RST from the server (SO_LINGER {1,0})")
	default:
		b.WriteString("FIN close, client first")
	}
	fmt.Fprintf(&b, "; %d segments client->server, %d server->client", nc, ns)
	return b.String()
}
