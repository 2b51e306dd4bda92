package mac

import (
	"crypto/sha3"
	"fmt"
	"sync"
)

// KMAC256 (NIST SP 800-185 §4.3) is cSHAKE256 with function name "KMAC"
// and customization S over
//
//	bytepad(encode_string(K), 136) || X || right_encode(L)
//
// A KMAC Key is the cSHAKE256 state after the padded key (and, for a
// template made by [Key.InitKMAC], a message prefix) was absorbed, as
// crypto/sha3 marshals it; a context restores it per message and absorbs
// right_encode(L) when it sums. (It keeps the restored keyed sponge, so
// that the next message under the same Key is a struct copy.)

// kmacRate is cSHAKE256's rate in bytes.
const kmacRate = 136

// kmacMACLen is KMAC256-128's output: L = 128 bits.
const kmacMACLen = 16

// rightEncode128 is right_encode(128), KMAC256-128's L.
var rightEncode128 = [2]byte{128, 1}

// maxCustom is the longest customization string InitKMAC takes: the
// marshalled state and cSHAKE's initialisation block must fit the
// scheduler's buffer.
const maxCustom = 32

// kmacBase is the marshalled cSHAKE256 state for N = "KMAC", S = "" right
// after its initialisation block, and kmacStateLen its length (the
// sponge alone; crypto/sha3 appends the initialisation block, which a
// restored state never needs).
var kmacBase, kmacStateLen = func() ([]byte, int) {
	plain, err := sha3.NewSHAKE256().MarshalBinary()
	if err != nil || len(plain) > maxStateSize {
		panic("mac: cSHAKE256 state cannot be marshalled into a fixed buffer")
	}
	st, err := sha3.NewCSHAKE256([]byte("KMAC"), nil).MarshalBinary()
	if err != nil || len(st) < len(plain) {
		panic("mac: cSHAKE256 state cannot be marshalled")
	}
	return st[:len(plain)], len(plain)
}()

// kmacSchedulers pool the sponge and buffer a KMAC key schedule with S = ""
// needs, so that Init of a traffic key allocates nothing in steady state.
var kmacSchedulers = sync.Pool{New: func() any { return &kmacScheduler{x: newCSHAKE()} }}

// newCSHAKE returns a KMAC sponge: crypto/sha3 restores a marshalled
// cSHAKE state only into a cSHAKE.
func newCSHAKE() sha3.SHAKE { return *sha3.NewCSHAKE256([]byte("KMAC"), nil) }

type kmacScheduler struct {
	x   sha3.SHAKE
	buf [2 * kmacRate]byte // the padded key; then the marshalled state
}

// appendLeftEncode appends left_encode(x) (SP 800-185 §2.3.1).
func appendLeftEncode(b []byte, x uint64) []byte {
	n := 1
	for v := x >> 8; v > 0; v >>= 8 {
		n++
	}
	b = append(b, byte(n))
	for i := n - 1; i >= 0; i-- {
		b = append(b, byte(x>>(8*i)))
	}
	return b
}

// appendRightEncode appends right_encode(x) (SP 800-185 §2.3.1).
func appendRightEncode(b []byte, x uint64) []byte {
	n := 1
	for v := x >> 8; v > 0; v >>= 8 {
		n++
	}
	for i := n - 1; i >= 0; i-- {
		b = append(b, byte(x>>(8*i)))
	}
	return append(b, byte(n))
}

// InitKMAC keys k for a KMAC algorithm as KMAC256 with key, customization
// string s and an outLen-byte output, with prefix absorbed after the key:
// a context that loads k computes KMAC256(key, prefix || message,
// 8*outLen, s). Init is InitKMAC(a, key, "", 16, nil), the MAC of
// KMAC256-128; the draft's KDF is InitKMAC(a, 132 zero bytes, "KDF", 32,
// 0x00000001 || master key). Such a template keeps no key bytes to run the
// schedule again from: a re-keying context loads it.
func (k *Key) InitKMAC(a *Algorithm, key []byte, s string, outLen int, prefix []byte) error {
	if k == nil || !a.valid() || a.kind != kindKMAC {
		return ErrNoKey
	}
	if !a.KeySizeOK(len(key)) {
		return fmt.Errorf("%w: %s does not take a %d-byte key", ErrKeySize, a.name, len(key))
	}
	if outLen < 1 || outLen > MaxSize || len(s) > maxCustom {
		return fmt.Errorf("%w: KMAC output of %d bytes, customization of %d (at most %d and %d)", ErrKeySize, outLen, len(s), MaxSize, maxCustom)
	}
	k.Wipe()
	sc := kmacSchedulers.Get().(*kmacScheduler)
	defer func() {
		sc.x.Reset()
		clear(sc.buf[:])
		kmacSchedulers.Put(sc)
	}()
	x := &sc.x
	if s == "" {
		_ = x.UnmarshalBinary(kmacBase) // our own marshalled state
	} else {
		*x = *sha3.NewCSHAKE256([]byte("KMAC"), []byte(s))
	}
	// bytepad(encode_string(key), rate): at most 2 + 3 + 144 bytes, two
	// blocks.
	b := appendLeftEncode(sc.buf[:0], kmacRate)
	b = appendLeftEncode(b, 8*uint64(len(key)))
	b = append(b, key...)
	for len(b)%kmacRate != 0 {
		b = append(b, 0)
	}
	x.Write(b)
	x.Write(prefix)
	// The sponge, then (with a customization) cSHAKE's initialisation
	// block, which the template does not keep.
	st, err := x.AppendBinary(sc.buf[:0])
	if err != nil || len(st) < kmacStateLen || &st[0] != &sc.buf[0] {
		return fmt.Errorf("%w: cSHAKE256 state of %d bytes: %v", ErrKeySize, len(st), err)
	}
	copy(k.state[0][:], st[:kmacStateLen])
	k.alg, k.gen = a, keyGen.Add(1)
	k.slen, k.outLen = uint16(kmacStateLen), uint8(outLen)
	k.fixed = s != "" || len(prefix) > 0 || outLen != kmacMACLen
	if !k.fixed {
		k.nraw = uint8(copy(k.raw[:], key))
	}
	return nil
}

// kmacReset restores the key's sponge: a struct copy of the keyed state,
// which the context restores from the Key's marshalled one only when it
// meets another Key (or keying) than the last; restoring a marshalled
// state costs several times the copy.
func (c *Context) kmacReset(k *Key) {
	if c.kxGen != k.gen || k.gen == 0 {
		_ = c.kx.UnmarshalBinary(k.state[0][:k.slen]) // our own marshalled state
		c.kxGen = k.gen
	}
	c.xof = c.kx
}

// kmacSum absorbs right_encode(L), squeezes the key's output into tmp
// and appends it to dst.
func (c *Context) kmacSum(dst []byte) []byte {
	n := int(c.key.outLen)
	if n == kmacMACLen {
		c.xof.Write(rightEncode128[:])
	} else {
		c.xof.Write(appendRightEncode(c.pad[:0], 8*uint64(n)))
	}
	c.xof.Read(c.tmp[:n])
	c.done = inTmp
	return append(dst, c.tmp[:n]...)
}
