package md5sig

import (
	"crypto/md5"
	"fmt"
	"hash"
	"slices"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/segment"
)

// benchSizes are TCP payload lengths: a bare ACK, a small message, the
// IPv4 minimum MSS, a full 1500-byte-MTU segment and a full 9000-byte
// jumbo segment (each with a 20-byte header and the 20 bytes of the MD5
// option).
var benchSizes = []int{0, 64, 536, 1448, 8948}

var benchKey = []byte("bgp-session-secret")

// benchSegments returns an outgoing segment and the same segment signed,
// as received, for a keyring that has a key for the peer.
func benchSegments(b *testing.B, n int) (r *Keyring, out, in segment.Segment) {
	a, p := addr("192.0.2.1"), addr("192.0.2.2")
	r = NewKeyring(nil)
	mustAdd(b, r, keys.MD5{Peer: pfx("192.0.2.0/24"), Key: benchKey})
	payload := make([]byte, n)
	for i := range payload {
		payload[i] = byte(i)
	}
	out = mustSeg(b, a, p, append(tcpHeader(40000, 179, 1, 1, segment.ACK, true), payload...))
	in = mustSeg(b, p, a, append(tcpHeader(179, 40000, 1, 1, segment.ACK, true), payload...))
	if err := r.Sign(&in, 0); err != nil {
		b.Fatal(err)
	}
	return r, out, in
}

func BenchmarkSign(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("payload=%d", n), func(b *testing.B) {
			r, seg, _ := benchSegments(b, n)
			b.ReportAllocs()
			b.SetBytes(int64(n))
			for b.Loop() {
				if err := r.Sign(&seg, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkVerify(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("payload=%d", n), func(b *testing.B) {
			r, _, seg := benchSegments(b, n)
			b.ReportAllocs()
			b.SetBytes(int64(n))
			for b.Loop() {
				if err := r.Verify(&seg, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// bareMD5 returns crypto/md5 alone over the bytes Sign covers for seg: the
// IPv4 pseudo-header and the 20-byte header in one write, the payload, the
// key, with one hash reused and no key lookup, pool or compare.
func bareMD5(seg *segment.Segment) func() {
	var buf [12 + 20]byte
	hdr := segment.AppendPseudoHeader(buf[:0], seg.Src(), seg.Dst(), seg.Len())
	hdr = append(hdr, seg.Header()[:20]...)
	var h hash.Hash = md5.New()
	sum := make([]byte, 0, md5.Size)
	return func() {
		h.Reset()
		h.Write(hdr)
		h.Write(seg.Payload())
		h.Write(benchKey)
		sum = h.Sum(sum[:0])
	}
}

// BenchmarkBareMD5 is the floor: crypto/md5 alone over the same bytes
// (IPv4 pseudo-header and the 20-byte header in one write, the payload,
// the key), with a hash reused across iterations and no key lookup, pool
// or compare.
func BenchmarkBareMD5(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("payload=%d", n), func(b *testing.B) {
			_, seg, _ := benchSegments(b, n)
			bare := bareMD5(&seg)
			b.ReportAllocs()
			b.SetBytes(int64(n))
			for b.Loop() {
				bare()
			}
		})
	}
}

// BenchmarkVsBareMD5 measures Sign and Verify against bare crypto/md5 in
// the same run, interleaved in short rounds (32 operations of each, the
// order alternating), and reports the median over the rounds of bare
// time / md5sig time in percent: the share of crypto/md5's speed that
// md5sig keeps. Interleaving makes the ratio meaningful on a loaded
// machine, where separate benchmarks see different load.
func BenchmarkVsBareMD5(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("payload=%d", n), func(b *testing.B) {
			r, out, in := benchSegments(b, n)
			bare := bareMD5(&out)
			const batch = 32
			run := func(f func()) time.Duration {
				t0 := time.Now()
				for range batch {
					f()
				}
				return time.Since(t0)
			}
			sign := func() { _ = r.Sign(&out, 0) }
			verify := func() {
				if err := r.Verify(&in, 0); err != nil {
					b.Fatal(err)
				}
			}
			var signPct, verifyPct []float64
			round := 0
			for b.Loop() {
				var tb, ts, tv time.Duration
				if round++; round%2 == 0 {
					tb, ts, tv = run(bare), run(sign), run(verify)
				} else {
					tv, ts, tb = run(verify), run(sign), run(bare)
				}
				signPct = append(signPct, 100*float64(tb)/float64(ts))
				verifyPct = append(verifyPct, 100*float64(tb)/float64(tv))
			}
			b.ReportMetric(median(signPct), "sign-%-of-bare")
			b.ReportMetric(median(verifyPct), "verify-%-of-bare")
		})
	}
}

func median(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}
