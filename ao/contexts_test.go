package ao

import (
	"net/netip"
	"testing"

	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/mac"
	"github.com/tcpsig/tcpsig/sigpool"
)

// contextsPair is allocPair over keyrings of pool p.
func contextsPair(t *testing.T, pool *sigpool.Pool, pol Policy) (c, s *Conn, round func()) {
	t.Helper()
	c, s, round = allocPair(t, "hmac(sha1)", pol)
	for _, x := range []*Conn{c, s} { // the same connections on keyrings of pool
		ring := NewKeyring(pool)
		ep := x.Endpoint()
		m := x.Current()
		if _, err := ring.Add(keys.AO{Peer: netip.PrefixFrom(ep.Remote.Addr(), 32), SendID: m.SendID(), RecvID: m.RecvID(),
			Algorithm: "hmac(sha1)", Key: allocKey("hmac(sha1)")}); err != nil {
			t.Fatal(err)
		}
		if err := x.Init(ring, ep, pol); err != nil {
			t.Fatal(err)
		}
	}
	return c, s, round
}

// leasing reports whether each lane of c holds a leased context.
func leasing(c *Conn) (send, recv bool) {
	held := func(l *lane) bool { return l.lease != nil && l.lease.ctx != nil }
	return held(&c.send), held(&c.recv)
}

// TestAdaptiveContexts: under the default Policy a direction signs and
// verifies with a pool shard's context until it has carried busySegments
// segments, then with a leased one, which Close gives back to the pool;
// ContextsPerSegment never leases, ContextsLeased from the first segment.
func TestAdaptiveContexts(t *testing.T) {
	pool, err := sigpool.New(sigpool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c, s, round := contextsPair(t, pool, Policy{})
	for i := 1; i < busySegments; i++ {
		round()
		if cs, _ := leasing(c); cs || pool.Leased() != 0 {
			t.Fatalf("segment %d of %d: leased already (%d out)", i, busySegments, pool.Leased())
		}
	}
	round()
	if cs, _ := leasing(c); !cs {
		t.Fatalf("after %d segments the sender does not lease", busySegments)
	}
	if _, sr := leasing(s); !sr || pool.Leased() != 2 {
		t.Fatalf("after %d segments: receiver leases %v, %d out, want 2", busySegments, sr, pool.Leased())
	}
	round() // and signs and verifies with the lease
	c.Close()
	s.Close()
	if n := pool.Leased(); n != 0 {
		t.Fatalf("%d contexts still out after Close", n)
	}

	for _, tc := range []struct {
		pol  Policy
		want bool
	}{{Policy{Contexts: ContextsPerSegment}, false}, {Policy{Contexts: ContextsLeased}, true}} {
		c, s, round := contextsPair(t, pool, tc.pol)
		round()
		if cs, _ := leasing(c); cs != tc.want {
			t.Errorf("contexts %d after one segment: sender leases %v, want %v", tc.pol.Contexts, cs, tc.want)
		}
		for range 2 * busySegments {
			round()
		}
		cs, _ := leasing(c)
		if _, sr := leasing(s); cs != tc.want || sr != tc.want {
			t.Errorf("contexts %d when busy: leases %v/%v, want %v", tc.pol.Contexts, cs, sr, tc.want)
		}
		c.Close()
		s.Close()
	}
	if n := pool.Leased(); n != 0 {
		t.Fatalf("%d contexts still out after Close", n)
	}
}

// TestAdaptiveBudget: a busy direction does not lease while the pool has
// adaptiveLeases contexts out, and asks again busySegments later.
func TestAdaptiveBudget(t *testing.T) {
	pool, err := sigpool.New(sigpool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c, s, round := contextsPair(t, pool, Policy{})
	defer s.Close()
	defer c.Close()
	id, err := pool.Alloc(c.Current().alg, scratchSize)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Release(id)
	out := make([]*mac.Context, 0, adaptiveLeases)
	for range adaptiveLeases {
		ctx, err := pool.Lease(id)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ctx)
	}
	for range 3 * busySegments {
		round()
	}
	if cs, sr := leasing(c); cs || sr {
		t.Fatalf("leased (%v/%v) with %d contexts out", cs, sr, pool.Leased())
	}
	if err := pool.Return(id, out[0]); err != nil {
		t.Fatal(err)
	}
	for range busySegments {
		round()
	}
	if cs, _ := leasing(c); !cs {
		t.Fatal("the sender did not lease once one was given back")
	}
	for _, ctx := range out[1:] {
		if err := pool.Return(id, ctx); err != nil {
			t.Fatal(err)
		}
	}
}
