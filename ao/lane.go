package ao

import (
	"sync"
	"sync/atomic"

	"github.com/tcpsig/tcpsig/internal/cacheline"
	"github.com/tcpsig/tcpsig/mac"
	"github.com/tcpsig/tcpsig/segment"
	"github.com/tcpsig/tcpsig/sigpool"
)

// A connection signs and verifies in two lanes, one per direction. A lane
// keeps what is its own: the traffic keys of its direction, per MKT, as
// prepared keyed state, and the direction's SNE. The working context and
// scratch of each segment are a pool shard's, taken for the segment
// (the shard the connection's hint names first), unless the policy asks
// the lane to keep a leased context between segments.
type lane struct {
	// mu serialises the calls of one direction (a Sign waits for another
	// Sign on the same Conn, never for a Verify) and guards every field
	// below. Under it a call may pin an MKT (reclaim), start a pool
	// request, or take an MKT's lock to list or unlist an entry; no one
	// holding an MKT's lock takes a lane's.
	mu  sync.Mutex
	sne SNE
	// ack is the highest acknowledgment number accepted at the SNE's
	// basis (acked: one was): with it fresh tells a replayed pure ACK
	// from a new one.
	ack   uint32
	acked bool
	// keys holds the entries of the current key and one more (a
	// rotation's); more holds the rest. Entries of deleted MKTs are wiped
	// and reused.
	keys  [2]laneKey
	more  []*laneKey
	lease *lease               // the context kept between segments, if any (Policy.Contexts)
	segs  uint8                // ContextsAdaptive: segments since the last ask for a lease
	_     [cacheline.Size]byte // the next lane's lock on another line
}

// laneKey is one MKT's traffic key of a lane's direction for every
// segment but a SYN (RFC 5925 §5.2), derived on first use. (A SYN's key
// is derived for the segment that needs it: a connection sends or
// receives its SYNs once, or a few times, and keeps no key for them.)
type laneKey struct {
	mkt   *MKT
	ready bool
	key   mac.Key
	// good counts the segments this entry verified for mkt: mkt's share
	// of its good counter, so that a verified segment writes no line
	// shared with other connections. Its lane adds to it under the lane's
	// lock (one writer); MKT.Counters reads it, and unlist folds it into
	// mkt's own, under mkt's lock.
	good atomic.Uint64
	idx  int // the entry's place in mkt.lanes, under mkt's lock
}

// lease is a working context a lane keeps between segments, with its
// scratch.
type lease struct {
	ctx     *mac.Context // leased from pool (entry id) for alg; nil: none
	alg     *mac.Algorithm
	pool    *sigpool.Pool
	id      sigpool.ID
	scratch [scratchSize]byte
}

func (k *laneKey) wipe() {
	k.key.Wipe()
	k.ready = false
	if k.mkt != nil {
		k.mkt.unlist(k)
	}
	k.mkt = nil
}

// ready returns the lane's first entry if it holds m's traffic key (the
// current key's, for every segment but a rotation's), nil otherwise.
func (l *lane) ready(m *MKT) *laneKey {
	if k := &l.keys[0]; k.mkt == m && k.ready {
		return k
	}
	return nil
}

// find returns the lane's entry for m, nil if it has none yet.
func (l *lane) find(m *MKT) *laneKey {
	for i := range l.keys {
		if l.keys[i].mkt == m {
			return &l.keys[i]
		}
	}
	for _, k := range l.more {
		if k.mkt == m {
			return k
		}
	}
	return nil
}

// add returns a fresh entry for m: a wiped one whose MKT was deleted, or a
// new one. Entries of deleted MKTs are wiped here, so a long-lived
// connection that rotates keys neither grows nor keeps their bytes beyond
// its next new key.
func (l *lane) add(m *MKT) *laneKey {
	var free *laneKey
	visit := func(k *laneKey) {
		if k.mkt != nil && k.mkt.guard.Retired() {
			k.wipe()
		}
		if k.mkt == nil && free == nil {
			free = k
		}
	}
	for i := range l.keys {
		visit(&l.keys[i])
	}
	for _, k := range l.more {
		visit(k)
	}
	if free == nil {
		free = new(laneKey)
		l.more = append(l.more, free)
	}
	free.mkt = m
	m.list(free)
	return free
}

// wipe clears every key of the lane and gives its lease back.
func (l *lane) wipe() {
	for i := range l.keys {
		l.keys[i].wipe()
	}
	for _, k := range l.more {
		k.wipe()
	}
	if l.lease != nil {
		l.lease.giveBack()
	}
	l.segs = 0
}

// work is a segment's working context and scratch: a pool shard's,
// held until end, or a lane's lease.
type work struct {
	w   *mac.Context
	sc  []byte
	req *sigpool.Request
}

// end hands a shard's request back; a lease stays with its lane (and
// costs no call).
func (w work) end() {
	if w.req != nil {
		w.req.End()
	}
}

// work returns the working context and scratch of one segment under m;
// the lane's lock is held. Small enough to inline: a lease's context is
// taken here.
func (l *lane) work(m *MKT, p Contexts, hint uint32) (work, error) {
	if s := l.lease; s != nil && s.alg == m.alg && s.pool == m.pool { // alg is nil without a context
		return work{w: s.ctx, sc: s.scratch[:]}, nil
	}
	return l.start(m, p, hint)
}

// start is work from a new lease, or from a pool shard. A pool entry
// that is gone, or holds another algorithm now, means m was deleted and
// its algorithm's last key with it: [ErrKeyNotFound], on which Sign moves
// on to the current key.
func (l *lane) start(m *MKT, p Contexts, hint uint32) (work, error) {
	if l.leases(m, p) {
		return l.leased(m)
	}
	req, err := m.request(hint)
	if err != nil {
		return work{}, err
	}
	return work{w: req.MAC, sc: req.Scratch, req: req}, nil
}

// leases reports whether the lane leases a context for m's segment under
// policy p: always with ContextsLeased, while it holds one (a rotation to
// another algorithm leases anew), and with ContextsAdaptive once a
// direction is busy and the pool has few out on lease.
func (l *lane) leases(m *MKT, p Contexts) bool {
	switch {
	case p == ContextsLeased || l.lease != nil && l.lease.ctx != nil:
		return true
	case p != ContextsAdaptive:
		return false
	}
	if l.segs++; l.segs < busySegments {
		return false
	}
	l.segs = 0
	return m.pool.Leased() < adaptiveLeases
}

// leased is work from the lane's lease.
func (l *lane) leased(m *MKT) (work, error) {
	if l.lease == nil {
		l.lease = new(lease)
	}
	w, err := l.lease.context(m)
	return work{w: w, sc: l.lease.scratch[:]}, err
}

// context returns the lease's context for m's algorithm: the one it holds
// while its keys are of that algorithm; a rotation to an MKT of another
// algorithm (or pool) returns it and leases one for the new algorithm.
func (s *lease) context(m *MKT) (*mac.Context, error) {
	if s.ctx != nil && s.alg == m.alg && s.pool == m.pool {
		return s.ctx, nil
	}
	s.giveBack()
	c, err := m.pool.Lease(m.poolID)
	if err != nil {
		return nil, ErrKeyNotFound
	}
	s.ctx, s.alg, s.pool, s.id = c, m.alg, m.pool, m.poolID
	return c, nil
}

// giveBack returns the lease's context, wiped, to its pool.
func (s *lease) giveBack() {
	if s.ctx != nil {
		_ = s.pool.Return(s.id, s.ctx) // the lease holds the entry
		s.ctx, s.alg, s.pool = nil, nil, nil
	}
	clear(s.scratch[:])
}

// trafficKey returns the lane's traffic key of m for every segment but a
// SYN, deriving it on first use; the lane's lock is held.
func (c *Conn) trafficKey(l *lane, m *MKT, send bool) (*laneKey, error) {
	k := l.find(m)
	if k != nil && k.ready {
		return k, nil
	}
	if k == nil {
		k = l.add(m)
	}
	in := c.input(send, false, c.risn)
	if err := m.derive(&in, &k.key, c.hint); err != nil {
		return nil, err
	}
	k.ready = true
	return k, nil
}

// fresh reports whether a verified segment with header h is not older
// than the newest the lane accepted: not before the SNE's basis, and at
// the basis not acknowledging less than the last segment that moved the
// current key (the mark it raises). The lane's lock is held.
func (l *lane) fresh(h segment.TCP) bool {
	seq := h.Seq()
	_, basis := l.sne.Basis()
	if before(seq, basis) {
		return false
	}
	if h.Flags()&segment.ACK == 0 {
		return true
	}
	ack := h.Ack()
	if seq == basis && l.acked && before(ack, l.ack) {
		return false
	}
	l.ack, l.acked = ack, true
	return true
}

// ComputeSNE returns the sequence number extension of seq, given the SNE
// of a basis sequence number (for stacks and tools that track their own
// basis, e.g. snd_una and rcv_nxt as Linux does): RFC 5925 §6.2 as Linux computes it
// (tcp_ao_compute_sne): a seq "before" the basis in serial arithmetic but
// numerically larger is in the previous wrap, one "after" it but
// numerically smaller in the next. Valid within ±2^31 of the basis.
func ComputeSNE(sne, basis, seq uint32) uint32 {
	if before(seq, basis) {
		if seq > basis {
			sne--
		}
	} else if seq < basis {
		sne++
	}
	return sne
}

// before is Linux's before(): a precedes b in 32-bit serial arithmetic.
func before(a, b uint32) bool { return int32(a-b) < 0 }

// SNE tracks one direction's sequence number extension (RFC 5925 §6.2):
// the SNE of a basis sequence number, which only moves forward. A Conn
// keeps one per direction; a tool that follows flows itself (a capture
// verifier) keeps its own. Its zero value is SNE 0 at sequence number 0.
type SNE struct{ sne, basis uint32 }

// NewSNE returns a tracker whose basis is seq, with SNE sne.
func NewSNE(sne, basis uint32) SNE { return SNE{sne, basis} }

// Basis returns the basis sequence number and its SNE.
func (s *SNE) Basis() (sne, basis uint32) { return s.sne, s.basis }

// Of returns the SNE of seq, within ±2^31 of the basis.
func (s *SNE) Of(seq uint32) uint32 { return ComputeSNE(s.sne, s.basis, seq) }

// Advance moves the basis to seq if seq is after it, carrying the SNE
// over a wrap; it never moves the basis backwards.
func (s *SNE) Advance(seq uint32) {
	if before(s.basis, seq) && !before(seq, s.basis) { // exactly 2^31 away is Of's previous wrap: no move
		s.sne, s.basis = ComputeSNE(s.sne, s.basis, seq), seq
	}
}
