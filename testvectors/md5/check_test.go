package md5

// An independent RFC 2385 computation (RFC 2385 §2.0, as Linux's tcp_v4_md5_hash_skb lays it out),
// with crypto/md5 only, used to sanity-check the captures until the md5sig
// package checks them. It shares no code with md5sig.

import (
	"crypto/md5"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// refKey is one key from a capture's keys list.
type refKey struct {
	peer netip.Prefix
	key  []byte
}

// refSegment is a parsed IPv4 or IPv6 TCP segment.
type refSegment struct {
	src, dst netip.Addr
	tcp      []byte // TCP header, options and payload (up to the IP length)
	macOff   int    // offset in tcp of the 16-byte MD5 digest, or -1
}

func parseSegment(ip []byte) (refSegment, error) {
	var s refSegment
	if len(ip) < 1 {
		return s, errors.New("empty packet")
	}
	switch ip[0] >> 4 {
	case 4:
		if len(ip) < 20 {
			return s, errors.New("short IPv4 header")
		}
		ihl := int(ip[0]&15) * 4
		total := int(binary.BigEndian.Uint16(ip[2:]))
		if ip[9] != 6 || ihl < 20 || total < ihl || total > len(ip) {
			return s, fmt.Errorf("not a well-formed IPv4 TCP packet")
		}
		s.src = netip.AddrFrom4([4]byte(ip[12:16]))
		s.dst = netip.AddrFrom4([4]byte(ip[16:20]))
		s.tcp = ip[ihl:total]
	case 6:
		if len(ip) < 40 {
			return s, errors.New("short IPv6 header")
		}
		plen := int(binary.BigEndian.Uint16(ip[4:]))
		if ip[6] != 6 || 40+plen > len(ip) {
			return s, fmt.Errorf("not a well-formed IPv6 TCP packet")
		}
		s.src = netip.AddrFrom16([16]byte(ip[8:24]))
		s.dst = netip.AddrFrom16([16]byte(ip[24:40]))
		s.tcp = ip[40 : 40+plen]
	default:
		return s, errors.New("not IP")
	}
	if len(s.tcp) < 20 {
		return s, errors.New("short TCP header")
	}
	doff := int(s.tcp[12]>>4) * 4
	if doff < 20 || doff > len(s.tcp) {
		return s, errors.New("bad data offset")
	}
	s.macOff = -1
	opts := s.tcp[20:doff]
	for i := 0; i < len(opts); {
		switch opts[i] {
		case 0:
			i = len(opts)
			continue
		case 1:
			i++
			continue
		}
		if i+1 >= len(opts) || opts[i+1] < 2 || i+int(opts[i+1]) > len(opts) {
			return s, errors.New("bad TCP option")
		}
		if opts[i] == 19 {
			if opts[i+1] != 18 || s.macOff >= 0 {
				return s, errors.New("bad or duplicate MD5 option")
			}
			s.macOff = 20 + i + 2
		}
		i += int(opts[i+1])
	}
	return s, nil
}

// digest computes the RFC 2385 signature as Linux does: pseudo-header with
// the segment's real length, the 20-byte TCP header with its checksum
// zeroed and its data offset unchanged, the payload, the key.
func (s refSegment) digest(key []byte) [md5.Size]byte {
	h := md5.New()
	n := len(s.tcp)
	if s.src.Is4() {
		var ph [12]byte
		a, b := s.src.As4(), s.dst.As4()
		copy(ph[0:], a[:])
		copy(ph[4:], b[:])
		ph[9] = 6
		binary.BigEndian.PutUint16(ph[10:], uint16(n))
		h.Write(ph[:])
	} else {
		var ph [40]byte
		a, b := s.src.As16(), s.dst.As16()
		copy(ph[0:], a[:])
		copy(ph[16:], b[:])
		binary.BigEndian.PutUint32(ph[32:], uint32(n))
		ph[39] = 6
		h.Write(ph[:])
	}
	var th [20]byte
	copy(th[:], s.tcp[:20])
	th[16], th[17] = 0, 0
	h.Write(th[:])
	h.Write(s.tcp[int(s.tcp[12]>>4)*4:])
	h.Write(key)
	var d [md5.Size]byte
	h.Sum(d[:0])
	return d
}

// lookup returns the key for segments sent by src: the longest peer
// prefix that contains src, as the receiver's kernel would pick it.
func lookup(keys []refKey, src netip.Addr) []byte {
	best := -1
	var k []byte
	for _, e := range keys {
		if e.peer.Contains(src) && e.peer.Bits() > best {
			best, k = e.peer.Bits(), e.key
		}
	}
	return k
}

var errBadMAC = errors.New("MD5 signature mismatch")

// verifyIP checks one IP packet; it reports whether it was signed.
func verifyIP(ip []byte, keys []refKey) (signed bool, err error) {
	s, err := parseSegment(ip)
	if err != nil {
		return false, err
	}
	key := lookup(keys, s.src)
	switch {
	case s.macOff < 0 && key == nil:
		return false, nil
	case s.macOff < 0:
		return false, fmt.Errorf("unsigned segment from %v, which has a key", s.src)
	case key == nil:
		return true, fmt.Errorf("signed segment from %v, which has no key", s.src)
	}
	d := s.digest(key)
	if subtle.ConstantTimeCompare(d[:], s.tcp[s.macOff:s.macOff+16]) != 1 {
		return true, errBadMAC
	}
	return true, nil
}

// corruptions returns copies of a signed IP packet each with one byte
// changed in a place the signature covers (the MD5 digest, the payload,
// the TCP header, the pseudo-header's source address), and, separately,
// copies changed where it does not (the TCP checksum, another option).
func corruptions(ip []byte) (covered, uncovered map[string][]byte) {
	s, err := parseSegment(ip)
	if err != nil || s.macOff < 0 {
		return nil, nil
	}
	tcpOff := 40
	if ip[0]>>4 == 4 {
		tcpOff = int(ip[0]&15) * 4
	}
	flip := func(off int) []byte {
		c := append([]byte(nil), ip...)
		c[off] ^= 0x01
		return c
	}
	covered = map[string][]byte{
		"mac":       flip(tcpOff + s.macOff + 7),
		"seq":       flip(tcpOff + 4),
		"flags":     flip(tcpOff + 13), // the FIN bit
		"window":    flip(tcpOff + 15),
		"src-port":  flip(tcpOff + 1),
		"ip-source": flip(srcOff(ip)),
	}
	doff := int(s.tcp[12]>>4) * 4
	if len(s.tcp) > doff {
		covered["payload"] = flip(tcpOff + len(s.tcp) - 1)
	}
	uncovered = map[string][]byte{"checksum": flip(tcpOff + 16)}
	// Another option (MSS in a SYN): options are not covered.
	for i := 20; i < doff; {
		k := s.tcp[i]
		if k == 0 {
			break
		}
		if k == 1 {
			i++
			continue
		}
		if k == 2 {
			uncovered["mss-option"] = flip(tcpOff + i + 3)
			break
		}
		i += int(s.tcp[i+1])
	}
	return covered, uncovered
}

func srcOff(ip []byte) int {
	if ip[0]>>4 == 4 {
		return 15
	}
	return 23
}
