package sigpool

import (
	"errors"
	"testing"

	"github.com/tcpsig/tcpsig/mac"
)

// What a test needs to see of a pool's table, read under p.mu as the
// pool's own methods read it. The package exports none of this: nothing
// outside tests asks (issue 30).

// entryAlgorithm returns the algorithm of id's entry while it is held
// (refs > 0), nil otherwise: an idle entry (released, kept for the next
// Alloc of its algorithm) is not held.
func entryAlgorithm(p *Pool, id ID) *mac.Algorithm {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.held(id); e != nil {
		return e.alg
	}
	return nil
}

// entryRefs returns the references on id's entry (Allocs not yet
// released, and one per leased context), 0 if it is not held.
func entryRefs(p *Pool, id ID) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.held(id); e != nil {
		return e.refs
	}
	return 0
}

// entryBackend returns the backend of id's entry, the one Request.Key
// and Lease's contexts use, or ErrNotAllocated if it is not held.
func entryBackend(p *Pool, id ID) (Backend, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.held(id)
	if e == nil {
		return 0, ErrNotAllocated
	}
	return e.backend, nil
}

func mustBackend(p *Pool, id ID) Backend {
	b, err := entryBackend(p, id)
	if err != nil {
		panic(err)
	}
	return b
}

// idleWiped fails t unless id's slot is idle (kept for alg, no
// reference, Start and Lease of it ErrNotAllocated) and every shard's
// context and Spare key for it hold nothing key-derived: the context is
// kept but has no key (Finish appends nothing, Write is mac.ErrNoKey).
// No shard may be held.
func idleWiped(t testing.TB, p *Pool, id ID, alg *mac.Algorithm) {
	t.Helper()
	p.mu.Lock()
	e := p.entries[id]
	p.mu.Unlock()
	if e.alg != alg || e.refs != 0 || e.free != nil || e.leased != nil {
		t.Fatalf("slot %d not idle for %v: alg %v, %d references, %d free, %d leased", id, alg, e.alg, e.refs, len(e.free), len(e.leased))
	}
	if p.live[id].Load() {
		t.Fatalf("idle slot %d still live", id)
	}
	if _, err := p.Start(id); !errors.Is(err, ErrNotAllocated) {
		t.Fatalf("Start of idle slot %d: %v, want ErrNotAllocated", id, err)
	}
	if _, err := p.Lease(id); !errors.Is(err, ErrNotAllocated) {
		t.Fatalf("Lease of idle slot %d: %v, want ErrNotAllocated", id, err)
	}
	for i := range p.shards {
		sh := &p.shards[i]
		sh.mu.Lock()
		r := &sh.reqs[id]
		c, spareEmpty := r.MAC, r.Spare.Empty()
		var sum []byte
		var werr error
		if c != nil {
			sum = c.Finish(nil)
			_, werr = c.Write([]byte("x"))
		}
		sh.mu.Unlock()
		switch {
		case c == nil || c.Algorithm() != alg:
			t.Fatalf("shard %d: idle slot %d lost its context (%v)", i, id, c)
		case len(sum) != 0 || !errors.Is(werr, mac.ErrNoKey):
			t.Fatalf("shard %d: idle slot %d's context not wiped: Finish %x, Write %v", i, id, sum, werr)
		case !spareEmpty:
			t.Fatalf("shard %d: idle slot %d's Spare key not wiped", i, id)
		}
	}
}

// contexts returns every shard's context for id.
func contexts(p *Pool, id ID) []*mac.Context {
	var cs []*mac.Context
	for i := range p.shards {
		sh := &p.shards[i]
		sh.mu.Lock()
		cs = append(cs, sh.reqs[id].MAC)
		sh.mu.Unlock()
	}
	return cs
}
