package ao

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/tcpsig/tcpsig/internal/lifetime"
	"github.com/tcpsig/tcpsig/internal/reclaim"
	"github.com/tcpsig/tcpsig/internal/redact"
	"github.com/tcpsig/tcpsig/kdf"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/mac"
	"github.com/tcpsig/tcpsig/sigpool"
)

// Errors of key management, with the errno Linux returns for the same case.
// A configuration the kernel would refuse is keys.ErrInvalid or
// keys.ErrMACTooLong.
var (
	ErrKeyExists = errors.New("ao: an MKT with this SendID or RecvID already covers the peer") // EEXIST
	ErrNoSuchKey = errors.New("ao: no such MKT")                                               // ENOENT
	// ErrKeyBusy is Linux's EBUSY for deleting a socket's own current or
	// RNext key. A keyring's delete never returns it: the keyring is
	// shared by every connection, as a listener's keys are, and a removal
	// always wins (see [Keyring.Delete]).
	ErrKeyBusy = errors.New("ao: MKT is a connection's current or RNext key")
	// ErrReplacement: a delete's replacement MKT does not apply to the
	// peer or L3 domain of a connection that would move to it.
	ErrReplacement = errors.New("ao: replacement MKT does not cover a connection's peer")
)

// MKT is a Master Key Tuple (RFC 5925 §3.1). It is immutable once added
// to a [Keyring]; its key material is wiped after deletion, once no reader
// can still use it. Printing an MKT never shows key bytes.
type MKT struct {
	// The pointers first (the garbage collector then scans only the
	// first words of an MKT and of the master key allocated before it).
	alg *mac.Algorithm
	// Behind a pointer so that fmt, walking a copied MKT's fields
	// without its methods, prints an address and not the keyed state
	// (for hmac(rmd160) that is key⊕ipad and key⊕opad).
	master *kdf.Master
	pool   *sigpool.Pool // where everything computed under the MKT runs
	// mu guards what ties connections to the MKT: users, lanes, and the
	// writes of ring (a delete holds both its keyring's lock and mu).
	// Under it a lane's lock is never taken; see lock2 for two MKTs.
	mu sync.Mutex
	// ring is the keyring the MKT is in, nil from the first moment of its
	// delete: a verify that finishes after that refuses the segment.
	ring atomic.Pointer[Keyring]
	// off says whether the MKT is outside its send or accept lifetime
	// (offSend, offAccept), as of its keyring's last Advance, and whether
	// its delete began (offGone).
	off atomic.Uint32
	// users lists the connections that have the MKT as current key
	// (users[roleCurrent]) or RNext key: a delete, or a lifetime's end,
	// moves them to another key of their peer (or revokes them).
	users [2]*Conn
	// lanes lists the connections' lane entries that count good
	// segments for the MKT; under mu, good plus the listed entries'
	// counts is the MKT's total, each segment in exactly one.
	lanes []*laneKey
	// guard pins master while a derivation reads it: a delete retires
	// the MKT, and master is wiped once no pin is left (reclaim's RCU).
	guard reclaim.Guard

	peer           netip.Prefix
	sendID, recvID uint8
	maclen         uint8
	exclude        bool
	hasIfIndex     bool
	hasPool        bool // poolID holds a reference on the pool's entry of alg
	timed          bool // sched limits the MKT (it has a lifetime)
	ifindex        int
	poolID         sigpool.ID
	added          uint64 // order of addition in its keyring (newest wins by default)

	// The counters, written per verified segment, start a line of their
	// own in newMKT's allocation (mktAlloc), so that they share none with
	// what signers read: the pad makes their offset there a multiple of
	// cacheline.Size (TestMKTLayout).
	_    [countersPad]byte
	good atomic.Uint64 // segments counted here: by listeners, handshakes and wiped lane entries
	bad  atomic.Uint64
	// sched is the MKT's lifetime, read by its keyring's Advance only
	// (the counters' line holds nothing else that is written).
	sched lifetime.Schedule
}

// countersPad puts an MKT's counters at the start of a line of mktAlloc.
const countersPad = 32

// mktAlloc is newMKT's one allocation: the MKT, its master key, and the
// key's bytes until its template is made, the master key first: a
// delete's wipe then finds it on the lines of the MKT's lock and guard,
// and the garbage collector scans the allocation only up to the MKT's
// last pointer, not over its counters or the key's bytes. The bytes are
// last (no field of the MKT moves); no field of the MKT or of the master
// key holds them by value (fmt walking a copy would print them). Its size
// is a whole number of lines, so that every allocation starts one and the
// counters' line holds nothing else that is written.
type mktAlloc struct {
	master kdf.Master
	m      MKT
	key    [kdf.ShortKeyLen]byte
	_      [mktTail]byte
}

// mktTail fills mktAlloc to three lines.
const mktTail = 48

// newMKT validates cfg and prepares its master key; the keyring takes
// its pool reference.
func newMKT(cfg *keys.AO) (*MKT, error) {
	c, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	alg, err := mac.Lookup(c.Algorithm)
	if err != nil {
		return nil, fmt.Errorf("%w MKT: %w", keys.ErrInvalid, err)
	}
	all := new(mktAlloc)
	// Field by field: the allocation is zero already, and a composite
	// literal would clear and copy the whole MKT again.
	m := &all.m
	m.alg, m.master = alg, &all.master
	m.peer, m.sendID, m.recvID, m.maclen = c.Peer, c.SendID, c.RecvID, uint8(c.MACLen)
	m.exclude, m.hasIfIndex, m.ifindex = c.ExcludeOptions, c.HasIfIndex, c.IfIndex
	m.sched, m.timed = lifetime.Of(c.Lifetime)
	if err := m.master.InitIn(alg, c.Key, &all.key); err != nil {
		return nil, fmt.Errorf("%w MKT: %w", keys.ErrInvalid, err)
	}
	return m, nil
}

// Peer returns the MKT's peer prefix.
func (m *MKT) Peer() netip.Prefix {
	if m == nil {
		return netip.Prefix{}
	}
	return m.peer
}

// SendID returns the KeyID this MKT puts in segments it signs.
func (m *MKT) SendID() uint8 {
	if m == nil {
		return 0
	}
	return m.sendID
}

// RecvID returns the KeyID of segments this MKT verifies.
func (m *MKT) RecvID() uint8 {
	if m == nil {
		return 0
	}
	return m.recvID
}

// MACLen returns the MAC length in bytes.
func (m *MKT) MACLen() int {
	if m == nil {
		return 0
	}
	return int(m.maclen)
}

// Algorithm returns the MKT's algorithm.
func (m *MKT) Algorithm() *mac.Algorithm {
	if m == nil {
		return nil
	}
	return m.alg
}

// ExcludeOptions reports whether TCP options other than TCP-AO are left
// out of the MAC.
func (m *MKT) ExcludeOptions() bool {
	if m == nil {
		return false
	}
	return m.exclude
}

// IfIndex returns the L3 index and whether the MKT is bound to it.
func (m *MKT) IfIndex() (int, bool) {
	if m == nil {
		return 0, false
	}
	return m.ifindex, m.hasIfIndex
}

// Counters returns the MKT's good and bad segment counts (Linux's per-key
// pkt_good and pkt_bad).
func (m *MKT) Counters() (good, bad uint64) {
	if m == nil {
		return 0, 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	good = m.good.Load()
	for _, k := range m.lanes {
		good += k.good.Load()
	}
	return good, m.bad.Load()
}

// list enters k, a lane's new entry for m, in m.lanes; k's lane is
// locked (a lane's lock may be held when m's is taken, never the other
// way).
func (m *MKT) list(k *laneKey) {
	m.mu.Lock()
	k.good.Store(0)
	k.idx = len(m.lanes)
	m.lanes = append(m.lanes, k)
	m.mu.Unlock()
}

// unlist removes k from m.lanes and adds its count to m.good; k's lane
// is locked.
func (m *MKT) unlist(k *laneKey) {
	m.mu.Lock()
	m.good.Add(k.good.Swap(0))
	last := len(m.lanes) - 1
	m.lanes[k.idx] = m.lanes[last]
	m.lanes[k.idx].idx = k.idx
	m.lanes[last] = nil
	m.lanes = m.lanes[:last]
	m.mu.Unlock()
}

// String describes the MKT without key material.
func (m *MKT) String() string {
	if m == nil {
		return "ao.MKT(nil)"
	}
	s := fmt.Sprintf("ao.MKT{peer %v, SendID %d, RecvID %d, %s, maclen %d", m.peer, m.sendID, m.recvID, m.alg, m.maclen)
	if m.exclude {
		s += ", options excluded"
	}
	if m.hasIfIndex {
		s += fmt.Sprintf(", ifindex %d", m.ifindex)
	}
	return s + ", key [redacted]}"
}

// GoString is String, so %#v does not print key material.
func (m *MKT) GoString() string { return m.String() }

// Format prints the redacted form for every verb.
func (m *MKT) Format(f fmt.State, _ rune) { redact.Format(f, m.String()) }

// matchesL3 reports whether the MKT applies in L3 domain l3 (Linux: a key
// without TCP_AO_KEYF_IFINDEX matches every VRF).
func (m *MKT) matchesL3(l3 int) bool { return !m.hasIfIndex || m.ifindex == l3 }

// covers reports whether m applies to peer addr in L3 domain l3, as the
// keyring's lookups decide it.
func (m *MKT) covers(addr netip.Addr, l3 int) bool {
	return m.peer.Contains(addr.Unmap()) && m.matchesL3(l3)
}

// acquire pins the MKT's master key for a derivation, on the pin shard
// a connection's hint names; false once the MKT is deleted.
func (m *MKT) acquire(hint uint32) (reclaim.Pin, bool) { return m.guard.AcquireHint(hint) }

func (m *MKT) release(p reclaim.Pin) { m.guard.Release(p) }

// wipe clears the master key and drops the MKT's reference on its pool
// entry: the entry and its contexts go with its algorithm's last key. It
// runs once, when no derivation can still use the MKT: quick, as reclaim
// asks (the pool's lock is short and never waits for a shard).
// (Connections wipe the traffic keys they derived themselves: see
// lane.add and Conn.Close.)
func (m *MKT) wipe() {
	m.master.Wipe()
	if m.hasPool {
		m.hasPool = false
		_ = m.pool.Release(m.poolID)
	}
}
