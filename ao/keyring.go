package ao

import (
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/tcpsig/tcpsig/internal/prefixmap"
	"github.com/tcpsig/tcpsig/sigpool"
)

// scratchSize is what one segment needs of the pool's scratch: the MAC
// input prefix (SNE 4 + IPv6 pseudo-header 40 + TCP header 60) completed
// to a whole hash block with at most a block (144 bytes for SHA3-224) of
// payload, from 0; the MAC at sumOff, written after the input is absorbed.
// (Linux reserves 60 bytes, for the header only.)
const (
	scratchSize = 256
	sumOff      = 128
)

// Keyring holds the MKTs of a listener and its connections. Lookups by
// (peer address, KeyID, L3 index) take no lock and cost the same at 16
// and at a million keys; adds and deletes serialise on a mutex and never
// wait for readers of other keys. Safe for concurrent use.
type Keyring struct {
	mu     sync.Mutex
	pool   *sigpool.Pool
	byRecv prefixmap.Map[*MKT] // tag: RecvID
	bySend prefixmap.Map[*MKT] // tag: SendID
	byPeer prefixmap.Map[*MKT] // tag: 0, every MKT
	added  uint64              // under mu: MKTs ever added, for MKT.added
}

// NewKeyring returns an empty keyring whose MKTs compute through pool
// (sigpool.Default when nil).
func NewKeyring(pool *sigpool.Pool) *Keyring {
	if pool == nil {
		pool = sigpool.Default
	}
	return &Keyring{pool: pool}
}

// Add validates cfg like Linux's TCP_AO_ADD_KEY and adds the MKT. An MKT
// whose SendID or RecvID equals that of an MKT with an overlapping peer
// prefix (in an overlapping L3 domain) is refused with [ErrKeyExists]
// (RFC 5925 §3.1: IDs must not overlap where connection identifiers do).
func (r *Keyring) Add(cfg Config) (*MKT, error) {
	if r == nil {
		return nil, fmt.Errorf("%w: nil keyring", ErrInvalidKey)
	}
	pool := r.pool
	if pool == nil {
		pool = sigpool.Default
	}
	m, err := newMKT(&cfg, pool)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	clash := false
	check := func(_ netip.Prefix, o *MKT) bool {
		if !m.hasIfIndex || !o.hasIfIndex || m.ifindex == o.ifindex {
			clash = true
		}
		return !clash
	}
	r.bySend.Overlaps(m.peer, uint32(m.sendID), check)
	if !clash {
		r.byRecv.Overlaps(m.peer, uint32(m.recvID), check)
	}
	if clash {
		m.guard.Retire(m.wipe)
		return nil, fmt.Errorf("%w: %v", ErrKeyExists, m)
	}
	r.added++
	m.added = r.added // before the inserts publish m
	// newMKT validated the prefix, so the inserts cannot fail.
	_ = r.byRecv.Insert(m.peer, uint32(m.recvID), m)
	_ = r.bySend.Insert(m.peer, uint32(m.sendID), m)
	_ = r.byPeer.Insert(m.peer, 0, m)
	return m, nil
}

// DeleteOptions says how to delete an MKT.
type DeleteOptions struct {
	// Async returns at once and wipes the key once its last reader is
	// done (Linux del_async); otherwise Delete returns after the wipe.
	Async bool
	// Current and RNext replace the MKT on connections that use it as
	// their current or RNext key (Linux's set_current/set_rnext in
	// TCP_AO_DEL_KEY). Without them such a delete fails with ErrKeyBusy.
	Current, RNext *MKT
}

// Delete removes m. A synchronous delete returns once no reader can still
// use m and its key bytes (and the traffic keys derived from them) are
// wiped; neither kind makes other keys' readers or writers wait.
func (r *Keyring) Delete(m *MKT, opts DeleteOptions) error {
	if r == nil {
		return ErrNoSuchKey
	}
	r.mu.Lock()
	if m == nil || !r.has(m) || m.guard.Retired() || m.deleting.Load() {
		r.mu.Unlock()
		return ErrNoSuchKey
	}
	// Dekker with Conn.pin: set deleting, then read the pins: first those
	// of the MKTs forwarding to m, then m's own (a connection switching
	// from one of them to m pins m before it unpins the old one).
	m.deleting.Store(true)
	busyCur := curRole.forwarding(m) || m.pinsCur.Load() > 0
	busyNext := nextRole.forwarding(m) || m.pinsNext.Load() > 0
	if (busyCur && opts.Current == nil) || (busyNext && opts.RNext == nil) {
		m.deleting.Store(false)
		r.mu.Unlock()
		return ErrKeyBusy
	}
	for _, rep := range []*MKT{opts.Current, opts.RNext} {
		if rep != nil && (rep == m || !r.has(rep) || rep.guard.Retired() || rep.deleting.Load()) {
			m.deleting.Store(false)
			r.mu.Unlock()
			return fmt.Errorf("%w: replacement %v", ErrNoSuchKey, rep)
		}
	}
	m.nextCur.Store(opts.Current)
	m.nextRNext.Store(opts.RNext)
	curRole.forward(m, opts.Current)
	nextRole.forward(m, opts.RNext)
	is := func(o *MKT) bool { return o == m }
	r.byRecv.Delete(m.peer, uint32(m.recvID), is)
	r.bySend.Delete(m.peer, uint32(m.sendID), is)
	r.byPeer.Delete(m.peer, 0, is)
	r.mu.Unlock()
	if opts.Async {
		m.guard.Retire(m.wipe)
	} else {
		m.guard.RetireWait(m.wipe)
	}
	return nil
}

// role is one of the two ways a connection uses an MKT: as its current
// key or as its RNext key.
type role struct {
	pins func(*MKT) *atomic.Int64        // connections using the MKT so
	next func(*MKT) *atomic.Pointer[MKT] // the replacement a forced delete named
	fwd  func(*MKT) *[]*MKT              // deleted MKTs forwarding to this one
}

var (
	curRole = role{
		func(m *MKT) *atomic.Int64 { return &m.pinsCur },
		func(m *MKT) *atomic.Pointer[MKT] { return &m.nextCur },
		func(m *MKT) *[]*MKT { return &m.fwdCur },
	}
	nextRole = role{
		func(m *MKT) *atomic.Int64 { return &m.pinsNext },
		func(m *MKT) *atomic.Pointer[MKT] { return &m.nextRNext },
		func(m *MKT) *[]*MKT { return &m.fwdNext },
	}
)

// forwarding drops from m's forwarders those no connection uses any more
// (a deleted MKT's pins never grow again) and reports whether any remain.
func (r role) forwarding(m *MKT) bool {
	fwd := r.fwd(m)
	live := (*fwd)[:0]
	for _, g := range *fwd {
		if r.pins(g).Load() > 0 {
			live = append(live, g)
		}
	}
	clear((*fwd)[len(live):])
	*fwd = live
	return len(live) > 0
}

// forward makes the deleted m, and every MKT that forwarded to it, forward
// to its replacement rep (nil: none needed, m's forwarders are all gone).
func (r role) forward(m, rep *MKT) {
	if rep != nil {
		for _, g := range *r.fwd(m) {
			r.next(g).Store(rep)
		}
		f := r.fwd(rep)
		*f = append(append(*f, *r.fwd(m)...), m)
		r.forwarding(rep) // keep only those still in use
	}
	*r.fwd(m) = nil
}

// settle waits until no add or delete is in progress (a delete that is
// deciding whether a key is busy has it marked deleting meanwhile).
func (r *Keyring) settle() {
	r.mu.Lock()
	defer r.mu.Unlock()
}

// has reports whether m is in r (and not deleted); under r.mu.
func (r *Keyring) has(m *MKT) bool {
	found := false
	r.byPeer.Lookup(m.peer.Addr(), 0, func(p netip.Prefix, o *MKT) bool {
		found = o == m
		return !found
	})
	return found
}

// Find returns the MKT added with exactly this peer prefix, SendID and
// RecvID (for deleting by description, as TCP_AO_DEL_KEY matches).
func (r *Keyring) Find(peer netip.Prefix, sendID, recvID uint8) *MKT {
	if r == nil || !peer.IsValid() {
		return nil
	}
	var found *MKT
	if peer.Addr().Is4In6() && peer.Bits() >= 96 {
		peer = netip.PrefixFrom(peer.Addr().Unmap(), peer.Bits()-96)
	}
	r.byRecv.Lookup(peer.Addr(), uint32(recvID), func(p netip.Prefix, m *MKT) bool {
		if p == peer.Masked() && m.sendID == sendID {
			found = m
			return false
		}
		return true
	})
	return found
}

// LookupRecv returns the MKT that verifies segments from addr with this
// KeyID in L3 domain l3 (its RecvID is keyID), or nil.
func (r *Keyring) LookupRecv(addr netip.Addr, keyID uint8, l3 int) *MKT {
	if r == nil {
		return nil
	}
	return lookup(&r.byRecv, addr, keyID, l3)
}

// LookupSend returns the MKT whose SendID is sendID for peer addr, or nil.
func (r *Keyring) LookupSend(addr netip.Addr, sendID uint8, l3 int) *MKT {
	if r == nil {
		return nil
	}
	return lookup(&r.bySend, addr, sendID, l3)
}

// Covers reports whether any MKT applies to peer addr in L3 domain l3:
// then unsigned segments from it are refused (Linux tcp_ao_required).
func (r *Keyring) Covers(addr netip.Addr, l3 int) bool { return r != nil && r.first(addr, l3) != nil }

// first returns an MKT for a peer regardless of IDs (the most specific):
// whether the peer is covered, and which key signs a connectionless RST.
func (r *Keyring) first(addr netip.Addr, l3 int) *MKT { return lookup(&r.byPeer, addr, 0, l3) }

// newest returns the most recently added MKT that matches a peer,
// whatever its prefix length: the first match in Linux's newest-first key
// list, which is its default current and RNext key of a new connection
// (linux-notes §5.2). It visits every matching MKT; it runs once per
// connection, not per segment.
func (r *Keyring) newest(addr netip.Addr, l3 int) *MKT {
	if r == nil {
		return nil
	}
	var found *MKT
	r.byPeer.Lookup(addr, 0, func(_ netip.Prefix, m *MKT) bool {
		if m.matchesL3(l3) && !m.deleting.Load() && (found == nil || m.added > found.added) {
			found = m
		}
		return true
	})
	return found
}

func lookup(idx *prefixmap.Map[*MKT], addr netip.Addr, tag uint8, l3 int) *MKT {
	var found *MKT
	idx.Lookup(addr, uint32(tag), func(_ netip.Prefix, m *MKT) bool {
		if m.matchesL3(l3) && !m.deleting.Load() {
			found = m
			return false
		}
		return true
	})
	return found
}

// Len returns the number of MKTs.
func (r *Keyring) Len() int {
	if r == nil {
		return 0
	}
	return r.byPeer.Len()
}
