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
// A [Master] is keyed once per master key, on its first derivation, so
// adding a key runs no key schedule of the PRF and deriving the four keys
// of each later connection runs none either.
package kdf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"

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
// algorithm under the (reduced) master key. The template is made the first
// time the key derives (an add of an MKT then runs no key schedule, and a
// key that never derives never runs one); Init checks the key at once.
// Safe for concurrent use after Init.
type Master struct {
	key   mac.Key        // the template, once ready
	alg   *mac.Algorithm // set by Init
	ready atomic.Bool    // key holds the template
	mu    sync.Mutex     // makes the template once
	raw   [maxLazyKey]byte
	n     uint8 // raw's length until the template is made; then raw is cleared
}

// maxLazyKey is the longest master key whose template waits for its first
// use (Linux's TCP_AO_MAXKEYLEN); a longer one is keyed at once.
const maxLazyKey = 80

// Init prepares masterKey for alg. For cmac(aes128) a key that is not 16
// bytes long is reduced as RFC 5926 §3.1.1.2 says (Linux
// tcp_ao_parse_crypto does the same, and then reports the reduced key).
func (m *Master) Init(alg *mac.Algorithm, masterKey []byte) error {
	if m == nil {
		return ErrMasterKey
	}
	m.Wipe()
	if alg.ReducesMasterKey() && len(masterKey) != 16 {
		var reduced [16]byte
		ReduceCMACKey(&reduced, masterKey)
		err := m.set(alg, reduced[:])
		clear(reduced[:])
		return err
	}
	return m.set(alg, masterKey)
}

// set checks key and keeps it for the template, or makes the template now
// for a key longer than maxLazyKey.
func (m *Master) set(alg *mac.Algorithm, key []byte) error {
	if !alg.KeySizeOK(len(key)) {
		return fmt.Errorf("%w: %v does not take a %d-byte key", ErrMasterKey, alg, len(key))
	}
	m.alg = alg
	if len(key) > maxLazyKey {
		if err := m.key.Init(alg, key); err != nil {
			m.alg = nil
			return fmt.Errorf("%w: %v", ErrMasterKey, err)
		}
		m.ready.Store(true)
		return nil
	}
	m.n = uint8(copy(m.raw[:], key))
	return nil
}

// keyed returns the template, making it on first use.
func (m *Master) keyed() (*mac.Key, error) {
	if m.ready.Load() {
		return &m.key, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.ready.Load() {
		if m.alg == nil {
			return nil, ErrMasterKey
		}
		err := m.key.Init(m.alg, m.raw[:m.n])
		clear(m.raw[:])
		m.n = 0
		if err != nil {
			m.alg = nil
			return nil, fmt.Errorf("%w: %v", ErrMasterKey, err)
		}
		m.ready.Store(true)
	}
	return &m.key, nil
}

// ReduceCMACKey computes AES-CMAC(0^128, key), the KDF_AES_128_CMAC key
// extraction of RFC 5926 §3.1.1.2 (RFC 4615 AES-CMAC-PRF-128's first step).
func ReduceCMACKey(dst *[16]byte, key []byte) {
	if dst == nil {
		return
	}
	alg, _ := mac.Lookup("cmac(aes128)")
	c := alg.NewContext()
	var zero [16]byte
	_ = c.SetKey(zero[:])
	c.Write(key)
	c.Finish(dst[:0])
	c.Wipe()
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
	m.key.Wipe()
	clear(m.raw[:])
	m.n, m.alg = 0, nil
	m.ready.Store(false)
}

// Input is the connection part of the PRF input (RFC 5925 §5.2): as seen
// in the segments the traffic key protects. For Send_SYN and
// Receive_SYN keys DstISN is 0.
type Input struct {
	Src, Dst         netip.Addr
	SrcPort, DstPort uint16
	SrcISN, DstISN   uint32
}

// Append appends the whole PRF input block for a digest of outBits bits.
func (in *Input) Append(dst []byte, outBits int) ([]byte, error) {
	if in == nil {
		return dst, ErrAddress
	}
	src, d := in.Src.Unmap(), in.Dst.Unmap()
	if src.Is4() != d.Is4() || !src.IsValid() || !d.IsValid() {
		return dst, ErrAddress
	}
	dst = append(dst, 1, 'T', 'C', 'P', '-', 'A', 'O')
	dst = appendAddr(dst, src)
	dst = appendAddr(dst, d)
	dst = binary.BigEndian.AppendUint16(dst, in.SrcPort)
	dst = binary.BigEndian.AppendUint16(dst, in.DstPort)
	dst = binary.BigEndian.AppendUint32(dst, in.SrcISN)
	dst = binary.BigEndian.AppendUint32(dst, in.DstISN)
	return binary.BigEndian.AppendUint16(dst, uint16(outBits)), nil
}

// Derive appends the traffic key for in (Size() bytes of the algorithm)
// to out. w is a working context of the same algorithm (from the pool),
// scratch at least MaxInputLen bytes; neither escapes, and with capacity
// in out nothing is allocated.
func (m *Master) Derive(w *mac.Context, scratch []byte, in *Input, out []byte) ([]byte, error) {
	if m == nil || in == nil {
		return out, ErrMasterKey
	}
	key, err := m.keyed()
	if err != nil {
		return out, err
	}
	alg := key.Algorithm()
	if cap(scratch) < MaxInputLen {
		return out, fmt.Errorf("%w: scratch of %d bytes", ErrMasterKey, cap(scratch))
	}
	buf, err := in.Append(scratch[:0], alg.Size()*8)
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
