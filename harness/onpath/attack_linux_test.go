//go:build linux

package onpath

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/harness/kstat"
)

// reader keeps what a connection reads, and how its read ended.
type reader struct {
	mu  sync.Mutex
	buf bytes.Buffer
	err error
}

func (r *reader) run(c net.Conn) {
	b := make([]byte, 4096)
	for {
		n, err := c.Read(b)
		r.mu.Lock()
		r.buf.Write(b[:n])
		if err != nil {
			r.err = err
		}
		r.mu.Unlock()
		if err != nil {
			return
		}
	}
}

func (r *reader) state() ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.buf.Bytes()), r.err
}

func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// TestAttackerUnprotected is the attacker's own proof, against a host
// with no protection at all: on a plain TCP connection from A to B, M's
// forged data reaches B's application, its in-window SYN and RST draw
// B's challenge ACKs (TcpExtTCPSYNChallenge, TcpExtTCPChallengeACK), and
// its RST at rcv_nxt aborts B's socket. A test that sees none of these
// behind a protection therefore shows the protection, not a harmless
// attacker.
func TestAttackerUnprotected(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces, a raw and a packet socket")
	}
	n, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	att, err := Start(n.M, 2*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := att.Close(); err != nil {
			t.Error(err)
		}
	})

	var ln net.Listener
	if err := n.A.Do(func() (err error) { ln, err = net.Listen("tcp4", netip.AddrPortFrom(AddrA, 0).String()); return err }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	var cb net.Conn
	if err := n.B.Do(func() (err error) { cb, err = net.Dial("tcp4", ln.Addr().String()); return err }); err != nil {
		t.Fatal(err)
	}
	defer cb.Close()
	ca := <-accepted
	defer ca.Close()
	if _, err := ca.Write([]byte("from A")); err != nil {
		t.Fatal(err)
	}
	var rb reader
	go rb.run(cb)
	f := Flow{Peer: netip.MustParseAddrPort(ca.LocalAddr().String()), Target: netip.MustParseAddrPort(cb.LocalAddr().String())}
	// Idle, with B's ACK of A's data seen: rcv_nxt is known exactly.
	if !waitFor(10*time.Second, func() bool {
		v := att.Tracker.View(f)
		return v.FromTarget.HasAck && v.FromTarget.Ack == v.FromPeer.Next && v.FromPeer.HasTS
	}) {
		t.Fatalf("the sniffer did not learn %v: %+v", f, att.Tracker.View(f))
	}
	counters := func() map[string]uint64 {
		var m map[string]uint64
		if err := n.B.Do(func() (err error) { m, err = kstat.TCPExt(); return err }); err != nil {
			t.Fatal(err)
		}
		return m
	}
	before := counters()

	att.Inject(f, Data)
	if !waitFor(10*time.Second, func() bool { b, _ := rb.state(); return bytes.Contains(b, []byte(Marker)) }) {
		b, err := rb.state()
		t.Fatalf("forged data not delivered to B: B read %q (%v); sent %v; %+v", b, err, att.Sent(f), att.Tracker.View(f))
	}
	for _, c := range []struct {
		k       Kind
		counter string
	}{{SYN, "TCPSYNChallenge"}, {RSTInWindow, "TCPChallengeACK"}} {
		att.Inject(f, c.k)
		if !waitFor(10*time.Second, func() bool { return counters()[c.counter] > before[c.counter] }) {
			t.Errorf("forged %v: B's %s stayed %d; sent %v", c.k, c.counter, before[c.counter], att.Sent(f))
		}
	}
	att.Inject(f, RST)
	if !waitFor(10*time.Second, func() bool { _, err := rb.state(); return err != nil }) {
		t.Fatalf("forged RST at rcv_nxt did not abort B's socket; sent %v", att.Sent(f))
	}
	att.StopAll()
	if _, err := rb.state(); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("B's read ended with %v, want ECONNRESET", err)
	}
	b, _ := rb.state()
	t.Logf("unprotected B: read %q; sent %v; %s", b, att.Sent(f), att.Tracker.View(f).FromTarget)
	if att.Total().Errors != 0 {
		t.Errorf("send errors: %+v", att.Total())
	}
}
