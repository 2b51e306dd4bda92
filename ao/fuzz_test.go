package ao

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"sync"
	"testing"

	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/segment"
	"github.com/tcpsig/tcpsig/testvectors"
)

// fuzzProfile is one RFC 9235 setting (algorithm, options covered, IP
// version) with a keyring holding both ends' MKTs: the server's, for the
// client's address (SendID 84, RecvID 61), and the client's, for the
// server's address (61, 84).
type fuzzProfile struct {
	ipv        int
	ring       *Keyring
	cisn, sisn uint32
	maclen     int
}

var (
	fuzzOnce     sync.Once
	fuzzProfiles []fuzzProfile
	fuzzSeeds    [][]byte
)

func fuzzSetup(t testing.TB) {
	fuzzOnce.Do(func() {
		rfc, err := testvectors.RFC9235()
		if err != nil {
			t.Fatal(err)
		}
		// The draft's algorithms too: their 20-byte option, 32-byte key.
		draft, err := testvectors.DraftAlgs()
		if err != nil {
			t.Fatal(err)
		}
		seen := map[fuzzKey]bool{}
		for _, set := range []testvectors.RFC9235Set{rfc, draft} {
			fuzzAdd(t, set, seen)
		}
	})
}

// fuzzKey is one setting: the algorithm and the RFC 9235 section group
// (IP version, options covered, the connection's ISNs), e.g. "4.1".
type fuzzKey struct {
	alg, group string
}

// fuzzAdd adds set's packets to the seeds and a profile per setting not
// seen yet.
func fuzzAdd(t testing.TB, set testvectors.RFC9235Set, seen map[fuzzKey]bool) {
	for i := range set.Vectors {
		v := &set.Vectors[i]
		fuzzSeeds = append(fuzzSeeds, v.Packet)
		k := fuzzKey{v.Alg, v.Section[:3]}
		if seen[k] {
			continue
		}
		seen[k] = true
		seg, err := segment.ParsePacket(bytes.Clone(v.Packet))
		if err != nil {
			t.Fatal(err)
		}
		cli, srv := seg.Src(), seg.Dst()
		if seg.Header().SrcPort() == 179 {
			cli, srv = srv, cli
		}
		r := NewKeyring(nil)
		for _, c := range []keys.AO{
			{Peer: host(cli), SendID: set.ServerKeyID, RecvID: set.ClientKeyID},
			{Peer: host(srv), SendID: set.ClientKeyID, RecvID: set.ServerKeyID},
		} {
			c.Algorithm, c.Key, c.MACLen, c.ExcludeOptions = v.Alg, set.MasterKey, set.MACLen, !v.IncludeOptions
			mustAdd(t, r, c)
		}
		fuzzProfiles = append(fuzzProfiles, fuzzProfile{ipv: v.IPVersion, ring: r, cisn: v.ClientISN, sisn: v.ServerISN, maclen: set.MACLen})
	}
}

// fuzzPacketSeeds are the RFC 9235 packets and the draft vectors' (RFC
// 9235's re-signed with HMAC-SHA256-128 and KMAC256-128), each also cut on the wire and
// cut with its IP length made to agree (in the IP header, the TCP header,
// the options, the MAC, the payload).
func fuzzPacketSeeds(t testing.TB) [][]byte {
	fuzzSetup(t)
	var seeds [][]byte
	for _, p := range fuzzSeeds {
		seeds = append(seeds, p)
		ipHdr := 20
		if p[0]>>4 == 6 {
			ipHdr = 40
		}
		for _, n := range []int{0, 1, ipHdr - 1, ipHdr, ipHdr + 13, ipHdr + 20, ipHdr + 24, ipHdr + 30, len(p) - 1} {
			if n < 0 || n >= len(p) {
				continue
			}
			seeds = append(seeds, bytes.Clone(p[:n]))
			if n >= ipHdr {
				q := bytes.Clone(p[:n])
				if ipHdr == 20 {
					binary.BigEndian.PutUint16(q[2:], uint16(n))
				} else {
					binary.BigEndian.PutUint16(q[4:], uint16(n-ipHdr))
				}
				seeds = append(seeds, q)
			}
		}
	}
	return seeds
}

// FuzzVerify feeds arbitrary packets to every per-segment entry point:
// Conn.Verify on connections of each RFC 9235 setting and of each draft
// algorithm's (as either end), Listener.Accept, Conn.Sign and TrafficKey
// (the RSTs without a Conn). None may panic; a
// packet that verifies must verify again unchanged (nothing but counters
// and the SNE moved).
func FuzzVerify(f *testing.F) {
	for _, p := range fuzzPacketSeeds(f) {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, pkt []byte) {
		fuzzSetup(t)
		seg, err := segment.ParsePacket(pkt)
		if err != nil {
			return
		}
		if seg.Auth().HasAO() {
			if _, err := ParseOption(seg.Header()[seg.Auth().AO:]); err != nil {
				t.Fatalf("the parser located an AO option ParseOption refuses: %v", err)
			}
		}
		h := seg.Header()
		local := netip.AddrPortFrom(seg.Dst(), h.DstPort())
		remote := netip.AddrPortFrom(seg.Src(), h.SrcPort())
		for _, p := range fuzzProfiles {
			if (p.ipv == 4) != seg.Dst().Unmap().Is4() {
				continue
			}
			// The receiver as the server (ISNs in that order) and as the
			// client.
			for _, isns := range [][2]uint32{{p.sisn, p.cisn}, {p.cisn, p.sisn}} {
				var c Conn
				err := restore(&c, p.ring, Endpoint{Local: local, Remote: remote}, Policy{}, Endpoint{
					LocalISN: isns[0], RemoteISN: isns[1], SendSeq: isns[0] + 1, RecvSeq: isns[1] + 1,
					CurrentSendID: 84, RNextRecvID: 61})
				if err != nil {
					err = restore(&c, p.ring, Endpoint{Local: local, Remote: remote}, Policy{}, Endpoint{
						LocalISN: isns[0], RemoteISN: isns[1], SendSeq: isns[0] + 1, RecvSeq: isns[1] + 1,
						CurrentSendID: 61, RNextRecvID: 84})
				}
				if err != nil {
					continue // no MKT for this peer
				}
				if c.Verify(&seg) == nil && seg.Auth().AO > 0 {
					if err := c.Verify(&seg); err != nil {
						t.Fatalf("verified once, then: %v", err)
					}
				}
				// Sign a copy, then verify nothing breaks on it either.
				cp := bytes.Clone(pkt)
				if cs, err := segment.ParsePacket(cp); err == nil {
					_ = c.Sign(&cs)
					_ = c.Verify(&cs)
				}
				c.Close()
			}
			l := NewListener(p.ring, Policy{}, 0)
			var nc Conn
			_, _ = l.Accept(&seg, &nc)
			nc.Close()
			cp := bytes.Clone(pkt)
			if rst, err := segment.ParsePacket(cp); err == nil {
				_ = replyReset(p.ring, &seg, &rst, p.sisn, p.cisn)
				_ = listenerReset(p.ring, &seg, &rst)
			}
		}
	})
}

// FuzzParseOption checks the option codec: no panic; an accepted option's
// MAC is its length byte minus 4, aliases the input with no room to grow,
// and AppendOption writes the same header back.
func FuzzParseOption(f *testing.F) {
	for maclen := 1; maclen <= keys.MaxMACLen; maclen++ {
		f.Add(testOption(nil, 61, 84, maclen))
	}
	for _, s := range [][]byte{nil, {29}, {29, 0}, {29, 4, 1, 2}, {29, 5, 1, 2}, {29, 255, 1, 2, 3}, {19, 18}, {29, 6, 1, 2, 3}} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, opt []byte) {
		o, err := ParseOption(opt)
		if err != nil {
			return
		}
		n := int(opt[1])
		if opt[0] != optionKind || n <= optionHeaderLen || n > len(opt) || len(o.MAC) != n-optionHeaderLen || cap(o.MAC) != len(o.MAC) {
			t.Fatalf("accepted %x as %+v", opt, o)
		}
		if &o.MAC[0] != &opt[optionHeaderLen] {
			t.Fatal("MAC does not alias the input")
		}
		b := testOption(nil, o.KeyID, o.RNextKeyID, len(o.MAC))
		if !bytes.Equal(b[:optionHeaderLen], opt[:optionHeaderLen]) || len(b) != OptionSpace(len(o.MAC)) {
			t.Fatalf("AppendOption gives %x for %x", b, opt)
		}
	})
}

// TestFuzzSeedsVerify makes sure the fuzz setup is meaningful: every
// uncut seed packet verifies on one of the profiles' connections.
func TestFuzzSeedsVerify(t *testing.T) {
	fuzzSetup(t)
	ok := 0
	for _, pkt := range fuzzSeeds {
		seg, err := segment.ParsePacket(bytes.Clone(pkt))
		if err != nil {
			t.Fatal(err)
		}
		h := seg.Header()
		local, remote := netip.AddrPortFrom(seg.Dst(), h.DstPort()), netip.AddrPortFrom(seg.Src(), h.SrcPort())
		verified := false
		for _, p := range fuzzProfiles {
			if (p.ipv == 4) != seg.Dst().Is4() {
				continue
			}
			if h.Flags()&(segment.SYN|segment.ACK) == segment.SYN {
				var nc Conn
				if s, err := NewListener(p.ring, Policy{}, 0).Accept(&seg, &nc); s && err == nil {
					verified = true
				}
				nc.Close()
				continue
			}
			for _, isns := range [][2]uint32{{p.sisn, p.cisn}, {p.cisn, p.sisn}} {
				for _, ids := range [][2]uint8{{84, 61}, {61, 84}} {
					var c Conn
					if restore(&c, p.ring, Endpoint{Local: local, Remote: remote}, Policy{}, Endpoint{
						LocalISN: isns[0], RemoteISN: isns[1], SendSeq: isns[0] + 1, RecvSeq: isns[1] + 1,
						CurrentSendID: ids[0], RNextRecvID: ids[1]}) == nil && c.Verify(&seg) == nil {
						verified = true
					}
					c.Close()
				}
			}
		}
		if verified {
			ok++
		}
	}
	if ok != len(fuzzSeeds) {
		t.Fatalf("%d of %d seed packets verify", ok, len(fuzzSeeds))
	}
}
