package mac

import (
	"encoding"
	"fmt"
	"hash"
)

// hmacEngine is HMAC (RFC 2104, FIPS 198-1) over a hash.Hash. A Key holds
// the inner and outer hashes' midstates after absorbing K0^ipad and
// K0^opad, which a message restores instead of hashing the pads; a hash
// that exports no state (RIPEMD-160) keeps the two pad blocks instead,
// which every message absorbs again, as crypto/hmac's Reset does for it.
type hmacEngine struct {
	a              *Algorithm
	inner, outer   hash.Hash
	innerU, outerU encoding.BinaryUnmarshaler
	innerA, outerA encoding.BinaryAppender
	midstates      bool // the Key holds marshalled midstates, not pad blocks
	inState        bool // the finished MAC is in st (padded finish), not tmp
	n              int  // message bytes written since start
	bufs
}

// bufs are the buffers of a context that pads a hash itself (finish.go)
// or keys one, cut from one allocation sized for the hash: a padded tail
// of up to two blocks (then the outer hash's block), a marshalled state
// the digest is read from, and a digest.
type bufs struct {
	all, pad, st, tmp []byte
}

func newBufs(a *Algorithm) bufs {
	p, s := 2*a.blockSize, a.stateLen
	b := make([]byte, p+s+a.size)
	return bufs{all: b, pad: b[:p:p], st: b[p : p+s : p+s], tmp: b[p+s:]}
}

// clear zeroes every buffer (one allocation).
func (b *bufs) clear() { clear(b.all) }

func newHMACEngine(a *Algorithm, midstates bool) *hmacEngine {
	s := &hmacEngine{a: a, inner: a.newHash(), outer: a.newHash(), midstates: midstates, bufs: newBufs(a)}
	s.innerU, _ = s.inner.(encoding.BinaryUnmarshaler)
	s.outerU, _ = s.outer.(encoding.BinaryUnmarshaler)
	s.innerA, _ = s.inner.(encoding.BinaryAppender)
	s.outerA, _ = s.outer.(encoding.BinaryAppender)
	return s
}

// schedule computes K0 (FIPS 198-1: the key, hashed if longer than a
// block, zero-padded to a block) and the two padded blocks, then keeps
// the midstates after absorbing them (or the blocks themselves); it runs
// on the inner hash and the buffers, which it leaves cleared.
func (s *hmacEngine) schedule(k *Key, key []byte) error {
	a, h := s.a, s.inner
	bs := a.blockSize
	k0 := key
	if len(key) > bs {
		h.Reset()
		h.Write(key)
		k0 = h.Sum(s.tmp[:0])
	}
	slen := bs // without midstates, the pad blocks
	if s.midstates {
		h.Reset()
		st, _ := marshal(h, s.st[:0]) // checked at init
		slen = len(st)
	}
	k.layout(2, slen, len(k0))
	copy(k.raw(), k0)
	pad := s.pad[:bs]
	for i, x := range [2]byte{0x36, 0x5c} {
		clear(pad)
		copy(pad, k.raw())
		for j := range pad {
			pad[j] ^= x
		}
		if !s.midstates {
			copy(k.state(i), pad)
			continue
		}
		h.Reset()
		h.Write(pad)
		st, _ := marshal(h, s.st[:0])
		copy(k.state(i), st)
	}
	h.Reset()
	s.bufs.clear()
	return nil
}

func marshal(h hash.Hash, dst []byte) ([]byte, error) {
	if ba, ok := h.(encoding.BinaryAppender); ok {
		return ba.AppendBinary(dst)
	}
	return nil, fmt.Errorf("mac: %T cannot export its state", h)
}

func (s *hmacEngine) start(k *Key) {
	s.n = 0
	if s.midstates {
		_ = s.innerU.UnmarshalBinary(k.state(0)) // our own marshalled state
		return
	}
	s.inner.Reset()
	s.inner.Write(k.state(0))
}

func (s *hmacEngine) write(_ *Key, p []byte) {
	s.inner.Write(p)
	s.n += len(p)
}

func (s *hmacEngine) sum(k *Key, dst []byte) []byte {
	if s.a.lenSize > 0 {
		s.inState = true
		return s.finish(k, dst, nil, s.n)
	}
	in := s.inner.Sum(s.tmp[:0])
	if s.midstates {
		_ = s.outerU.UnmarshalBinary(k.state(1))
	} else {
		s.outer.Reset()
		s.outer.Write(k.state(1))
	}
	s.outer.Write(in)
	s.inState = false
	return append(dst, s.outer.Sum(s.tmp[:0])...)
}

func (s *hmacEngine) summed(*Key) []byte {
	if s.inState {
		return s.st[stateMagic : stateMagic+s.a.size]
	}
	return s.tmp[:s.a.size]
}

// compute writes msg's whole blocks and pads the rest itself when the
// hash lets it (finish.go).
func (s *hmacEngine) compute(k *Key, dst, msg []byte) []byte {
	if s.a.lenSize == 0 || !s.midstates {
		s.start(k)
		s.write(k, msg)
		return s.sum(k, dst)
	}
	s.n = 0                                  // start, in line: one call fewer per message
	_ = s.innerU.UnmarshalBinary(k.state(0)) // our own marshalled state
	full := len(msg) &^ (s.a.blockSize - 1)  // a power of two (init)
	if full > 0 {
		s.inner.Write(msg[:full])
	}
	s.inState = true
	return s.finish(k, dst, msg[full:], len(msg))
}

// finish ends an HMAC whose inner hash has absorbed n message bytes
// after its pad block and the tail (fewer than a block, not yet written):
// it pads, reads the inner digest, and runs the outer hash over it as one
// block. The MAC is appended to dst.
func (s *hmacEngine) finish(k *Key, dst, tail []byte, n int) []byte {
	a, bs := s.a, s.a.blockSize
	p := append(s.pad[:0], tail...)
	p = a.appendPad(p, bs+n)
	s.inner.Write(p)
	in := a.digest(s.innerA, s.st)
	p = append(s.pad[:0], in...)
	p = a.appendPad(p, bs+a.size)
	_ = s.outerU.UnmarshalBinary(k.state(1))
	s.outer.Write(p)
	return append(dst, a.digest(s.outerA, s.st)...)
}

func (s *hmacEngine) wipe() {
	s.bufs.clear()
	s.inner.Reset()
	s.outer.Reset()
	s.n, s.inState = 0, false
}
