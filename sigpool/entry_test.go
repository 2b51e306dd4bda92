package sigpool

import "github.com/tcpsig/tcpsig/mac"

// What a test needs to see of a pool's table, read under p.mu as the
// pool's own methods read it. The package exports none of this: nothing
// outside tests asks (issue 30).

// entryAlgorithm returns the algorithm of id's entry while it is held
// (refs > 0), nil otherwise: an entry released but still being cleaned
// up is not held.
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
