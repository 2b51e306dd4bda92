package usertcp

// The TCP-MD5 Auth of the tests: a packetauth.Layer over a keyring with
// one key for the peer, so every segment the endpoint sends to the kernel
// is signed by md5sig and every one it receives is verified by md5sig.

import (
	"encoding/binary"
	"errors"
	"net/netip"

	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/packetauth"
)

func newMD5Auth(peer netip.Addr, key string) Auth {
	ring := md5sig.NewKeyring(nil)
	p := peer.Unmap()
	if _, err := ring.Add(keys.MD5{Peer: netip.PrefixFrom(p, p.BitLen()), Key: []byte(key)}); err != nil {
		panic(err) // test setup: a fixed, valid key
	}
	a, err := packetauth.New(packetauth.Config{MD5: ring})
	if err != nil {
		panic(err)
	}
	return a
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
