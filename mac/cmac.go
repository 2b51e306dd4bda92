package mac

import (
	"crypto/aes"
	"crypto/subtle"
	"encoding/binary"
	"fmt"
)

// cmacEngine is AES-CMAC (RFC 4493 §2.4) over the key schedule and
// subkeys of a Key: the CBC chaining value and the last, possibly full,
// block, which must wait for sum to know whether it is the final one,
// and the first block Compute last ran under a key.
type cmacEngine struct {
	x     [16]byte
	buf   [16]byte
	last  [16]byte // scratch for sum: a local would escape through cipher.Block
	n     int
	first cmacFirst
}

// schedule keeps the AES key and runs its schedule and RFC 4493 §2.3's
// subkeys into k.
func (s *cmacEngine) schedule(k *Key, key []byte) error {
	k.layout(0, 0, len(key))
	copy(k.raw(), key)
	b, err := aes.NewCipher(key)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrKeySize, err)
	}
	k.block = b
	l := &s.last
	*l = [16]byte{}
	b.Encrypt(l[:], l[:])
	double(&k.k1, l)
	double(&k.k2, &k.k1)
	clear(l[:])
	return nil
}

// double is the RFC 4493 subkey step: shift left by one bit, and if the
// top bit was set, xor the last byte with 0x87 (constant time).
func double(dst, src *[16]byte) {
	msb := src[0] >> 7
	for i := 0; i < 15; i++ {
		dst[i] = src[i]<<1 | src[i+1]>>7
	}
	dst[15] = src[15]<<1 ^ 0x87&-msb
}

func (s *cmacEngine) start(*Key) {
	s.x, s.buf, s.last, s.n = [16]byte{}, [16]byte{}, [16]byte{}, 0
}

func (s *cmacEngine) summed(*Key) []byte { return s.x[:] }

func (s *cmacEngine) wipe() { *s = cmacEngine{} }

func (s *cmacEngine) write(k *Key, p []byte) {
	if s.n > 0 {
		m := copy(s.buf[s.n:], p)
		s.n += m
		p = p[m:]
		if len(p) == 0 {
			return
		}
		subtle.XORBytes(s.x[:], s.x[:], s.buf[:])
		k.block.Encrypt(s.x[:], s.x[:])
		s.n = 0
	}
	for len(p) > 16 {
		subtle.XORBytes(s.x[:], s.x[:], p[:16])
		k.block.Encrypt(s.x[:], s.x[:])
		p = p[16:]
	}
	s.n = copy(s.buf[:], p)
}

func (s *cmacEngine) sum(k *Key, dst []byte) []byte {
	last := &s.last
	if s.n == 16 {
		subtle.XORBytes(last[:], s.buf[:], k.k1[:])
	} else {
		*last = [16]byte{}
		copy(last[:], s.buf[:s.n])
		last[s.n] = 0x80
		subtle.XORBytes(last[:], last[:], k.k2[:])
	}
	subtle.XORBytes(last[:], last[:], s.x[:])
	k.block.Encrypt(s.x[:], last[:]) // x keeps the MAC (summed)
	return append(dst, s.x[:]...)
}

// cmacFirst is the CBC chaining value after one first block under one
// key: what compute reuses when the next message starts with the same block.
type cmacFirst struct {
	gen    uint64 // the Key's generation; 0: empty (no Key numbered 0 is cached)
	b0, b1 uint64 // the block, as two little-endian words
	x      [16]byte
}

// compute is write and sum for a whole message, without buffering: RFC 4493
// §2.4 over msg in place, from a zero chaining value, the first block's
// encryption taken from f when f holds it. The last block, padded and
// xored with its subkey, is built first, in 8-byte words, so that its
// stores have landed by the time the chain reaches it; the first block is
// compared in words too. (A 16-byte load of bytes just stored in
// narrower pieces stalls.)
func (s *cmacEngine) compute(k *Key, dst, msg []byte) []byte {
	f := &s.first
	le := binary.LittleEndian
	x, last := &s.x, &s.last
	n := len(msg) &^ 15 // the whole blocks before the last
	if n == len(msg) && n > 0 {
		n -= 16
	}
	tail := msg[n:]
	var w0, w1 uint64
	if len(tail) == 16 {
		w0, w1 = le.Uint64(tail)^le.Uint64(k.k1[:]), le.Uint64(tail[8:])^le.Uint64(k.k1[8:])
	} else {
		// The tail padded with 0x80 and zeros, xor K2.
		var p0, p1 uint64
		for i, c := range tail {
			if i < 8 {
				p0 |= uint64(c) << (8 * i)
			} else {
				p1 |= uint64(c) << (8 * (i - 8))
			}
		}
		if t := len(tail); t < 8 {
			p0 |= 0x80 << (8 * t)
		} else {
			p1 |= 0x80 << (8 * (t - 8))
		}
		w0, w1 = p0^le.Uint64(k.k2[:]), p1^le.Uint64(k.k2[8:])
	}
	le.PutUint64(last[:], w0)
	le.PutUint64(last[8:], w1)
	msg = msg[:n]
	if len(msg) > 0 {
		if b0, b1 := le.Uint64(msg), le.Uint64(msg[8:]); k.gen != 0 && f.gen == k.gen && b0 == f.b0 && b1 == f.b1 {
			*x = f.x
		} else {
			*x = [16]byte(msg) // the zero chaining value xor the block
			k.block.Encrypt(x[:], x[:])
			if k.gen != 0 { // an unnumbered (re-keyed) key caches nothing
				f.gen, f.b0, f.b1, f.x = k.gen, b0, b1, *x
			}
		}
		msg = msg[16:]
	} else {
		*x = [16]byte{}
	}
	for len(msg) > 0 {
		subtle.XORBytes(x[:], x[:], msg[:16])
		k.block.Encrypt(x[:], x[:])
		msg = msg[16:]
	}
	subtle.XORBytes(x[:], x[:], last[:])
	k.block.Encrypt(x[:], x[:])
	s.n = 0
	return append(dst, x[:]...)
}
