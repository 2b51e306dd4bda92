package ao

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/segment"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (f *fakeClock) Now() time.Time  { f.mu.Lock(); defer f.mu.Unlock(); return f.now }
func (f *fakeClock) Set(t time.Time) { f.mu.Lock(); f.now = t; f.mu.Unlock() }

// t0 is the tests' reference moment.
var t0 = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)

// timed is cfg with a lifetime.
func timed(cfg keys.AO, send, accept keys.Window) keys.AO {
	cfg.Lifetime = keys.Lifetime{Send: send, Accept: accept}
	return cfg
}

// rotationPair is a client and a server that share key 1 (SendID 1 on
// the client), sending until t0 and accepted until t0+1m, and key 11,
// accepted from t0-1m and sending from t0, each keyring on its own fake
// clock, established on key 1 at t0-1h. Key 1 sends on for sendOverlap
// after t0.
func rotationPair(t *testing.T, alg string, sendOverlap time.Duration) (p *pair, cclk, sclk *fakeClock) {
	t.Helper()
	cring, sring := NewKeyring(nil), NewKeyring(nil)
	cclk, sclk = &fakeClock{now: t0.Add(-time.Hour)}, &fakeClock{now: t0.Add(-time.Hour)}
	cring.SetClock(cclk.Now)
	sring.SetClock(sclk.Now)
	old := [2]keys.Window{{End: t0.Add(sendOverlap)}, {End: t0.Add(time.Minute)}}
	next := [2]keys.Window{{Start: t0}, {Start: t0.Add(-time.Minute)}}
	for _, k := range []struct {
		r         *Keyring
		peer      string
		send, rcv uint8
		key       int
		w         [2]keys.Window
	}{
		{cring, "192.0.2.2/32", 1, 2, 1, old}, {sring, "192.0.2.1/32", 2, 1, 1, old},
		{cring, "192.0.2.2/32", 11, 12, 11, next}, {sring, "192.0.2.1/32", 12, 11, 11, next},
	} {
		cfg := cfg4(k.peer, k.send, k.rcv)
		cfg.Algorithm, cfg.Key = alg, testKey(k.key)
		if alg != "hmac(sha1)" {
			cfg.Key = key32
		}
		mustAdd(t, k.r, timed(cfg, k.w[0], k.w[1]))
	}
	return newPair(t, cring, sring, cli4, srv4, 10, 20, 0, 11, 0, 21, 1, 2, 2, 1), cclk, sclk
}

// exchange signs a data segment each way at the given sequence numbers
// and verifies it on the other side, and returns the client's and the
// server's options.
func (p *pair) exchange(t *testing.T, cseq, sseq uint32) (c2s, s2c Option) {
	t.Helper()
	cs := testSeg(t, cli4, srv4, cseq, sseq, segment.ACK, 12, []byte("data"))
	if err := p.c.Sign(cs); err != nil {
		t.Fatalf("client sign: %v", err)
	}
	if err := p.s.Verify(cs); err != nil {
		t.Fatalf("server verify: %v", err)
	}
	ss := testSeg(t, srv4, cli4, sseq, cseq+4, segment.ACK, 12, []byte("data"))
	if err := p.s.Sign(ss); err != nil {
		t.Fatalf("server sign: %v", err)
	}
	if err := p.c.Verify(ss); err != nil {
		t.Fatalf("client verify: %v", err)
	}
	return aoOpt(t, cs), aoOpt(t, ss)
}

// TestLifetimeRotation: two sessions' ends switch from key 1 to key 11
// at key 11's send start, both ways, with no segment refused, on their
// keyrings' clocks alone; after key 1's accept end a segment signed with
// it is refused and counted, and the peer's RNextKeyID cannot bring a
// key back outside its send lifetime. Every algorithm.
func TestLifetimeRotation(t *testing.T) {
	for _, tc := range []struct {
		alg     string
		overlap time.Duration // key 1 sends on after key 11 starts
	}{{"hmac(sha1)", 0}, {"cmac(aes128)", 0}, {"hmac(sha256)", 0}, {"hmac(md5)", 0}, {"hmac(sha1)", 30 * time.Second}} {
		alg := tc.alg
		t.Run(fmt.Sprintf("%s/overlap=%v", alg, tc.overlap), func(t *testing.T) {
			p, cclk, sclk := rotationPair(t, alg, tc.overlap)
			if c, s := p.exchange(t, 11, 21); c.KeyID != 1 || s.KeyID != 2 || c.RNextKeyID != 2 || s.RNextKeyID != 1 {
				t.Fatalf("before the rotation: %+v / %+v", c, s)
			}
			if !p.c.Settled() {
				t.Error("before the send start, on key 1: not settled")
			}
			old := testSeg(t, cli4, srv4, 15, 25, segment.ACK, 12, []byte("late"))
			if err := p.c.Sign(old); err != nil {
				t.Fatal(err)
			}
			// The server's clock reaches t0 first: it moves, the client
			// follows on the server's RNextKeyID or on its own clock.
			sclk.Set(t0)
			if next, want := p.sring.Advance(), t0.Add(min(tc.overlap, time.Minute)); tc.overlap != 0 && !next.Equal(want) || tc.overlap == 0 && !next.Equal(t0.Add(time.Minute)) {
				t.Fatalf("the server's next change at %v", next)
			}
			cclk.Set(t0)
			p.cring.Advance()
			if c, s := p.exchange(t, 19, 25); c.KeyID != 11 || s.KeyID != 12 || c.RNextKeyID != 12 || s.RNextKeyID != 11 {
				t.Fatalf("after the send start: %+v / %+v", c, s)
			}
			if !p.c.Settled() || !p.s.Settled() {
				t.Errorf("after the send start: settled %v / %v, want both", p.c.Settled(), p.s.Settled())
			}
			// Inside the accept overlap, key 1 still verifies.
			if err := p.s.Verify(cloneSeg(old)); err != nil {
				t.Fatalf("key 1 inside its accept lifetime: %v", err)
			}
			// The client asks for key 1 (its accept lifetime is still
			// open): the server follows only while key 1 may still sign
			// (RFC 5925 §7.5.2), never outside its send lifetime.
			if err := p.c.SetRNext(2); err != nil {
				t.Fatal(err)
			}
			want := uint8(12)
			if tc.overlap > 0 {
				want = 2
			}
			if c, s := p.exchange(t, 23, 29); c.RNextKeyID != 2 || s.KeyID != want {
				t.Fatalf("the client asking for key 1: %+v / %+v, want the server's KeyID %d", c, s, want)
			}
			if err := p.c.SetRNext(12); err != nil {
				t.Fatal(err)
			}
			sclk.Set(t0.Add(time.Minute))
			p.sring.Advance()
			before := p.s.Counters().KeyNotFound
			if err := p.s.Verify(cloneSeg(old)); !errors.Is(err, ErrKeyNotFound) {
				t.Fatalf("key 1 after its accept end: %v, want ErrKeyNotFound", err)
			}
			if n := p.s.Counters().KeyNotFound; n != before+1 {
				t.Fatalf("the refused segment is not counted: %d, want %d", n, before+1)
			}
			if c, s := p.exchange(t, 27, 33); c.KeyID != 11 || s.KeyID != 12 {
				t.Fatalf("after key 1's accept end: %+v / %+v", c, s)
			}
		})
	}
}

// TestLifetimeBoundary: a key signs from its send start to the
// nanosecond before its send end, and verifies from its accept start
// (less the tolerance) to the nanosecond before its accept end (plus the
// tolerance), not one nanosecond outside.
func TestLifetimeBoundary(t *testing.T) {
	const tol = 3 * time.Second
	sendStart, sendEnd := t0, t0.Add(time.Hour)
	accStart, accEnd := t0.Add(-time.Minute), t0.Add(time.Hour+time.Minute)
	cring, sring := NewKeyring(nil), NewKeyring(nil)
	cclk, sclk := &fakeClock{now: sendStart}, &fakeClock{now: accStart.Add(-tol)}
	cring.SetClock(cclk.Now)
	sring.SetClock(sclk.Now)
	life := keys.Lifetime{Send: keys.Window{Start: sendStart, End: sendEnd}, Accept: keys.Window{Start: accStart, End: accEnd}, Tolerance: tol}
	c := cfg4("192.0.2.2/32", 1, 2)
	c.Lifetime = life
	mustAdd(t, cring, c)
	s := mirror4("192.0.2.1/32", 2, 1)
	s.Lifetime = life
	sk := mustAdd(t, sring, s)
	p := newPair(t, cring, sring, cli4, srv4, 10, 20, 0, 11, 0, 21, 1, 2, 2, 1)
	sign := func(at time.Time) (*segment.Segment, error) {
		cclk.Set(at)
		cring.Advance()
		seg := testSeg(t, cli4, srv4, 11, 21, segment.ACK, 12, []byte("data"))
		return seg, p.c.Sign(seg)
	}
	verify := func(at time.Time, seg *segment.Segment) error {
		sclk.Set(at)
		sring.Advance()
		return p.s.Verify(cloneSeg(seg))
	}
	for _, at := range []time.Time{sendStart.Add(-time.Nanosecond), sendEnd} {
		if _, err := sign(at); !errors.Is(err, ErrNoCurrentKey) {
			t.Errorf("sign at %v, outside the send lifetime: %v, want ErrNoCurrentKey", at, err)
		}
	}
	var seg *segment.Segment
	for _, at := range []time.Time{sendStart, sendEnd.Add(-time.Nanosecond)} {
		var err error
		if seg, err = sign(at); err != nil {
			t.Errorf("sign at %v, inside the send lifetime: %v", at, err)
		}
	}
	if err := verify(accStart.Add(-tol-time.Nanosecond), seg); !errors.Is(err, ErrKeyNotFound) {
		t.Errorf("verify a nanosecond before the accept lifetime: %v, want ErrKeyNotFound", err)
	}
	for _, at := range []time.Time{accStart.Add(-tol), accEnd.Add(tol - time.Nanosecond)} {
		if err := verify(at, seg); err != nil {
			t.Errorf("verify at %v, inside the accept lifetime: %v", at, err)
		}
	}
	if !sk.AcceptActive() || sk.SendActive() {
		t.Errorf("at the accept end less a nanosecond: send-active %v accept-active %v, want false true", sk.SendActive(), sk.AcceptActive())
	}
	// Its last key outside both lifetimes: the session is left as a
	// delete leaves it.
	if err := verify(accEnd.Add(tol), seg); !errors.Is(err, ErrRevoked) {
		t.Errorf("verify at the accept end: %v, want ErrRevoked", err)
	}
}

// TestLifetimeAbsentChangesNothing: a keyring without lifetimes has no
// next change, and its keys are active at any moment.
func TestLifetimeAbsentChangesNothing(t *testing.T) {
	r := NewKeyring(nil)
	clk := &fakeClock{now: time.Unix(0, 0)}
	r.SetClock(clk.Now)
	m := mustAdd(t, r, cfg4("192.0.2.2/32", 1, 2))
	for _, at := range []time.Time{time.Unix(0, 0), t0, t0.AddDate(300, 0, 0)} {
		clk.Set(at)
		if next := r.Advance(); !next.IsZero() || !m.SendActive() || !m.AcceptActive() {
			t.Fatalf("at %v: next %v, send-active %v, accept-active %v", at, next, m.SendActive(), m.AcceptActive())
		}
	}
}

// TestLifetimeRun: Run applies a send start when it comes, on the
// keyring's clock, and an Add of a timed key wakes it. (It polls for the
// state with a generous deadline; nothing about its timing is asserted.)
func TestLifetimeRun(t *testing.T) {
	r := NewKeyring(nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	c := cfg4("192.0.2.2/32", 1, 2)
	c.Lifetime = keys.Lifetime{Send: keys.Window{Start: time.Now().Add(20 * time.Millisecond)}}
	m := mustAdd(t, r, c)
	deadline := time.Now().Add(30 * time.Second)
	for !m.SendActive() {
		if time.Now().After(deadline) {
			t.Fatal("Run never applied the send start")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLifetimeAdvanceConcurrent: Advance moving sessions between keys
// while other goroutines set connections up, sign on them and close
// them: no race, no lost or foreign key (run with -race).
func TestLifetimeAdvanceConcurrent(t *testing.T) {
	r := NewKeyring(nil)
	clk := &fakeClock{now: t0.Add(-time.Hour)}
	r.SetClock(clk.Now)
	for i, w := range [][2]keys.Window{{{End: t0}, {End: t0.Add(time.Minute)}}, {{Start: t0}, {Start: t0.Add(-time.Minute)}}} {
		mustAdd(t, r, timed(cfg4("192.0.2.0/24", uint8(1+10*i), uint8(2+10*i)), w[0], w[1]))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var c Conn
			for i := 0; ; i++ {
				select {
				case <-stop:
					c.Close()
					return
				default:
				}
				peer := netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(2 + g)}), 179)
				if err := restore(&c, r, Endpoint{Local: cli4, Remote: peer}, Policy{}, Endpoint{LocalISN: 10, RemoteISN: 20, SendSeq: 11, RecvSeq: 21, CurrentSendID: 1, RNextRecvID: 2}); err != nil {
					t.Errorf("restore: %v", err)
					return
				}
				seg := testSeg(t, cli4, peer, 11, 21, segment.ACK, 12, []byte("data"))
				if err := c.Sign(seg); err != nil && !errors.Is(err, ErrNoCurrentKey) {
					t.Errorf("sign: %v", err)
				}
				if m := c.Current(); m != nil && !m.covers(peer.Addr(), 0) {
					t.Errorf("a foreign current key %v", m)
				}
				if i%3 == 0 {
					c.Close()
				}
			}
		}()
	}
	for i := range 2000 {
		clk.Set(t0.Add(time.Duration(i%3-1) * time.Minute))
		r.Advance()
	}
	close(stop)
	wg.Wait()
}
