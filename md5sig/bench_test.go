package md5sig

import (
	"crypto/md5"
	"fmt"
	"hash"
	"testing"

	"github.com/tcpsig/tcpsig/internal/segment"
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
	mustAdd(b, r, Config{Peer: pfx("192.0.2.0/24"), Key: benchKey})
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

// BenchmarkBareMD5 is the floor: crypto/md5 alone over the same bytes
// (IPv4 pseudo-header and the 20-byte header in one write, the payload,
// the key), with a hash reused across iterations and no key lookup, pool
// or compare.
func BenchmarkBareMD5(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("payload=%d", n), func(b *testing.B) {
			_, seg, _ := benchSegments(b, n)
			var buf [12 + 20]byte
			hdr := segment.AppendPseudoHeader(buf[:0], seg.Src, seg.Dst, seg.Len())
			hdr = append(hdr, seg.Header[:20]...)
			var h hash.Hash = md5.New()
			sum := make([]byte, 0, md5.Size)
			b.ReportAllocs()
			b.SetBytes(int64(n))
			for b.Loop() {
				h.Reset()
				h.Write(hdr)
				h.Write(seg.Payload)
				h.Write(benchKey)
				sum = h.Sum(sum[:0])
			}
		})
	}
}
