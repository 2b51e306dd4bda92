package packetauth

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/segment"
)

// options returns the TCP options of a whole packet.
func options(t *testing.T, pkt []byte) []byte {
	t.Helper()
	s, err := segment.ParsePacket(pkt)
	if err != nil {
		t.Fatal(err)
	}
	return s.Header().Options()
}

// The timestamp and SACK options as netstack lays them out: NOP NOP TS,
// NOP NOP SACK with three blocks: 40 bytes, the whole option space.
var (
	tsOpt   = []byte{1, 1, 8, 10, 0, 0, 0, 9, 0, 0, 0, 7}
	sack3   = []byte{1, 1, 5, 26, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 5, 0, 0, 0, 6}
	mssOpt  = []byte{2, 4, 0x05, 0xb4}
	payload = []byte("BGP OPEN")
)

// netstackSYN is the option list of a netstack SYN: MSS, NOP NOP TS,
// NOP WS, NOP NOP SACK-permitted: 24 bytes.
var netstackSYN = []byte{2, 4, 5, 0xb4, 1, 1, 8, 10, 0, 0, 0, 9, 0, 0, 0, 0, 1, 3, 3, 7, 1, 1, 4, 2}

// sackN is sack3 cut to n blocks, its length byte set to match.
func sackN(n int) []byte {
	o := slices.Clone(sack3[:4+8*n])
	o[3] = byte(2 + 8*n)
	return o
}

// TestSACKTrim: a segment whose TS and three SACK blocks fill the 40
// option bytes leaves with as many blocks as fit beside the option: one
// beside a 16-byte TCP-AO option and TS, as Linux's
// tcp_established_options counts them; beside MD5 and TS, where Linux
// sends none, one too, once the aligning NOPs are packed away. The peer
// verifies either.
func TestSACKTrim(t *testing.T) {
	for _, c := range []struct {
		name string
		p    *pair
		want []byte // the options after the authentication option
	}{
		{"ao-maclen12", aoPair(t, false, "k", "k"), slices.Concat(tsOpt, sackN(1))},
		{"md5", newPair(t, true, Config{MD5: md5Ring(t, addrB6, "m")}, Config{MD5: md5Ring(t, addrA6, "m")}), slices.Concat(tsOpt[2:], sackN(1)[2:])},
	} {
		c.p.handshake()
		wire, got := c.p.send(c.p.a, c.p.b, segment.ACK, payload, tsOpt, sack3)
		opts := options(t, wire)
		if len(opts) > 40 || len(opts) < len(c.want)+16 {
			t.Fatalf("%s: %d option bytes", c.name, len(opts))
		}
		if rest := opts[len(opts)-len(c.want):]; !bytes.Equal(rest, c.want) {
			t.Fatalf("%s: options after the auth option %x, want %x", c.name, rest, c.want)
		}
		if s, _ := segment.ParsePacket(got); !bytes.Equal(s.Payload(), payload) {
			t.Fatalf("%s: payload %q", c.name, s.Payload())
		}
		// Two blocks and no TS: all of them fit.
		wire, _ = c.p.send(c.p.a, c.p.b, segment.ACK, nil, sackN(2))
		if o := options(t, wire); !bytes.Equal(o[len(o)-20:], sackN(2)) || len(o) > 40 {
			t.Fatalf("%s: two blocks became %x", c.name, options(t, wire))
		}
	}
}

// TestNetstackSYNFits: netstack's SYN options (24 bytes with their NOPs)
// beside MD5's 20 bytes, or a 16-byte MAC's 20, do not fit as laid out;
// packed they do, and the peer verifies the SYN with every option there.
func TestNetstackSYNFits(t *testing.T) {
	for _, p := range []*pair{
		newPair(t, false, Config{MD5: md5Ring(t, addrB4, "m")}, Config{MD5: md5Ring(t, addrA4, "m")}),
		newPair(t, true, Config{AO: aoRingMAC(t, addrB6, 16)}, Config{AO: aoRingMAC(t, addrA6, 16)}),
	} {
		wire, got := p.send(p.a, p.b, segment.SYN, nil, netstackSYN)
		if o := options(t, wire); len(o) != 40 {
			t.Fatalf("%d option bytes", len(o))
		}
		o := options(t, got)
		for _, want := range [][]byte{{2, 4, 5, 0xa0}, {8, 10, 0, 0, 0, 9, 0, 0, 0, 0}, {3, 3, 7}, {4, 2}} {
			if !bytes.Contains(o, want) {
				t.Fatalf("delivered SYN options %x lack %x", o, want)
			}
		}
	}
}

// TestFitOptions covers what the trimming leaves and what it refuses.
func TestFitOptions(t *testing.T) {
	for _, c := range []struct {
		name string
		old  []byte
		room int
		want []byte
		err  error
	}{
		{"fits", tsOpt, 24, tsOpt, nil},
		{"two blocks left", sack3, 20, sackN(2), nil},
		{"one left once packed", slices.Concat(tsOpt, sack3), 20, slices.Concat(tsOpt[2:], sackN(1)[2:]), nil},
		{"none left", slices.Concat(tsOpt, sack3), 19, tsOpt, nil},
		{"netstack's SYN beside MD5", netstackSYN, 20, []byte{2, 4, 5, 0xb4, 8, 10, 0, 0, 0, 9, 0, 0, 0, 0, 3, 3, 7, 4, 2}, nil},
		{"SACK first", slices.Concat(sack3, tsOpt), 24, slices.Concat(sackN(1), tsOpt), nil},
		{"no SACK to drop", slices.Concat(tsOpt, tsOpt, tsOpt), 20, nil, ErrNoRoom},
		{"too much besides SACK", slices.Concat(tsOpt, tsOpt, sackN(1)), 19, nil, ErrNoRoom},
		{"bad length", []byte{1, 1, 5, 30, 0, 0}, 2, nil, ErrOptions},
		{"length 0", []byte{8, 0, 1, 1}, 2, nil, ErrOptions},
		{"EOL ends the walk", []byte{5, 10, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0}, 4, []byte{0, 0}, nil},
		{"packing drops EOL", []byte{1, 1, 8, 10, 0, 0, 0, 9, 0, 0, 0, 7, 0, 0}, 11, tsOpt[2:], nil},
		{"malformed after EOL is not read", []byte{0, 5, 99, 1, 1, 1}, 4, []byte{}, nil},
	} {
		var buf [40]byte
		got, err := fitOptions(buf[:0], c.old, c.room)
		if !errors.Is(err, c.err) || c.err == nil && !bytes.Equal(got, c.want) {
			t.Errorf("%s: %x, %v; want %x, %v", c.name, got, err, c.want, c.err)
		}
		if err == nil && len(got) > c.room {
			t.Errorf("%s: %d bytes in room %d", c.name, len(got), c.room)
		}
	}
}

// TestMSSClamp: a covered peer's SYN and SYN-ACK reach the stack with
// their MSS lowered by Overhead, and with a right checksum; segments
// without SYN keep theirs, and an uncovered peer's SYN is untouched.
func TestMSSClamp(t *testing.T) {
	p := aoPair(t, false, "k", "k")
	_, got := p.send(p.a, p.b, segment.SYN, nil, mssOpt, tsOpt)
	if p.b.l.Overhead() != 20 || !bytes.Contains(options(t, got), []byte{2, 4, 0x05, 0xa0}) {
		t.Fatalf("SYN options %x", options(t, got))
	}
	_, got = p.send(p.b, p.a, segment.SYN|segment.ACK, nil, []byte{2, 4, 0x01, 0x00})
	if !bytes.Contains(options(t, got), []byte{2, 4, 0x00, 0xec}) {
		t.Fatalf("SYN-ACK options %x", options(t, got))
	}
	_, got = p.send(p.a, p.b, segment.ACK, nil, mssOpt)
	if !bytes.Contains(options(t, got), mssOpt) {
		t.Fatalf("ACK's MSS changed: %x", options(t, got))
	}
	// An MSS no bigger than the overhead is left alone (never 0).
	if clampMSS([]byte{2, 4, 0, 20}, 20) || clampMSS([]byte{2, 4, 0}, 20) || clampMSS([]byte{0, 2, 4, 5, 0}, 20) {
		t.Fatal("clamped what it should not")
	}
	l, _ := New(Config{AO: aoRing(t, addrB4, 12, mkt{1, 2, "k"})})
	syn := p.build(p.a, p.b, segment.SYN, nil, mssOpt)
	syn[12], syn[13], syn[14], syn[15] = 203, 0, 113, 9 // from an uncovered peer
	if out, err := l.Inbound(nil, syn); err != nil || &out[0] != &syn[0] {
		t.Fatalf("uncovered SYN: %v", err)
	}
}

// TestWrongKey: with different keys nothing reaches either stack; every
// refusal is ao.ErrBadMAC and counted, in total and on the connection.
func TestWrongKey(t *testing.T) {
	p := aoPair(t, false, "right", "wrong")
	_, _, err := p.carry(p.a, p.b, p.build(p.a, p.b, segment.SYN, nil, mssOpt))
	if !errors.Is(err, ao.ErrBadMAC) {
		t.Fatalf("SYN under a wrong key: %v", err)
	}
	if c := p.b.l.Counters(); c.Dropped.BadMAC != 1 || c.Verified != 0 || c.Tracked != 0 {
		t.Fatalf("B: %+v", c)
	}
	// A good connection, then a segment whose MAC is damaged on the wire.
	p = aoPair(t, true, "k", "k")
	p.handshake()
	wire, err := p.a.l.Outbound(nil, p.build(p.a, p.b, segment.ACK|segment.PSH, payload))
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []int{40 + 24, len(wire) - 1} { // a MAC byte, a payload byte
		bad := slices.Clone(wire)
		bad[at] ^= 1
		if _, err := p.b.l.Inbound(nil, bad); !errors.Is(err, ao.ErrBadMAC) {
			t.Fatalf("flipped byte %d: %v", at, err)
		}
	}
	ci, _ := info(p.b)
	if ci.Dropped != 2 || p.b.l.Counters().Dropped.BadMAC != 2 {
		t.Fatalf("drops on the connection %d, total %+v", ci.Dropped, p.b.l.Counters().Dropped)
	}
	if _, err := p.b.l.Inbound(nil, wire); err != nil {
		t.Fatalf("the undamaged segment: %v", err)
	}
	// MD5 with a wrong key: md5sig.ErrBadMAC.
	p = newPair(t, false, Config{MD5: md5Ring(t, addrB4, "one")}, Config{MD5: md5Ring(t, addrA4, "two")})
	if _, _, err := p.carry(p.a, p.b, p.build(p.a, p.b, segment.SYN, nil, mssOpt)); !errors.Is(err, md5sig.ErrBadMAC) {
		t.Fatalf("MD5 SYN under a wrong key: %v", err)
	}
}

// TestUnsignedFromCoveredPeer: a covered peer's unsigned segments are
// refused with ErrUnsigned, before and after a handshake, TCP-AO and MD5.
func TestUnsignedFromCoveredPeer(t *testing.T) {
	for _, p := range []*pair{
		aoPair(t, false, "k", "k"),
		newPair(t, true, Config{MD5: md5Ring(t, addrB6, "m")}, Config{MD5: md5Ring(t, addrA6, "m")}),
	} {
		for _, f := range []segment.Flags{segment.SYN, segment.ACK, segment.RST} {
			if _, err := p.b.l.Inbound(nil, p.build(p.a, p.b, f, nil)); !errors.Is(err, ErrUnsigned) {
				t.Fatalf("unsigned %v before the handshake: %v", f, err)
			}
		}
		p.handshake()
		for _, f := range []segment.Flags{segment.ACK, segment.ACK | segment.FIN, segment.RST} {
			if _, err := p.b.l.Inbound(nil, p.build(p.a, p.b, f, payload)); !errors.Is(err, ErrUnsigned) {
				t.Fatalf("unsigned %v on the connection: %v", f, err)
			}
		}
		if c := p.b.l.Counters(); c.Dropped.Unsigned != 6 || c.Dropped.Total() != 6 || c.Tracked != 1 {
			t.Fatalf("%+v", c)
		}
	}
}

// TestUncoveredPassThrough: packets of peers no key covers come back as
// the same slice, both ways, whatever they are (TCP, UDP, fragments,
// garbage); covered peers' non-TCP packets pass too.
func TestUncoveredPassThrough(t *testing.T) {
	l, err := New(Config{AO: aoRing(t, addrB4, 12, mkt{1, 2, "k"}), MD5: md5Ring(t, addrB6, "m")})
	if err != nil {
		t.Fatal(err)
	}
	other := netip.MustParseAddr("203.0.113.9")
	tcp, _ := segment.AppendPacket(nil, segment.IP{Src: addrA4, Dst: other}, segment.Fields{Flags: segment.SYN}, payload)
	tcpIn, _ := segment.AppendPacket(nil, segment.IP{Src: other, Dst: addrA4}, segment.Fields{Flags: segment.SYN}, payload)
	udp := slices.Clone(tcp)
	udp[9] = 17
	udpCovered, _ := segment.AppendPacket(nil, segment.IP{Src: addrA4, Dst: addrB4}, segment.Fields{}, payload)
	udpCovered[9] = 17
	frag := slices.Clone(tcp)
	frag[6] |= 0x20
	v6 := []byte{0x60, 0, 0, 0, 0, 0, 59, 64}
	cases := [][]byte{tcp, tcpIn, udp, udpCovered, frag, v6, {0x12, 0x34}, {}}
	for i, pkt := range cases {
		for _, f := range []func([]byte, []byte) ([]byte, error){l.Outbound, l.Inbound} {
			out, err := f(make([]byte, 0, 128), pkt)
			if err != nil || len(out) != len(pkt) || len(pkt) > 0 && &out[0] != &pkt[0] {
				t.Fatalf("case %d not passed through: %v", i, err)
			}
		}
	}
	if c := l.Counters(); c.Passed != uint64(2*len(cases)) || c.Dropped.Total() != 0 {
		t.Fatalf("%+v", c)
	}
}

// TestSNEWrap runs a connection whose sequence numbers cross 2^32 both
// ways: the SNEs the layer reports go 0 → 1 in each direction and every
// segment verifies.
func TestSNEWrap(t *testing.T) {
	p := aoPair(t, true, "k", "k")
	p.a.seq, p.b.seq = 0xffffe000, 0xfffff000
	p.handshake()
	chunk := make([]byte, 1000)
	for i := 0; i < 12; i++ {
		p.send(p.a, p.b, segment.ACK|segment.PSH, chunk)
		p.send(p.b, p.a, segment.ACK|segment.PSH, chunk)
	}
	a, _ := info(p.a)
	b, _ := info(p.b)
	if a.SendSNE != 1 || a.RecvSNE != 1 || b.SendSNE != 1 || b.RecvSNE != 1 {
		t.Fatalf("SNEs A %d/%d B %d/%d", a.SendSNE, a.RecvSNE, b.SendSNE, b.RecvSNE)
	}
	if a.LocalISN != 0xffffe000 || a.RemoteISN != 0xfffff000 || b.LocalISN != a.RemoteISN || b.RemoteISN != a.LocalISN {
		t.Fatalf("ISNs %+v %+v", a, b)
	}
	// The same segment signed with SNE 0 (a stack that missed the wrap)
	// must not verify: replay a pre-wrap wire packet's MAC on a post-wrap
	// sequence number.
	wire, _ := p.send(p.a, p.b, segment.ACK, nil)
	old := slices.Clone(wire)
	s, _ := segment.ParsePacket(old)
	s.Header().SetSeq(s.Header().Seq() + 1<<31) // half the space away: another SNE
	if _, err := p.b.l.Inbound(nil, old); !errors.Is(err, ao.ErrBadMAC) {
		t.Fatalf("a segment moved by 2^31: %v", err)
	}
}

// TestIdleExpiry: Expire forgets a connection idle for Idle, and only
// then; afterwards its segments are refused with ErrNoConn.
func TestIdleExpiry(t *testing.T) {
	p := newPair(t, false, Config{AO: aoRing(t, addrB4, 12, mkt{1, 2, "k"}), Idle: time.Minute},
		Config{AO: aoRing(t, addrA4, 12, mkt{2, 1, "k"}), Idle: time.Minute})
	p.handshake()
	p.b.l.Expire(time.Now())
	if c := p.b.l.Counters(); c.Tracked != 1 {
		t.Fatalf("expired too soon: %+v", c)
	}
	p.b.l.Expire(time.Now().Add(time.Minute + time.Second))
	if c := p.b.l.Counters(); c.Tracked != 0 || c.Expired != 1 {
		t.Fatalf("not expired: %+v", c)
	}
	if _, _, err := p.carry(p.a, p.b, p.build(p.a, p.b, segment.ACK, payload)); !errors.Is(err, ErrNoConn) {
		t.Fatalf("segment after expiry: %v", err)
	}
	if c := p.b.l.Counters(); c.Dropped.NoConn != 1 {
		t.Fatalf("%+v", c)
	}

	// A handshake that never completes goes after HandshakeIdle.
	p = aoPair(t, false, "k", "k")
	p.send(p.a, p.b, segment.SYN, nil)
	p.a.l.Expire(time.Now().Add(HandshakeIdle - time.Second))
	p.b.l.Expire(time.Now().Add(HandshakeIdle - time.Second))
	if p.a.l.Counters().Tracked != 1 || p.b.l.Counters().Tracked != 1 {
		t.Fatal("half-open connections expired too soon")
	}
	p.a.l.Expire(time.Now().Add(2 * HandshakeIdle))
	p.b.l.Expire(time.Now().Add(2 * HandshakeIdle))
	if p.a.l.Counters().Expired != 1 || p.b.l.Counters().Expired != 1 {
		t.Fatalf("half-open connections kept: %+v %+v", p.a.l.Counters(), p.b.l.Counters())
	}
}

// TestCloseFINAndRST: FIN both ways keeps the connection for TimeWait
// (its last ACK and retransmitted FINs still pass), then frees it; a RST
// frees it at once, on both sides.
func TestCloseFINAndRST(t *testing.T) {
	p := newPair(t, false, Config{AO: aoRing(t, addrB4, 12, mkt{1, 2, "k"}), TimeWait: time.Second},
		Config{AO: aoRing(t, addrA4, 12, mkt{2, 1, "k"}), TimeWait: time.Second})
	p.handshake()
	p.send(p.a, p.b, segment.ACK|segment.FIN, nil)
	p.send(p.b, p.a, segment.ACK|segment.FIN, nil)
	if ci, _ := info(p.a); ci.State != StateClosing {
		t.Fatalf("A after FINs: %v", ci.State)
	}
	p.send(p.a, p.b, segment.ACK, nil) // the last ACK
	p.a.l.Expire(time.Now())
	if c := p.a.l.Counters(); c.Tracked != 1 {
		t.Fatalf("freed before TimeWait: %+v", c)
	}
	p.a.l.Expire(time.Now().Add(2 * time.Second))
	if c := p.a.l.Counters(); c.Tracked != 0 || c.Closed != 1 {
		t.Fatalf("A not freed after TimeWait: %+v", c)
	}

	p = aoPair(t, false, "k", "k")
	p.handshake()
	p.send(p.b, p.a, segment.RST, nil)
	for _, e := range []*end{p.a, p.b} {
		if c := e.l.Counters(); c.Tracked != 0 || c.Closed != 1 {
			t.Fatalf("%v after RST: %+v", e.ap, c)
		}
	}
}

// TestOutboundRSTUntracked: the stack's RST to a TCP-AO peer for a
// connection the layer does not track cannot be signed (no ISNs) and is
// dropped with ErrNoConn, as Linux sends none (RFC 5925 §7.7); so is the
// RST refusing a verified SYN, whose connection is then freed. To an MD5
// peer the RST is signed: MD5 needs no ISNs.
func TestOutboundRSTUntracked(t *testing.T) {
	p := aoPair(t, false, "k", "k")
	rst := p.build(p.b, p.a, segment.RST|segment.ACK, nil)
	if _, err := p.b.l.Outbound(nil, rst); !errors.Is(err, ErrNoConn) {
		t.Fatalf("untracked RST: %v", err)
	}
	p.send(p.a, p.b, segment.SYN, nil, mssOpt) // B verifies the SYN; its stack refuses it
	if c := p.b.l.Counters(); c.Tracked != 1 {
		t.Fatalf("%+v", c)
	}
	if _, err := p.b.l.Outbound(nil, p.build(p.b, p.a, segment.RST|segment.ACK, nil)); !errors.Is(err, ErrNoConn) {
		t.Fatalf("RST refusing a SYN: %v", err)
	}
	if c := p.b.l.Counters(); c.Tracked != 0 || c.Dropped.NoConn != 2 {
		t.Fatalf("after the refusal: %+v", c)
	}

	p = newPair(t, false, Config{MD5: md5Ring(t, addrB4, "m")}, Config{MD5: md5Ring(t, addrA4, "m")})
	_, got := p.send(p.b, p.a, segment.RST|segment.ACK, nil)
	if s, _ := segment.ParsePacket(got); !s.Header().Flags().Has(segment.RST) {
		t.Fatal("MD5 RST not delivered")
	}
}

// TestIPv6ExtensionHeaders: a packet with IPv6 extension headers before
// TCP, or IPv4 options, is signed and verified like any other (the option
// goes into the TCP header, the IP lengths grow, the IPv4 header checksum
// is redone); fragments of covered peers are dropped with ErrFragment both
// ways, IPv4 and IPv6.
func TestIPv6ExtensionHeaders(t *testing.T) {
	p := aoPair(t, true, "k", "k")
	p.handshake()
	pkt := p.build(p.a, p.b, segment.ACK|segment.PSH, payload)
	ext := []byte{6, 0, 1, 4, 0, 0, 0, 0} // hop-by-hop, PadN, next header TCP
	pkt[6] = 0
	pkt = slices.Concat(pkt[:40], ext, pkt[40:])
	if err := segment.Lengths(pkt); err != nil {
		t.Fatal(err)
	}
	wire, got, err := p.carry(p.a, p.b, pkt)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(wire[40:48], ext) || int(binary.BigEndian.Uint16(wire[4:])) != len(wire)-40 || len(wire) != len(pkt)+16 {
		t.Fatalf("wire %x", wire)
	}
	if s, _ := segment.ParsePacket(got); !bytes.Equal(s.Payload(), payload) || s.Auth().HasAO() {
		t.Fatalf("delivered %x", got)
	}
	// A fragment header (44) instead: refused both ways.
	frag := slices.Clone(pkt)
	frag[6], frag[40] = 44, 6
	for _, f := range []func([]byte, []byte) ([]byte, error){p.a.l.Outbound, p.b.l.Inbound} {
		if _, err := f(nil, frag); !errors.Is(err, ErrFragment) {
			t.Fatalf("IPv6 fragment: %v", err)
		}
	}
	// IPv4 with options (four NOPs... an EOL): the header is kept whole,
	// its length and checksum fixed.
	p4 := aoPair(t, false, "k", "k")
	p4.handshake()
	v4 := p4.build(p4.a, p4.b, segment.ACK|segment.PSH, payload)
	v4 = slices.Concat(v4[:20], []byte{1, 1, 1, 0}, v4[20:])
	v4[0] = 0x46
	if err := segment.Lengths(v4); err != nil {
		t.Fatal(err)
	}
	wire, got, err = p4.carry(p4.a, p4.b, v4)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(wire[20:24], []byte{1, 1, 1, 0}) || segment.IPv4Checksum(wire[:24]) != binary.BigEndian.Uint16(wire[10:]) {
		t.Fatalf("IPv4 options or checksum: %x", wire[:24])
	}
	if s, _ := segment.ParsePacket(got); !bytes.Equal(s.Payload(), payload) {
		t.Fatalf("delivered %x", got)
	}
	frag4 := p4.build(p4.a, p4.b, segment.SYN, nil)
	frag4[6] = 0x20 // more fragments
	if _, err := p4.a.l.Outbound(nil, frag4); !errors.Is(err, ErrFragment) {
		t.Fatalf("IPv4 fragment: %v", err)
	}
	if c := p4.a.l.Counters(); c.Dropped.Fragment != 1 {
		t.Fatalf("%+v", c)
	}
}

// TestRotationThroughConn: A asks B (RNextKeyID) to move to MKT 11/12;
// B's current key follows on its own, as in ao; then A moves its own
// current key through Conn.
func TestRotationThroughConn(t *testing.T) {
	p := newPair(t, false, Config{AO: aoRing(t, addrB4, 12, mkt{1, 2, "k"}, mkt{11, 12, "k2"})},
		Config{AO: aoRing(t, addrA4, 12, mkt{2, 1, "k"}, mkt{12, 11, "k2"})})
	p.handshake()
	keyIDs := func(wire []byte) (uint8, uint8) {
		o := options(t, wire)
		return o[2], o[3]
	}
	ca, ok := p.a.l.Conn(p.a.ap, p.b.ap)
	if !ok {
		t.Fatal("no Conn for A")
	}
	if _, ok := p.a.l.Conn(p.b.ap, p.a.ap); ok {
		t.Fatal("Conn with the ends swapped")
	}
	if err := ca.SetRNext(12); err != nil {
		t.Fatal(err)
	}
	w, _ := p.send(p.a, p.b, segment.ACK, nil)
	if k, r := keyIDs(w); k != 11 || r != 12 { // A's current: the newest MKT, 11; RNext now 12
		t.Fatalf("A sends KeyID %d RNext %d", k, r)
	}
	w, _ = p.send(p.b, p.a, segment.ACK, nil)
	if k, _ := keyIDs(w); k != 12 {
		t.Fatalf("B did not follow A's RNextKeyID: KeyID %d", k)
	}
	if err := p.a.l.SetCurrent(p.a.ap, p.b.ap, 1); err != nil {
		t.Fatal(err)
	}
	if err := p.a.l.SetCurrent(p.a.ap, p.b.ap, 99); !errors.Is(err, ao.ErrNoSuchKey) {
		t.Fatalf("SetCurrent(99): %v", err)
	}
	if err := p.a.l.SetRNext(p.b.ap, p.a.ap, 2); !errors.Is(err, ErrNoConn) {
		t.Fatalf("SetRNext on no connection: %v", err)
	}
	w, _ = p.send(p.a, p.b, segment.ACK, nil)
	if k, _ := keyIDs(w); k != 1 {
		t.Fatalf("SetCurrent(1): KeyID %d", k)
	}
	ci, _ := info(p.a)
	if ci.CurrentKeyID != 1 || ci.RNextKeyID != 12 {
		t.Fatalf("%+v", ci)
	}
}

// TestSeed: a layer that restarts mid-connection refuses the connection's
// segments until it is seeded with the state another layer exported, then
// signs and verifies them; Seed refuses an uncovered peer.
func TestSeed(t *testing.T) {
	p := aoPair(t, false, "k", "k")
	p.handshake()
	p.send(p.a, p.b, segment.ACK|segment.PSH, payload)
	st, ok := p.b.l.Export(p.b.ap, p.a.ap)
	if !ok {
		t.Fatal("no state to export")
	}
	if _, ok := p.b.l.Export(p.a.ap, p.b.ap); ok {
		t.Fatal("Export with the ends swapped")
	}
	fresh, err := New(Config{AO: aoRing(t, addrA4, 12, mkt{2, 1, "k"})})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	p.b.l = fresh
	if _, _, err := p.carry(p.a, p.b, p.build(p.a, p.b, segment.ACK, payload)); !errors.Is(err, ErrNoConn) {
		t.Fatalf("before Seed: %v", err)
	}
	if err := fresh.Seed(st); err != nil {
		t.Fatal(err)
	}
	p.send(p.a, p.b, segment.ACK|segment.PSH, payload)
	p.send(p.b, p.a, segment.ACK|segment.PSH, payload)
	st.Remote = netip.MustParseAddrPort("203.0.113.1:1")
	if err := fresh.Seed(st); !errors.Is(err, ErrNotCovered) {
		t.Fatalf("uncovered Seed: %v", err)
	}
}

// TestMaxConns: over MaxConns a new connection is refused with ErrFull
// and counted; an idle one makes room once it expires.
func TestMaxConns(t *testing.T) {
	p := newPair(t, false, Config{AO: aoRing(t, addrB4, 12, mkt{1, 2, "k"}), MaxConns: 1}, Config{AO: aoRing(t, addrA4, 12, mkt{2, 1, "k"})})
	p.send(p.a, p.b, segment.SYN, nil)
	p.a.ap = netip.AddrPortFrom(p.a.ap.Addr(), 40001)
	if _, _, err := p.carry(p.a, p.b, p.build(p.a, p.b, segment.SYN, nil)); !errors.Is(err, ErrFull) {
		t.Fatalf("second connection: %v", err)
	}
	if c := p.a.l.Counters(); c.Dropped.Full != 1 || c.Tracked != 1 {
		t.Fatalf("%+v", c)
	}
}

// TestMisuse: nil and zero layers, nil packets and bad configs give
// typed errors or pass-through, never a panic.
func TestMisuse(t *testing.T) {
	var nl *Layer
	if _, err := nl.Outbound(nil, []byte{0x45}); !errors.Is(err, ErrConfig) {
		t.Fatal(err)
	}
	if _, err := nl.Inbound(nil, nil); !errors.Is(err, ErrConfig) {
		t.Fatal(err)
	}
	if err := nl.Seed(ao.Endpoint{}); !errors.Is(err, ErrConfig) {
		t.Fatal(err)
	}
	if err := nl.SetCurrent(netip.AddrPort{}, netip.AddrPort{}, 1); !errors.Is(err, ErrConfig) {
		t.Fatal(err)
	}
	nl.Expire(time.Now())
	nl.Close()
	nl.Conns(func(ConnInfo) bool { return true })
	if _, ok := nl.Conn(netip.AddrPort{}, netip.AddrPort{}); ok || nl.Overhead() != 0 || nl.Counters() != (Counters{}) {
		t.Fatal("nil layer")
	}
	var zl Layer
	pkt, _ := segment.AppendPacket(nil, segment.IP{Src: addrA4, Dst: addrB4}, segment.Fields{Flags: segment.SYN}, nil)
	if out, err := zl.Outbound(nil, pkt); !errors.Is(err, ErrNotSetUp) || out != nil { // every method: TestNotSetUp
		t.Fatalf("a zero Layer's Outbound: %d bytes, %v, want ErrNotSetUp", len(out), err)
	}
	for _, c := range []Config{{Idle: -1}, {TimeWait: -1}, {MaxConns: -1}, {L3Index: -1}} {
		if _, err := New(c); !errors.Is(err, ErrConfig) {
			t.Fatalf("%+v: %v", c, err)
		}
	}
	l, _ := New(Config{AO: aoRing(t, addrB4, 12, mkt{1, 2, "k"})})
	l.Close()
	if _, err := l.Outbound(nil, pkt); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// icmpFor returns an ICMP(v6) destination unreachable of the given code,
// from router to the sender of quoted, quoting its first 64 bytes (the
// kernel needs 8 of the quoted TCP header, past any extension header).
func icmpFor(t *testing.T, router netip.Addr, quoted []byte, code uint8) []byte {
	t.Helper()
	s, _ := segment.ParsePacket(quoted)
	q := quoted[:min(len(quoted), 64)]
	body := slices.Concat([]byte{3, code, 0, 0, 0, 0, 0, 0}, q)
	if router.Is6() {
		body[0] = 1
	}
	pkt, err := segment.AppendIP(nil, segment.IP{Src: router, Dst: s.Src()}, len(body))
	if err != nil {
		t.Fatal(err)
	}
	if router.Is4() {
		pkt[9] = 1
		binary.BigEndian.PutUint16(pkt[10:], segment.IPv4Checksum(pkt))
	} else {
		pkt[6] = 58
	}
	return append(pkt, body...)
}

// TestICMP: an ICMP hard error (RFC 5925 §7.8) quoting a segment of a
// tracked TCP-AO connection is dropped and counted, as Linux does unless
// accept_icmps; other codes, other connections and Policy.AcceptICMP let
// it through to the stack untouched.
func TestICMP(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		p := aoPair(t, v6, "k", "k")
		p.handshake()
		wire, _ := p.send(p.a, p.b, segment.ACK|segment.PSH, payload)
		router := netip.MustParseAddr("203.0.113.254")
		hard, soft := uint8(3), uint8(0) // port unreachable; net unreachable
		if v6 {
			router = netip.MustParseAddr("2001:db8:ff::1")
			hard, soft = 4, 0 // port unreachable; no route
		}
		if _, err := p.a.l.Inbound(nil, icmpFor(t, router, wire, hard)); !errors.Is(err, ErrICMP) {
			t.Fatalf("v6=%v hard error: %v", v6, err)
		}
		for _, pkt := range [][]byte{icmpFor(t, router, wire, soft), icmpFor(t, router, p.build(p.b, p.a, segment.ACK, nil), hard)} {
			if out, err := p.a.l.Inbound(nil, pkt); err != nil || &out[0] != &pkt[0] {
				t.Fatalf("v6=%v: %v", v6, err)
			}
		}
		c, _ := p.a.l.Conn(p.a.ap, p.b.ap)
		if p.a.l.Counters().Dropped.ICMP != 1 || c.Counters().DroppedICMP != 1 {
			t.Fatalf("v6=%v: %+v", v6, p.a.l.Counters().Dropped)
		}
	}
	p := newPair(t, false, Config{AO: aoRing(t, addrB4, 12, mkt{1, 2, "k"}), Policy: ao.Policy{AcceptICMP: true}},
		Config{AO: aoRing(t, addrA4, 12, mkt{2, 1, "k"})})
	p.handshake()
	wire, _ := p.send(p.a, p.b, segment.ACK, nil)
	if _, err := p.a.l.Inbound(nil, icmpFor(t, addrB4, wire, 3)); err != nil {
		t.Fatalf("AcceptICMP: %v", err)
	}
}
