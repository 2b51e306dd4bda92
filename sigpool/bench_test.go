package sigpool

import (
	"fmt"
	"testing"

	"github.com/tcpsig/tcpsig/mac"
)

// sink keeps results live.
var sink []byte

// BenchmarkStartEnd is the pool's own overhead: Start and End from every
// P at once.
func BenchmarkStartEnd(b *testing.B) {
	p := mustNew(Config{})
	id, err := p.Alloc(lookup(b, "hmac(sha256)"), 60)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu0 := cpuTime()
	defer reportCPU(b, cpu0)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			mustStart(p, id).End()
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
			if false {
				continue // would be Rekey again
			}
			for _, size := range []int{48, 1496} {
				b.Run(fmt.Sprintf("%s/%v/%d", a, backend, size), func(b *testing.B) {
					benchSign(b, mustNew(Config{Backend: backend}), a, size)
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
			r := mustStart(p, id)
			if err := r.Key(tmpl); err != nil {
				panic(err)
			}
			r.MAC.Write(msg)
			sum = r.MAC.Finish(sum[:0])
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
						c.Start(tmpl)
						c.Write(msg)
						sum = c.Finish(sum[:0])
					}
					sink = sum
				})
			})
		}
	}
}
