package netstack

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/packetauth"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
)

// connect opens a connection from p.a to a listener of p.b on port.
func (p *pair) connect(t *testing.T, port uint16) (client, server *gonet.TCPConn) {
	t.Helper()
	ln, err := listenGonet(p.b, netip.AddrPortFrom(pairB.Addr(), port))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan *gonet.TCPConn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			acc <- nil
			return
		}
		acc <- c.(*gonet.TCPConn)
	}()
	client, err = dialGonet(p.a, netip.AddrPortFrom(pairB.Addr(), port), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if server = <-acc; server == nil {
		t.Fatal("accept failed")
	}
	return client, server
}

// exchange sends n bytes each way over client and server at once.
func exchange(client, server *gonet.TCPConn, n int64) error {
	type result struct {
		sent, got digest
		err       error
	}
	sc := make(chan result, 1)
	go func() {
		s, g, err := duplex(server, 2, n)
		sc <- result{s, g, err}
	}()
	cs, cg, err := duplex(client, 1, n)
	sr := <-sc
	if err := errors.Join(err, sr.err); err != nil {
		return err
	}
	if cs != sr.got || sr.sent != cg || cs.n != n || sr.sent.n != n {
		return fmt.Errorf("streams differ: client sent %v, server got %v; server sent %v, client got %v", cs, sr.got, sr.sent, cg)
	}
	return nil
}

// settle waits until the link has been quiet for 50 ms and the two
// layers have verified every packet it carried (the last ones may still
// be on their way), or two seconds have passed, and returns their
// counters and the packets carried.
func (p *pair) settle() (ca, cb packetauth.Counters, moved uint64) {
	for i := 0; i < 40; i++ {
		moved = uint64(p.segments.Load())
		ca, cb = p.la.Counters(), p.lb.Counters()
		time.Sleep(50 * time.Millisecond)
		if ca.Verified+cb.Verified == moved && uint64(p.segments.Load()) == moved {
			break
		}
	}
	return ca, cb, moved
}

// allVerified checks that nothing was lost, neither on the link nor in a
// stack (a full segment queue: past the layer, short of TCP), and that
// every packet the link carried was verified by the receiving layer, none
// refused, none passed unsigned.
func (p *pair) allVerified(ca, cb packetauth.Counters, moved uint64) error {
	switch {
	case p.lost() != 0:
		return fmt.Errorf("the link lost %d packets", p.lost())
	case p.a.Stats().DroppedPackets.Value()+p.b.Stats().DroppedPackets.Value() != 0:
		return fmt.Errorf("the stacks dropped %d and %d packets", p.a.Stats().DroppedPackets.Value(), p.b.Stats().DroppedPackets.Value())
	case ca.Dropped.Total()+cb.Dropped.Total() != 0 || p.ea.Dropped()+p.eb.Dropped() != 0:
		return fmt.Errorf("refused: client %+v, server %+v", ca.Dropped, cb.Dropped)
	case ca.Verified+cb.Verified != moved || ca.Passed+cb.Passed != 0:
		return fmt.Errorf("%d packets carried, %d verified, %d passed unsigned", moved, ca.Verified+cb.Verified, ca.Passed+cb.Passed)
	case ca.Signed < cb.Verified || cb.Signed < ca.Verified || ca.Signed == 0 || cb.Signed == 0:
		return fmt.Errorf("verified more than the other side signed: client %+v, server %+v", ca, cb)
	}
	return nil
}

// TestPair: two wrapped gVisor stacks over an in-memory link, for each
// kind of key: a stream each way, every packet the link carried verified
// by the receiving layer, none refused.
func TestPair(t *testing.T) {
	for _, alg := range []string{"none", "md5", "hmac(sha1)", "cmac(aes128)", "hmac(sha256)", "hmac-sha256-128", "kmac256-128"} {
		t.Run(alg, func(t *testing.T) {
			p, err := newPair(alg, 1500)
			if err != nil {
				t.Fatal(err)
			}
			defer p.close()
			client, server := p.connect(t, 80)
			if err := exchange(client, server, 1<<20); err != nil {
				t.Fatal(err)
			}
			ca, cb, moved := p.settle()
			t.Logf("client layer %+v", ca)
			t.Logf("server layer %+v", cb)
			if ca.Dropped.Total()+cb.Dropped.Total() != 0 || p.ea.Dropped()+p.eb.Dropped() != 0 || p.lost() != 0 {
				t.Fatalf("refused: client %+v, server %+v; lost on the link %d", ca.Dropped, cb.Dropped, p.lost())
			}
			if alg == "none" {
				if ca.Signed+cb.Signed+ca.Verified+cb.Verified != 0 || ca.Passed == 0 {
					t.Fatal("a layer with no keys signed or verified")
				}
				return
			}
			if err := p.allVerified(ca, cb, moved); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestPairRotation: during a transfer each side rotates through its
// wrapper — the connection found by 4-tuple with Layer().Conn — to KeyID
// 2. SetRNext(2) asks the peer to send with KeyID 2, and the peer's layer
// moves its current key when the RNextKeyID says so (RFC 5925 section
// 7.5.2, as ao.Conn and Linux do); SetCurrent(2) alone would be undone by
// the peer's RNextKeyID 1. The client rotates first, the server a little
// later. Nothing is refused, and both sides end on KeyID 2 both ways with
// the data intact.
func TestPairRotation(t *testing.T) {
	for _, alg := range []string{"hmac(sha1)", "cmac(aes128)", "hmac(sha256)", "hmac-sha256-128", "kmac256-128"} {
		for _, both := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/setcurrent=%v", alg, both), func(t *testing.T) {
				p, err := newPair(alg, 1500)
				if err != nil {
					t.Fatal(err)
				}
				defer p.close()
				client, server := p.connect(t, 80)
				local, remote := client.LocalAddr().(*net.TCPAddr).AddrPort(), client.RemoteAddr().(*net.TCPAddr).AddrPort()
				done := make(chan error, 1)
				go func() { done <- exchange(client, server, 8<<20) }()
				rotate := func(l *packetauth.Layer, local, remote netip.AddrPort, after int64) {
					for p.segments.Load() < after {
						time.Sleep(time.Millisecond)
					}
					c, ok := l.Conn(local, remote)
					if !ok {
						t.Fatalf("no connection %v -> %v", local, remote)
					}
					if both {
						if err := c.SetCurrent(2); err != nil {
							t.Fatal(err)
						}
					}
					if err := c.SetRNext(2); err != nil {
						t.Fatal(err)
					}
				}
				rotate(p.la, local, remote, 2000)
				rotate(p.lb, remote, local, 4000)
				at := p.segments.Load()
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				ca, cb, moved := p.settle()
				if at > p.segments.Load()-1000 {
					t.Fatalf("the rotation came at packet %d of %d: too late to tell", at, p.segments.Load())
				}
				for _, l := range []*packetauth.Layer{p.la, p.lb} {
					for ci := range l.Conns {
						t.Logf("%v -> %v: current KeyID %d, RNext %d", ci.Local, ci.Remote, ci.CurrentKeyID, ci.RNextKeyID)
						if ci.CurrentKeyID != 2 || ci.RNextKeyID != 2 {
							t.Errorf("%v -> %v: current KeyID %d, RNext %d; want 2, 2", ci.Local, ci.Remote, ci.CurrentKeyID, ci.RNextKeyID)
						}
					}
				}
				if err := p.allVerified(ca, cb, moved); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestPairEthernet: the wrapper over an Ethernet link (gVisor's ethernet
// endpoint below it). Outgoing packets reach it with the link header
// already pushed, incoming ones with it consumed; both keep it, and ARP
// passes the layer untouched. A stream each way, every TCP packet
// verified.
func TestPairEthernet(t *testing.T) {
	for _, alg := range []string{"md5", "hmac(sha1)"} {
		t.Run(alg, func(t *testing.T) {
			p, err := newLinkPair(alg, 1514, true)
			if err != nil {
				t.Fatal(err)
			}
			defer p.close()
			if got := p.ea.MTU(); got != 1480 {
				t.Fatalf("MTU %d, want 1514 - 14 (Ethernet) - 20 (option)", got)
			}
			client, server := p.connect(t, 80)
			if err := exchange(client, server, 1<<20); err != nil {
				t.Fatal(err)
			}
			ca, cb, moved := p.settle()
			t.Logf("client layer %+v", ca)
			t.Logf("server layer %+v", cb)
			// An ARP packet passes the sender's layer and the receiver's.
			arp := (ca.Passed + cb.Passed) / 2
			if arp == 0 || ca.Dropped.Total()+cb.Dropped.Total() != 0 || ca.Verified+cb.Verified != moved-arp {
				t.Fatalf("%d packets carried, %d of them ARP, %d verified", moved, arp, ca.Verified+cb.Verified)
			}
		})
	}
}

// schedClock, schedT0 and schedRings are pairLayers' "+schedule" keys:
// key 1 sends until schedT0 and is accepted until an hour later, key 2 is
// accepted from an hour before and sends from schedT0; the keyrings read
// schedClock, a clock the test moves.
var (
	schedT0    = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	schedClock = &testClock{t: schedT0.Add(-time.Minute)}
	schedRings []*ao.Keyring
)

func schedLifetime(id uint8) keys.Lifetime {
	if id == 1 {
		return keys.Lifetime{Send: keys.Window{End: schedT0}, Accept: keys.Window{End: schedT0.Add(time.Hour)}}
	}
	return keys.Lifetime{Send: keys.Window{Start: schedT0}, Accept: keys.Window{Start: schedT0.Add(-time.Hour)}}
}

// testClock is a clock a test moves.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// TestPairScheduleRotation: during a transfer both keyrings' clocks
// reach key 2's send start (the client's first, the server's a little
// later); with no call on the connections, both sides move to KeyID 2
// both ways (the keyring's Advance, RFC 5925 §7.5.2), nothing is refused,
// and the data arrives intact. Every algorithm.
func TestPairScheduleRotation(t *testing.T) {
	for _, alg := range []string{"hmac(sha1)", "cmac(aes128)", "hmac(sha256)", "hmac-sha256-128", "kmac256-128"} {
		t.Run(alg, func(t *testing.T) {
			schedClock.Set(schedT0.Add(-time.Minute))
			schedRings = nil
			p, err := newPair(alg+"+schedule", 1500)
			if err != nil {
				t.Fatal(err)
			}
			defer p.close()
			if len(schedRings) != 2 {
				t.Fatalf("%d scheduled keyrings, want 2", len(schedRings))
			}
			client, server := p.connect(t, 80)
			done := make(chan error, 1)
			go func() { done <- exchange(client, server, 8<<20) }()
			for i, after := range []int64{2000, 4000} {
				for p.segments.Load() < after {
					time.Sleep(time.Millisecond)
				}
				if i == 0 {
					schedClock.Set(schedT0)
				}
				schedRings[i].Advance()
			}
			at := p.segments.Load()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			ca, cb, moved := p.settle()
			if at > p.segments.Load()-1000 {
				t.Fatalf("the rotation came at packet %d of %d: too late to tell", at, p.segments.Load())
			}
			for _, l := range []*packetauth.Layer{p.la, p.lb} {
				for ci := range l.Conns {
					if ci.CurrentKeyID != 2 || ci.RNextKeyID != 2 {
						t.Errorf("%v -> %v: current KeyID %d, RNext %d; want 2, 2", ci.Local, ci.Remote, ci.CurrentKeyID, ci.RNextKeyID)
					}
				}
			}
			if err := p.allVerified(ca, cb, moved); err != nil {
				t.Fatal(err)
			}
		})
	}
}
