package scratch

import (
	"errors"
	"math"
	"sync"
	"testing"

	"github.com/tcpsig/tcpsig/internal/cacheline"
)

func TestSizesAndGrowOnly(t *testing.T) {
	s := New(3)
	if s.Size() != 0 || s.Shards() != 3 {
		t.Fatalf("new: size %d shards %d", s.Size(), s.Shards())
	}
	for i := 0; i < s.Shards(); i++ {
		if len(s.Buf(i)) != 0 {
			t.Fatalf("shard %d: len %d before any reservation", i, len(s.Buf(i)))
		}
	}
	for _, step := range []struct{ reserve, want int }{
		{60, 60},   // TCP-AO's and TCP-MD5's reservation
		{40, 60},   // smaller: no change
		{0, 60},    // no-op
		{-5, 60},   // no-op
		{60, 60},   // same: no change
		{129, 129}, // crosses an alignment unit
		{1 << 16, 1 << 16},
		{100, 1 << 16},
	} {
		before := make([][]byte, s.Shards())
		for i := range before {
			before[i] = s.Buf(i)
		}
		s.Reserve(step.reserve)
		if s.Size() != step.want {
			t.Fatalf("Reserve(%d): size %d, want %d", step.reserve, s.Size(), step.want)
		}
		for i := 0; i < s.Shards(); i++ {
			b := s.Buf(i)
			if len(b) != step.want || cap(b) != step.want {
				t.Fatalf("Reserve(%d): shard %d len %d cap %d, want %d", step.reserve, i, len(b), cap(b), step.want)
			}
			if m := misalign(b); m != 0 && len(b) > 0 {
				t.Fatalf("shard %d buffer misaligned by %d", i, m)
			}
			grew := step.want != len(before[i])
			same := len(before[i]) > 0 && &before[i][0] == &b[0]
			if grew == same && len(before[i]) > 0 {
				t.Fatalf("Reserve(%d): shard %d replaced=%v, want %v", step.reserve, i, !same, grew)
			}
		}
	}
}

// TestNoSharedLines checks that no two shards' buffers come within one
// alignment unit of each other.
func TestNoSharedLines(t *testing.T) {
	for _, n := range []int{1, 60, 128, 200, 4000} {
		s := New(8)
		s.Reserve(n)
		type span struct{ lo, hi uintptr }
		var spans []span
		for i := 0; i < s.Shards(); i++ {
			b := s.Buf(i)
			lo := addr(b)
			hi := lo + uintptr(len(b))
			align := uintptr(cacheline.Align())
			spans = append(spans, span{lo &^ (align - 1), (hi + align - 1) &^ (align - 1)})
		}
		for i := range spans {
			for j := range spans {
				if i != j && spans[i].lo < spans[j].hi && spans[j].lo < spans[i].hi {
					t.Fatalf("size %d: shards %d and %d share an aligned unit", n, i, j)
				}
			}
		}
	}
}

// TestReserveWhileInUse grows the buffers while each shard's owner keeps
// filling and checking the buffer it holds (run with -race): an old
// buffer must stay intact and usable, and every new one must be at least
// as large as the reservation that published it.
func TestReserveWhileInUse(t *testing.T) {
	const shards = 4
	s := New(shards)
	s.Reserve(16)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan string, shards)
	for i := 0; i < shards; i++ {
		wg.Add(1)
		go func(shard int) {
			defer wg.Done()
			marker := byte(shard + 1)
			for iter := 0; ; iter++ {
				select {
				case <-stop:
					return
				default:
				}
				min := s.Size()
				b := s.Buf(shard) // held across concurrent Reserves
				if len(b) < min {
					errs <- "buffer shorter than a completed reservation"
					return
				}
				for k := range b {
					b[k] = marker
				}
				for k := range b {
					if b[k] != marker {
						errs <- "held buffer changed under its owner"
						return
					}
				}
			}
		}(i)
	}
	for n := 17; n <= 4096; n += 37 {
		s.Reserve(n)
		if s.Size() < n {
			t.Fatalf("Reserve(%d): size %d", n, s.Size())
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

func TestBufAllocs(t *testing.T) {
	s := New(2)
	s.Reserve(60)
	if n := testing.AllocsPerRun(100, func() { _ = s.Buf(1) }); n != 0 {
		t.Fatalf("Buf: %v allocs", n)
	}
	if n := testing.AllocsPerRun(100, func() { s.Reserve(60) }); n != 0 {
		t.Fatalf("Reserve without growth: %v allocs", n)
	}
}

// TestReserveHuge: a reservation past MaxSize (math.MaxInt once
// overflowed the rounding and panicked) is ErrTooLarge and changes
// nothing.
func TestReserveHuge(t *testing.T) {
	s := New(2)
	if err := s.Reserve(100); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{math.MaxInt, MaxSize + 1} {
		if err := s.Reserve(n); !errors.Is(err, ErrTooLarge) {
			t.Errorf("Reserve(%d): %v, want ErrTooLarge", n, err)
		}
	}
	if s.Size() != 100 {
		t.Errorf("size %d after refused reservations, want 100", s.Size())
	}
}
