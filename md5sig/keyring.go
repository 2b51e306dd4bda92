package md5sig

import (
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/tcpsig/tcpsig/internal/lifetime"
	"github.com/tcpsig/tcpsig/internal/prefixmap"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/mac"
	"github.com/tcpsig/tcpsig/sigpool"
)

// Keyring holds the TCP-MD5 keys of a socket (a listener and the
// connections it accepts, or one connection): Linux's tcp_md5sig_info.
// Lookups by (peer address, L3 index) take no lock and cost the same at ten
// and at a million keys; adds and deletes serialise on a mutex and never
// wait for readers of other keys. Safe for concurrent use. The zero
// Keyring is empty and computes through sigpool.Default; a Keyring must
// not be copied after first use.
type Keyring struct {
	mu   sync.Mutex
	pool *sigpool.Pool // nil: sigpool.Default; set only by NewKeyring
	// keys is indexed by peer prefix and tag: the L3 index of a bound key,
	// 0 for unbound keys and for keys bound to the default domain (both
	// have Linux l3index 0, so neither wins over the other; the longer
	// prefix does, then the newer key).
	keys prefixmap.Map[*Key]
	life lifetime.Keeper // under mu: the lifetimes' clock (lifetime.go)

	counters
}

// Counters are a keyring's segment counts. Bad, Missing and Unexpected
// count what Linux counts in TcpExt TCPMD5Failure, TCPMD5NotFound and
// TCPMD5Unexpected.
type Counters struct {
	Good        uint64 // segments verified
	Bad         uint64 // signature mismatch: ErrBadMAC (TCPMD5Failure)
	KeyNotFound uint64 // Sign found no key for the peer: ErrNoKey
	Unexpected  uint64 // signed segment, no key for the peer: ErrUnexpected (TCPMD5Unexpected)
	Missing     uint64 // unsigned segment, a key for the peer: ErrMissing (TCPMD5NotFound)
}

type counters struct {
	good, bad, keyNotFound, unexpected, missing atomic.Uint64
}

// Counters returns the keyring's counters.
func (r *Keyring) Counters() Counters {
	if r == nil {
		return Counters{}
	}
	return Counters{r.good.Load(), r.bad.Load(), r.keyNotFound.Load(), r.unexpected.Load(), r.missing.Load()}
}

// NewKeyring returns an empty keyring whose keys compute through pool
// (sigpool.Default when nil).
func NewKeyring(pool *sigpool.Pool) *Keyring {
	if pool == nil {
		pool = sigpool.Default
	}
	return &Keyring{pool: pool}
}

// tag is the index tag of keys of L3 index l3.
func tag(l3 int) uint32 { return uint32(l3) }

// Add validates cfg as Linux's TCP_MD5SIG / TCP_MD5SIG_EXT does and adds the
// key. A key with the same peer prefix, the same binding and the same L3
// index replaces the old one, as setsockopt does in Linux; unlike Linux,
// which overwrites the bytes in place under its readers, the replacement
// is atomic: a concurrent Sign or Verify uses either the old key or the new
// one, never a mix. The old key is deleted asynchronously (wiped once its
// last reader is done) and its handle becomes stale. Prefixes are compared
// masked, so 10.0.0.9/24 replaces 10.0.0.0/24 (Linux compares the address
// as given and would keep both, matching the same peers, the newer first).
//
// Linux also refuses (EKEYREJECTED) a TCP-MD5 key for a peer that has a
// TCP-AO key on the same socket; a Keyring does not know the socket's AO
// keys, so a stack holding both kinds must make that check itself.
func (r *Keyring) Add(cfg keys.MD5) (*Key, error) {
	if r == nil {
		return nil, ErrNotInitialized
	}
	k, err := newKey(&cfg, r)
	if err != nil {
		return nil, err
	}
	ks := [1]*Key{k}
	if err := r.insert(ks[:]); err != nil {
		return nil, err
	}
	return k, nil
}

// AddAll adds cfgs in order as Add would, or none: the first error, a
// [*keys.EntryError] naming the entry (names[i], when given; two of one
// description are [ErrDuplicate]), leaves r as it was. A keys file's
// keys: r.AddAll(f.MD5Configs()).
func (r *Keyring) AddAll(cfgs []keys.MD5, names []string) ([]*Key, error) {
	if r == nil {
		return nil, ErrNotInitialized
	}
	type desc struct {
		peer    netip.Prefix
		ifindex int
		bound   bool
	}
	ks := make([]*Key, 0, len(cfgs))
	seen := make(map[desc]int, len(cfgs))
	for i := range cfgs {
		k, err := newKey(&cfgs[i], r)
		if err == nil {
			if j, dup := seen[desc{k.peer, k.ifindex, k.bound}]; dup && !(k.timed && ks[j].timed) {
				k.guard.Retire(k.wipe)
				err = fmt.Errorf("%w: %s", ErrDuplicate, keys.Label("md5", j, keys.NameAt(names, j)))
			}
		}
		if err != nil {
			for _, k := range ks {
				k.guard.Retire(k.wipe)
			}
			return nil, &keys.EntryError{Kind: "md5", Index: i, Name: keys.NameAt(names, i), Err: err}
		}
		seen[desc{k.peer, k.ifindex, k.bound}] = i
		ks = append(ks, k)
	}
	if err := r.insert(ks); err != nil {
		// Only the pool can fail, before the first key goes in.
		return nil, &keys.EntryError{Kind: "md5", Index: 0, Name: keys.NameAt(names, 0), Err: err}
	}
	return ks, nil
}

// insert adds ks to r, each replacing the key of its description, or,
// when the pool refuses an entry, none (and retires ks). Each key holds
// a reference on the pool's TCP-MD5 entry, which its wipe drops.
func (r *Keyring) insert(ks []*Key) error {
	r.mu.Lock()
	if r.pool == nil {
		r.pool = sigpool.Default
	}
	for _, k := range ks {
		id, err := r.pool.Alloc(mac.TCPMD5, scratchSize)
		if err != nil {
			r.mu.Unlock()
			for _, k := range ks {
				k.guard.Retire(k.wipe)
			}
			return err
		}
		k.pool, k.poolID, k.hasPool = r.pool, id, true
	}
	var one [1]*Key
	olds := one[:0] // the keys replaced
	for _, k := range ks {
		if k.timed {
			k.off.Store(k.sched.Off(r.life.Clock.Now()))
			r.life.Changed(+1)
		}
		// newKey validated the prefix, so the insert cannot fail.
		_ = r.keys.Insert(k.peer, tag(k.ifindex), k)
		for {
			// Keys with lifetimes are a schedule: they stay side by side.
			old, replaced := r.keys.Delete(k.peer, tag(k.ifindex), func(o *Key) bool {
				return o != k && o.same(k.peer, k.ifindex, k.bound) && !(o.timed && k.timed)
			})
			if !replaced {
				break
			}
			r.unindex(old)
			olds = append(olds, old)
		}
	}
	r.mu.Unlock()
	for _, old := range olds {
		old.guard.Retire(old.wipe)
	}
	return nil
}

// DeleteOptions says how to delete a key.
type DeleteOptions struct {
	// Async returns at once and wipes the key once its last reader is
	// done (like Linux's call_rcu); otherwise Delete waits for the
	// readers that hold the key and returns after the wipe.
	Async bool
}

// Delete removes k. From the moment Delete is called no new Sign or
// Verify uses k. A synchronous delete returns once no reader can still use
// k and its bytes are wiped; neither kind makes readers of other keys wait.
// A goroutine must not delete synchronously a key it is itself using (it
// would wait for itself); Sign and Verify never hold a key on return.
func (r *Keyring) Delete(k *Key, opts DeleteOptions) error {
	if r == nil {
		return ErrNotInitialized
	}
	r.mu.Lock()
	if k == nil || k.ring != r || k.deleted {
		r.mu.Unlock()
		return ErrNoSuchKey
	}
	r.keys.Delete(k.peer, tag(k.ifindex), func(o *Key) bool { return o == k })
	r.unindex(k)
	r.mu.Unlock()
	if opts.Async {
		k.guard.Retire(k.wipe)
	} else {
		k.guard.RetireWait(k.wipe)
	}
	return nil
}

// unindex marks k, just taken out of the index, deleted; under r.mu.
func (r *Keyring) unindex(k *Key) {
	k.deleted = true
	k.off.Or(gone)
	if k.timed {
		r.life.Changed(-1)
	}
}

// Find returns the key added with exactly this peer prefix and binding,
// the one Linux's setsockopt with a zero key length would delete, or nil.
func (r *Keyring) Find(peer netip.Prefix, ifindex int, hasIfIndex bool) *Key {
	var one [1]byte
	c, err := keys.MD5{Peer: peer, Key: one[:]}.Validate() // the prefix as Add stores it
	if r == nil || err != nil || ifindex < 0 {
		return nil
	}
	p := c.Peer
	var found *Key
	r.keys.Lookup(p.Addr(), tag(ifindex), func(q netip.Prefix, k *Key) bool {
		if q.Bits() < p.Bits() {
			return false
		}
		if k.same(p, ifindex, hasIfIndex) {
			found = k
			return false
		}
		return true
	})
	return found
}

// Lookup returns the key that covers peer addr in L3 domain l3index, or
// nil: Linux's tcp_md5_do_lookup. Of the keys whose prefix contains addr
// and that apply in the domain, a key bound to a non-zero L3 index wins
// over the others, then the longest prefix wins (then the newest: a
// schedule's keys share one prefix, see SignWith).
func (r *Keyring) Lookup(addr netip.Addr, l3index int) *Key {
	return r.lookup(addr, l3index)
}

func (r *Keyring) lookup(addr netip.Addr, l3 int) *Key {
	if r == nil {
		return nil
	}
	var found *Key
	if l3 > 0 {
		r.keys.Lookup(addr, tag(l3), func(_ netip.Prefix, k *Key) bool {
			found = k
			return false
		})
		if found != nil {
			return found
		}
	}
	r.keys.Lookup(addr, 0, func(_ netip.Prefix, k *Key) bool {
		if k.matchesL3(l3) {
			found = k
			return false
		}
		return true
	})
	return found
}

// Keys returns the keyring's keys: what a status page lists, so that no
// key can be in the keyring unseen.
func (r *Keyring) Keys() []*Key {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*Key, 0, r.keys.Len())
	r.keys.Range(func(_ netip.Prefix, _ uint32, k *Key) bool {
		out = append(out, k)
		return true
	})
	return out
}

// Len returns the number of keys.
func (r *Keyring) Len() int {
	if r == nil {
		return 0
	}
	return r.keys.Len()
}

// String describes the keyring without key material.
func (r *Keyring) String() string { return fmt.Sprintf("md5sig.Keyring(%d keys)", r.Len()) }
