package aopacket_test

import (
	"fmt"
	"net/netip"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/ao/aopacket"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/segment"
)

// A client and a server stack, each with one aopacket.Auth for the
// connection, exchange whole IPv4 packets: the SYN, a SYN-ACK carrying the
// server's greeting, data, and a segment damaged on the way. Each stack
// reserves OptionLen NOP bytes, lets Auth sign, then sets the checksum;
// the other side verifies before it looks at the packet. Midway the client
// asks the server to move to a second MKT (RNextKeyID), and the server
// follows on the next segment it verifies.
func Example() {
	client := netip.MustParseAddrPort("192.0.2.1:40000")
	server := netip.MustParseAddrPort("192.0.2.2:179")
	mkt := func(peer netip.Addr, send, recv uint8, key string) keys.AO {
		return keys.AO{Peer: netip.PrefixFrom(peer, 32), SendID: send, RecvID: recv,
			Algorithm: "hmac(sha256)", Key: []byte(key)}
	}
	cring, sring := ao.NewKeyring(nil), ao.NewKeyring(nil)
	for _, c := range []keys.AO{mkt(server.Addr(), 1, 2, "key A"), mkt(server.Addr(), 3, 4, "key B")} {
		if _, err := cring.Add(c); err != nil {
			panic(err)
		}
	}
	for _, c := range []keys.AO{mkt(client.Addr(), 2, 1, "key A"), mkt(client.Addr(), 4, 3, "key B")} {
		if _, err := sring.Add(c); err != nil {
			panic(err)
		}
	}

	const cisn, sisn = 1000, 5000
	cauth, err := aopacket.NewClient(cring, ao.Endpoint{Local: client, Remote: server, LocalISN: cisn}, ao.Policy{}, 12)
	if err != nil {
		panic(err)
	}
	defer cauth.Close()
	if err := cauth.Conn().SetCurrent(1); err != nil { // key A both ways
		panic(err)
	}
	if err := cauth.Conn().SetRNext(2); err != nil {
		panic(err)
	}
	sauth, err := aopacket.NewServer(ao.NewListener(sring, ao.Policy{}, 0), sisn, 12)
	if err != nil {
		panic(err)
	}
	defer sauth.Close()

	// send builds a packet as a stack does and passes it through the
	// sender's Auth, then the receiver's.
	send := func(from, to *aopacket.Auth, src, dst netip.AddrPort, seq, ack uint32, flags segment.Flags, data string, damage bool) {
		reserved := make([]byte, from.OptionLen())
		for i := range reserved {
			reserved[i] = segment.OptionKindNOP
		}
		pkt, err := segment.AppendPacket(nil, segment.IP{Src: src.Addr(), Dst: dst.Addr()},
			segment.Fields{SrcPort: src.Port(), DstPort: dst.Port(), Seq: seq, Ack: ack, Flags: flags, Window: 65535},
			[]byte(data), reserved)
		if err != nil {
			panic(err)
		}
		if err := from.Sign(pkt); err != nil {
			panic(err)
		}
		if err := segment.SetTCPChecksum(pkt); err != nil {
			panic(err)
		}
		if damage {
			pkt[len(pkt)-1] ^= 1
		}
		s, _ := segment.ParsePacket(pkt)
		o, _ := ao.ParseOption(s.Header[s.Auth().AO:])
		fmt.Printf("%-5v KeyID %d RNextKeyID %d %-12q verify: %v\n", flags, o.KeyID, o.RNextKeyID, data, to.Verify(pkt))
	}
	send(cauth, sauth, client, server, cisn, 0, segment.SYN, "", false)
	send(sauth, cauth, server, client, sisn, cisn+1, segment.SYN|segment.ACK, "220 ready", false)
	send(cauth, sauth, client, server, cisn+1, sisn+10, segment.ACK|segment.PSH, "HELO", false)

	// The client asks for key B; the server moves once it verifies that.
	if err := cauth.Conn().SetRNext(4); err != nil {
		panic(err)
	}
	send(cauth, sauth, client, server, cisn+5, sisn+10, segment.ACK, "", false)
	send(sauth, cauth, server, client, sisn+10, cisn+5, segment.ACK|segment.PSH, "250 HELO", false)
	send(sauth, cauth, server, client, sisn+18, cisn+5, segment.ACK|segment.PSH, "250 again", true)
	fmt.Println("bad segments at the client:", cauth.Conn().Counters().Bad)
	// Output:
	// S     KeyID 1 RNextKeyID 2 ""           verify: <nil>
	// S.    KeyID 2 RNextKeyID 1 "220 ready"  verify: <nil>
	// P.    KeyID 1 RNextKeyID 2 "HELO"       verify: <nil>
	// .     KeyID 1 RNextKeyID 4 ""           verify: <nil>
	// P.    KeyID 4 RNextKeyID 1 "250 HELO"   verify: <nil>
	// P.    KeyID 4 RNextKeyID 1 "250 again"  verify: ao: MAC mismatch
	// bad segments at the client: 1
}
