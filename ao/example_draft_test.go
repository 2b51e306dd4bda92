package ao_test

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/mac"
	"github.com/tcpsig/tcpsig/segment"
)

// The algorithms of draft-ietf-tcpm-tcp-ao-algs-07 are MKTs like any
// other: 16-byte MACs (a 20-byte option), master keys of 32 bytes or more.
func ExampleKeyring_Add_draftAlgorithms() {
	client, server := netip.MustParseAddrPort("192.0.2.1:40000"), netip.MustParseAddrPort("192.0.2.2:179")
	key := bytes.Repeat([]byte{0x5a}, 32)
	for _, alg := range []string{"HMAC-SHA256-128", "KMAC256-128"} {
		cring, sring := ao.NewKeyring(nil), ao.NewKeyring(nil)
		m, err := cring.Add(keys.AO{Peer: netip.PrefixFrom(server.Addr(), 32), SendID: 1, RecvID: 2, Algorithm: alg, Key: key})
		if err != nil {
			panic(err)
		}
		if _, err := sring.Add(keys.AO{Peer: netip.PrefixFrom(client.Addr(), 32), SendID: 2, RecvID: 1, Algorithm: alg, Key: key}); err != nil {
			panic(err)
		}
		fmt.Printf("%s: maclen %d, option %d bytes, Linux has it: %v\n", m.Algorithm(), m.MACLen(), ao.OptionSpace(m.MACLen()), m.Algorithm().Linux())

		var c ao.Conn
		if err := c.Init(cring, ao.Endpoint{Local: client, Remote: server, LocalISN: 1000}, ao.Policy{}); err != nil {
			panic(err)
		}
		syn, _ := segment.FromTCP(client.Addr(), server.Addr(), tcpHeader(40000, 179, 1000, 0, segment.SYN, m.MACLen()))
		var s ao.Conn
		signErr := c.Sign(&syn)
		_, acceptErr := ao.NewListener(sring, ao.Policy{}, 0).Accept(&syn, &s)
		fmt.Printf("  sign SYN: %v, accept: %v\n", signErr, acceptErr)
	}

	ring := ao.NewKeyring(nil)
	_, err := ring.Add(keys.AO{Peer: netip.MustParsePrefix("192.0.2.0/24"), Algorithm: "KMAC256-128", Key: key, MACLen: 12})
	fmt.Println(err, errors.Is(err, mac.ErrMACLen))
	_, err = ring.Add(keys.AO{Peer: netip.MustParsePrefix("192.0.2.0/24"), Algorithm: "HMAC-SHA256-128", Key: []byte("bgp-session-secret")})
	fmt.Println(err, errors.Is(err, mac.ErrMasterKeyLen))
	// Output:
	// hmac-sha256-128: maclen 16, option 20 bytes, Linux has it: false
	//   sign SYN: <nil>, accept: <nil>
	// kmac256-128: maclen 16, option 20 bytes, Linux has it: false
	//   sign SYN: <nil>, accept: <nil>
	// keys: invalid MKT: mac: MAC length not allowed: kmac256-128 has 16-byte MACs only, not 12 true
	// keys: invalid MKT: mac: master key too short: hmac-sha256-128 needs a master key of at least 32 bytes (256 bits), got 18 true
}
