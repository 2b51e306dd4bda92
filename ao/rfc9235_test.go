package ao

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"

	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/segment"
	"github.com/tcpsig/tcpsig/sigpool"
	"github.com/tcpsig/tcpsig/testvectors"
)

// rfc9235Side builds the keyring and connection of one endpoint of an RFC
// 9235 vector: the client has SendID 61/RecvID 84, the server 84/61; the
// server listens on port 179.
func rfc9235Side(t *testing.T, set *testvectors.RFC9235Set, v *testvectors.AO, seg *segment.Segment, sender bool) (*Keyring, *Conn) {
	t.Helper()
	h := seg.Header()
	fromServer := h.SrcPort() == 179
	// The endpoint we model: the segment's sender or its receiver.
	isServer := fromServer == sender
	local, remote := netip.AddrPortFrom(seg.Dst(), h.DstPort()), netip.AddrPortFrom(seg.Src(), h.SrcPort())
	if sender {
		local, remote = remote, local
	}
	sendID, recvID := set.ClientKeyID, set.ServerKeyID
	lisn, risn := v.ClientISN, v.ServerISN
	if isServer {
		sendID, recvID = recvID, sendID
		lisn, risn = risn, lisn
	}
	ring := NewKeyring(rfc9235Pool)
	_, err := ring.Add(keys.AO{Peer: netip.PrefixFrom(remote.Addr(), remote.Addr().BitLen()), SendID: sendID, RecvID: recvID,
		Algorithm: v.Alg, Key: set.MasterKey, MACLen: set.MACLen, ExcludeOptions: !v.IncludeOptions})
	if err != nil {
		t.Fatal(err)
	}
	c := new(Conn)
	if err := c.Init(ring, Endpoint{Local: local, Remote: remote, LocalISN: lisn}, Policy{Contexts: rfc9235Contexts}); err != nil {
		t.Fatal(err)
	}
	// The peer's ISN is known except to a client before the SYN-ACK.
	syn := h.Flags()&segment.SYN != 0
	if !(syn && !isServer) {
		c.setRISN(risn)
	}
	return ring, c
}

// rfc9235Verify verifies s as c's receiving end does: a SYN through a
// Listener on c's keyring, any other segment through c.
func rfc9235Verify(c *Conn, s *segment.Segment) error {
	if s.Header().Flags()&(segment.SYN|segment.ACK) == segment.SYN {
		var nc Conn
		_, err := NewListener(c.ring, Policy{Contexts: rfc9235Contexts}, 0).Accept(s, &nc)
		return err
	}
	return c.Verify(s)
}

// rfc9235SenderMKT adds the MKT of seg's sender (peer: its destination) to
// a fresh keyring, macLen 0 the algorithm's default, and returns it with
// the ISNs named from the segment's point of view, for the connection-less
// calls.
func rfc9235SenderMKT(t *testing.T, set *testvectors.RFC9235Set, v *testvectors.AO, seg *segment.Segment, macLen int) (*MKT, ISNs) {
	t.Helper()
	isns := ISNs{Src: v.ClientISN, Dst: v.ServerISN}
	sendID, recvID := set.ClientKeyID, set.ServerKeyID
	if seg.Header().SrcPort() == 179 {
		isns = ISNs{Src: v.ServerISN, Dst: v.ClientISN}
		sendID, recvID = recvID, sendID
	}
	m, err := NewKeyring(nil).Add(keys.AO{Peer: netip.PrefixFrom(seg.Dst(), seg.Dst().BitLen()), SendID: sendID, RecvID: recvID,
		Algorithm: v.Alg, Key: set.MasterKey, MACLen: macLen, ExcludeOptions: !v.IncludeOptions})
	if err != nil {
		t.Fatal(err)
	}
	return m, isns
}

// flippedSegment is v's packet, parsed afresh, with its byte at (counted
// from the start of the TCP header, into the payload) flipped.
func flippedSegment(v *testvectors.AO, at int) segment.Segment {
	bs, _ := segment.ParsePacket(bytes.Clone(v.Packet))
	if at >= len(bs.Header()) {
		bs.Payload()[at-len(bs.Header())] ^= 1
	} else {
		bs.Header()[at] ^= 1
	}
	return bs
}

// rfc9235Pool is the pool rfc9235Side's keyrings compute through (nil:
// sigpool.Default).
var rfc9235Pool *sigpool.Pool

// TestRFC9235Rekey is TestRFC9235 over a pool of the Rekey backend: the
// connections' leased contexts then run the key schedule per segment and
// must still give RFC 9235's MACs.
func TestRFC9235Rekey(t *testing.T) {
	p, err := sigpool.New(sigpool.Config{Backend: sigpool.Rekey})
	if err != nil {
		t.Fatal(err)
	}
	rfc9235Pool, rfc9235Contexts = p, ContextsLeased
	defer func() { rfc9235Pool, rfc9235Contexts = nil, ContextsAdaptive }()
	TestRFC9235(t)
}

// TestRFC9235Leased is TestRFC9235 with connections that lease their
// contexts from their first segment (Policy.Contexts), which the test
// then checks.
func TestRFC9235Leased(t *testing.T) {
	rfc9235Contexts = ContextsLeased
	defer func() { rfc9235Contexts = ContextsAdaptive }()
	TestRFC9235(t)
}

// rfc9235Contexts is the Policy.Contexts of the tests' connections.
var rfc9235Contexts Contexts

// TestRFC9235 signs and verifies all 32 segments of RFC 9235 and checks
// the MAC against the published one; then flips bits that the MAC covers.
// With rfc9235Contexts ContextsLeased it also checks that the signing
// lane computed every segment but a SYN (whose one-segment key lives in a
// pool request) with a context leased from the keyring's pool, in the
// pool's backend.
func TestRFC9235(t *testing.T) {
	set, err := testvectors.RFC9235()
	if err != nil {
		t.Fatal(err)
	}
	signed, verified := 0, 0
	for i := range set.Vectors {
		v := &set.Vectors[i]
		t.Run(v.Section, func(t *testing.T) {
			// Sign: the sender's view, MAC field zeroed first.
			pkt := bytes.Clone(v.Packet)
			seg, err := segment.ParsePacket(pkt)
			if err != nil {
				t.Fatal(err)
			}
			_, c := rfc9235Side(t, &set, v, &seg, true)
			off := seg.Auth().AO + optionHeaderLen
			clear(seg.Header()[off : off+set.MACLen])
			if err := c.Sign(&seg); err != nil {
				t.Fatalf("sign: %v", err)
			}
			if got := seg.Header()[off : off+set.MACLen]; !bytes.Equal(got, v.MAC) {
				t.Fatalf("%s: signed MAC %x, RFC 9235 has %x", v.Title, got, v.MAC)
			}
			if l := c.send.lease; c.policy.Contexts == ContextsLeased && !isSYN(seg.Header().Flags()) && (l == nil || l.pool != c.ring.pool || l.ctx.Rekeys() != (rfc9235Pool != nil)) {
				t.Fatalf("%s: the send lane's context is not a lease from the keyring's pool", v.Title)
			}
			signed++

			// Verify: the receiver's view.
			pkt = bytes.Clone(v.Packet)
			seg, _ = segment.ParsePacket(pkt)
			_, rc := rfc9235Side(t, &set, v, &seg, false)
			if err := rfc9235Verify(rc, &seg); err != nil {
				t.Fatalf("%s: verify: %v", v.Title, err)
			}
			verified++

			// Every byte the MAC covers matters: flip one in the TCP
			// header (not the checksum), in the MAC, and in the payload.
			flips := []int{seg.Header().DataOffset() - 1, off, 0}
			if len(seg.Payload()) > 0 {
				flips = append(flips, len(seg.Header())+len(seg.Payload())-1)
			}
			for _, at := range flips {
				bs := flippedSegment(v, at)
				if !v.IncludeOptions && at == seg.Header().DataOffset()-1 && at > off+set.MACLen {
					continue // an option outside the MAC
				}
				_, rc = rfc9235Side(t, &set, v, &bs, false)
				if err := rfc9235Verify(rc, &bs); !errors.Is(err, ErrBadMAC) && !errors.Is(err, ErrKeyNotFound) {
					t.Errorf("%s: flipped byte %d verified: %v", v.Title, at, err)
				}
			}
		})
	}
	t.Logf("RFC 9235: %d segments signed byte-exact, %d verified", signed, verified)
	if signed != 32 || verified != 32 {
		t.Fatalf("want 32/32")
	}
}

// TestRFC9235Segment: the per-segment core alone, with no Conn, signs all
// 32 segments of RFC 9235 byte-exact and verifies them; the MKT is the
// sender's, the ISNs are named from the segment's point of view and the
// SNE is 0. Swapping the ISNs, a wrong SNE or a flipped byte fails.
func TestRFC9235Segment(t *testing.T) {
	set, err := testvectors.RFC9235()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := range set.Vectors {
		v := &set.Vectors[i]
		pkt := bytes.Clone(v.Packet)
		seg, err := segment.ParsePacket(pkt)
		if err != nil {
			t.Fatal(err)
		}
		h := seg.Header()
		m, isns := rfc9235SenderMKT(t, &set, v, &seg, set.MACLen)
		if err := verifySegment(m, isns, 0, &seg); err != nil {
			t.Fatalf("%s %s: verifySegment: %v", v.Section, v.Title, err)
		}
		if err := verifySegment(m, isns, 1, &seg); !errors.Is(err, ErrBadMAC) {
			t.Errorf("%s: SNE 1 verified: %v", v.Section, err)
		}
		if h.Flags()&segment.SYN == 0 || h.Flags()&segment.ACK != 0 {
			if err := verifySegment(m, ISNs{Src: isns.Dst, Dst: isns.Src}, 0, &seg); !errors.Is(err, ErrBadMAC) {
				t.Errorf("%s: swapped ISNs verified: %v", v.Section, err)
			}
		}
		off := seg.Auth().AO
		rnext := h[off+3]
		clear(h[off+2 : off+optionHeaderLen+set.MACLen])
		if err := signSegment(m, isns, 0, rnext, &seg); err != nil {
			t.Fatalf("%s: SignSegment: %v", v.Section, err)
		}
		if got := h[off+optionHeaderLen : off+optionHeaderLen+set.MACLen]; !bytes.Equal(got, v.MAC) || !bytes.Equal(pkt, v.Packet) {
			t.Fatalf("%s: signSegment MAC %x, RFC 9235 has %x", v.Section, got, v.MAC)
		}
		// A TrafficKey derived once signs and verifies to the same bytes.
		var k TrafficKey
		if err := k.Derive(m, isns, &seg); err != nil {
			t.Fatalf("%s: Derive: %v", v.Section, err)
		}
		if !k.Covers(m, isns, &seg) || k.Covers(m, ISNs{Src: isns.Src + 1, Dst: isns.Dst}, &seg) {
			t.Errorf("%s: Covers does not follow the ISNs", v.Section)
		}
		clear(h[off+2 : off+optionHeaderLen+set.MACLen])
		if err := k.Sign(&seg, 0, rnext); err != nil || !bytes.Equal(pkt, v.Packet) {
			t.Fatalf("%s: TrafficKey.Sign: %v, MAC %x, RFC 9235 has %x", v.Section, err, h[off+optionHeaderLen:off+optionHeaderLen+set.MACLen], v.MAC)
		}
		if err := k.Verify(&seg, 0); err != nil {
			t.Fatalf("%s: TrafficKey.Verify: %v", v.Section, err)
		}
		h[len(h)-1] ^= 0x80 // an option byte or the MAC: covered either way
		if v.IncludeOptions || len(h)-1 < off+optionHeaderLen+set.MACLen {
			if err := verifySegment(m, isns, 0, &seg); !errors.Is(err, ErrBadMAC) {
				t.Errorf("%s: flipped byte verified: %v", v.Section, err)
			}
			if err := k.Verify(&seg, 0); !errors.Is(err, ErrBadMAC) {
				t.Errorf("%s: flipped byte verified with a TrafficKey: %v", v.Section, err)
			}
		}
		k.Wipe()
		if err := k.Verify(&seg, 0); !errors.Is(err, ErrNotInitialized) {
			t.Errorf("%s: a wiped TrafficKey verified: %v", v.Section, err)
		}
		n++
	}
	if n != 32 {
		t.Fatalf("%d vectors, want 32", n)
	}
	t.Logf("RFC 9235: %d segments signed and verified with no connection", n)
}
