package mac

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding"
	"encoding/binary"
	"fmt"
	"hash"
	"sync"
	"sync/atomic"
)

// Key is the one key type of tcpsig: a keyed template (the state of an
// algorithm right after its key was absorbed) together with the key bytes
// it came from, so that a context can either load the template
// ([Context.Start]) or run the key schedule again (a context made by
// [Algorithm.NewRekeyContext]). Build
// it with [Key.Init]; after that it is read-only and may be shared by any
// number of goroutines. Its zero value holds no key. Printing a Key never
// shows key material.
type Key struct {
	// The pointers first, so that the garbage collector scans a Key's
	// first words only, not its state arrays.
	alg *Algorithm
	// CMAC: the AES key schedule (its subkeys k1, k2 below).
	block cipher.Block
	// HMAC: state[0] is the inner hash after absorbing K0^ipad and
	// state[1] the outer hash after K0^opad, as marshalled midstates
	// (kindHMAC, slen bytes each) or as the raw pad blocks (kindHMACRe,
	// blockSize bytes each).
	state [2][maxStateSize]byte
	slen  uint16
	// The key bytes: HMAC's K0 without its zero padding (the key, or its
	// digest when longer than a block), the AES key, TCP-MD5's key.
	raw    [maxBlockSize]byte
	nraw   uint8
	k1, k2 [16]byte // CMAC's RFC 4493 subkeys
	// KMAC: the output length in bytes, and whether the template was made
	// with a customization or prefix (InitKMAC), so raw cannot rebuild it.
	outLen uint8
	fixed  bool
	// gen names this keying (unique per Init, 0 when empty), so that a
	// context can tell whether what it cached under a Key is still valid.
	gen uint64
}

// keyGen numbers every Init.
var keyGen atomic.Uint64

// scheduler is what one HMAC key schedule needs: a hash and the two
// padded key blocks. Pooled per algorithm so that Init allocates nothing in
// steady state (a local array handed to hash.Write would escape).
type scheduler struct {
	h   hash.Hash
	pad [2][maxBlockSize]byte
}

var schedulers sync.Map // *Algorithm -> *sync.Pool of *scheduler

func getScheduler(a *Algorithm) *scheduler {
	p, ok := schedulers.Load(a)
	if !ok {
		p, _ = schedulers.LoadOrStore(a, &sync.Pool{New: func() any { return &scheduler{h: a.newHash()} }})
	}
	return p.(*sync.Pool).Get().(*scheduler)
}

func putScheduler(a *Algorithm, s *scheduler) {
	s.h.Reset()
	clear(s.pad[0][:])
	clear(s.pad[1][:])
	if p, ok := schedulers.Load(a); ok {
		p.(*sync.Pool).Put(s)
	}
}

func marshal(h hash.Hash, dst []byte) ([]byte, error) {
	if ba, ok := h.(encoding.BinaryAppender); ok {
		return ba.AppendBinary(dst)
	}
	return nil, fmt.Errorf("mac: %T cannot export its state", h)
}

// Init keys k for algorithm a with key, running the key schedule once.
// It must not be called while other goroutines read k. For the HMAC
// algorithms it allocates nothing in steady state; for AES-CMAC crypto/aes
// allocates the key schedule.
func (k *Key) Init(a *Algorithm, key []byte) error {
	if k == nil || !a.valid() {
		return ErrNoKey
	}
	if a.kind == kindKMAC {
		return k.InitKMAC(a, key, "", kmacMACLen, nil)
	}
	if !a.KeySizeOK(len(key)) {
		return fmt.Errorf("%w: %s does not take a %d-byte key", ErrKeySize, a.name, len(key))
	}
	if err := k.init(a, key); err != nil {
		return err
	}
	k.gen = keyGen.Add(1)
	return nil
}

// init is Init for a key whose length a accepts, leaving k unnumbered
// (gen 0): a re-keying context's template, keyed per message.
func (k *Key) init(a *Algorithm, key []byte) error {
	if a.kind == kindKMAC {
		return k.InitKMAC(a, key, "", kmacMACLen, nil) // numbered: KMAC's keyed sponge is cached by number
	}
	k.Wipe()
	k.alg = a
	switch a.kind {
	case kindTCPMD5:
		k.nraw = uint8(copy(k.raw[:], key))
	case kindCMAC:
		k.nraw = uint8(copy(k.raw[:], key))
		b, err := aes.NewCipher(key)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrKeySize, err)
		}
		k.block = b
		var l [16]byte
		b.Encrypt(l[:], l[:])
		double(&k.k1, &l)
		double(&k.k2, &k.k1)
		clear(l[:])
	default:
		k.initHMAC(a, key)
	}
	return nil
}

// initHMAC computes K0 (FIPS 198-1: the key, hashed if longer than a block,
// zero-padded to a block) and the two padded blocks, then for a
// marshalable hash stores the midstates after absorbing them.
func (k *Key) initHMAC(a *Algorithm, key []byte) {
	bs := a.blockSize
	s := getScheduler(a)
	defer putScheduler(a, s)
	h, pad := s.h, &s.pad
	if len(key) > bs {
		h.Write(key)
		h.Sum(pad[0][:0])
		h.Reset()
		k.nraw = uint8(copy(k.raw[:], pad[0][:a.size]))
	} else {
		copy(pad[0][:], key)
		k.nraw = uint8(copy(k.raw[:], key))
	}
	pad[1] = pad[0]
	for i := 0; i < bs; i++ {
		pad[0][i] ^= 0x36
		pad[1][i] ^= 0x5c
	}
	for i := range pad {
		if a.kind == kindHMACRe {
			copy(k.state[i][:], pad[i][:bs])
			k.slen = uint16(bs)
			continue
		}
		h.Reset()
		h.Write(pad[i][:bs])
		st, _ := marshal(h, k.state[i][:0]) // checked in init
		k.slen = uint16(len(st))
	}
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

// Algorithm returns the algorithm k was keyed for, nil if none.
func (k *Key) Algorithm() *Algorithm {
	if k == nil {
		return nil
	}
	return k.alg
}

// Wipe clears every key-derived byte k holds and drops its AES schedule
// (crypto/aes gives no way to clear its own copy; it becomes garbage).
// Callers must make sure no reader still uses k.
func (k *Key) Wipe() {
	if k == nil {
		return
	}
	clear(k.state[0][:])
	clear(k.state[1][:])
	clear(k.raw[:])
	clear(k.k1[:])
	clear(k.k2[:])
	k.block, k.slen, k.nraw, k.alg, k.gen = nil, 0, 0, nil, 0
	k.outLen, k.fixed = 0, false
}

// String describes k without its key material.
func (k Key) String() string {
	if k.alg == nil {
		return "mac.Key(empty)"
	}
	return "mac.Key(" + k.alg.name + ", [redacted])"
}

// GoString is String: %#v must not print key bytes either.
func (k Key) GoString() string { return k.String() }

// Format implements fmt.Formatter so that every verb, %x and %+v
// included, prints the redacted form.
func (k Key) Format(f fmt.State, _ rune) {
	if f != nil {
		fmt.Fprint(f, k.String())
	}
}

// Equal reports whether two MACs are equal, in time that depends only on
// their lengths.
func Equal(mac1, mac2 []byte) bool {
	if len(mac1) != len(mac2) {
		return false
	}
	// Four bytes at a time, every byte read whatever the others hold:
	// the digests were just stored four bytes at a time, so wider loads
	// would stall on them.
	var v uint32
	le := binary.LittleEndian
	for len(mac1) >= 4 {
		v |= le.Uint32(mac1) ^ le.Uint32(mac2)
		mac1, mac2 = mac1[4:], mac2[4:]
	}
	for i := range mac1 {
		v |= uint32(mac1[i] ^ mac2[i])
	}
	return v == 0
}
