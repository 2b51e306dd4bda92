package mac

import (
	"crypto/sha3"
	"fmt"
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

// maxCustom is the longest customization string a KMAC template takes.
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

// newCSHAKE returns a KMAC sponge: crypto/sha3 restores a marshalled
// cSHAKE state only into a cSHAKE.
func newCSHAKE() sha3.SHAKE { return *sha3.NewCSHAKE256([]byte("KMAC"), nil) }

// kmacEngine is KMAC256's working state: the message's sponge, and the
// keyed sponge of the Key of generation kxGen, restored from its
// marshalled state once, so that the next message under the same Key is a
// struct copy (restoring a marshalled state costs several times that).
type kmacEngine struct {
	a     *Algorithm
	xof   sha3.SHAKE
	kx    sha3.SHAKE
	kxGen uint64
	tmp   [MaxSize]byte // the output; before it, the encodings around the key
}

// zeros are bytepad's fill.
var zeros [kmacRate]byte

func newKMACEngine(a *Algorithm) *kmacEngine {
	return &kmacEngine{a: a, xof: newCSHAKE(), kx: newCSHAKE()}
}

// KMACParams are a KMAC template's parameters besides its key: the
// customization string, the output length in bytes (0: KMAC256-128's
// 16) and a message prefix absorbed after the key.
type KMACParams struct {
	Custom string
	OutLen int
	Prefix []byte
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

// ScheduleKMAC keys k for the context's KMAC algorithm as KMAC256 with
// key, customization p.Custom and a p.OutLen-byte output, with p.Prefix
// absorbed after the key: a context that loads k computes
// KMAC256(key, prefix || message, 8*outLen, custom). Schedule is
// ScheduleKMAC with no parameters, the MAC of KMAC256-128; the draft's
// KDF is the 132 zero bytes as key, "KDF", 32 and 0x00000001 || master
// key. Such a template keeps no key bytes to run the schedule again from:
// a re-keying context loads it. Without a customization it allocates
// nothing for a k keyed before.
func (c *Context) ScheduleKMAC(k *Key, key []byte, p KMACParams) error {
	if c == nil || c.kmacEngine == nil || k == nil {
		return ErrNoKey
	}
	c.key, c.done = nil, false
	return c.kmacEngine.scheduleKMAC(k, key, p)
}

func (s *kmacEngine) schedule(k *Key, key []byte) error {
	return s.scheduleKMAC(k, key, KMACParams{})
}

// scheduleKMAC is ScheduleKMAC on the context's engine.
func (s *kmacEngine) scheduleKMAC(k *Key, key []byte, p KMACParams) error {
	a, outLen := s.a, p.OutLen
	if outLen == 0 {
		outLen = kmacMACLen
	}
	if !a.KeySizeOK(len(key)) {
		return fmt.Errorf("%w: %s does not take a %d-byte key", ErrKeySize, a.name, len(key))
	}
	if outLen < 1 || outLen > MaxSize || len(p.Custom) > maxCustom {
		return fmt.Errorf("%w: KMAC output of %d bytes, customization of %d (at most %d and %d)", ErrKeySize, outLen, len(p.Custom), MaxSize, maxCustom)
	}
	k.Wipe()
	x := &s.kx // the cached keyed sponge is given up for the schedule
	s.kxGen = 0
	defer func() {
		x.Reset()
		clear(s.tmp[:])
	}()
	if p.Custom == "" {
		_ = x.UnmarshalBinary(kmacBase) // our own marshalled state
	} else {
		*x = *sha3.NewCSHAKE256([]byte("KMAC"), []byte(p.Custom))
	}
	// bytepad(encode_string(key), rate).
	b := appendLeftEncode(s.tmp[:0], kmacRate)
	b = appendLeftEncode(b, 8*uint64(len(key)))
	x.Write(b)
	x.Write(key)
	x.Write(zeros[:(kmacRate-(len(b)+len(key))%kmacRate)%kmacRate])
	x.Write(p.Prefix)
	k.fixed = p.Custom != "" || len(p.Prefix) > 0 || outLen != kmacMACLen
	nraw := len(key)
	if k.fixed {
		nraw = 0
	}
	k.layout(1, kmacStateLen, nraw)
	// The sponge, marshalled into the Key, then (with a customization)
	// cSHAKE's initialisation block, which the template does not keep:
	// that one does not fit, and is marshalled into a new slice.
	st, err := x.AppendBinary(k.state(0)[:0:kmacStateLen])
	if err != nil || len(st) < kmacStateLen {
		k.Wipe()
		return fmt.Errorf("%w: cSHAKE256 state of %d bytes: %v", ErrKeySize, len(st), err)
	}
	copy(k.state(0), st[:kmacStateLen])
	if len(st) > kmacStateLen {
		clear(st) // a copy of its own
	}
	copy(k.raw(), key)
	k.alg, k.gen, k.outLen = a, keyGen.Add(1), uint8(outLen)
	return nil
}

// start restores the key's sponge: a struct copy of the keyed state,
// which the engine restores from the Key's marshalled one only when it
// meets another Key (or keying) than the last.
func (s *kmacEngine) start(k *Key) {
	if s.kxGen != k.gen || k.gen == 0 {
		_ = s.kx.UnmarshalBinary(k.state(0)) // our own marshalled state
		s.kxGen = k.gen
	}
	s.xof = s.kx
}

func (s *kmacEngine) write(_ *Key, p []byte) { s.xof.Write(p) }

// sum absorbs right_encode(L), squeezes the key's output into tmp and
// appends it to dst.
func (s *kmacEngine) sum(k *Key, dst []byte) []byte {
	n := int(k.outLen)
	if n == kmacMACLen {
		s.xof.Write(rightEncode128[:])
	} else {
		s.xof.Write(appendRightEncode(s.tmp[:0], 8*uint64(n)))
	}
	s.xof.Read(s.tmp[:n])
	return append(dst, s.tmp[:n]...)
}

func (s *kmacEngine) summed(k *Key) []byte { return s.tmp[:k.outLen] }

func (s *kmacEngine) compute(k *Key, dst, msg []byte) []byte {
	if s.kxGen == k.gen && k.gen != 0 {
		s.xof = s.kx // start, in line: one call fewer per message
	} else {
		s.start(k)
	}
	s.xof.Write(msg)
	return s.sum(k, dst)
}

func (s *kmacEngine) wipe() {
	s.xof.Reset()
	s.kx.Reset()
	s.kxGen = 0
	clear(s.tmp[:])
}
