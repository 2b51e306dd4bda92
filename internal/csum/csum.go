// Package csum is the Internet checksum (RFC 1071) as tcpsig's packets
// need it: a running ones' complement sum of big-endian 16-bit words, its
// fold to 16 bits, and the incremental update of RFC 1624. A TCP checksum
// from here is never 0 (see TCP).
package csum

import (
	"encoding/binary"
	"math/bits"
)

// Sum adds b, as big-endian 16-bit words (an odd last byte padded with
// zero), to the running ones' complement sum s. Every call but the last
// must pass an even length, as the checksum's callers do.
//
// It adds 64-bit big-endian words with end-around carry: as 2^16 ≡ 1
// modulo 2^16−1, so is 2^64, and the ones' complement sum of the 64-bit
// words folds to that of the 16-bit words (RFC 1071 §2(B)). s is folded
// to 32 bits first so that it adds in as one word.
func Sum(b []byte, s uint64) uint64 {
	acc := s>>32 + s&0xffffffff
	var c uint64
	for len(b) >= 32 {
		var c1, c2, c3, c4 uint64
		acc, c1 = bits.Add64(acc, binary.BigEndian.Uint64(b), 0)
		acc, c2 = bits.Add64(acc, binary.BigEndian.Uint64(b[8:]), c1)
		acc, c3 = bits.Add64(acc, binary.BigEndian.Uint64(b[16:]), c2)
		acc, c4 = bits.Add64(acc, binary.BigEndian.Uint64(b[24:]), c3)
		c += c4
		b = b[32:]
	}
	for len(b) >= 8 {
		var c1 uint64
		acc, c1 = bits.Add64(acc, binary.BigEndian.Uint64(b), 0)
		c += c1
		b = b[8:]
	}
	// Fold acc and the carries (each worth 2^64 ≡ 1) to 33 bits at most.
	acc, c1 := bits.Add64(acc, c, 0)
	s = acc>>32 + acc&0xffffffff + c1
	for len(b) >= 2 {
		s += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint64(b[0]) << 8
	}
	return s
}

// Fold reduces a 64-bit running sum to 16 bits with end-around carry.
func Fold(s uint64) uint16 {
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

// TCP returns the checksum of running sum s: its folded ones' complement,
// but never 0. A sum whose complement is 0 gives 0xFFFF, the other ones'
// complement form of zero, which every receiver's check accepts alike:
// Linux's TCP-AO (tcp_ao_hash_pseudoheader) takes an inbound segment whose
// checksum field is 0 for one of its own outbound segments and hashes the
// pseudo-header with the addresses swapped, so it would refuse such a
// segment, and every retransmission of it.
func TCP(s uint64) uint16 {
	if c := ^Fold(s); c != 0 {
		return c
	}
	return 0xffff
}

// Update returns TCP checksum hc updated for words whose folded sum was
// old and is now new (RFC 1624, eqn. 3: HC' = ~(~HC + ~m + m')). A right
// checksum stays right, and a wrong one stays wrong by as much; like TCP,
// it never returns 0.
func Update(hc, old, new uint16) uint16 {
	return TCP(uint64(^hc) + uint64(^old) + uint64(new))
}
