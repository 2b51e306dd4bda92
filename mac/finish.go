package mac

import (
	"crypto/hmac"
	"crypto/md5"
	"encoding"
	"encoding/binary"
)

// A SHA-1, SHA-2 or MD5 hash finished by its Sum copies its whole state,
// pads into its own buffer and hashes the last block from there. A
// context that knows the padding (FIPS 180-4 §5.1; RFC 1321 §3.1–3.2,
// little-endian, for MD5) does it itself instead: the padded tail is
// written as whole blocks, which the hash compresses in place, and the
// digest is read from the state the hash marshals, whose chaining words
// follow a 4-byte identifier, big-endian (MD5's digest has them
// little-endian). The outer hash of HMAC is then one block written in
// place. init checks this layout against crypto/hmac and crypto/md5
// (finishWorks) and, should a Go release change it, leaves the algorithm
// to Sum. hmacEngine.finish and md5Engine.sum use what follows.

// stateMagic is the identifier before the chaining words.
const stateMagic = 4

// appendPad appends to b the padding of a message of n bytes: 0x80,
// zeros, and n in bits in a lenSize-byte field, big-endian (MD5: an
// 8-byte field, little-endian). The block size of a hash that pads itself
// is a power of two (init), so the zeros are counted with a mask, not a
// division.
func (a *Algorithm) appendPad(b []byte, n int) []byte {
	m, l := a.blockSize-1, int(a.lenSize)
	z := -(n + 1 + l) & m
	b = append(b, 0x80)
	if a.le {
		b = append(b, make([]byte, z)...)
		return binary.LittleEndian.AppendUint64(b, uint64(n)<<3)
	}
	b = append(b, make([]byte, z+l-8)...)
	return binary.BigEndian.AppendUint64(b, uint64(n)<<3)
}

// digest returns the digest of a hash padded to a whole number of blocks:
// the chaining words of its marshalled state, in scratch.
func (a *Algorithm) digest(h encoding.BinaryAppender, scratch []byte) []byte {
	st, _ := h.AppendBinary(scratch[:0])
	if len(st) < stateMagic+a.size {
		return nil // not a layout finishWorks accepts
	}
	d := st[stateMagic : stateMagic+a.size]
	if a.le {
		w := (*[md5.Size]byte)(d) // le is MD5's alone
		for i := 0; i < md5.Size; i += 4 {
			binary.LittleEndian.PutUint32(w[i:], binary.BigEndian.Uint32(w[i:]))
		}
	}
	return d
}

// finishWorks reports whether the padded finish computes crypto/hmac's
// MAC for a (crypto/md5's for TCP-MD5), over messages that end in every
// way a padding can.
func finishWorks(a *Algorithm) bool {
	key := make([]byte, a.size)
	msg := make([]byte, 3*a.blockSize)
	for i := range msg {
		msg[i] = byte(i * 7)
	}
	var k Key
	if k.Init(a, key) != nil {
		return false
	}
	c := a.NewContext()
	for _, n := range []int{0, 1, a.blockSize - int(a.lenSize) - 1, a.blockSize - int(a.lenSize), a.blockSize, len(msg)} {
		var want []byte
		if a == TCPMD5 {
			d := md5.Sum(append(msg[:n:n], key...))
			want = d[:]
		} else {
			h := hmac.New(a.newHash, key)
			h.Write(msg[:n])
			want = h.Sum(nil)
		}
		got, err := c.Compute(&k, nil, msg[:n])
		if err != nil || !hmac.Equal(got, want) {
			return false
		}
		if c.Start(&k) != nil {
			return false
		}
		c.Write(msg[:n/2])
		c.Write(msg[n/2 : n])
		if !hmac.Equal(c.Finish(nil), want) {
			return false
		}
	}
	return true
}
