package sigpool

import (
	"errors"
	"math"
	"testing"

	"github.com/tcpsig/tcpsig/scratch"
)

// TestAllocHugeScratch: a scratch size past scratch.MaxSize (math.MaxInt
// once overflowed the rounding and panicked in makeslice) is
// ErrScratchSize, and the pool stays usable.
func TestAllocHugeScratch(t *testing.T) {
	p := mustNew(Config{Shards: 2})
	alg := lookup(t, "hmac(sha1)")
	for _, n := range []int{math.MaxInt, scratch.MaxSize + 1, -1} {
		if _, err := p.Alloc(alg, n); !errors.Is(err, ErrScratchSize) {
			t.Errorf("Alloc(%d): %v, want ErrScratchSize", n, err)
		}
	}
	if _, err := p.Alloc(alg, 256); err != nil {
		t.Fatalf("Alloc after refused ones: %v", err)
	}
}

// TestReturnOnlyLeased: a context returned twice, or never leased, is
// ErrNotLeased and not taken: two later Leases never share a context.
func TestReturnOnlyLeased(t *testing.T) {
	p := mustNew(Config{Shards: 1})
	alg := lookup(t, "hmac(sha256)")
	id, err := p.Alloc(alg, 64)
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.Lease(id)
	if err != nil {
		t.Fatal(err)
	}
	keep, err := p.Lease(id) // another holder, to keep the entry alive
	if err != nil {
		t.Fatal(err)
	}
	if n := p.Leased(); n != 2 {
		t.Fatalf("Leased %d with two out", n)
	}
	if err := p.Return(id, c); err != nil {
		t.Fatal(err)
	}
	if err := p.Return(id, c); !errors.Is(err, ErrNotLeased) {
		t.Fatalf("a second Return: %v, want ErrNotLeased", err)
	}
	stranger := alg.NewContext()
	if err := p.Return(id, stranger); !errors.Is(err, ErrNotLeased) {
		t.Fatalf("Return of a context never leased: %v, want ErrNotLeased", err)
	}
	if n := p.Leased(); n != 1 {
		t.Fatalf("Leased %d after one good and two refused Returns of two leases, want 1", n)
	}
	a, errA := p.Lease(id)
	b, errB := p.Lease(id)
	if errA != nil || errB != nil || a == b || a == keep || b == keep {
		t.Fatalf("two Leases after a double Return: %p %p (%v %v), holder %p: want three distinct contexts", a, b, errA, errB, keep)
	}
}

// TestNewShards: a shard count below 0 or above scratch.MaxShards
// (math.MaxInt once panicked in makeslice) is ErrShards; 0 is GOMAXPROCS,
// at most MaxShards.
func TestNewShards(t *testing.T) {
	for _, n := range []int{-1, math.MinInt, scratch.MaxShards + 1, math.MaxInt} {
		if p, err := New(Config{Shards: n}); !errors.Is(err, ErrShards) || p != nil {
			t.Errorf("New(Shards %d): %v, want ErrShards", n, err)
		}
	}
	for _, n := range []int{0, 1, scratch.MaxShards} {
		if _, err := New(Config{Shards: n}); err != nil {
			t.Errorf("New(Shards %d): %v", n, err)
		}
	}
	if s := scratch.New(math.MaxInt).Shards(); s != scratch.MaxShards {
		t.Errorf("scratch.New(math.MaxInt) has %d shards, want MaxShards", s)
	}
}
