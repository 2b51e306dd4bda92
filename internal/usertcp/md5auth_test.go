package usertcp

// A test-only TCP-MD5 Auth, from the same independent crypto/md5
// computation of RFC 2385 as Linux does it (linux-notes §8) that checks
// the fixtures in testvectors/md5. The md5sig package replaces it.

import (
	"crypto/md5"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

type md5Auth struct {
	keys map[netip.Addr][]byte // by peer address
}

func newMD5Auth(peer netip.Addr, key string) *md5Auth {
	return &md5Auth{keys: map[netip.Addr][]byte{peer.Unmap(): []byte(key)}}
}

// OptionLen: NOP NOP kind=19 len=18 digest, as Linux lays it out.
func (a *md5Auth) OptionLen(syn bool) int { return 20 }

func (a *md5Auth) Sign(pkt []byte) error {
	src, dst, tcp, err := splitIP(pkt)
	if err != nil {
		return err
	}
	key := a.keys[dst]
	if key == nil {
		return fmt.Errorf("no key for %v", dst)
	}
	if int(tcp[12]>>4)*4 < 40 {
		return errors.New("no room for the option")
	}
	opt := tcp[20:40]
	copy(opt, []byte{1, 1, 19, 18})
	d := md5Digest(src, dst, tcp, key)
	copy(opt[4:], d[:])
	return nil
}

var errMD5 = errors.New("md5: bad or missing signature")

func (a *md5Auth) Verify(pkt []byte) error {
	src, dst, tcp, err := splitIP(pkt)
	if err != nil {
		return err
	}
	key := a.keys[src]
	mac := md5Option(tcp)
	switch {
	case key == nil && mac == nil:
		return nil
	case key == nil || mac == nil:
		return errMD5
	}
	d := md5Digest(src, dst, tcp, key)
	if subtle.ConstantTimeCompare(d[:], mac) != 1 {
		return errMD5
	}
	return nil
}

func splitIP(pkt []byte) (src, dst netip.Addr, tcp []byte, err error) {
	switch {
	case len(pkt) >= 40 && pkt[0]>>4 == 4:
		ihl := int(pkt[0]&15) * 4
		total := int(binary.BigEndian.Uint16(pkt[2:]))
		if total > len(pkt) || ihl+20 > total {
			break
		}
		return netip.AddrFrom4([4]byte(pkt[12:16])), netip.AddrFrom4([4]byte(pkt[16:20])), pkt[ihl:total], nil
	case len(pkt) >= 60 && pkt[0]>>4 == 6 && pkt[6] == 6:
		n := 40 + int(binary.BigEndian.Uint16(pkt[4:]))
		if n > len(pkt) {
			break
		}
		return netip.AddrFrom16([16]byte(pkt[8:24])), netip.AddrFrom16([16]byte(pkt[24:40])), pkt[40:n], nil
	}
	return src, dst, nil, errors.New("not a TCP packet")
}

// md5Option returns the digest of the segment's MD5 option, or nil.
func md5Option(tcp []byte) []byte {
	doff := int(tcp[12]>>4) * 4
	if doff < 20 || doff > len(tcp) {
		return nil
	}
	opts := tcp[20:doff]
	for i := 0; i < len(opts); {
		switch opts[i] {
		case 0:
			return nil
		case 1:
			i++
			continue
		}
		if i+1 >= len(opts) || opts[i+1] < 2 || i+int(opts[i+1]) > len(opts) {
			return nil
		}
		if opts[i] == 19 && opts[i+1] == 18 {
			return opts[i+2 : i+18]
		}
		i += int(opts[i+1])
	}
	return nil
}

// md5Digest: pseudo-header with the real segment length; the 20-byte TCP
// header with its checksum zeroed; the payload; the key.
func md5Digest(src, dst netip.Addr, tcp, key []byte) [md5.Size]byte {
	h := md5.New()
	if src.Is4() {
		var ph [12]byte
		s, d := src.As4(), dst.As4()
		copy(ph[0:], s[:])
		copy(ph[4:], d[:])
		ph[9] = 6
		binary.BigEndian.PutUint16(ph[10:], uint16(len(tcp)))
		h.Write(ph[:])
	} else {
		var ph [40]byte
		s, d := src.As16(), dst.As16()
		copy(ph[0:], s[:])
		copy(ph[16:], d[:])
		binary.BigEndian.PutUint32(ph[32:], uint32(len(tcp)))
		ph[39] = 6
		h.Write(ph[:])
	}
	var th [20]byte
	copy(th[:], tcp[:20])
	th[16], th[17] = 0, 0
	h.Write(th[:])
	h.Write(tcp[int(tcp[12]>>4)*4:])
	h.Write(key)
	var d [md5.Size]byte
	h.Sum(d[:0])
	return d
}
