package prefixmap

import (
	"fmt"
	"net/netip"
	"testing"
	"time"
)

// host returns the i-th /32 of the BGP-listener case: all peers under one
// tag.
func host(i int) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), 32)
}

func filled(n int) *Map[*int] {
	m := new(Map[*int])
	for i := range n {
		m.Insert(host(i), 0, new(int))
	}
	m.Insert(netip.MustParsePrefix("0.0.0.0/0"), 0, new(int)) // a default key: two lengths to probe
	return m
}

var sizes = []int{16, 16384, 1000000}

// BenchmarkLookup looks up peers in random order (a cache miss per level
// at a million entries): longest match only, as TCP-MD5 does, and every
// match (both lengths), as TCP-AO's receive lookup may.
func BenchmarkLookup(b *testing.B) {
	for _, n := range sizes {
		m := filled(n)
		for _, all := range []bool{false, true} {
			b.Run(fmt.Sprintf("n=%d/all=%v", n, all), func(b *testing.B) {
				b.ReportAllocs()
				x, seen := uint32(1), 0
				for b.Loop() {
					x = x*1664525 + 1013904223
					m.Lookup(host(int(x>>8)%n).Addr(), 0, func(p netip.Prefix, v *int) bool {
						seen++
						return all
					})
				}
				if seen < b.N {
					b.Fatal("missed")
				}
			})
		}
	}
}

func BenchmarkLookupParallel(b *testing.B) {
	m := filled(16384)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		x := uint32(1)
		for pb.Next() {
			x = x*1664525 + 1013904223
			m.Lookup(host(int(x>>8)%16384).Addr(), 0, func(p netip.Prefix, v *int) bool { return false })
		}
	})
}

// BenchmarkInsertDelete keeps n entries while adding a new peer and
// removing the oldest on each iteration; it reports the time of each half.
func BenchmarkInsertDelete(b *testing.B) {
	for _, n := range []int{16384, 1000000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			m := filled(n)
			v := new(int)
			var ins, del time.Duration
			b.ReportAllocs()
			i := n
			for b.Loop() {
				t0 := time.Now()
				m.Insert(host(i), 0, v)
				t1 := time.Now()
				m.Delete(host(i-n), 0, nil)
				del += time.Since(t1)
				ins += t1.Sub(t0)
				i++
			}
			b.ReportMetric(float64(ins.Nanoseconds())/float64(b.N), "insert-ns/op")
			b.ReportMetric(float64(del.Nanoseconds())/float64(b.N), "delete-ns/op")
		})
	}
}

// BenchmarkOverlaps is the duplicate check before adding a key: a new /32
// that overlaps only the default, and a /24 that holds 256 peers (fn stops
// at the first).
func BenchmarkOverlaps(b *testing.B) {
	for _, n := range []int{16384, 1000000} {
		m := filled(n)
		for _, c := range []struct {
			name string
			p    netip.Prefix
		}{{"new32", host(n + 1)}, {"has256", netip.MustParsePrefix("10.0.1.0/24")}} {
			b.Run(fmt.Sprintf("n=%d/%s", n, c.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					m.Overlaps(c.p, 0, func(p netip.Prefix, v *int) bool { return p.Bits() == 0 })
				}
			})
		}
	}
}
