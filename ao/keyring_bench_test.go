//go:build unix

package ao

import (
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"syscall"
	"testing"

	"github.com/tcpsig/tcpsig/keys"
)

// cpuMeter sums the process's CPU time over the timed parts of a
// benchmark and reports it per op ("cpu-ns/op"): on a machine shared with
// other jobs, wall time per op includes time the benchmark was not
// running at all.
type cpuMeter struct{ total, start int64 }

func cpuNow() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func (c *cpuMeter) on()  { c.start = cpuNow() }
func (c *cpuMeter) off() { c.total += cpuNow() - c.start }

func (c *cpuMeter) report(b *testing.B) {
	if b.N > 0 {
		b.ReportMetric(float64(c.total)/float64(b.N), "cpu-ns/op")
	}
}

// The BGP listener case of Linux's bench-lookups.c: one MKT per peer
// address (distinct /32s), SendID = RecvID = 100. Linux, with 16384 keys:
// add 2.2 ms, delete 6.9 ms, async delete 0.03 ms per key.

var benchKey = []byte("bgp-neighbor-key")

// benchAddr is the i-th peer: 10.0.0.0 + i.
func benchAddr(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
}

func benchCfg(i int) keys.AO {
	return keys.AO{Peer: netip.PrefixFrom(benchAddr(i), 32), SendID: 100, RecvID: 100, Algorithm: "hmac(sha1)", Key: benchKey}
}

// benchFill adds peers [from, to) to r and returns their MKTs.
func benchFill(b *testing.B, r *Keyring, from, to int) []*MKT {
	ms := make([]*MKT, 0, to-from)
	for i := from; i < to; i++ {
		m, err := r.Add(benchCfg(i))
		if err != nil {
			b.Fatal(err)
		}
		ms = append(ms, m)
	}
	return ms
}

const benchKeys = 16384

// benchBatch is how many operations run between untimed refills, so the
// keyring stays within [16384, 16384+benchBatch] keys.
const benchBatch = 1024

// BenchmarkKeyringAdd adds a key to a keyring of 16384 (the added keys are
// deleted again, untimed, every 1024 adds).
func BenchmarkKeyringAdd(b *testing.B) {
	r := NewKeyring(nil)
	benchFill(b, r, 0, benchKeys)
	var cpu cpuMeter
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(benchBatch, b.N-done)
		cpu.on()
		ms := benchFill(b, r, benchKeys, benchKeys+n)
		cpu.off()
		b.StopTimer()
		for _, m := range ms {
			if err := r.Delete(m, DeleteOptions{Async: true}); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		done += n
	}
	b.StopTimer()
	cpu.report(b)
	if r.Len() != benchKeys {
		b.Fatalf("Len %d", r.Len())
	}
}

// BenchmarkKeyringDelete deletes a key from a keyring of 16384 with no
// reader in flight, synchronously (returns after the wipe) and
// asynchronously; the keys are added back, untimed, every 1024 deletes.
func BenchmarkKeyringDelete(b *testing.B) {
	for _, async := range []bool{false, true} {
		name := "sync"
		if async {
			name = "async"
		}
		b.Run(name, func(b *testing.B) {
			r := NewKeyring(nil)
			benchFill(b, r, benchBatch, benchKeys)
			var cpu cpuMeter
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; {
				n := min(benchBatch, b.N-done)
				b.StopTimer()
				// Refill the first n peers; delete them oldest first, the
				// worst case of Linux's newest-first list.
				ms := benchFill(b, r, 0, n)
				b.StartTimer()
				cpu.on()
				for _, m := range ms {
					if err := r.Delete(m, DeleteOptions{Async: async}); err != nil {
						b.Fatal(err)
					}
				}
				cpu.off()
				done += n
			}
			b.StopTimer()
			cpu.report(b)
			if r.Len() != benchKeys-benchBatch {
				b.Fatalf("Len %d", r.Len())
			}
		})
	}
}

var (
	benchRingsMu sync.Mutex
	benchRings   = map[int]*Keyring{}
)

// benchRing returns a keyring of n peers, built once per process.
func benchRing(b *testing.B, n int) *Keyring {
	benchRingsMu.Lock()
	defer benchRingsMu.Unlock()
	if r := benchRings[n]; r != nil {
		return r
	}
	r := NewKeyring(nil)
	benchFill(b, r, 0, n)
	benchRings[n] = r
	runtime.GC() // not during the measurement: a million MKTs take a while to mark
	return r
}

// BenchmarkKeyringLookupRecv is the per-segment lookup (peer address,
// KeyID, L3 index) at 16, 16384 and 1,000,000 keys: one peer over and
// over (hot: the index in cache), hits spread over all peers (spread:
// each lookup's path through the index mostly out of cache at a million
// keys), and a miss (a peer with no key).
func BenchmarkKeyringLookupRecv(b *testing.B) {
	for _, n := range []int{16, benchKeys, 1000000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			r := benchRing(b, n)
			const mask = 4095
			addrs := make([]netip.Addr, mask+1)
			for i := range addrs {
				addrs[i] = benchAddr(int(uint64(i) * 2654435761 % uint64(n)))
			}
			miss := netip.MustParseAddr("192.0.2.1")
			b.Run("hot", func(b *testing.B) {
				b.ReportAllocs()
				a := addrs[7]
				var cpu cpuMeter
				cpu.on()
				for b.Loop() {
					if r.LookupRecv(a, 100, 0) == nil {
						b.Fatal("miss")
					}
				}
				cpu.off()
				cpu.report(b)
			})
			b.Run("spread", func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				var cpu cpuMeter
				cpu.on()
				for b.Loop() {
					if r.LookupRecv(addrs[i&mask], 100, 0) == nil {
						b.Fatal("miss")
					}
					i++
				}
				cpu.off()
				cpu.report(b)
			})
			b.Run("miss", func(b *testing.B) {
				b.ReportAllocs()
				var cpu cpuMeter
				cpu.on()
				for b.Loop() {
					if r.LookupRecv(miss, 100, 0) != nil {
						b.Fatal("hit")
					}
				}
				cpu.off()
				cpu.report(b)
			})
		})
	}
}
