package netstack

// The namespace harness of the kernel tests: a fresh network namespace
// with a TUN device the kernel owns one end of, and a gVisor stack over
// the device's file descriptor (gVisor's own fdbased link endpoint) on the
// other; a tap endpoint between the stack and the device drops every
// hundredth packet on request and counts retransmissions and SACK blocks
// on the wire.

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/tcpsig/tcpsig/linuxsock"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/harness/netns"
	"github.com/tcpsig/tcpsig/packetauth"
	"github.com/tcpsig/tcpsig/segment"
	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/link/fdbased"
	"gvisor.dev/gvisor/pkg/tcpip/link/nested"
	"gvisor.dev/gvisor/pkg/tcpip/link/tun"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

const (
	tunName  = "ns0" // the TUN device, named with this package's prefix
	tunMTU   = 1500
	nicID    = 1
	kPort    = 179   // the kernel's listener
	gonetPrt = 17900 // the gonet listener
)

// kernelNet is one test's namespace: the kernel's address on the TUN
// device, the stack's address behind it, and the stack.
type kernelNet struct {
	kaddr, naddr netip.Addr
	s            *stack.Stack
	tap          *tap
}

// dialRefused has the kernel dial the gonet listener with d, a dialer
// holding a key gVisor's side does not take, and fails if either side got
// a connection.
func (k *kernelNet) dialRefused(d *net.Dialer) error {
	to := netip.AddrPortFrom(k.naddr, gonetPrt)
	ln, err := listenGonet(k.s, to)
	if err != nil {
		return err
	}
	accepted := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Close()
			accepted <- errors.New("the gonet listener accepted a connection")
			return
		}
		accepted <- nil
	}()
	if c, err := d.Dial("tcp", to.String()); err == nil {
		c.Close()
		ln.Close()
		<-accepted
		return errors.New("the kernel connected with a wrong key")
	}
	ln.Close()
	return <-accepted
}

// addrs returns the kernel's address on the TUN device (with the prefix
// routed to the device) and the gVisor stack's.
func addrs(v6 bool) (kernel netip.Prefix, gvisor netip.Addr) {
	if v6 {
		return netip.MustParsePrefix("2001:db8:5::1/64"), netip.MustParseAddr("2001:db8:5::2")
	}
	return netip.MustParsePrefix("192.0.2.1/24"), netip.MustParseAddr("192.0.2.2")
}

var errSkipNoTUN = errors.New("no /dev/net/tun")

// needRoot skips a test that creates namespaces and TUN devices.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("not root: the test creates a network namespace and a TUN device")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skip("no /dev/net/tun: ", err)
	}
}

// inKernelNet runs f on the goroutine of a fresh network namespace where
// the kernel owns kaddr on a TUN device whose other end is a gVisor stack
// answering for naddr; wrap, when not nil, puts a link endpoint between
// the stack and the tap. Kernel sockets must be created on f's goroutine.
func inKernelNet(t *testing.T, v6 bool, wrap func(stack.LinkEndpoint) stack.LinkEndpoint, f func(k *kernelNet) error) {
	t.Helper()
	needRoot(t)
	err := netns.Run(func() error {
		fd, err := tun.Open(tunName)
		if err != nil {
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENODEV) {
				return errSkipNoTUN
			}
			return fmt.Errorf("open TUN: %w", err)
		}
		ep, err := fdbased.New(&fdbased.Options{FDs: []int{fd}, MTU: tunMTU})
		if err != nil {
			unix.Close(fd)
			return err
		}
		k := &kernelNet{tap: newTap(ep)}
		var link stack.LinkEndpoint = k.tap
		if wrap != nil {
			link = wrap(link)
		}
		p, naddr := addrs(v6)
		k.kaddr, k.naddr = p.Addr(), naddr
		if err := netns.LinkUp(tunName); err != nil {
			return err
		}
		if err := netns.AddAddr(tunName, p); err != nil {
			return err
		}
		s, err := newStack(link, netip.PrefixFrom(k.naddr, p.Bits()))
		if err != nil {
			return err
		}
		k.s = s
		defer func() {
			s.Close()
			s.Wait()
		}()
		return f(k)
	})
	if errors.Is(err, errSkipNoTUN) {
		t.Skip("no /dev/net/tun")
	}
	if err != nil {
		t.Fatal(err)
	}
}

// stream is a deterministic pseudo-random byte stream of a given length.
func stream(seed uint64, n int64) io.Reader {
	var s [32]byte
	binary.LittleEndian.PutUint64(s[:], seed)
	return io.LimitReader(rand.NewChaCha8(s), n)
}

// digest is what one side of a transfer saw: bytes and SHA-256.
type digest struct {
	n   int64
	sum [32]byte
}

func (d digest) String() string { return fmt.Sprintf("%d bytes, sha256 %x", d.n, d.sum[:8]) }

// halfCloser is a connection whose write side closes alone (net.TCPConn,
// gonet.TCPConn).
type halfCloser interface {
	net.Conn
	CloseWrite() error
}

// duplex sends the stream of seed through c while reading c to EOF, then
// returns the digests of what was sent and what was received.
func duplex(c halfCloser, seed uint64, n int64) (sent, got digest, err error) {
	c.SetDeadline(time.Now().Add(5 * time.Minute))
	var wg sync.WaitGroup
	var werr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		h := sha256.New()
		sent.n, werr = io.Copy(io.MultiWriter(c, h), stream(seed, n))
		copy(sent.sum[:], h.Sum(nil))
		if werr == nil {
			werr = c.CloseWrite()
		}
	}()
	h := sha256.New()
	got.n, err = io.Copy(h, c)
	copy(got.sum[:], h.Sum(nil))
	wg.Wait()
	if err == nil {
		err = werr
	}
	return sent, got, err
}

// tap sits on the wire side of the stack (below the wrapper): it drops
// every hundredth TCP packet in each direction while drop is set, the
// first one ten packets after it was set (so a short window, as around a
// rotation, loses packets both ways however the two directions happen
// to share it), and counts what it passes.
type tap struct {
	nested.Endpoint
	drop atomic.Bool
	out  wireCount // to the kernel
	in   wireCount // from the kernel

	// check, when set, verifies each packet to the kernel on its own
	// (the first refused ones are kept in bad).
	checkMu sync.Mutex
	check   func([]byte) error
	checked int64
	bad     []string
}

// setCheck installs check (nil removes it).
func (t *tap) setCheck(check func([]byte) error) {
	t.checkMu.Lock()
	defer t.checkMu.Unlock()
	t.check = check
}

// checkResult returns the packets checked and the refused ones (hex,
// with the error).
func (t *tap) checkResult() (int64, []string) {
	t.checkMu.Lock()
	defer t.checkMu.Unlock()
	return t.checked, append([]string(nil), t.bad...)
}

// wireCount counts the packets of one direction, as a capture would.
type wireCount struct {
	mu       sync.Mutex
	packets  int64 // TCP packets
	other    int64 // anything else
	ts       int64 // segments with a timestamps option
	dropped  int64
	window   int64 // TCP packets seen since drop was last set
	syns     int64
	data     int64 // segments with payload
	bytes    int64 // their payload bytes
	retrans  int64 // segments with payload none of which is new
	sack     int64 // SACK blocks
	auth     int64 // segments with an MD5 or AO option
	high     uint32
	haveHigh bool
	last     [4][]byte // the last TCP packets seen, for a failure's log
	nlast    int
}

// recent returns the last TCP packets seen, oldest first.
func (w *wireCount) recent() [][]byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	var r [][]byte
	for i := range len(w.last) {
		if b := w.last[(w.nlast+i)%len(w.last)]; b != nil {
			r = append(r, b)
		}
	}
	return r
}

// wireStats is a snapshot of a wireCount.
type wireStats struct {
	Packets, Dropped, SYNs, Data, Bytes, Retrans, SACKBlocks, Signed, TS, Other int64
}

func (w *wireCount) stats() wireStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return wireStats{w.packets, w.dropped, w.syns, w.data, w.bytes, w.retrans, w.sack, w.auth, w.ts, w.other}
}

// see counts one packet and reports whether the tap drops it.
func (w *wireCount) see(b []byte, drop bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	seg, err := segment.ParsePacket(b)
	if err != nil {
		w.other++ // the kernel's IPv6 link-local chatter on the device
		return false
	}
	w.packets++
	w.last[w.nlast%len(w.last)] = append(w.last[w.nlast%len(w.last)][:0], b...)
	w.nlast++
	if !drop {
		w.window = 0
	} else if w.window++; w.window%100 == 10 {
		w.dropped++
		return true
	}
	h := seg.Header()
	if h.Flags()&segment.SYN != 0 {
		w.syns++
		w.high, w.haveHigh = h.Seq()+1, true
	}
	if a, err := h.AuthOptions(); err == nil && (a.MD5 > 0 || a.AO > 0) {
		w.auth++
	}
	sack, ts := options(h.Options())
	w.sack += int64(sack)
	if ts {
		w.ts++
	}
	if n := len(seg.Payload()); n > 0 {
		w.data++
		w.bytes += int64(n)
		end := h.Seq() + uint32(n)
		if w.haveHigh && int32(end-w.high) <= 0 {
			w.retrans++
		}
		if !w.haveHigh || int32(end-w.high) > 0 {
			w.high, w.haveHigh = end, true
		}
	}
	return false
}

// options returns the number of blocks of the SACK option (kind 5) in
// opts and whether there is a timestamps option (kind 8).
func options(opts []byte) (sack int, ts bool) {
	for i := 0; i < len(opts); {
		switch opts[i] {
		case 0:
			return sack, ts
		case 1:
			i++
			continue
		}
		if i+1 >= len(opts) || opts[i+1] < 2 {
			return sack, ts
		}
		switch opts[i] {
		case 5:
			sack += (int(opts[i+1]) - 2) / 8
		case 8:
			ts = true
		}
		i += int(opts[i+1])
	}
	return sack, ts
}

func newTap(child stack.LinkEndpoint) *tap {
	t := &tap{}
	t.Init(child, t)
	return t
}

// WritePackets counts (and drops) packets on their way to the kernel.
func (t *tap) WritePackets(pkts stack.PacketBufferList) (int, tcpip.Error) {
	var keep stack.PacketBufferList
	drop := t.drop.Load()
	for _, p := range pkts.AsSlice() {
		b := flat(p)
		t.checkMu.Lock()
		if t.check != nil {
			t.checked++
			if err := t.check(b); err != nil && len(t.bad) < 4 {
				t.bad = append(t.bad, fmt.Sprintf("%v: %x", err, b))
			}
		}
		t.checkMu.Unlock()
		if t.out.see(b, drop) {
			continue
		}
		keep.PushBack(p)
	}
	if keep.Len() == 0 {
		return pkts.Len(), nil
	}
	n, err := t.Endpoint.WritePackets(keep)
	if err != nil {
		return n, err
	}
	return pkts.Len(), nil
}

// DeliverNetworkPacket counts (and drops) packets from the kernel.
func (t *tap) DeliverNetworkPacket(proto tcpip.NetworkProtocolNumber, p *stack.PacketBuffer) {
	if t.in.see(flat(p), t.drop.Load()) {
		return
	}
	t.Endpoint.DeliverNetworkPacket(proto, p)
}

// flat copies a packet's bytes from its network header on.
func flat(p *stack.PacketBuffer) []byte {
	v := p.ToView()
	defer v.Release()
	b := v.ToSlice()
	return b[len(p.LinkHeader().Slice()):]
}

// transfer opens a connection between the gVisor stack and the kernel —
// gVisor dials a kernel listener, or (accept) a kernel socket dials a
// gonet listener — with keys on the kernel's socket, and sends n bytes
// each way at once; it fails unless each side received exactly the
// other's stream. during, if not nil, runs alongside with the kernel's
// socket and the gVisor one, and its error fails the transfer too.
func transfer(k *kernelNet, accept bool, n int64, keys linuxsock.Keys, during func(kc *net.TCPConn, nc *gonet.TCPConn) error) error {
	kaddr, naddr := netip.AddrPortFrom(k.kaddr, kPort), netip.AddrPortFrom(k.naddr, gonetPrt)
	type result struct {
		sent, got digest
		err       error
	}
	kc, nc := make(chan result, 1), make(chan result, 1)
	kconn, nconn := make(chan *net.TCPConn, 1), make(chan *gonet.TCPConn, 1)
	run := func(c halfCloser, seed uint64, to chan result) {
		defer c.Close()
		s, g, err := duplex(c, seed, n)
		to <- result{s, g, err}
	}
	if accept {
		ln, err := listenGonet(k.s, naddr)
		if err != nil {
			return err
		}
		defer ln.Close()
		go func() {
			c, err := ln.Accept()
			if err != nil {
				nc <- result{err: err}
				return
			}
			nconn <- c.(*gonet.TCPConn)
			run(c.(*gonet.TCPConn), 1, nc)
		}()
		d := linuxsock.Dialer(keys)
		d.Timeout, d.KeepAlive = 20*time.Second, -1
		c, err := d.Dial("tcp", naddr.String())
		if err != nil {
			return fmt.Errorf("kernel dial: %w", err)
		}
		kconn <- c.(*net.TCPConn)
		go run(c.(*net.TCPConn), 2, kc)
	} else {
		lc := linuxsock.ListenConfig(keys)
		lc.KeepAlive = -1
		ln, err := lc.Listen(context.Background(), "tcp", kaddr.String())
		if err != nil {
			return err
		}
		defer ln.Close()
		go func() {
			c, err := ln.Accept()
			if err != nil {
				kc <- result{err: err}
				return
			}
			kconn <- c.(*net.TCPConn)
			run(c.(*net.TCPConn), 2, kc)
		}()
		c, err := dialGonet(k.s, kaddr, 20*time.Second)
		if err != nil {
			return fmt.Errorf("gonet dial: %w", err)
		}
		nconn <- c
		go run(c, 1, nc)
	}
	derr := make(chan error, 1)
	go func() {
		if during == nil {
			derr <- nil
			return
		}
		var kcn *net.TCPConn
		var ncn *gonet.TCPConn
		select {
		case kcn = <-kconn:
		case r := <-kc:
			kc <- r
			derr <- errors.New("the kernel's side ended before it connected")
			return
		}
		select {
		case ncn = <-nconn:
		case r := <-nc:
			nc <- r
			derr <- errors.New("gVisor's side ended before it connected")
			return
		}
		derr <- during(kcn, ncn)
	}()
	nr, kr := <-nc, <-kc
	if err := errors.Join(nr.err, kr.err, <-derr); err != nil {
		return err
	}
	if nr.sent != kr.got || kr.sent != nr.got || nr.sent.n != n || kr.sent.n != n {
		return fmt.Errorf("streams differ: gonet sent %v, kernel got %v; kernel sent %v, gonet got %v", nr.sent, kr.got, kr.sent, nr.got)
	}
	return nil
}

// settled reads the tap's counts and the layer's once they agree: the tap
// counts a packet as it hands it on and the layer once it has judged it,
// so the last packets of a close may be between the two for a moment.
// After five seconds it returns what it has, for the caller to judge.
func settled(k *kernelNet, layer *packetauth.Layer) (out, in wireStats, c packetauth.Counters) {
	for i := 0; ; i++ {
		out, in, c = k.tap.out.stats(), k.tap.in.stats(), layer.Counters()
		if (c.Signed == uint64(out.Packets) && c.Verified == uint64(in.Packets-in.Dropped)) || i == 50 {
			return out, in, c
		}
		time.Sleep(100 * time.Millisecond)
	}
}
