// Package scratch provides per-shard scratch buffers sized to the largest
// reservation so far: the Go form of Linux's per-CPU tcp_sigpool scratch
// (sigpool_reserve_scratch() in net/ipv4/tcp_sigpool.c).
//
// In order: [New] with the number of shards; [Scratch.Reserve] the size a
// user needs (once per user); [Scratch.Buf] a shard's buffer per use.
//
// A [Scratch] has one buffer per shard. [Scratch.Reserve] only ever grows
// them, and it is safe while other goroutines use their buffers: a grown
// shard gets a brand-new buffer, published atomically, and whoever still
// holds the old one keeps a valid slice of the old size until it lets go
// (where Linux frees old buffers with call_rcu, the garbage collector does
// it here). Reserve never waits for a reader and a reader never waits for
// Reserve.
//
// Each shard's buffer is its own allocation, rounded up to a whole number of
// alignment units and starting on one (tcpsig's cache-line unit, or the
// CPU's line when it reports a longer one), so two shards never write the
// same cache line.
//
// Scratch holds no key material by contract: users put transient copies of
// segment headers, pseudo-headers and KDF inputs there, never keys. Old
// buffers are therefore not wiped when they are replaced; they are left to
// the garbage collector.
//
// Which goroutine may write which shard's buffer is the caller's business;
// tcpsig's sigpool hands a shard's buffer only to the holder of that
// shard's lock.
package scratch

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/tcpsig/tcpsig/internal/cacheline"
)

// Scratch is a set of per-shard buffers. Its methods are safe for
// concurrent use.
type Scratch struct {
	bufs []atomic.Pointer[[]byte] // read-mostly: written only by Reserve
	size atomic.Int64
	mu   sync.Mutex // serialises Reserve
}

var empty = new([]byte)

// New returns a Scratch with the given number of shards, at least 1 and
// at most MaxShards, and size 0.
func New(shards int) *Scratch {
	shards = min(max(shards, 1), MaxShards)
	s := &Scratch{bufs: make([]atomic.Pointer[[]byte], shards)}
	for i := range s.bufs {
		s.bufs[i].Store(empty)
	}
	return s
}

// Shards returns the number of shards.
func (s *Scratch) Shards() int {
	if s == nil {
		return 0
	}
	return len(s.bufs)
}

// Reserve makes the size at least n: the size becomes max(Size(), n). It
// only grows. Every shard whose buffer is too small gets a new one; a
// goroutine still using an old buffer may go on using it. When Reserve
// returns, every later Buf of every shard has len >= n. n <= 0 is a no-op;
// n > MaxSize is ErrTooLarge, and nothing changes.
func (s *Scratch) Reserve(n int) error {
	if n > MaxSize {
		return fmt.Errorf("%w: %d bytes", ErrTooLarge, n)
	}
	if s == nil || int64(n) <= s.size.Load() {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if int64(n) <= s.size.Load() {
		return nil
	}
	for i := range s.bufs {
		b := alloc(n)
		s.bufs[i].Store(&b)
	}
	s.size.Store(int64(n))
	return nil
}

// MaxShards bounds the number of shards: Linux's largest CPU count
// (NR_CPUS, 8192).
const MaxShards = 8192

// MaxSize bounds a reservation: far above what one segment's MAC input
// needs, and far below a size whose rounding up could overflow.
const MaxSize = 1 << 20

// ErrTooLarge: Reserve of more than MaxSize bytes.
var ErrTooLarge = errors.New("scratch: reservation too large")

// alloc returns an n-byte slice whose backing lines belong to no other
// object: n rounded up to the alignment unit, starting on a unit
// boundary. The Go allocator places objects whose size is a multiple of
// 128 on 128-byte boundaries in practice; if it ever does not, the slice
// is cut from a larger allocation at the first boundary.
func alloc(n int) []byte {
	align := cacheline.Align()
	r := (n + align - 1) &^ (align - 1)
	b := make([]byte, r)
	if misalign(b) != 0 {
		b = make([]byte, r+align)
		if off := misalign(b); off != 0 {
			b = b[align-off:]
		}
	}
	return b[:n:n]
}

func misalign(b []byte) int {
	return int(uintptr(unsafe.Pointer(unsafe.SliceData(b))) & uintptr(cacheline.Align()-1))
}

// Buf returns the shard's current buffer. Its length is the size at the
// time it was published: at least every reservation that completed before
// the call, and equal to Size() while no Reserve runs. Its capacity is its
// length. The slice stays valid after a later Reserve replaces it.
// A shard out of range, or a Scratch not made by New, gets nil.
func (s *Scratch) Buf(shard int) []byte {
	if s == nil || shard < 0 || shard >= len(s.bufs) {
		return nil
	}
	return *s.bufs[shard].Load()
}

// Size returns the size of the buffers: the largest reservation so far.
func (s *Scratch) Size() int {
	if s == nil {
		return 0
	}
	return int(s.size.Load())
}
