package reclaim

import (
	"sync/atomic"
	"testing"
)

// oneCount is the unsharded baseline: the same protocol with a single shared
// reader count, so every reader of the object writes the same cache line.
type oneCount struct {
	state atomic.Uint32
	n     atomic.Int64
}

func (g *oneCount) Acquire() bool {
	if g.state.Load() != live {
		return false
	}
	g.n.Add(1)
	if g.state.Load() != live {
		g.n.Add(-1)
		return false
	}
	return true
}

func (g *oneCount) Release() {
	g.n.Add(-1)
	if g.state.Load() != live {
		panic("not benchmarked")
	}
}

func BenchmarkAcquireRelease(b *testing.B) {
	b.Run("sharded", func(b *testing.B) {
		var g Guard
		b.ReportAllocs()
		for b.Loop() {
			p, _ := g.Acquire()
			g.Release(p)
		}
	})
	b.Run("onecount", func(b *testing.B) {
		var g oneCount
		b.ReportAllocs()
		for b.Loop() {
			g.Acquire()
			g.Release()
		}
	})
}

// BenchmarkAcquireReleaseParallel is the popular-MKT case: every goroutine
// pins the same object.
func BenchmarkAcquireReleaseParallel(b *testing.B) {
	b.Run("sharded", func(b *testing.B) {
		var g Guard
		p, _ := g.Acquire()
		g.Release(p)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				p, _ := g.Acquire()
				g.Release(p)
			}
		})
	})
	b.Run("onecount", func(b *testing.B) {
		var g oneCount
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				g.Acquire()
				g.Release()
			}
		})
	})
}
