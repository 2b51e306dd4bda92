package mac

import (
	"crypto/cipher"
	"encoding/binary"
	"fmt"
	"sync/atomic"

	"github.com/tcpsig/tcpsig/internal/redact"
)

// Key is the one key type of tcpsig: a keyed template (the state of an
// algorithm right after its key was absorbed) together with the key bytes
// it came from, so that a context can either load the template
// ([Context.Start]) or run the key schedule again (a context made by
// [Algorithm.NewRekeyContext]). A context keys it ([Context.Schedule],
// allocation-free on a pool's context) or [Key.Init] does with a context
// of its own; after that it is read-only and may be shared by any number
// of goroutines. Its zero value holds no key. A Key must not be copied
// once keyed: the copy would share its buffer. Printing a Key never shows
// key material.
type Key struct {
	// The pointers first, so that the garbage collector scans a Key's
	// first words only.
	alg *Algorithm
	// CMAC: the AES key schedule (its subkeys k1, k2 below).
	block cipher.Block
	// small, or sized (exactly) when they do not fit or would leave most
	// of small unused, holds the keyed states and the key bytes,
	// allocated at the first keying and kept by Wipe, so
	// that a Key keyed again allocates nothing. HMAC: state 0 is the
	// inner hash after absorbing K0^ipad and state 1 the outer hash after
	// K0^opad, as marshalled midstates or, for a hash that exports no
	// state, as the raw pad blocks; KMAC: state 0 is the keyed sponge. Then the key
	// bytes: HMAC's K0 without its zero padding (the key, or its digest
	// when longer than a block), the AES key, TCP-MD5's key, KMAC's key.
	// small is one allocation with nothing to load before its bytes (a
	// connection's key is read straight from the Conn); both are behind
	// pointers so that fmt, walking a struct that holds a Key without its
	// methods, prints addresses and not the bytes.
	small    *[smallBuf]byte
	sized    *[]byte
	useSized bool
	slen     uint16 // the length of one state
	nstate   uint8  // states in buf: 0, 1 (KMAC) or 2 (HMAC)
	nraw     uint8
	k1, k2   [16]byte // CMAC's RFC 4493 subkeys
	// KMAC: the output length in bytes, and whether the template was made
	// with a customization or prefix ([KMACParams]), so raw cannot rebuild
	// it.
	outLen uint8
	fixed  bool
	// gen names this keying (unique per keying, 0 when empty or
	// unnumbered), so that a context can tell whether what it cached
	// under a Key is still valid.
	gen uint64
}

// keyGen numbers every keying.
var keyGen atomic.Uint64

// smallBuf is room for the states and key bytes of HMAC with MD5,
// RIPEMD-160, SHA-1, SHA-224 or SHA-256; what needs less than minSmall
// (CMAC's and TCP-MD5's key bytes, which the per-segment path does not
// read from here, or reads once) is sized exactly instead.
const (
	smallBuf = 280
	minSmall = 128
)

// mem returns the storage in use: every byte of it, of which the first
// nstate*slen+nraw hold the states and the key.
func (k *Key) mem() []byte {
	if k.useSized {
		return *k.sized
	}
	return k.small[:]
}

// state returns keyed state i.
func (k *Key) state(i int) []byte {
	n := int(k.slen)
	return k.mem()[i*n : (i+1)*n]
}

// raw returns the key bytes.
func (k *Key) raw() []byte {
	o := int(k.nstate) * int(k.slen)
	return k.mem()[o : o+int(k.nraw)]
}

// layout makes room for nstate states of slen bytes and nraw key bytes,
// reusing k's storage when it is sized enough.
func (k *Key) layout(nstate, slen, nraw int) {
	n := nstate*slen + nraw
	k.useSized = n > smallBuf || n < minSmall
	switch {
	case !k.useSized && k.small == nil:
		k.small = new([smallBuf]byte)
	case k.useSized && k.sized == nil:
		k.sized = new([]byte)
		fallthrough
	case k.useSized && len(*k.sized) < n:
		*k.sized = make([]byte, n)
	}
	k.nstate, k.slen, k.nraw = uint8(nstate), uint16(slen), uint8(nraw)
}

// Init keys k for algorithm a with key, running the key schedule once
// with a working context of its own (a caller with a pool's context
// calls [Context.Schedule] instead, which allocates nothing). It must not
// be called while other goroutines read k.
func (k *Key) Init(a *Algorithm, key []byte) error {
	if k == nil || !a.valid() {
		return ErrNoKey
	}
	c := a.NewContext()
	defer c.Wipe()
	return c.Schedule(k, key)
}

// InitKMAC is Init for a KMAC template with parameters p
// ([Context.ScheduleKMAC]).
func (k *Key) InitKMAC(a *Algorithm, key []byte, p KMACParams) error {
	if k == nil || !a.IsKMAC() {
		return ErrNoKey
	}
	c := a.NewContext()
	defer c.Wipe()
	return c.ScheduleKMAC(k, key, p)
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
// It keeps k's buffer, cleared, for the next keying. Callers must make
// sure no reader still uses k.
func (k *Key) Wipe() {
	if k == nil {
		return
	}
	if k.small != nil {
		clear(k.small[:])
	}
	if k.sized != nil {
		clear(*k.sized)
	}
	k.useSized = false
	clear(k.k1[:])
	clear(k.k2[:])
	k.block, k.slen, k.nstate, k.nraw, k.alg, k.gen = nil, 0, 0, 0, nil, 0
	k.outLen, k.fixed = 0, false
}

// Empty reports whether k holds no key: its zero value, or wiped, every
// byte of its buffer zero.
func (k *Key) Empty() bool {
	if k == nil {
		return true
	}
	var sized []byte
	if k.sized != nil {
		sized = *k.sized
	}
	var small []byte
	if k.small != nil {
		small = k.small[:]
	}
	for _, m := range [2][]byte{small, sized} {
		for _, b := range m {
			if b != 0 {
				return false
			}
		}
	}
	return k.nstate == 0 && k.nraw == 0 && k.alg == nil && k.block == nil && k.k1 == [16]byte{} && k.k2 == [16]byte{}
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
func (k Key) Format(f fmt.State, _ rune) { redact.Format(f, k.String()) }

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
