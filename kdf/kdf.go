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
// A [Master] is keyed once per master key, so deriving the four keys of a
// new connection runs no key schedule of the PRF.
package kdf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

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
// algorithm under the (reduced) master key. It is immutable after Init
// and safe for concurrent use.
type Master struct {
	key mac.Key
}

// Init prepares masterKey for alg. For cmac(aes128) a key that is not 16
// bytes long is reduced as RFC 5926 §3.1.1.2 says (Linux
// tcp_ao_parse_crypto does the same, and then reports the reduced key).
func (m *Master) Init(alg *mac.Algorithm, masterKey []byte) error {
	if m == nil {
		return ErrMasterKey
	}
	if alg.ReducesMasterKey() && len(masterKey) != 16 {
		return m.initReduced(alg, masterKey)
	}
	if err := m.key.Init(alg, masterKey); err != nil {
		return fmt.Errorf("%w: %v", ErrMasterKey, err)
	}
	return nil
}

// initReduced keys m with the CMAC extraction of a master key that is not
// 16 bytes long (its own function: only this path needs the buffer).
func (m *Master) initReduced(alg *mac.Algorithm, masterKey []byte) error {
	var reduced [16]byte
	ReduceCMACKey(&reduced, masterKey)
	err := m.key.Init(alg, reduced[:])
	clear(reduced[:])
	if err != nil {
		return fmt.Errorf("%w: %v", ErrMasterKey, err)
	}
	return nil
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
	c.Sum(dst[:0])
	c.Wipe()
}

// Algorithm returns the master key's algorithm.
func (m *Master) Algorithm() *mac.Algorithm {
	if m == nil {
		return nil
	}
	return m.key.Algorithm()
}

// Wipe clears the prepared key.
func (m *Master) Wipe() {
	if m != nil {
		m.key.Wipe()
	}
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
	alg := m.key.Algorithm()
	if cap(scratch) < MaxInputLen {
		return out, fmt.Errorf("%w: scratch of %d bytes", ErrMasterKey, cap(scratch))
	}
	buf, err := in.Append(scratch[:0], alg.Size()*8)
	if err != nil {
		return out, err
	}
	if err := w.Load(&m.key); err != nil {
		return out, fmt.Errorf("%w: %w", ErrMasterKey, err)
	}
	w.Write(buf)
	clear(buf)
	return w.Sum(out), nil
}

func appendAddr(dst []byte, a netip.Addr) []byte {
	if a.Is4() {
		b := a.As4()
		return append(dst, b[:]...)
	}
	b := a.As16()
	return append(dst, b[:]...)
}
