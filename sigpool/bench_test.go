package sigpool

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tcpsig/tcpsig/mac"
)

// sink keeps results live.
var sink []byte

// BenchmarkStartEnd is the pool's own overhead: Start and End from every
// P at once.
func BenchmarkStartEnd(b *testing.B) {
	p := New(Config{})
	id, err := p.Alloc(lookup(b, "hmac(sha256)"), 60)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu0 := cpuTime()
	defer reportCPU(b, cpu0)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p.Start(id).End()
		}
	})
}

// BenchmarkSign is one segment's MAC through the pool from every P at
// once: Start, Key, Write of the message, Sum into a reused buffer, End.
// 48 bytes is what a TCP-AO MAC covers for a pure ACK (SNE, IPv4
// pseudo-header, 32-byte header with the option), 1496 for a 1448-byte
// payload.
func BenchmarkSign(b *testing.B) {
	for _, a := range allAlgorithms() {
		for _, backend := range []Backend{Clone, Rekey} {
			if backend == Clone && !a.CanClone() {
				continue // would be Rekey again
			}
			for _, size := range []int{48, 1496} {
				b.Run(fmt.Sprintf("%s/%v/%d", a, backend, size), func(b *testing.B) {
					benchSign(b, New(Config{Backend: backend}), a, size)
				})
			}
		}
	}
}

func benchSign(b *testing.B, p *Pool, a *mac.Algorithm, size int) {
	id, err := p.Alloc(a, 60)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Release(id)
	raw := keyFor(a, 1)
	tmpl := template(b, a, raw)
	msg := make([]byte, size)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	cpu0 := cpuTime()
	defer reportCPU(b, cpu0)
	b.RunParallel(func(pb *testing.PB) {
		sum := make([]byte, 0, mac.MaxSize)
		for pb.Next() {
			r := p.Start(id)
			if err := r.Key(tmpl, raw); err != nil {
				panic(err)
			}
			r.MAC.Write(msg)
			sum = r.MAC.Sum(sum[:0])
			r.End()
		}
		sink = sum
	})
}

// reportCPU reports the process CPU time per op since cpu0 ("cpu-ns/op"):
// the sum over all Ps, so with RunParallel it is the cost of one op on
// one core, whatever else runs on the machine.
func reportCPU(b *testing.B, cpu0 int64) {
	if cpu1 := cpuTime(); cpu0 >= 0 && cpu1 >= 0 && b.N > 0 {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkPick compares ways of choosing the first shard to try, each
// through a full Start/End from every P. rand is what Start uses.
func BenchmarkPick(b *testing.B) {
	p := New(Config{})
	id, _ := p.Alloc(lookup(b, "hmac(sha256)"), 60)
	n := uint32(len(p.shards))
	b.Run("rand", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b, cpuTime())
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				p.Start(id).End()
			}
		})
	})
	b.Run("cheaprand", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b, cpuTime())
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				i := uint32(uint64(cheaprand()) * uint64(n) >> 32)
				p.startAt(id, i, n).End()
			}
		})
	})
	b.Run("counter", func(b *testing.B) {
		var ctr atomic.Uint32
		b.ReportAllocs()
		defer reportCPU(b, cpuTime())
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				i := ctr.Add(1) % n
				p.startAt(id, i, n).End()
			}
		})
	})
	b.Run("pool-hint", func(b *testing.B) {
		// sync.Pool's per-P private slot as a P-affine hint: the shard
		// this P used last. Not a lock: the hint is only where to start.
		hints := make([]uint32, n)
		for i := range hints {
			hints[i] = uint32(i)
		}
		var next atomic.Uint32
		var sp sync.Pool
		sp.New = func() any { return &hints[next.Add(1)%n] }
		b.ReportAllocs()
		defer reportCPU(b, cpuTime())
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				h := sp.Get().(*uint32)
				r := p.startAt(id, *h, n)
				sp.Put(&hints[r.sh.idx])
				r.End()
			}
		})
	})
	b.Run("goroutine-local", func(b *testing.B) {
		// The upper bound: each goroutine always starts at "its" shard.
		var g atomic.Uint32
		b.ReportAllocs()
		defer reportCPU(b, cpuTime())
		b.RunParallel(func(pb *testing.PB) {
			i := (g.Add(1) - 1) % n
			for pb.Next() {
				p.startAt(id, i, n).End()
			}
		})
	})
}

// BenchmarkSpacers measures the spacer contexts of Alloc, which keep
// neighbouring shards' contexts off each other's cache lines.
func BenchmarkSpacers(b *testing.B) {
	for _, name := range []string{"hmac(sha1)", "hmac(sha256)", "cmac(aes128)"} {
		for _, on := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/spacers=%v", name, on), func(b *testing.B) {
				defer func(v bool) { useSpacers = v }(useSpacers)
				useSpacers = on
				benchSign(b, New(Config{}), lookup(b, name), 48)
			})
		}
	}
}

// BenchmarkDirect is the floor: the same MAC on a goroutine-owned context,
// no pool.
func BenchmarkDirect(b *testing.B) {
	for _, name := range []string{"hmac(sha1)", "hmac(sha256)", "cmac(aes128)"} {
		for _, size := range []int{48, 1496} {
			b.Run(fmt.Sprintf("%s/%d", name, size), func(b *testing.B) {
				a := lookup(b, name)
				raw := keyFor(a, 1)
				tmpl := template(b, a, raw)
				msg := make([]byte, size)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					c := a.NewContext()
					sum := make([]byte, 0, mac.MaxSize)
					for pb.Next() {
						c.Load(tmpl)
						c.Write(msg)
						sum = c.Sum(sum[:0])
					}
					sink = sum
				})
			})
		}
	}
}
