// Package sigpool is a per-CPU-sharded pool of MAC contexts and scratch
// buffers, the Go form of Linux's tcp_sigpool (net/ipv4/tcp_sigpool.c).
// It owns all of tcpsig's working MAC state: every MAC, derivation and
// key schedule runs on a shard's request (or a lease), and each key holds
// a reference on its algorithm's entry from its add to its wipe.
//
// Most programs do not need it: the keyrings of packages ao and md5sig
// compute through [Default] unless given a pool (ao.NewKeyring(pool)),
// which only a program that picks the [Backend] or the shard count, or
// that measures them, makes with [New]; packetauth works through the
// keyrings it is given.
//
// [Pool.Alloc] takes a reference on an algorithm (tcp_sigpool_alloc_ahash)
// and reserves scratch; [Pool.Release] drops it. [Pool.Start] hands out one
// shard's [Request] exclusively until [Request.End]; [Pool.Lease] hands out
// a context of its own until [Pool.Return]. The pool's [Backend] fixes how
// its contexts take a key at each message: by loading the key's template
// ([Clone], the default) or by running the key schedule again ([Rekey],
// Linux's per-CPU requests). Go has no CPU id, so a shard stands in for a
// CPU: Start picks one at random and tries the next ones while they are
// busy.
//
// Start, End and a context's Start, Write, Finish allocate nothing (Rekey
// of an AES key does: crypto/aes allocates its schedule). Misuse gets an
// error, never a panic.
//
//	id, err := pool.Alloc(alg, 60) // once per key of alg
//	r, err := pool.Start(id)       // per message
//	err = r.MAC.Start(&key)
//	r.MAC.Write(msg)
//	sum = r.MAC.Finish(sum[:0])
//	r.End()
//	pool.Release(id)               // once per Alloc
//
// The pool keeps no keys of its own beyond each context's working state,
// which the next Start overwrites and Release and Return wipe, and a
// request's Spare key, which its holder wipes before End (the last
// Release wipes it too).
package sigpool

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/tcpsig/tcpsig/internal/cacheline"
	"github.com/tcpsig/tcpsig/mac"
	"github.com/tcpsig/tcpsig/scratch"
)

// Backend says how the pool's contexts take a key at each message.
type Backend uint8

const (
	// Clone: a context's Start copies the key's template
	// ([mac.Algorithm.NewContext]): no key schedule per message. The
	// default.
	Clone Backend = iota
	// Rekey: a context's Start runs the key schedule for the key's bytes
	// in place ([mac.Algorithm.NewRekeyContext]), as Linux's per-CPU
	// requests do for every segment.
	Rekey
)

// String returns "clone" or "rekey".
func (b Backend) String() string {
	switch b {
	case Clone:
		return "clone"
	case Rekey:
		return "rekey"
	}
	return fmt.Sprintf("Backend(%d)", uint8(b))
}

// tableSize is the number of algorithm slots, like Linux's CPOOL_SIZE.
// tcpsig knows fewer than 16 algorithms and entries are shared per
// algorithm, so a pool fills up only if entries are being cleaned up.
const tableSize = 64

// ErrPoolFull is returned by [Pool.Alloc] when every slot of the table is
// taken (Linux: -ENOSPC).
var ErrPoolFull = errors.New("sigpool: table full")

// ErrKeyMismatch is returned by [Request.Key] when the key is missing or
// of another algorithm than the request.
var ErrKeyMismatch = errors.New("sigpool: key missing or of another algorithm")

// ErrNotLeased: Return of a context the ID did not lease, or twice.
var ErrNotLeased = errors.New("sigpool: context not on lease")

// ErrScratchSize: Alloc of a negative scratch size or one past
// scratch.MaxSize.
var ErrScratchSize = errors.New("sigpool: scratch size out of range")

// ErrNotAllocated is returned for an ID that is not allocated, and for a
// Pool that was not made by [New].
var ErrNotAllocated = errors.New("sigpool: ID not allocated")

// ErrBackend is returned by [New] for a backend that is neither Clone nor
// Rekey.
var ErrBackend = errors.New("sigpool: unknown backend")

// ErrShards is New's error for a Config.Shards below 0 or above
// scratch.MaxShards.
var ErrShards = errors.New("sigpool: shard count out of range")

// ID names an algorithm's entry in a pool: the table index.
type ID int

// Config configures a [Pool].
type Config struct {
	// Shards is the number of shards; 0 means runtime.GOMAXPROCS(0) at
	// New. The count is fixed then: if GOMAXPROCS grows later, more
	// goroutines than shards inside Start..End at once only means that
	// some try more shards or wait.
	Shards int
	// Backend is the keying backend for every algorithm that can clone.
	Backend Backend
}

// Request is one shard's request for one algorithm, held exclusively
// between [Pool.Start] and [Request.End]. Its fields must not be used
// after End.
type Request struct {
	// MAC is the shard's working context for the algorithm, in the
	// pool's backend. Start a message on it before writing.
	MAC *mac.Context
	// Scratch is the shard's scratch buffer, len >= every reservation made
	// before Start; shared by every algorithm of the shard.
	Scratch []byte

	// Spare is the shard's spare key, the request holder's to key and
	// use for one message (a handshake's traffic key, derived for the
	// segment that needs it, which no connection keeps). The holder
	// wipes it before End.
	Spare mac.Key

	sh   *shard
	held bool
}

// shard is one stand-in CPU: a lock and the requests of every table
// slot, written under the lock (or, at Alloc, before the ID is
// published), padded so that two shards never write the same line.
type shard struct {
	_ [cacheline.Size]byte
	// mu is held from Start to End: the shard's contexts and scratch are
	// then the holder's alone. Its holder may take Pool.mu (a Release
	// between Start and End), never another shard's.
	mu   sync.Mutex
	idx  int
	reqs [tableSize]Request
	_    [cacheline.Size]byte
}

// entry is one table slot. Free: alg == nil. Held: refs > 0. Idle: alg
// set, refs == 0, its contexts wiped (or about to be, after their
// holder's End) but kept: the next Alloc of alg takes the slot back, so
// a keyring whose keys of one algorithm come and go neither fills the
// table nor allocates contexts again; an Alloc of another algorithm that
// finds no free slot takes an idle one over.
type entry struct {
	alg     *mac.Algorithm
	refs    int // Alloc references, and one per leased context
	backend Backend
	free    []*mac.Context            // returned leases, wiped, for the next Lease
	leased  map[*mac.Context]struct{} // out on lease now: Return takes back only these, once
}

// Pool is a sharded pool of MAC requests. Its methods are safe for
// concurrent use.
type Pool struct {
	_       [cacheline.Size]byte
	shards  []shard // read-only after New
	scratch *scratch.Scratch
	backend Backend
	_       [cacheline.Size]byte

	// mu guards entries (cpool_mutex): Alloc, Release, Lease and Return,
	// never per message. It is never held while waiting for a
	// shard: Release only tries each shard's lock and leaves busy ones
	// to a goroutine that waits without it.
	mu      sync.Mutex
	limit   int // slots Alloc may use: tableSize, fewer in tests
	entries [tableSize]entry
	// live says which slots are held (refs > 0), for Start, which reads
	// it without mu: an idle slot's contexts are not handed out.
	live    [tableSize]atomic.Bool
	leased  atomic.Int64   // contexts out on Lease, for Leased, which reads it without mu
	cleanup sync.WaitGroup // background wipes started by Release
}

// New returns a pool with cfg.Shards shards (GOMAXPROCS if 0, at most
// scratch.MaxShards) and no algorithms, or [ErrBackend] or [ErrShards].
func New(cfg Config) (*Pool, error) {
	n := cfg.Shards
	if n < 0 || n > scratch.MaxShards {
		return nil, fmt.Errorf("%w: %d, want 0 (GOMAXPROCS) to %d", ErrShards, n, scratch.MaxShards)
	}
	if n == 0 {
		n = min(runtime.GOMAXPROCS(0), scratch.MaxShards)
	}
	if cfg.Backend > Rekey {
		return nil, fmt.Errorf("%w: %v", ErrBackend, cfg.Backend)
	}
	p := &Pool{
		shards:  make([]shard, n),
		scratch: scratch.New(n),
		backend: cfg.Backend,
		limit:   tableSize,
	}
	for i := range p.shards {
		sh := &p.shards[i]
		sh.idx = i
		for j := range sh.reqs {
			sh.reqs[j].sh = sh
		}
	}
	return p, nil
}

// Default is the pool that tcpsig's ao and md5sig use unless given
// another: GOMAXPROCS shards at program start, Clone backend.
var Default, _ = New(Config{})

// Alloc makes alg available in the pool and reserves at least scratchSize
// bytes of scratch per shard, like tcp_sigpool_alloc_ahash(). If alg is
// already held, its entry is shared and its refcount incremented;
// otherwise the first free slot gets one pre-allocated context per shard.
// Every successful Alloc needs one Release. It returns an error wrapping
// [ErrPoolFull] if no slot is free.
//
// Alloc never waits for a user of the pool, so it may be called between
// Start and End.
func (p *Pool) Alloc(alg *mac.Algorithm, scratchSize int) (ID, error) {
	if p == nil || len(p.shards) == 0 {
		return -1, ErrNotAllocated
	}
	if alg == nil || alg.Size() == 0 {
		return -1, fmt.Errorf("%w: Alloc of no algorithm", ErrKeyMismatch)
	}
	if scratchSize < 0 || scratchSize > scratch.MaxSize {
		return -1, fmt.Errorf("%w: scratch size %d: want 0..%d", ErrScratchSize, scratchSize, scratch.MaxSize)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	free := -1
	for i := 0; i < p.limit; i++ {
		e := &p.entries[i]
		if e.alg == alg && e.backend == p.backend {
			p.scratch.Reserve(scratchSize)
			e.refs++
			p.live[i].Store(true)
			return ID(i), nil
		}
		if e.alg == nil && free < 0 {
			free = i
		}
	}
	b := p.backend
	if free >= 0 {
		// The slot was never used: no shard's request for it is in use,
		// no wipe is pending, and Start reads its context only once live
		// says so, which is stored after these writes.
		for i := range p.shards {
			p.shards[i].reqs[free].MAC = newContext(alg, b)
		}
	} else if free = p.evict(alg, b); free < 0 {
		return -1, fmt.Errorf("%w: %d algorithms held", ErrPoolFull, p.limit)
	}
	p.scratch.Reserve(scratchSize)
	p.entries[free] = entry{alg: alg, refs: 1, backend: b}
	p.live[free].Store(true)
	return ID(free), nil
}

// evict gives an idle slot to alg: under every shard's lock at once it
// drops the slot's contexts and puts new ones of alg in backend b, so
// that a wipe still pending for the slot (wipeLater) sees either. It
// returns the slot, or -1 if none is idle with every shard free now; p.mu
// is held. It never waits for a shard.
func (p *Pool) evict(alg *mac.Algorithm, b Backend) int {
	for i := 0; i < p.limit; i++ {
		if e := &p.entries[i]; e.alg == nil || e.refs > 0 {
			continue
		}
		locked := 0
		for locked < len(p.shards) && p.shards[locked].mu.TryLock() {
			locked++
		}
		if locked == len(p.shards) {
			for j := range p.shards {
				p.shards[j].drop(ID(i))
				p.shards[j].reqs[i].MAC = newContext(alg, b)
			}
			p.entries[i] = entry{}
		}
		for j := 0; j < locked; j++ {
			p.shards[j].mu.Unlock()
		}
		if p.entries[i].alg == nil {
			return i
		}
	}
	return -1
}

// newContext returns a context of alg in backend b.
func newContext(alg *mac.Algorithm, b Backend) *mac.Context {
	if b == Rekey {
		return alg.NewRekeyContext()
	}
	return alg.NewContext()
}

// held returns id's entry, or nil if id is not held; p.mu must be held.
func (p *Pool) held(id ID) *entry {
	if id < 0 || int(id) >= tableSize || p.entries[id].refs == 0 {
		return nil
	}
	return &p.entries[id]
}

// Release drops one reference, like tcp_sigpool_release(). When the last
// one goes, every shard's context for the algorithm is wiped, its Start is
// [ErrNotAllocated], and the slot is idle: kept for the next Alloc of the
// algorithm, or taken over by another. A shard whose request is in use at
// that moment (a Start whose End has not come yet) is not disturbed: its
// context is wiped right after that End, by a background goroutine.
// Release itself never waits, so it may be called between Start and End.
// An ID that is not held is [ErrNotAllocated].
func (p *Pool) Release(id ID) error {
	if p == nil {
		return ErrNotAllocated
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.held(id)
	if e == nil {
		return ErrNotAllocated
	}
	p.unref(id, e)
	return nil
}

// unref drops one reference of id's entry e and makes the slot idle with
// the last one; p.mu is held.
func (p *Pool) unref(id ID, e *entry) {
	if e.refs--; e.refs > 0 {
		return
	}
	p.live[id].Store(false)
	e.free, e.leased = nil, nil // wiped when returned
	var busy []*shard
	for i := range p.shards {
		sh := &p.shards[i]
		if sh.mu.TryLock() {
			sh.wipe(id)
			sh.mu.Unlock()
		} else {
			busy = append(busy, sh)
		}
	}
	if len(busy) > 0 {
		p.cleanup.Add(1)
		go p.wipeLater(id, busy)
	}
}

// Lease hands out a context of id's algorithm, in the pool's backend,
// for the caller's own use until it gives it back with [Pool.Return]: a
// connection's lane holds one for as long as it uses a key, so that no
// segment goes through the pool. It takes a reference on id (the entry
// outlives the lease), reuses a returned context when there is one, and
// allocates only when none is. An ID that is not held is
// [ErrNotAllocated].
func (p *Pool) Lease(id ID) (*mac.Context, error) {
	if p == nil {
		return nil, ErrNotAllocated
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.held(id)
	if e == nil {
		return nil, ErrNotAllocated
	}
	var c *mac.Context
	if n := len(e.free); n > 0 {
		c = e.free[n-1]
		e.free[n-1] = nil
		e.free = e.free[:n-1]
	} else {
		c = newContext(e.alg, e.backend)
	}
	if e.leased == nil {
		e.leased = map[*mac.Context]struct{}{}
	}
	e.leased[c] = struct{}{}
	e.refs++
	p.leased.Add(1)
	return c, nil
}

// Leased returns how many contexts are out on [Pool.Lease] now: what a
// caller that leases only while few are out (a connection that keeps a
// context once it is busy) reads first.
func (p *Pool) Leased() int {
	if p == nil {
		return 0
	}
	return int(p.leased.Load())
}

// Return wipes c, a context that Lease handed out for id, keeps it for
// the next Lease and drops the lease's reference. c must not be used
// afterwards. A context of another algorithm than id's is
// [ErrKeyMismatch]; an ID that is not held, [ErrNotAllocated]; a context
// this ID did not lease, or already has back, [ErrNotLeased] (taking it
// would hand one context to two holders), and it is left alone.
func (p *Pool) Return(id ID, c *mac.Context) error {
	if p == nil {
		return ErrNotAllocated
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.held(id)
	if e == nil {
		return ErrNotAllocated
	}
	if c == nil || c.Algorithm() != e.alg {
		return ErrKeyMismatch
	}
	if _, ok := e.leased[c]; !ok {
		return ErrNotLeased
	}
	delete(e.leased, c)
	p.leased.Add(-1)
	c.Wipe()
	if e.refs > 1 {
		e.free = append(e.free, c)
	}
	p.unref(id, e)
	return nil
}

// wipeLater wipes the contexts that Release found in use, waiting for each
// shard's current holder to End. (Wiping a context between two messages
// is harmless, should the slot be held again by then.)
func (p *Pool) wipeLater(id ID, busy []*shard) {
	defer p.cleanup.Done()
	for _, sh := range busy {
		sh.mu.Lock()
		sh.wipe(id)
		sh.mu.Unlock()
	}
}

// wipe clears the shard's context and spare key for id, keeping them;
// sh.mu must be held.
func (sh *shard) wipe(id ID) {
	r := &sh.reqs[id]
	if r.MAC != nil {
		r.MAC.Wipe()
	}
	r.Spare.Wipe()
}

// drop wipes and forgets the shard's context for id; sh.mu must be held.
func (sh *shard) drop(id ID) {
	r := &sh.reqs[id]
	if r.MAC != nil {
		r.MAC.Wipe()
	}
	r.Spare.Wipe()
	r.MAC, r.Scratch = nil, nil
}

// Start returns a request for id that the caller uses exclusively until it
// calls End, like tcp_sigpool_start(). The request's context is in an
// unspecified state: call Key first. Start may wait only if every shard is
// in use. It allocates nothing. An ID that is not held is
// [ErrNotAllocated]; a goroutine must not Start again before its End (it
// could wait for itself).
func (p *Pool) Start(id ID) (*Request, error) {
	// rand.Uint32 reads the runtime's per-M generator: no shared line,
	// no allocation.
	return p.StartHint(id, rand.Uint32())
}

// StartHint is Start beginning at the shard a caller-held hint names: a
// connection passes its own, so that its segments keep using one shard's
// context while it is free (CMAC reuses what it cached of the
// connection's last segment), falling back to the next shards when it is
// busy.
func (p *Pool) StartHint(id ID, hint uint32) (*Request, error) {
	if p == nil || uint(id) >= tableSize || len(p.shards) == 0 {
		return nil, ErrNotAllocated
	}
	i := uint32(uint64(hint) * uint64(len(p.shards)) >> 32) // Lemire's reduction: no division
	sh := &p.shards[i]
	if !sh.mu.TryLock() {
		sh = p.lockNext(i)
	}
	r := &sh.reqs[id]
	// live first: it is stored after Alloc writes a new slot's contexts.
	if !p.live[id].Load() || r.MAC == nil {
		sh.mu.Unlock()
		return nil, ErrNotAllocated
	}
	r.held = true
	r.Scratch = p.scratch.Buf(sh.idx)
	return r, nil
}

// lockNext locks the first free shard after shard i, or waits for shard i
// when every one is busy.
func (p *Pool) lockNext(i uint32) *shard {
	n := uint32(len(p.shards))
	for j := i + 1; j != i+n; j++ {
		if sh := &p.shards[j%n]; sh.mu.TryLock() {
			return sh
		}
	}
	sh := &p.shards[i]
	sh.mu.Lock()
	return sh
}

// Key begins a message under k on the request's context ([mac.Context.Start],
// in the pool's backend). A request not held, a nil key, an empty one or
// one of another algorithm is [ErrKeyMismatch].
func (r *Request) Key(k *mac.Key) error {
	if r == nil || !r.held || r.MAC == nil || k.Algorithm() != r.MAC.Algorithm() {
		return ErrKeyMismatch
	}
	return r.MAC.Start(k)
}

// End hands the request back, like tcp_sigpool_end(). The request and its
// Scratch must not be used afterwards. End of a request that is not held
// does nothing.
func (r *Request) End() {
	if r == nil || !r.held {
		return
	}
	r.held = false
	r.sh.mu.Unlock()
}
