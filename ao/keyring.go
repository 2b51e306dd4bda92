package ao

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"sync"

	"github.com/tcpsig/tcpsig/internal/lifetime"
	"github.com/tcpsig/tcpsig/internal/prefixmap"
	"github.com/tcpsig/tcpsig/keys"
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
// and at a million peers (they visit the few MKTs of each prefix that
// contains the address); adds and deletes serialise on a mutex, which no
// connection takes: a connection's setup, teardown and key changes lock
// only the MKTs involved. Safe for concurrent use. The zero Keyring is
// empty and computes through sigpool.Default.
type Keyring struct {
	// mu serialises the changes of the key set: under it, byPeer holds
	// exactly the MKTs whose ring is this keyring. Lookups never take it;
	// it is taken before an MKT's lock, never under it or a lane's.
	mu     sync.Mutex
	pool   *sigpool.Pool
	byPeer prefixmap.Map[entry] // every MKT by peer prefix (tag 0); lookups by ID filter a prefix's few MKTs
	added  uint64               // under mu: MKTs ever added, for MKT.added
	ids    *idCounts            // under mu: byPeer's MKTs by family and ID; allocated by the first add
	life   lifetime.Keeper      // under mu: the lifetimes' clock (lifetime.go)
}

// idCounts counts a keyring's MKTs by peer family (IPv4, IPv6), then by
// SendID (0) and RecvID (1), with the range of their prefix lengths. Only
// MKTs of one family with a shared SendID or RecvID can clash: the
// overlap check of a new MKT visits only the prefix lengths of the MKTs
// that share one of its IDs, and none if there are none. It then skips
// the hashes of the other lengths, and the walk of the prefixes inside
// the new one when none of them can clash (for a catch-all with a KeyID
// of its own, every prefix of the family).
type idCounts struct {
	n [2][2][256]uint32
	// The shortest and longest prefix among the MKTs counted in n since
	// their count was last 0: a range that may be wider than theirs
	// (after a delete), never narrower.
	min, max [2][2][256]uint8
}

// family is the index family of m's peer prefix, which keys.AO.Validate
// has unmapped (the prefix map keys an IPv4-mapped prefix as IPv4 too).
func family(m *MKT) int {
	if m.peer.Addr().Is4() {
		return 0
	}
	return 1
}

// count adds m to c; uncount takes it out.
func (c *idCounts) count(m *MKT) {
	f, b := family(m), uint8(m.peer.Bits())
	for kind, id := range [2]uint8{m.sendID, m.recvID} {
		if c.n[f][kind][id]++; c.n[f][kind][id] == 1 {
			c.min[f][kind][id], c.max[f][kind][id] = b, b
		} else {
			c.min[f][kind][id] = min(c.min[f][kind][id], b)
			c.max[f][kind][id] = max(c.max[f][kind][id], b)
		}
	}
}

func (c *idCounts) uncount(m *MKT) {
	f := family(m)
	c.n[f][0][m.sendID]--
	c.n[f][1][m.recvID]--
}

// lengths returns the range of prefix lengths of the MKTs of m's family
// that have m's SendID or RecvID, and whether there are any (none can
// clash with m otherwise). A nil c counts nothing.
func (c *idCounts) lengths(m *MKT) (prefixmap.Lengths, bool) {
	if c == nil {
		return prefixmap.Lengths{}, false
	}
	f := family(m)
	l := prefixmap.Lengths{Min: 255, Max: -1}
	for kind, id := range [2]uint8{m.sendID, m.recvID} {
		if c.n[f][kind][id] != 0 {
			l.Min = min(l.Min, int(c.min[f][kind][id]))
			l.Max = max(l.Max, int(c.max[f][kind][id]))
		}
	}
	return l, l.Max >= 0
}

// entry is what the index holds of an MKT: the MKT and the IDs lookups
// filter by, so that a lookup reads no MKT but the one it returns.
type entry struct {
	m              *MKT
	sendID, recvID uint8
	hasIfIndex     bool // then m.ifindex decides the L3 domain
}

func entryOf(m *MKT) entry { return entry{m, m.sendID, m.recvID, m.hasIfIndex} }

// matchesL3 is m.matchesL3, reading m only for an MKT bound to a domain.
func (e entry) matchesL3(l3 int) bool { return !e.hasIfIndex || e.m.ifindex == l3 }

// NewKeyring returns an empty keyring whose MKTs compute through pool
// (sigpool.Default when nil).
func NewKeyring(pool *sigpool.Pool) *Keyring {
	if pool == nil {
		pool = sigpool.Default
	}
	return &Keyring{pool: pool}
}

// Add validates cfg like Linux's TCP_AO_ADD_KEY (keys.AO.Validate) and
// adds the MKT. An MKT whose SendID or RecvID equals that of an MKT with
// an overlapping peer prefix (in an overlapping L3 domain) is refused with
// [ErrKeyExists], which names that MKT (RFC 5925 §3.1: IDs must not
// overlap where connection identifiers do).
func (r *Keyring) Add(cfg keys.AO) (*MKT, error) {
	if r == nil {
		return nil, ErrNotInitialized
	}
	m, err := newMKT(&cfg)
	if err != nil {
		return nil, err
	}
	ms := [1]*MKT{m}
	if _, err := r.insert(ms[:], nil); err != nil {
		return nil, err
	}
	return m, nil
}

// AddAll adds cfgs in order as Add would, or none: the first error, a
// [*keys.EntryError] naming the entry (names[i], when given), leaves r as
// it was. A keys file's MKTs: r.AddAll(f.AOConfigs()).
func (r *Keyring) AddAll(cfgs []keys.AO, names []string) ([]*MKT, error) {
	if r == nil {
		return nil, ErrNotInitialized
	}
	ms := make([]*MKT, 0, len(cfgs))
	for i := range cfgs {
		m, err := newMKT(&cfgs[i])
		if err != nil {
			for _, m := range ms {
				m.guard.Retire(m.wipe)
			}
			return nil, &keys.EntryError{Kind: "ao", Index: i, Name: keys.NameAt(names, i), Err: err}
		}
		ms = append(ms, m)
	}
	if i, err := r.insert(ms, names); err != nil {
		return nil, &keys.EntryError{Kind: "ao", Index: i, Name: keys.NameAt(names, i), Err: err}
	}
	return ms, nil
}

// insert adds ms to r, all or none. On an error it retires every MKT of
// ms and returns the index of the one at fault; names name the entries
// of a batch in the message of a clash between two of them.
func (r *Keyring) insert(ms []*MKT, names []string) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i, err := r.admit(ms, names); err != nil {
		for _, m := range ms {
			m.guard.Retire(m.wipe)
		}
		return i, err
	}
	if r.ids == nil {
		r.ids = new(idCounts)
	}
	for _, m := range ms {
		if m.timed {
			m.off.Store(m.sched.Off(r.life.Clock.Now()))
			r.life.Changed(+1)
		}
	}
	for _, m := range ms {
		r.added++
		m.added = r.added // before the insert publishes m
		m.ring.Store(r)
		// newMKT validated the prefix, so the insert cannot fail.
		_ = r.byPeer.Insert(m.peer, 0, entryOf(m))
		r.ids.count(m)
	}
	return 0, nil
}

// admit checks that ms clash neither with r's MKTs nor among themselves
// and takes each one's reference on its algorithm's pool entry, which
// its wipe drops; under r.mu.
func (r *Keyring) admit(ms []*MKT, names []string) (int, error) {
	if len(ms) == 1 { // an Add: no batch to check against
		if o := r.clash(ms[0]); o != nil {
			return 0, fmt.Errorf("%w: %v (adding %v)", ErrKeyExists, o, ms[0])
		}
	} else if i, err := r.admitBatch(ms, names); err != nil {
		return i, err
	}
	if r.pool == nil {
		r.pool = sigpool.Default
	}
	for i, m := range ms {
		id, err := r.pool.Alloc(m.alg, scratchSize)
		if err != nil {
			return i, err
		}
		m.pool, m.poolID, m.hasPool = r.pool, id, true
	}
	return 0, nil
}

// admitBatch is admit's clash check for the MKTs of an AddAll.
func (r *Keyring) admitBatch(ms []*MKT, names []string) (int, error) {
	var batch prefixmap.Map[entry]       // ms[:i]
	index := make(map[*MKT]int, len(ms)) // their places in ms
	for i, m := range ms {
		if o := r.clash(m); o != nil {
			return i, fmt.Errorf("%w: %v (adding %v)", ErrKeyExists, o, m)
		}
		if o := clash(&batch, m); o != nil {
			j := index[o]
			return i, fmt.Errorf("%w: %s of the same list, %v (adding %v)", ErrKeyExists, keys.Label("ao", j, keys.NameAt(names, j)), o, m)
		}
		_ = batch.Insert(m.peer, 0, entryOf(m))
		index[m] = i
	}
	return 0, nil
}

// clash returns an MKT of r that m may not sit beside (see the other
// clash), or nil; under r.mu. It visits only the prefix lengths of the
// MKTs that share an ID with m (idCounts).
func (r *Keyring) clash(m *MKT) *MKT {
	lens, ok := r.ids.lengths(m)
	if !ok {
		return nil
	}
	return clashWithin(&r.byPeer, m, lens)
}

// clash returns an MKT of in that m may not sit beside: one whose SendID
// or RecvID is m's, for an overlapping peer prefix in an overlapping L3
// domain (Linux's tcp_ao_add_cmd refuses it with EEXIST), or nil.
func clash(in *prefixmap.Map[entry], m *MKT) *MKT {
	return clashWithin(in, m, prefixmap.Lengths{Min: 0, Max: 128})
}

// clashWithin is clash among the MKTs whose prefix length is in lens.
func clashWithin(in *prefixmap.Map[entry], m *MKT, lens prefixmap.Lengths) *MKT {
	var found *MKT
	in.OverlapsWithin(m.peer, 0, lens, func(_ netip.Prefix, o entry) bool {
		if (o.sendID == m.sendID || o.recvID == m.recvID) && (!m.hasIfIndex || o.matchesL3(m.ifindex)) {
			found = o.m
		}
		return found == nil
	})
	return found
}

// DeleteOptions says how to delete an MKT.
type DeleteOptions struct {
	// Async returns at once and wipes the master key once its last
	// reader is done (Linux del_async); otherwise Delete returns after
	// the wipe.
	Async bool
	// Current and RNext replace the MKT on connections that use it as
	// their current or RNext key (Linux's set_current/set_rnext in
	// TCP_AO_DEL_KEY), at once; each must cover every such connection's
	// peer ([ErrReplacement]). Without them those connections move to
	// the newest MKT left that covers their peer, or are revoked.
	Current, RNext *MKT
}

// Delete removes m, and the removal always wins: from its first moment
// no lookup finds m, no connection can take it up, and a verify that
// finishes after it refuses m's segments. The connections whose current
// or RNext key m was move to the named replacement, else to the newest
// MKT left for their peer and L3 domain; one with none left is revoked
// ([ErrRevoked]: it signs and accepts nothing more). A synchronous delete
// returns once no reader can still use m's master key and it is wiped;
// neither kind makes the readers of other keys wait. Each connection
// wipes the traffic keys it derived from m itself: when it next needs a
// key it has not derived yet, and at Close. (Linux refuses to delete a
// socket's current key with EBUSY; a keyring is shared by every
// connection, as a listener's keys are, and a listener's delete always
// succeeds.)
func (r *Keyring) Delete(m *MKT, opts DeleteOptions) error {
	if r == nil {
		return ErrNotInitialized
	}
	if err := r.remove(m, opts); err != nil {
		return err
	}
	if opts.Async {
		m.guard.Retire(m.wipe)
	} else {
		m.guard.RetireWait(m.wipe)
	}
	return nil
}

// remove takes m out of r and moves or revokes its users: Delete but the
// wipe.
func (r *Keyring) remove(m *MKT, opts DeleteOptions) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m == nil || !r.has(m) {
		return ErrNoSuchKey
	}
	reps := [2]*MKT{opts.Current, opts.RNext}
	for _, rep := range reps {
		if rep != nil && (rep == m || !r.has(rep)) {
			return fmt.Errorf("%w: replacement %v", ErrNoSuchKey, rep)
		}
	}
	if err := m.unring(reps); err != nil {
		return err
	}
	r.byPeer.Delete(m.peer, 0, func(o entry) bool { return o.m == m })
	r.ids.uncount(m)
	if m.timed {
		r.life.Changed(-1)
	}
	r.evict(m)
	return nil
}

// unring moves the users of m that reps name a replacement for (moveUsers)
// and marks m deleted, under the locks of m and reps; under r.mu. From
// then on no connection can take m up (setRole checks m.ring under m's
// lock). Without replacements it locks m alone, as lockAll would,
// without lockAll's sorted copy.
func (m *MKT) unring(reps [2]*MKT) error {
	if reps[0] == nil && reps[1] == nil {
		m.mu.Lock()
		m.off.Or(offGone)
		m.ring.Store(nil)
		m.mu.Unlock()
		return nil
	}
	lockAll(m, reps[0], reps[1])
	defer unlockAll(m, reps[0], reps[1])
	if err := m.moveUsers(reps); err != nil {
		return err
	}
	m.off.Or(offGone)
	m.ring.Store(nil)
	return nil
}

// moveUsers moves every connection that has m in a role that reps name a
// replacement for to it, or refuses with [ErrReplacement], changing
// nothing, if the replacement does not apply to a user's peer and L3
// domain (it would sign with a key that peer never gave us). m and the
// replacements are locked.
func (m *MKT) moveUsers(reps [2]*MKT) error {
	for role, rep := range reps {
		if rep == nil {
			continue
		}
		for c := m.users[role]; c != nil; c = c.link[role].next {
			if !rep.covers(c.remote.Addr(), c.l3) {
				return fmt.Errorf("%w: %v for %v (L3 domain %d)", ErrReplacement, rep, c.remote.Addr(), c.l3)
			}
		}
	}
	for role, rep := range reps {
		for rep != nil && m.users[role] != nil {
			c := m.users[role]
			unlink(c, role, m)
			link(c, role, rep)
			c.role(role).Store(rep)
		}
	}
	return nil
}

// evict moves the users m has left, once it is out of the index, each to
// the newest MKT of r for its peer and L3 domain, or revokes it without
// one; under r.mu, so that no replacement it picks can go meanwhile. No
// connection can take m up any more, so its user lists only shrink.
func (r *Keyring) evict(m *MKT) {
	for role := range m.users {
		for {
			us := m.usersOf(role)
			if len(us) == 0 {
				break
			}
			for _, u := range us {
				u.c.move(role, m, r.pick(u.addr, u.l3, roleNeeds[role]), true)
			}
		}
	}
}

// has reports whether m is in r (and not deleted); under r.mu.
func (r *Keyring) has(m *MKT) bool { return m != nil && m.ring.Load() == r }

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
	r.byPeer.Lookup(peer.Addr(), 0, func(p netip.Prefix, e entry) bool {
		if p == peer.Masked() && e.sendID == sendID && e.recvID == recvID {
			found = e.m
			return false
		}
		return true
	})
	return found
}

// LookupRecv returns the MKT that verifies segments from addr with this
// KeyID in L3 domain l3 (its RecvID is keyID, and it is inside its
// accept lifetime), or nil.
func (r *Keyring) LookupRecv(addr netip.Addr, keyID uint8, l3 int) *MKT {
	if r == nil {
		return nil
	}
	return r.lookup(addr, l3, func(e entry) bool { return e.recvID == keyID && e.m.off.Load()&offAccept == 0 })
}

// LookupSend returns the MKT whose SendID is sendID for peer addr, inside
// its send lifetime, or nil.
func (r *Keyring) LookupSend(addr netip.Addr, sendID uint8, l3 int) *MKT {
	if r == nil {
		return nil
	}
	return r.lookup(addr, l3, func(e entry) bool { return e.sendID == sendID && e.m.off.Load()&offSend == 0 })
}

// Covers reports whether any MKT applies to peer addr in L3 domain l3:
// then unsigned segments from it are refused (Linux tcp_ao_required).
func (r *Keyring) Covers(addr netip.Addr, l3 int) bool { return r != nil && r.first(addr, l3) != nil }

// first returns an MKT for a peer regardless of IDs (the most specific):
// whether the peer is covered, and which key signs a connectionless RST.
func (r *Keyring) first(addr netip.Addr, l3 int) *MKT {
	return r.lookup(addr, l3, func(entry) bool { return true })
}

// newest returns the most recently added MKT that matches a peer,
// whatever its prefix length: the first match in Linux's newest-first key
// list, which is its default current and RNext key of a new connection.
// It visits every matching MKT; it runs once per connection, not per
// segment.
func (r *Keyring) newest(addr netip.Addr, l3 int) *MKT {
	if r == nil {
		return nil
	}
	var found *MKT
	r.byPeer.Lookup(addr, 0, func(_ netip.Prefix, e entry) bool {
		if e.matchesL3(l3) && (found == nil || e.m.added > found.added) {
			found = e.m
		}
		return true
	})
	return found
}

// newestWith is newest among the MKTs other than not that are in the
// state need names (offSend: inside the send lifetime, offAccept: inside
// the accept lifetime, 0: any).
func (r *Keyring) newestWith(addr netip.Addr, l3 int, need uint32, not *MKT) *MKT {
	var found *MKT
	r.byPeer.Lookup(addr, 0, func(_ netip.Prefix, e entry) bool {
		if e.m != not && e.matchesL3(l3) && e.m.off.Load()&need == 0 && (found == nil || e.m.added > found.added) {
			found = e.m
		}
		return true
	})
	return found
}

// roleNeeds is the state a key needs in each role: a current key signs;
// an RNext key verifies, and is one the peer may send with (by the
// schedule both ends share, inside its send lifetime).
var roleNeeds = [2]uint32{roleCurrent: offSend, roleRNext: offSend | offAccept}

// pick is the key a connection to addr takes in a role that needs need:
// the newest MKT in that state, else the newest that verifies (an RNext
// key), else the newest in any (nil: the peer has none).
func (r *Keyring) pick(addr netip.Addr, l3 int, need uint32) *MKT {
	for _, n := range [...]uint32{need, need & offAccept, 0} {
		if m := r.newestWith(addr, l3, n, nil); m != nil {
			return m
		}
	}
	return nil
}

// lookup returns the MKT of the longest prefix containing addr (the newest
// of that prefix) that is in domain l3 and for which match is true.
func (r *Keyring) lookup(addr netip.Addr, l3 int, match func(entry) bool) *MKT {
	var found *MKT
	r.byPeer.Lookup(addr, 0, func(_ netip.Prefix, e entry) bool {
		if match(e) && e.matchesL3(l3) {
			found = e.m
			return false
		}
		return true
	})
	return found
}

// MKTs returns the keyring's MKTs, in order of addition: what a status
// page lists, so that no key can be in the keyring unseen.
func (r *Keyring) MKTs() []*MKT {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*MKT, 0, r.byPeer.Len())
	r.byPeer.Range(func(_ netip.Prefix, _ uint32, e entry) bool {
		out = append(out, e.m)
		return true
	})
	slices.SortFunc(out, func(a, b *MKT) int { return cmp.Compare(a.added, b.added) })
	return out
}

// Len returns the number of MKTs.
func (r *Keyring) Len() int {
	if r == nil {
		return 0
	}
	return r.byPeer.Len()
}
