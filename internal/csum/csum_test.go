package csum

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// sum16 is the checksum sum as RFC 1071 states it: 16-bit words, one at
// a time.
func sum16(b []byte, s uint64) uint64 {
	for len(b) >= 2 {
		s += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint64(b[0]) << 8
	}
	return s
}

// TestSum: the 64-bit Sum folds to the same 16-bit checksum as the
// word-by-word one, for every length up to a few blocks, chained calls,
// starting sums near overflow and all-ones data (the most carries).
func TestSum(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 300)
	for round := range 200 {
		for i := range buf {
			switch round % 3 {
			case 0:
				buf[i] = byte(r.Uint32())
			case 1:
				buf[i] = 0xff
			default:
				buf[i] = byte(0xff - r.IntN(2))
			}
		}
		for n := range len(buf) {
			starts := []uint64{0, 0xffff, 0xffffffff, 1<<40 - 1, r.Uint64() >> 12}
			for _, s0 := range starts {
				if got, want := Fold(Sum(buf[:n], s0)), Fold(sum16(buf[:n], s0)); got != want {
					t.Fatalf("round %d, len %d, start %#x: %#04x, want %#04x", round, n, s0, got, want)
				}
			}
			k := n &^ 1 / 2 &^ 1
			if got, want := Fold(Sum(buf[k:n], Sum(buf[:k], 0))), Fold(sum16(buf[:n], 0)); got != want {
				t.Fatalf("round %d, len %d split %d: %#04x, want %#04x", round, n, k, got, want)
			}
		}
	}
}
