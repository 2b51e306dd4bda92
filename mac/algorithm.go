package mac

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha3"
	"crypto/sha512"
	"errors"
	"fmt"
	"hash"
	"sort"
	"strings"

	//lint:ignore SA1019 hmac(rmd160) is one of the algorithms Linux accepts for TCP-AO; interop needs it.
	"golang.org/x/crypto/ripemd160"
)

// ErrUnknownAlgorithm is returned by [Lookup] for a name it does not know;
// the error text lists the known names.
var ErrUnknownAlgorithm = errors.New("mac: unknown algorithm")

// ErrNoKey is returned when a context is used without a key, or given a
// nil key, an empty one or one of another algorithm.
var ErrNoKey = errors.New("mac: no key, or a key of another algorithm")

// ErrFinished is returned by [Context.Write] after [Context.Finish] (or
// [Context.Compute]) finished the message, until Start or Restart begins
// the next one.
var ErrFinished = errors.New("mac: message already finished; Start or Restart first")

// ErrKeySize is returned when a key's length does not suit the algorithm
// (AES-CMAC takes 16- or 32-byte keys; HMAC takes any length).
var ErrKeySize = errors.New("mac: invalid key size")

// MaxSize is the largest digest of any algorithm here (SHA-512, SHA3-512).
const MaxSize = 64

// MaxKeySize is the longest TCP-MD5 key (TCP_MD5SIG_MAXKEYLEN); TCP-AO
// caps master keys at the same 80 bytes (TCP_AO_MAXKEYLEN).
const MaxKeySize = 80

// maxBlockSize is the largest hash block (SHA3-224's rate, 144 bytes).
const maxBlockSize = 144

// maxStateSize bounds the marshalled midstate of every marshalable hash
// here (SHA3: 207 bytes, SHA-512: 204); init checks it.
const maxStateSize = 208

// kind is an algorithm's family. Only the registry looks at it: it picks
// the family's implementation (newEngine) and answers the questions that
// differ by family; everything else asks the implementation.
type kind uint8

const (
	kindHMAC   kind = iota // HMAC over a hash whose state can be marshalled: clonable
	kindHMACRe             // HMAC over a hash with no state export: Reset re-absorbs the pads
	kindCMAC               // AES-CMAC (RFC 4493)
	kindTCPMD5             // MD5(data || key), RFC 2385
	kindKMAC               // KMAC256 (NIST SP 800-185 §4) on crypto/sha3's cSHAKE256
)

// newEngine returns a working state of a's family, sized for a: what a
// Context computes with.
func (a *Algorithm) newEngine() engine {
	switch a.kind {
	case kindCMAC:
		return new(cmacEngine)
	case kindKMAC:
		return newKMACEngine(a)
	case kindTCPMD5:
		return newMD5Engine(a)
	}
	return newHMACEngine(a, a.kind == kindHMAC)
}

// KDF names how TCP-AO derives an algorithm's traffic keys from a master
// key (package kdf implements them).
type KDF uint8

const (
	// KDFRFC5926 is RFC 5926 §3.1's: the algorithm itself as the PRF,
	// keyed with the master key, over 0x01 || "TCP-AO" || context || L.
	KDFRFC5926 KDF = iota
	// HKDFSHA256 is draft-ietf-tcpm-tcp-ao-algs' for HMAC-SHA256-128:
	// HKDF-SHA256 (RFC 5869), salt absent, info = the context, L = 32.
	HKDFSHA256
	// KMAC256KDF is the draft's for KMAC256-128: the one-step KDF of NIST
	// SP 800-56C §4.1 with KMAC256 (salt 132 zero bytes, counter 1,
	// Z = the master key, FixedInfo = the context, L = 256, S = "KDF").
	KMAC256KDF
)

// ErrMACLen is returned by [Algorithm.CheckMACLen] for a MAC length the
// algorithm does not allow.
var ErrMACLen = errors.New("mac: MAC length not allowed")

// ErrMasterKeyLen is returned by [Algorithm.CheckMasterKey] for a master
// key shorter than the algorithm requires.
var ErrMasterKeyLen = errors.New("mac: master key too short")

// Algorithm is one MAC algorithm. Its methods are safe for concurrent use.
type Algorithm struct {
	name      string
	size      int
	blockSize int
	kind      kind
	newHash   func() hash.Hash
	reduceKey bool // cmac(aes128): RFC 5926 reduces non-16-byte master keys
	aes256    bool // cmac(aes): 32-byte keys are AES-256
	// lenSize is the length field of the padding of a SHA-1, SHA-2 or
	// MD5 hash (8 or 16 bytes), whose marshalled state starts with its
	// chaining words: contexts then pad messages themselves and read the
	// digest from the state (see finish.go). 0: they use the hash's Sum.
	// le marks MD5, whose length and digest words are little-endian.
	lenSize uint8
	le      bool
	// stateLen is the length of the hash's marshalled state (0: it
	// exports none), for the buffers of a context that reads it.
	stateLen int
	// The draft-ietf-tcpm-tcp-ao-algs algorithms: their KDF, their one
	// MAC length and their shortest master key (0: any).
	kdf       KDF
	macLen    uint8
	minMaster uint8
	linux     bool // Linux's TCP-AO knows the algorithm by this name
}

// Name returns the Linux name, e.g. "hmac(sha1)", or for the draft's
// algorithms their name in lower case, e.g. "hmac-sha256-128".
func (a *Algorithm) Name() string {
	if a == nil {
		return ""
	}
	return a.name
}

// String returns the Linux name.
func (a *Algorithm) String() string {
	if a == nil {
		return "mac.Algorithm(nil)"
	}
	return a.name
}

// Size returns the digest size in bytes: the traffic-key length and the
// upper bound of the MAC length for TCP-AO.
func (a *Algorithm) Size() int {
	if a == nil {
		return 0
	}
	return a.size
}

// BlockSize returns the block size of the underlying hash (AES: 16).
func (a *Algorithm) BlockSize() int {
	if a == nil {
		return 0
	}
	return a.blockSize
}

// BufferSize returns how many bytes the algorithm's hash collects before
// it runs its block function: the block size for HMAC and TCP-MD5; 0 for
// CMAC, whose Compute runs over the message in place, and for KMAC, whose
// sponge absorbs in place at any offset. A caller that stages a
// message's first bytes in a buffer of its own fills them up to a
// multiple of it, so that the hash neither copies them nor runs its block
// function once more.
func (a *Algorithm) BufferSize() int {
	if !a.valid() || a.newHash == nil {
		return 0
	}
	return a.blockSize
}

// valid reports whether a is one of the registry's algorithms (not nil,
// not a zero Algorithm).
func (a *Algorithm) valid() bool { return a != nil && a.size > 0 }

// Clones reports whether loading a [Key]'s template saves work over
// running the key schedule again: true for CMAC (the AES key schedule and
// subkeys) and for HMAC over a hash that exports its state (the two
// midstates). TCP-MD5 has no key schedule (its key is appended to the
// message), and HMAC over a hash without state export keeps the two
// padded key blocks, which every message absorbs either way.
func (a *Algorithm) Clones() bool {
	return a.valid() && (a.kind == kindHMAC || a.kind == kindCMAC || a.kind == kindKMAC)
}

// IsCMAC reports whether the algorithm is AES-CMAC.
func (a *Algorithm) IsCMAC() bool { return a.valid() && a.kind == kindCMAC }

// IsKMAC reports whether the algorithm is KMAC256 (KMAC256-128).
func (a *Algorithm) IsKMAC() bool { return a.valid() && a.kind == kindKMAC }

// ReducesMasterKey reports whether RFC 5926 §3.1.1.2 applies: cmac(aes128)
// first reduces a master key that is not 16 bytes long with AES-CMAC under
// the all-zero key. cmac(aes) does not (Linux refuses such keys instead).
func (a *Algorithm) ReducesMasterKey() bool { return a.valid() && a.reduceKey }

// KDF returns how TCP-AO derives the algorithm's traffic keys.
func (a *Algorithm) KDF() KDF {
	if !a.valid() {
		return KDFRFC5926
	}
	return a.kdf
}

// MACLen returns the one MAC length in bytes TCP-AO allows with the
// algorithm (16 for the draft's), or 0 when any length up to Size does.
func (a *Algorithm) MACLen() int {
	if !a.valid() {
		return 0
	}
	return int(a.macLen)
}

// MinMasterKey returns the shortest master key in bytes the algorithm
// allows (32 for the draft's; 1 for the others).
func (a *Algorithm) MinMasterKey() int {
	if !a.valid() || a.minMaster == 0 {
		return 1
	}
	return int(a.minMaster)
}

// Linux reports whether Linux's TCP-AO (setsockopt TCP_AO_ADD_KEY) knows
// the algorithm by its name; the draft's algorithms it does not.
func (a *Algorithm) Linux() bool { return a.valid() && a.linux }

// CheckMACLen returns nil if TCP-AO may use n-byte MACs with a, else an
// error wrapping [ErrMACLen] that says which lengths it may.
func (a *Algorithm) CheckMACLen(n int) error {
	switch {
	case !a.valid():
		return ErrNoKey
	case a.macLen != 0 && n != int(a.macLen):
		return fmt.Errorf("%w: %s has %d-byte MACs only, not %d", ErrMACLen, a.name, a.macLen, n)
	case n < 1 || n > a.size:
		return fmt.Errorf("%w: %d bytes, %s takes 1..%d", ErrMACLen, n, a.name, a.size)
	}
	return nil
}

// CheckMasterKey returns nil if an n-byte master key is long enough for
// a, else an error wrapping [ErrMasterKeyLen] that says why.
func (a *Algorithm) CheckMasterKey(n int) error {
	switch {
	case !a.valid():
		return ErrNoKey
	case n < 1:
		return fmt.Errorf("%w: %s needs a master key, got an empty one", ErrMasterKeyLen, a.name)
	case n < a.MinMasterKey():
		return fmt.Errorf("%w: %s needs a master key of at least %d bytes (%d bits), got %d", ErrMasterKeyLen, a.name, a.MinMasterKey(), 8*a.MinMasterKey(), n)
	}
	return nil
}

// KeySizeOK reports whether key length n is acceptable for this algorithm
// as the MAC key itself.
func (a *Algorithm) KeySizeOK(n int) bool {
	if !a.valid() || n < 0 {
		return false
	}
	switch a.kind {
	case kindCMAC:
		return n == 16 || (a.aes256 && n == 32)
	case kindTCPMD5:
		return n <= MaxKeySize
	case kindKMAC:
		return n <= maxBlockSize // KMAC takes any key; the Key keeps up to a block
	default:
		return true // HMAC: any length; longer than a block is hashed first
	}
}

func newSHA3_224() hash.Hash { return sha3.New224() }
func newSHA3_256() hash.Hash { return sha3.New256() }
func newSHA3_384() hash.Hash { return sha3.New384() }
func newSHA3_512() hash.Hash { return sha3.New512() }

// TCPMD5 is the keyed MD5 of RFC 2385: MD5 over the segment bytes with the
// key appended. It is not a TCP-AO algorithm and is not found by [Lookup].
var TCPMD5 = &Algorithm{name: "md5", size: md5.Size, blockSize: md5.BlockSize, kind: kindTCPMD5, newHash: md5.New, lenSize: 8, le: true}

var registry = map[string]*Algorithm{}

var aliases = map[string]string{
	// RFC 5926 names.
	"hmac-sha-1-96":   "hmac(sha1)",
	"aes-128-cmac-96": "cmac(aes128)",
}

func init() {
	for _, a := range []*Algorithm{
		{name: "hmac(sha1)", newHash: sha1.New, lenSize: 8},
		{name: "hmac(sha224)", newHash: sha256.New224, lenSize: 8},
		{name: "hmac(sha256)", newHash: sha256.New, lenSize: 8},
		{name: "hmac(sha384)", newHash: sha512.New384, lenSize: 16},
		{name: "hmac(sha512)", newHash: sha512.New, lenSize: 16},
		{name: "hmac(sha3-224)", newHash: newSHA3_224},
		{name: "hmac(sha3-256)", newHash: newSHA3_256},
		{name: "hmac(sha3-384)", newHash: newSHA3_384},
		{name: "hmac(sha3-512)", newHash: newSHA3_512},
		{name: "hmac(md5)", newHash: md5.New, lenSize: 8, le: true},
		{name: "hmac(rmd160)", newHash: ripemd160.New, kind: kindHMACRe},
		{name: "cmac(aes128)", size: 16, blockSize: 16, kind: kindCMAC, reduceKey: true},
		{name: "cmac(aes)", size: 16, blockSize: 16, kind: kindCMAC, aes256: true},
		// draft-ietf-tcpm-tcp-ao-algs-07. HMAC-SHA256-128's MAC is
		// hmac(sha256)'s (the digest's first 16 bytes); its traffic keys
		// are HKDF's, not RFC 5926's, so it is another algorithm on the wire.
		{name: "hmac-sha256-128", newHash: sha256.New, lenSize: 8, kdf: HKDFSHA256, macLen: 16, minMaster: 32},
		// KMAC256-128: size is the traffic key's 32 bytes; a MAC key's
		// Sum gives its 16-byte (L = 128) output.
		{name: "kmac256-128", size: 32, blockSize: kmacRate, kind: kindKMAC, kdf: KMAC256KDF, macLen: 16, minMaster: 32},
	} {
		a.linux = a.kdf == KDFRFC5926
		if a.newHash != nil {
			h := a.newHash()
			a.size, a.blockSize = h.Size(), h.BlockSize()
			if a.kind == kindHMAC {
				st, err := marshal(h, nil)
				if err != nil || len(st) > maxStateSize {
					panic("mac: " + a.name + " state cannot be marshalled into a fixed buffer")
				}
				a.stateLen = len(st)
			}
			if a.lenSize > 0 && (a.blockSize&(a.blockSize-1) != 0 || !finishWorks(a)) {
				a.lenSize = 0 // appendPad masks by the block size
			}
		}
		registry[a.name] = a
	}
	if st, err := marshal(md5.New(), nil); err == nil && len(st) <= maxStateSize {
		TCPMD5.stateLen = len(st)
	}
	if !finishWorks(TCPMD5) {
		TCPMD5.lenSize = 0
	}
}

// Lookup returns the algorithm with the given Linux name ("hmac(sha256)"),
// RFC 5926 name ("HMAC-SHA-1-96", "AES-128-CMAC-96") or
// draft-ietf-tcpm-tcp-ao-algs name ("HMAC-SHA256-128", "KMAC256-128"),
// case-insensitively.
// An unknown name yields an error wrapping [ErrUnknownAlgorithm] that lists
// the known names.
func Lookup(name string) (*Algorithm, error) {
	if a, ok := registry[name]; ok { // the Linux name as Linux spells it
		return a, nil
	}
	n := strings.ToLower(strings.TrimSpace(name))
	if c, ok := aliases[n]; ok {
		n = c
	}
	if a, ok := registry[n]; ok {
		return a, nil
	}
	return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownAlgorithm, name, strings.Join(Names(), ", "))
}

// Names returns the names of all TCP-AO algorithms, sorted: Linux's, and
// the draft's two in lower case ("hmac-sha256-128", "kmac256-128").
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Algorithms returns every TCP-AO algorithm, sorted by name.
func Algorithms() []*Algorithm {
	var as []*Algorithm
	for _, n := range Names() {
		as = append(as, registry[n])
	}
	return as
}
