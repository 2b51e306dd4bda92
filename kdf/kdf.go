// Package kdf derives TCP-AO traffic keys from master keys as RFC 5926
// §3.1 specifies and byte-for-byte as Linux's tcp_v4_ao_calc_key and
// tcp_v6_ao_calc_key compute them.
//
// A traffic key is one PRF block:
//
//	traffic_key = PRF(master_key, 0x01 || "TCP-AO" || context || be16(L))
//
// where the context is (RFC 5925 §5.2) the segment's source address,
// destination address, source port, destination port, the sender's ISN
// and the receiver's ISN (0 for the SYN keys), and L is the digest size in
// bits; the whole digest is the traffic key. For cmac(aes128) a master key
// that is not 16 bytes long is first reduced to 16 with AES-CMAC under the
// all-zero key (RFC 5926 §3.1.1.2, RFC 4615's AES-CMAC-PRF-128).
//
// The algorithms of draft-ietf-tcpm-tcp-ao-algs (revision 07) derive
// theirs from the bare context, without that framing:
//
//	HMAC-SHA256-128: HKDF-SHA256 (RFC 5869), salt absent, L = 32:
//	  PRK = HMAC-SHA256(32 zero bytes, master_key)
//	  traffic_key = HMAC-SHA256(PRK, context || 0x01)
//	KMAC256-128: NIST SP 800-56C §4.1 with KMAC256, one iteration:
//	  traffic_key = KMAC256(132 zero bytes,
//	                        0x00000001 || master_key || context, 256, "KDF")
//
// and take master keys of at least 32 bytes.
//
// A [Master] is keyed once per master key, on its first derivation (the
// PRF under the master key; the HMAC under the PRK; the KMAC state after
// its key, counter and master key), so adding a key runs no key schedule
// of the PRF and deriving the four keys of each later connection runs
// none either. In order: [Master.Init] once per master key (mac.Lookup
// names the algorithm); [Master.Derive] per traffic key, with an [Input]
// (addresses, ports, ISNs) and a mac.Context of the algorithm;
// [Master.Wipe] when the key is deleted.
package kdf

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/tcpsig/tcpsig/internal/redact"
	"github.com/tcpsig/tcpsig/mac"
)

// ErrMasterKey is returned for a master key the algorithm cannot take.
var ErrMasterKey = errors.New("kdf: invalid master key")

// ErrAddress is returned by [Input.Append] when the two addresses are not
// both IPv4 or both IPv6.
var ErrAddress = errors.New("kdf: addresses of different families")

// MaxInputLen is the length of the IPv6 PRF input: 1 + 6 + 44 + 2. The
// IPv4 input is 29 bytes.
const MaxInputLen = 53

// Master is a master key prepared for the PRF: the keyed template of the
// algorithm under the (reduced) master key. The template, and the memory
// it takes, is made the first time the key derives (an add of an MKT then
// runs no key schedule, and a key that never derives never runs one);
// Init checks the key at once. Safe for concurrent use after Init.
// Printing it (any fmt verb, slog) shows its algorithm, never key bytes.
type Master struct {
	// key is the template once ready; until then short (a key of up to
	// shortKeyLen bytes, n of them) or long (a longer one) holds the
	// master key, and is cleared and let go when the template is made.
	// All three are atomic.Pointers, not arrays or plain pointers, for
	// fmt: a Master held by value in another struct is printed field by
	// field (no method of Master stops that), and fmt prints an array's
	// bytes, follows a plain pointer under a verb it does not fit (%s,
	// %q), but shows an atomic.Pointer's unsafe.Pointer as an address,
	// always.
	key   atomic.Pointer[mac.Key]
	short atomic.Pointer[[shortKeyLen]byte] // written under mu
	long  atomic.Pointer[lazyKey]           // written under mu
	alg   *mac.Algorithm                    // set by Init
	ready atomic.Bool                       // key holds the template
	n     uint8                             // the length of the key in short; under mu
	mu    sync.Mutex                        // makes the template once
}

// shortKeyLen is the longest master key kept in one array of its own
// length, allocated by Init or given to InitIn (the keys of the RFC 5926
// and draft algorithms, and of most configurations): a longer one takes a
// lazyKey and its bytes.
const shortKeyLen = 32

// lazyKey is a master key longer than shortKeyLen waiting for its template.
type lazyKey struct{ b []byte }

// maxKMACMaster is the longest master key the KMAC256 KDF takes (Linux's
// TCP_AO_MAXKEYLEN).
const maxKMACMaster = 80

// Init checks masterKey for alg and keeps it for the template, which the
// first [Master.Derive] makes on its working context. For cmac(aes128) a
// key that is not 16 bytes long is reduced then, as RFC 5926 §3.1.1.2
// says (Linux tcp_ao_parse_crypto does the same).
func (m *Master) Init(alg *mac.Algorithm, masterKey []byte) error {
	return m.InitIn(alg, masterKey, nil)
}

// ShortKeyLen is the longest master key that [Master.InitIn] keeps in its
// caller's buffer.
const ShortKeyLen = shortKeyLen

// InitIn is Init keeping a master key of up to ShortKeyLen bytes in buf,
// when buf is not nil, rather than in an allocation of its own: its caller
// can place buf in the allocation that holds m, one allocation less. m
// then owns buf: it clears buf when the template is made and when it is
// wiped (by Wipe, or by another Init), and nothing else may read or write
// it. A longer key is kept as Init keeps it.
func (m *Master) InitIn(alg *mac.Algorithm, masterKey []byte, buf *[ShortKeyLen]byte) error {
	if m == nil {
		return ErrMasterKey
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.wipe()
	if err := checkMasterKey(alg, masterKey); err != nil {
		return err
	}
	m.alg = alg
	if len(masterKey) <= shortKeyLen {
		if buf == nil {
			buf = new([shortKeyLen]byte)
		}
		m.n = uint8(copy(buf[:], masterKey))
		m.short.Store(buf)
	} else {
		m.long.Store(&lazyKey{b: append([]byte(nil), masterKey...)})
	}
	return nil
}

// checkMasterKey returns the error Init gives for a master key alg cannot
// take, or nil.
func checkMasterKey(alg *mac.Algorithm, masterKey []byte) error {
	if err := alg.CheckMasterKey(len(masterKey)); err != nil {
		return fmt.Errorf("%w: %w", ErrMasterKey, err)
	}
	reduced := alg.ReducesMasterKey() && len(masterKey) != 16
	if !reduced && !alg.KeySizeOK(len(masterKey)) {
		return fmt.Errorf("%w: %v does not take a %d-byte key", ErrMasterKey, alg, len(masterKey))
	}
	if alg.KDF() == mac.KMAC256KDF && len(masterKey) > maxKMACMaster {
		return fmt.Errorf("%w: %d-byte master key", ErrMasterKey, len(masterKey))
	}
	return nil
}

// waiting returns the master key waiting for its template, or nil; under mu.
func (m *Master) waiting() []byte {
	if b := m.short.Load(); b != nil {
		return b[:m.n]
	}
	if k := m.long.Load(); k != nil {
		return k.b
	}
	return nil
}

// keyed returns the template, making it on first use with w, a context
// of the master key's algorithm.
func (m *Master) keyed(w *mac.Context) (*mac.Key, error) {
	if m.ready.Load() {
		return m.key.Load(), nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ready.Load() {
		return m.key.Load(), nil
	}
	raw := m.waiting()
	if m.alg == nil || raw == nil {
		return nil, ErrMasterKey
	}
	if w.Algorithm() != m.alg {
		return nil, fmt.Errorf("%w: a %v context for a %v key", ErrMasterKey, w.Algorithm(), m.alg)
	}
	k := new(mac.Key)
	if err := makeTemplate(w, k, m.alg, raw); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMasterKey, err)
	}
	m.wipeWaiting()
	m.key.Store(k)
	m.ready.Store(true)
	return k, nil
}

// kmacSalt is the KMAC256 KDF's default salt: 132 zero bytes (SP 800-56C
// §4.1: the rate of KMAC256 less 4 bytes).
var kmacSalt [132]byte

// makeTemplate keys k as alg's PRF template for a master key, on w: the
// CMAC key reduction, HKDF's extraction and the key schedule all run on
// the one working context.
func makeTemplate(w *mac.Context, k *mac.Key, alg *mac.Algorithm, master []byte) error {
	switch {
	case alg.ReducesMasterKey() && len(master) != 16:
		var reduced [16]byte
		err := ReduceCMACKey(w, &reduced, master)
		if err == nil {
			err = w.Schedule(k, reduced[:])
		}
		clear(reduced[:])
		return err
	case alg.KDF() == mac.HKDFSHA256:
		var prk [sha256.Size]byte
		err := Extract(w, &prk, nil, master)
		if err == nil {
			err = w.Schedule(k, prk[:])
		}
		clear(prk[:])
		return err
	case alg.KDF() == mac.KMAC256KDF:
		var x [4 + maxKMACMaster]byte
		x[3] = 1 // the counter, big-endian
		n := 4 + copy(x[4:], master)
		err := w.ScheduleKMAC(k, kmacSalt[:], mac.KMACParams{Custom: "KDF", OutLen: 32, Prefix: x[:n]})
		clear(x[:])
		return err
	}
	return w.Schedule(k, master)
}

// Extract is HKDF-Extract with SHA-256 (RFC 5869 §2.2): PRK =
// HMAC-SHA256(salt, ikm), where an absent (nil or empty) salt is 32 zero
// bytes, computed on w, a context of an HMAC over SHA-256 (hmac(sha256)
// or hmac-sha256-128), which it leaves keyed by salt.
func Extract(w *mac.Context, prk *[sha256.Size]byte, salt, ikm []byte) error {
	a := w.Algorithm()
	if prk == nil || a == nil || (a.Name() != "hmac(sha256)" && a.KDF() != mac.HKDFSHA256) {
		return fmt.Errorf("%w: HKDF-Extract on a %v context", ErrMasterKey, a)
	}
	var zero [sha256.Size]byte
	if len(salt) == 0 {
		salt = zero[:]
	}
	if err := w.SetKey(salt); err != nil {
		return fmt.Errorf("%w: %w", ErrMasterKey, err)
	}
	w.Write(ikm)
	w.Finish(prk[:0])
	return nil
}

// ReduceCMACKey computes AES-CMAC(0^128, key), the KDF_AES_128_CMAC key
// extraction of RFC 5926 §3.1.1.2 (RFC 4615 AES-CMAC-PRF-128's first
// step), on w, a CMAC context.
func ReduceCMACKey(w *mac.Context, dst *[16]byte, key []byte) error {
	if dst == nil || !w.Algorithm().IsCMAC() {
		return fmt.Errorf("%w: CMAC key reduction on a %v context", ErrMasterKey, w.Algorithm())
	}
	var zero [16]byte
	if err := w.SetKey(zero[:]); err != nil {
		return fmt.Errorf("%w: %w", ErrMasterKey, err)
	}
	w.Write(key)
	w.Finish(dst[:0])
	return nil
}

// Algorithm returns the master key's algorithm.
func (m *Master) Algorithm() *mac.Algorithm {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.alg
}

// Wipe clears the master key and its template. No derivation may run
// concurrently with it.
func (m *Master) Wipe() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.wipe()
}

// wipe is Wipe under mu. It stores only into the fields that hold
// something: a fresh Master (Init's) is left as it is.
func (m *Master) wipe() {
	if k := m.key.Load(); k != nil {
		k.Wipe()
		m.key.Store(nil)
	}
	m.wipeWaiting()
	m.alg = nil
	if m.ready.Load() {
		m.ready.Store(false)
	}
}

// wipeWaiting clears the master key waiting for its template and lets it
// go; under mu.
func (m *Master) wipeWaiting() {
	if b := m.short.Load(); b != nil {
		clear(b[:])
		m.short.Store(nil)
		m.n = 0
	}
	if k := m.long.Load(); k != nil {
		clear(k.b)
		k.b = nil
		m.long.Store(nil)
	}
}

// String names the master key's algorithm, never its bytes:
// "kdf.Master{hmac(sha1), key [redacted]}", or "kdf.Master{empty}"
// before Init and after Wipe.
func (m *Master) String() string {
	if alg := m.Algorithm(); alg != nil {
		return "kdf.Master{" + alg.Name() + ", key " + redact.Marker + "}"
	}
	return "kdf.Master{empty}"
}

// GoString is String, so %#v does not print the key either.
func (m *Master) GoString() string { return m.String() }

// Format prints String for every verb, %x and %d included.
func (m *Master) Format(f fmt.State, _ rune) { redact.Format(f, m.String()) }

// LogValue is m for log/slog: its algorithm and key=[redacted], or an
// empty group before Init and after Wipe.
func (m *Master) LogValue() slog.Value {
	alg := m.Algorithm()
	if alg == nil {
		return slog.GroupValue()
	}
	return slog.GroupValue(slog.String("alg", alg.Name()), slog.String("key", redact.Marker))
}

// Input is the connection part of the PRF input (RFC 5925 §5.2): as seen
// in the segments the traffic key protects. For Send_SYN and
// Receive_SYN keys DstISN is 0.
type Input struct {
	Src, Dst         netip.Addr
	SrcPort, DstPort uint16
	SrcISN, DstISN   uint32
}

// Append appends the whole RFC 5926 PRF input block for a digest of
// outBits bits: 0x01 || "TCP-AO" || context || be16(outBits).
func (in *Input) Append(dst []byte, outBits int) ([]byte, error) {
	if in == nil {
		return dst, ErrAddress
	}
	dst, err := in.AppendContext(append(dst, 1, 'T', 'C', 'P', '-', 'A', 'O'))
	if err != nil {
		return dst[:len(dst)-7], err
	}
	return binary.BigEndian.AppendUint16(dst, uint16(outBits)), nil
}

// AppendContext appends the bare context (RFC 5925 §5.2): the addresses,
// ports and ISNs, 12 bytes for IPv4 and 36 for IPv6.
func (in *Input) AppendContext(dst []byte) ([]byte, error) {
	if in == nil {
		return dst, ErrAddress
	}
	src, d := in.Src.Unmap(), in.Dst.Unmap()
	if src.Is4() != d.Is4() || !src.IsValid() || !d.IsValid() {
		return dst, ErrAddress
	}
	dst = appendAddr(dst, src)
	dst = appendAddr(dst, d)
	dst = binary.BigEndian.AppendUint16(dst, in.SrcPort)
	dst = binary.BigEndian.AppendUint16(dst, in.DstPort)
	dst = binary.BigEndian.AppendUint32(dst, in.SrcISN)
	return binary.BigEndian.AppendUint32(dst, in.DstISN), nil
}

// Derive appends the traffic key for in (Size() bytes of the algorithm)
// to out. w is a working context of the same algorithm (from the pool),
// scratch at least MaxInputLen bytes; neither escapes, and with capacity
// in out nothing is allocated.
func (m *Master) Derive(w *mac.Context, scratch []byte, in *Input, out []byte) ([]byte, error) {
	if m == nil || in == nil {
		return out, ErrMasterKey
	}
	key, err := m.keyed(w)
	if err != nil {
		return out, err
	}
	alg := key.Algorithm()
	if cap(scratch) < MaxInputLen {
		return out, fmt.Errorf("%w: scratch of %d bytes", ErrMasterKey, cap(scratch))
	}
	var buf []byte
	switch alg.KDF() {
	case mac.HKDFSHA256:
		buf, err = in.AppendContext(scratch[:0])
		buf = append(buf, 1) // T(1) of HKDF-Expand: L = 32 is one block
	case mac.KMAC256KDF:
		buf, err = in.AppendContext(scratch[:0])
	default:
		buf, err = in.Append(scratch[:0], alg.Size()*8)
	}
	if err != nil {
		return out, err
	}
	if err := w.Start(key); err != nil {
		return out, fmt.Errorf("%w: %w", ErrMasterKey, err)
	}
	w.Write(buf)
	clear(buf)
	return w.Finish(out), nil
}

func appendAddr(dst []byte, a netip.Addr) []byte {
	if a.Is4() {
		b := a.As4()
		return append(dst, b[:]...)
	}
	b := a.As16()
	return append(dst, b[:]...)
}
