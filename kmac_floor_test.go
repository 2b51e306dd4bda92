//go:build unix

package tcpsig_test

import (
	"crypto/sha3"
	"testing"

	"github.com/tcpsig/tcpsig/mac"
)

// safeKMAC is KMAC256-128's safe floor (KMAC256 with L = 128, S = "", SP
// 800-185 §4.3), written out on crypto/sha3 apart from package mac: the
// cSHAKE256 state after the padded key, copied (a struct copy) per
// message, then the message and right_encode(128) absorbed and 16 bytes
// squeezed.
type safeKMAC struct {
	keyed, w sha3.SHAKE
	out      [16]byte
	l        [2]byte // right_encode(128)
}

func newSafeKMAC(key []byte) *safeKMAC {
	x := sha3.NewCSHAKE256([]byte("KMAC"), nil)
	// bytepad(encode_string(key), 136): left_encode(136), left_encode of
	// the key's bit length, the key, zeros to a multiple of 136.
	b := []byte{1, 136}
	if bits := 8 * len(key); bits < 256 {
		b = append(b, 1, byte(bits))
	} else {
		b = append(b, 2, byte(bits>>8), byte(bits))
	}
	b = append(b, key...)
	b = append(b, make([]byte, (136-len(b)%136)%136)...)
	x.Write(b)
	return &safeKMAC{keyed: *x, l: [2]byte{128, 1}}
}

func (k *safeKMAC) sum(out, msg []byte) []byte {
	k.w = k.keyed
	k.w.Write(msg)
	k.w.Write(k.l[:])
	k.w.Read(k.out[:])
	return append(out, k.out[:]...)
}

// newBareKMAC is the bare sponge under KMAC256-128: cSHAKE256 with no key
// absorbed, copied per message, over the same bytes (BenchmarkMAC's bare).
func newBareKMAC() *safeKMAC {
	return &safeKMAC{keyed: *sha3.NewCSHAKE256([]byte("KMAC"), nil), l: [2]byte{128, 1}}
}

// BenchmarkKMACGap splits BenchmarkFloor's kmac256-128 gap at 1448 B in
// two, each an interleaved ratio like BenchmarkFloor's: "context" is
// package mac's context over the segment's 1504 bytes, written as the
// engine writes them (SNE, pseudo-header, header and the payload's first
// bytes staged into one 136-byte block, then the payload's rest), against
// the safe floor; "engine" is Conn.Sign of the segment against that
// context call, which leaves the engine's own work around the MAC.
func BenchmarkKMACGap(b *testing.B) {
	a, err := mac.Lookup("kmac256-128")
	if err != nil {
		b.Fatal(err)
	}
	key, msg := bytesOf(a.Size(), 1), bytesOf(aoCoveredFor(a.Name(), 1448), 2)
	var k mac.Key
	if err := k.Init(a, key); err != nil {
		b.Fatal(err)
	}
	w := a.NewContext()
	staged, pay := make([]byte, 136), msg[136:]
	out := make([]byte, 0, mac.MaxSize)
	context := func() {
		copy(staged, msg[:136])
		_ = w.Start(&k)
		w.Write(staged)
		w.Write(pay)
		out = w.Finish(out[:0])
	}
	context()
	if want := newSafeKMAC(key).sum(nil, msg); !mac.Equal(out, want) {
		b.Fatalf("context's MAC %x, floor's %x", out, want)
	}
	b.Run("context", func(b *testing.B) { ratio(b, context, safeFloor(b, a, key, msg), nil) })
	b.Run("engine", func(b *testing.B) {
		sign, _, done := aoOps(b, a.Name(), 1448)
		defer done()
		ratio(b, sign, context, nil)
	})
}
