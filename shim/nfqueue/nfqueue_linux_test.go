//go:build linux

package nfqueue_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/harness/netns"
	"github.com/tcpsig/tcpsig/harness/proc"
	"github.com/tcpsig/tcpsig/shim/nfqueue"
	"github.com/tcpsig/tcpsig/shim/nfrules"
)

var (
	local = netip.MustParseAddr("192.0.2.1")
	peer  = netip.MustParseAddr("192.0.2.2")
)

// inNS runs f in a fresh namespace with local and peer on lo (MTU mtu), the
// rules queueing TCP with peer to queue 7, and the queue open; it skips
// without root.
func inNS(t *testing.T, mtu int, f func(q *nfqueue.Queue) error) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces and netfilter rules")
	}
	var unsupported error
	err := netns.Run(func() error {
		for _, a := range []netip.Addr{local, peer} {
			if err := netns.AddAddr("lo", netip.PrefixFrom(a, 32)); err != nil {
				return err
			}
		}
		if err := netns.SetMTU("lo", mtu); err != nil {
			return err
		}
		q, err := nfqueue.Open(nfqueue.Config{Num: 7})
		if err != nil {
			unsupported = err
			return nil
		}
		defer q.Close()
		m, err := nfrules.Install(nfrules.Spec{Table: "shtest", Queue: 7, Peers: []netip.Prefix{netip.PrefixFrom(peer, 32)}})
		if err != nil {
			unsupported = err
			return nil
		}
		t.Logf("rules: %s", m)
		return f(q)
	})
	if err != nil {
		t.Fatal(err)
	}
	if unsupported != nil {
		for _, e := range []error{syscall.ENOENT, syscall.EOPNOTSUPP, syscall.EPROTONOSUPPORT, syscall.EAFNOSUPPORT} {
			if errors.Is(unsupported, e) {
				t.Skipf("needs a kernel with nf_tables and a netfilter queue (nfnetlink_queue, nft_queue or xt NFQUEUE): %v", unsupported)
			}
		}
		t.Fatal(unsupported)
	}
}

// serve reads packets until the queue closes, answering each with
// decide(p); it returns the number of packets seen per hook and the
// largest payload.
type served struct {
	mu     sync.Mutex
	hooks  map[uint8]int
	maxLen int
	done   chan struct{}
	err    error
}

func serve(q *nfqueue.Queue, decide func(p *nfqueue.Packet) (nfqueue.Verdict, []byte)) *served {
	s := &served{hooks: map[uint8]int{}, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		var p nfqueue.Packet
		for {
			if err := q.Read(&p); err != nil {
				if !errors.Is(err, nfqueue.ErrClosed) {
					s.err = err
				}
				return
			}
			s.mu.Lock()
			s.hooks[p.Hook]++
			s.maxLen = max(s.maxLen, len(p.Payload))
			s.mu.Unlock()
			v, b := decide(&p)
			if err := q.Verdict(p.ID, v, b); err != nil {
				if !errors.Is(err, nfqueue.ErrClosed) {
					s.err = err
				}
				return
			}
		}
	}()
	return s
}

func (s *served) stop(t *testing.T, q *nfqueue.Queue) {
	q.Close()
	<-s.done
	if s.err != nil {
		t.Error(s.err)
	}
}

// exchange connects local -> peer:port, sends msg, and returns what the
// server read.
func exchange(msg []byte, timeout time.Duration) ([]byte, error) {
	ln, err := net.ListenTCP("tcp4", net.TCPAddrFromAddrPort(netip.AddrPortFrom(peer, 0)))
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		got <- b
	}()
	d := net.Dialer{Timeout: timeout, LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(local, 0))}
	c, err := d.Dial("tcp4", ln.Addr().String())
	if err != nil {
		return nil, err
	}
	if _, err := c.Write(msg); err != nil {
		c.Close()
		return nil, err
	}
	c.Close()
	return <-got, nil
}

// TestAccept: every packet of a connection both ways passes the queue
// (output hook to the peer, input hook from it) and arrives intact.
func TestAccept(t *testing.T) {
	inNS(t, 65536, func(q *nfqueue.Queue) error {
		s := serve(q, func(*nfqueue.Packet) (nfqueue.Verdict, []byte) { return nfqueue.Accept, nil })
		msg := bytes.Repeat([]byte("tcpsig "), 1000)
		got, err := exchange(msg, 5*time.Second)
		s.stop(t, q)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, msg) {
			t.Errorf("server read %d bytes, want the %d sent", len(got), len(msg))
		}
		if s.hooks[nfqueue.HookOutput] == 0 || s.hooks[nfqueue.HookInput] == 0 {
			t.Errorf("queued per hook %v: want both output (%d) and input (%d)", s.hooks, nfqueue.HookOutput, nfqueue.HookInput)
		}
		return nil
	})
}

// TestDrop: a dropped SYN never connects.
func TestDrop(t *testing.T) {
	inNS(t, 65536, func(q *nfqueue.Queue) error {
		var drops atomic.Int32
		s := serve(q, func(*nfqueue.Packet) (nfqueue.Verdict, []byte) {
			drops.Add(1)
			return nfqueue.Drop, nil
		})
		_, err := exchange([]byte("x"), 1500*time.Millisecond)
		s.stop(t, q)
		if err == nil {
			t.Error("connected though every queued packet was dropped")
		}
		if drops.Load() == 0 {
			t.Error("no packet reached the queue")
		}
		return nil
	})
}

// TestModify: a rewritten packet (payload changed, TCP checksum fixed by
// the reader) replaces the original.
func TestModify(t *testing.T) {
	inNS(t, 65536, func(q *nfqueue.Queue) error {
		var buf []byte
		s := serve(q, func(p *nfqueue.Packet) (nfqueue.Verdict, []byte) {
			i := bytes.Index(p.Payload, []byte("ping"))
			if p.Hook != nfqueue.HookOutput || i < 0 {
				return nfqueue.Accept, nil
			}
			buf = append(buf[:0], p.Payload...)
			copy(buf[i:], "PONG")
			fixTCPChecksum4(buf)
			return nfqueue.Accept, buf
		})
		got, err := exchange([]byte("ping"), 5*time.Second)
		s.stop(t, q)
		if err != nil {
			return err
		}
		if string(got) != "PONG" {
			t.Errorf("server read %q, want the rewritten %q", got, "PONG")
		}
		return nil
	})
}

// TestNoGSO: with lo's MTU at 1500 the kernel builds GSO super-packets for
// a bulk write; the queue must only ever see packets within the MTU.
func TestNoGSO(t *testing.T) {
	inNS(t, 1500, func(q *nfqueue.Queue) error {
		s := serve(q, func(*nfqueue.Packet) (nfqueue.Verdict, []byte) { return nfqueue.Accept, nil })
		msg := bytes.Repeat([]byte{0xa5}, 4<<20)
		got, err := exchange(msg, 5*time.Second)
		s.stop(t, q)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, msg) {
			t.Errorf("server read %d bytes, want %d", len(got), len(msg))
		}
		if s.maxLen > 1500 || s.maxLen < 1000 {
			t.Errorf("largest queued packet %d bytes: want full-sized segments of at most the 1500-byte MTU", s.maxLen)
		}
		t.Logf("largest queued packet: %d bytes; per hook %v", s.maxLen, s.hooks)
		return nil
	})
}

// TestBusy: a second reader cannot bind a queue that is held.
func TestBusy(t *testing.T) {
	inNS(t, 65536, func(*nfqueue.Queue) error {
		q2, err := nfqueue.Open(nfqueue.Config{Num: 7})
		if err == nil {
			q2.Close()
			t.Error("bound a queue another socket holds")
		} else if !errors.Is(err, syscall.EPERM) {
			t.Errorf("second bind: %v, want EPERM", err)
		}
		return nil
	})
}

// fixTCPChecksum4 recomputes the TCP checksum of an IPv4 packet.
func fixTCPChecksum4(b []byte) {
	ihl := int(b[0]&0x0f) * 4
	tcp := b[ihl:]
	tcp[16], tcp[17] = 0, 0
	var sum uint32
	add := func(p []byte) {
		for len(p) >= 2 {
			sum += uint32(binary.BigEndian.Uint16(p))
			p = p[2:]
		}
		if len(p) == 1 {
			sum += uint32(p[0]) << 8
		}
	}
	add(b[12:20])
	sum += syscall.IPPROTO_TCP + uint32(len(tcp))
	add(tcp)
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(tcp[16:], ^uint16(sum))
}

// startTraffic runs TestHelperTraffic in a child process of the test
// binary, so that only the queue's work is counted in this one; Kill stops
// it, and its log says why it stopped if it did so on its own.
func startTraffic() (*proc.Proc, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperTraffic$")
	cmd.Env = append(os.Environ(), "NFQUEUE_HELPER=1")
	return proc.Start("traffic helper", cmd)
}

// TestHelperTraffic is, when the tests re-execute the test binary, a TCP
// sender and receiver (peer -> local) that runs until killed; otherwise it
// does nothing.
func TestHelperTraffic(t *testing.T) {
	if os.Getenv("NFQUEUE_HELPER") != "1" {
		t.Skip("helper process for TestNoAllocs and TestBatchNoAllocs")
	}
	ln, err := net.ListenTCP("tcp4", net.TCPAddrFromAddrPort(netip.AddrPortFrom(local, 0)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "listen:", err)
		os.Exit(1)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go io.Copy(io.Discard, c)
		}
	}()
	d := net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(peer, 0))}
	c, err := d.Dial("tcp4", ln.Addr().String())
	if err != nil {
		fmt.Fprintln(os.Stderr, "dial:", err)
		os.Exit(1)
	}
	buf := make([]byte, 1000)
	for {
		if _, err := c.Write(buf); err != nil {
			os.Exit(0)
		}
	}
}

// TestNoAllocs: reading a packet and answering it, with and without a
// rewritten payload, allocates nothing (the traffic comes from another
// process, so only the queue's work is counted).
func TestNoAllocs(t *testing.T) {
	inNS(t, 1500, func(q *nfqueue.Queue) error {
		tr, err := startTraffic()
		if err != nil {
			return err
		}
		defer tr.Kill()
		var p nfqueue.Packet
		buf := make([]byte, 0, nfqueue.MaxPayload)
		var stepErr error
		step := func(rewrite bool) {
			if stepErr != nil {
				return
			}
			if stepErr = q.Read(&p); stepErr != nil {
				return
			}
			var out []byte
			if rewrite {
				out = append(buf[:0], p.Payload...)
			}
			stepErr = q.Verdict(p.ID, nfqueue.Accept, out)
		}
		for range 100 { // warm up: the first packets, buffers grown
			step(true)
		}
		if stepErr != nil {
			return fmt.Errorf("%w\n%s", stepErr, tr.Log())
		}
		for _, rewrite := range []bool{false, true} {
			if n := testing.AllocsPerRun(500, func() { step(rewrite) }); n != 0 {
				t.Errorf("Read+Verdict (rewrite %v): %v allocations per packet, want 0", rewrite, n)
			}
		}
		return stepErr
	})
}
