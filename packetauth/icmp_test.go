package packetauth

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"slices"
	"testing"

	"github.com/tcpsig/tcpsig/segment"
)

// withExt inserts an IPv6 extension header of kind next (8 bytes: a
// destination-options pad, or a fragment header with the given offset
// and more-fragments flag) right after pkt's IPv6 header.
func withExt(pkt []byte, kind byte, fragOff uint16, more bool) []byte {
	ext := make([]byte, 8)
	ext[0] = pkt[6] // the header that followed
	switch kind {
	case 60: // destination options: PadN over its 6 option bytes
		ext[2], ext[3] = 1, 4
	case 44:
		v := fragOff << 3
		if more {
			v |= 1
		}
		binary.BigEndian.PutUint16(ext[2:], v)
		binary.BigEndian.PutUint32(ext[4:], 0x1234)
	}
	out := slices.Concat(pkt[:40], ext, pkt[40:])
	out[6] = kind
	binary.BigEndian.PutUint16(out[4:], uint16(len(out)-40))
	return out
}

// TestICMPEvasions: the hard errors of §7.8 for a tracked TCP-AO session
// are dropped however they are wrapped — behind an extension header,
// quoting a packet with one before its TCP header, or as the first
// fragment of a fragmented message (which the kernel would reassemble
// past the layer) — and a later fragment alone, which carries no ICMP
// header and cannot be reassembled without the first, passes.
func TestICMPEvasions(t *testing.T) {
	router6 := netip.MustParseAddr("2001:db8:ff::1")
	p := aoPair(t, true, "k", "k")
	p.handshake()
	wire, _ := p.send(p.a, p.b, segment.ACK|segment.PSH, payload)
	hard := icmpFor(t, router6, wire, 4)
	// The quoted packet with a destination-options header before TCP.
	quotedExt := icmpFor(t, router6, withExt(wire, 60, 0, false), 4)
	first := withExt(hard, 44, 0, true)
	for _, c := range []struct {
		name string
		pkt  []byte
	}{
		{"behind destination options", withExt(hard, 60, 0, false)},
		{"quoting a packet with destination options", quotedExt},
		{"first fragment", first},
	} {
		if _, err := p.a.l.Inbound(nil, c.pkt); !errors.Is(err, ErrICMP) {
			t.Errorf("ICMPv6 port unreachable %s: %v, want ErrICMP", c.name, err)
		}
	}
	later := withExt(hard, 44, 2, false)
	if out, err := p.a.l.Inbound(nil, later); err != nil || &out[0] != &later[0] {
		t.Errorf("a later fragment alone: %v, want it passed untouched", err)
	}
	if got := p.a.l.Counters().Dropped.ICMP; got != 3 {
		t.Errorf("%d ICMP drops counted, want 3", got)
	}

	// IPv4: the first fragment of a port unreachable.
	p4 := aoPair(t, false, "k", "k")
	p4.handshake()
	wire4, _ := p4.send(p4.a, p4.b, segment.ACK|segment.PSH, payload)
	frag := icmpFor(t, netip.MustParseAddr("203.0.113.254"), wire4, 3)
	frag[6] |= 0x20 // more fragments
	binary.BigEndian.PutUint16(frag[10:], 0)
	binary.BigEndian.PutUint16(frag[10:], segment.IPv4Checksum(frag))
	if _, err := p4.a.l.Inbound(nil, frag); !errors.Is(err, ErrICMP) {
		t.Errorf("IPv4 port unreachable, first fragment: %v, want ErrICMP", err)
	}
}

// chainExt puts IPv6 extension headers of the kinds given (8 bytes each:
// options of PadN, or an atomic fragment header) between pkt's IPv6
// header and what followed it.
func chainExt(pkt []byte, kinds ...byte) []byte {
	out := slices.Clone(pkt[:40])
	for i, k := range kinds {
		next := pkt[6]
		if i+1 < len(kinds) {
			next = kinds[i+1]
		}
		h := []byte{next, 0, 1, 4, 0, 0, 0, 0}
		if k == 44 {
			h = []byte{next, 0, 0, 0, 0, 0, 0x12, 0x34}
		}
		out = append(out, h...)
	}
	out = append(out, pkt[40:]...)
	out[6] = kinds[0]
	binary.BigEndian.PutUint16(out[4:], uint16(len(out)-40))
	return out
}

// firstFragment cuts pkt, whose first extension header is an atomic
// fragment header, to its first n bytes past the IPv6 header and sets
// more-fragments: the first fragment of a message the kernel would
// reassemble unseen.
func firstFragment(pkt []byte, n int) []byte {
	f := slices.Clone(pkt[:40+n])
	f[40+3] |= 1
	binary.BigEndian.PutUint16(f[4:], uint16(n))
	return f
}

// quoting is msg, an ICMP message as icmpFor makes it, quoting instead
// quoted whole (which need not parse).
func quoting(msg, quoted []byte) []byte {
	hl := 40 + 8
	if msg[0]>>4 == 4 {
		hl = 20 + 8
	}
	out := slices.Concat(msg[:hl], quoted)
	if hl == 28 {
		binary.BigEndian.PutUint16(out[2:], uint16(len(out)))
		binary.BigEndian.PutUint16(out[10:], 0)
		binary.BigEndian.PutUint16(out[10:], segment.IPv4Checksum(out))
	} else {
		binary.BigEndian.PutUint16(out[4:], uint16(len(out)-40))
	}
	return out
}

// TestICMPFailsClosed (issue 38, finding 3): a hard error for a tracked
// TCP-AO session is dropped however its quoted packet or the message is
// dressed, as long as the kernel would still act on it — a quoted IPv4
// header whose version nibble is not 4, a quoted IPv6 chain of
// destination options then hop-by-hop, or of 17 headers, 17 headers
// before the ICMPv6 header — and one the layer cannot judge is dropped
// too: a first fragment with only the 8-byte ICMPv6 header, one cut
// before it, a quoted packet cut short. The same messages quoting a peer
// no key covers, or UDP, pass untouched.
func TestICMPFailsClosed(t *testing.T) {
	r4, r6 := netip.MustParseAddr("203.0.113.254"), netip.MustParseAddr("2001:db8:ff::1")
	p4 := aoPair(t, false, "k", "k")
	p4.handshake()
	wire4, _ := p4.send(p4.a, p4.b, segment.ACK|segment.PSH, payload)
	p6 := aoPair(t, true, "k", "k")
	p6.handshake()
	wire6, _ := p6.send(p6.a, p6.b, segment.ACK|segment.PSH, payload)
	hard4 := icmpFor(t, r4, wire4, 3)
	version := func(nibble byte) []byte {
		q := slices.Clone(wire4)
		q[0] = nibble<<4 | q[0]&0x0f
		return q
	}
	ihl4 := slices.Clone(wire4)
	ihl4[0] = 0x44
	seventeen := slices.Repeat([]byte{60}, 17)
	hard6 := icmpFor(t, r6, wire6, 4)
	for _, c := range []struct {
		name string
		v6   bool
		pkt  []byte
	}{
		{"IPv4 quoting version 0", false, quoting(hard4, version(0))},
		{"IPv4 quoting version 6", false, quoting(icmpFor(t, r4, wire4, 4), version(6))},
		{"IPv4 quoting IHL 4", false, quoting(hard4, ihl4)},
		{"IPv4 quoting 26 bytes", false, quoting(hard4, wire4[:26])},
		{"IPv6 quoting destination options then hop-by-hop", true, quoting(hard6, chainExt(wire6, 60, 0))},
		{"IPv6 quoting 17 extension headers", true, quoting(icmpFor(t, r6, wire6, 1), chainExt(wire6, seventeen...))},
		{"IPv6 behind 17 extension headers", true, chainExt(hard6, seventeen...)},
		{"IPv6 first fragment of 8 bytes", true, firstFragment(chainExt(hard6, 44), 16)},
		{"IPv6 first fragment cut before ICMPv6", true, firstFragment(chainExt(hard6, 44, 60, 60), 16)},
		{"IPv6 quoting 46 bytes", true, quoting(hard6, wire6[:46])},
	} {
		l := p4.a.l
		if c.v6 {
			l = p6.a.l
		}
		if _, err := l.Inbound(nil, c.pkt); !errors.Is(err, ErrICMP) {
			t.Errorf("%s: %v, want ErrICMP", c.name, err)
		}
	}
	if got := p4.a.l.Counters().Dropped.ICMP; got != 4 {
		t.Errorf("IPv4: %d ICMP drops counted, want 4", got)
	}
	if got := p6.a.l.Counters().Dropped.ICMP; got != 6 {
		t.Errorf("IPv6: %d ICMP drops counted, want 6", got)
	}
	for i, c := range []struct {
		p    *pair
		want uint64
	}{{p4, 2}, {p6, 3}} {
		if ci, ok := c.p.a.l.Conn(c.p.a.ap, c.p.b.ap); !ok || ci.Counters().DroppedICMP != c.want {
			t.Errorf("pair %d: the connection counted %+v, want %d ICMP drops", i, ci.Counters(), c.want)
		}
	}

	// The controls: quoting a peer no key covers, or UDP, they pass.
	other6 := slices.Clone(wire6)
	other6[39] ^= 0xff // the destination
	udp6 := slices.Clone(wire6)
	udp6[6] = 17
	other4 := version(6)
	other4[19] ^= 0xff
	for _, c := range []struct {
		name string
		l    *Layer
		pkt  []byte
	}{
		{"IPv4 quoting version 6, to another peer", p4.a.l, quoting(hard4, other4)},
		{"IPv6 quoting 17 extension headers, to another peer", p6.a.l, quoting(hard6, chainExt(other6, seventeen...))},
		{"IPv6 first fragment quoting another peer", p6.a.l, firstFragment(chainExt(quoting(hard6, other6), 44), 8+48)},
		{"IPv6 quoting UDP behind hop-by-hop", p6.a.l, quoting(hard6, chainExt(udp6, 60, 0))},
	} {
		if out, err := c.l.Inbound(nil, c.pkt); err != nil || &out[0] != &c.pkt[0] {
			t.Errorf("%s: %v, want it passed untouched", c.name, err)
		}
	}
}

// TestICMPZeroAllocs: judging an ICMP error allocates nothing, whether it
// is dropped for a tracked session, dropped as one the layer cannot judge
// (a first fragment), or passed (quoting a peer no key covers).
func TestICMPZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	r6 := netip.MustParseAddr("2001:db8:ff::1")
	p := aoPair(t, true, "k", "k")
	p.handshake()
	wire, _ := p.send(p.a, p.b, segment.ACK|segment.PSH, payload)
	hard := icmpFor(t, r6, wire, 4)
	other := slices.Clone(wire)
	other[39] ^= 0xff
	for _, c := range []struct {
		name string
		pkt  []byte
		want error
	}{
		{"tracked, quoting destination options then hop-by-hop", quoting(hard, chainExt(wire, 60, 0)), ErrICMP},
		{"first fragment of 8 bytes", firstFragment(chainExt(hard, 44), 16), ErrICMP},
		{"quoting another peer", quoting(hard, other), nil},
	} {
		if n := testing.AllocsPerRun(200, func() {
			if _, err := p.a.l.Inbound(nil, c.pkt); !errors.Is(err, c.want) {
				t.Fatalf("%s: %v, want %v", c.name, err, c.want)
			}
		}); n != 0 {
			t.Errorf("%s: %v allocs", c.name, n)
		}
	}
}

// kernelActs reports whether Linux would take pkt, an IPv4 packet with a
// 20-byte header or an IPv6 one with no extension headers, neither
// fragmented, as a §7.8 hard error for the TCP segment local -> remote:
// written apart from the layer, from icmp_unreach, icmp_socket_deliver
// and tcp_v4_err, and icmpv6_notify, ipv6_skip_exthdr and tcp_v6_err.
func kernelActs(pkt []byte, local, remote netip.AddrPort) bool {
	be := binary.BigEndian
	tuple := func(src, dst netip.Addr, th []byte) bool {
		return src == local.Addr() && dst == remote.Addr() && be.Uint16(th) == local.Port() && be.Uint16(th[2:]) == remote.Port()
	}
	switch {
	case len(pkt) >= 28 && pkt[0] == 0x45:
		total := int(be.Uint16(pkt[2:]))
		if total < 28 || total > len(pkt) || pkt[9] != 1 || be.Uint16(pkt[6:])&0x3fff != 0 {
			return false
		}
		m := pkt[20:total]
		q := m[8:]
		if m[0] != 3 || m[1] < 2 || m[1] > 4 || len(q) < 20 {
			return false
		}
		ihl := int(q[0]&0x0f) * 4
		if ihl < 20 || len(q) < ihl+8 || q[9] != 6 {
			return false
		}
		return tuple(netip.AddrFrom4([4]byte(q[12:16])), netip.AddrFrom4([4]byte(q[16:20])), q[ihl:])
	case len(pkt) >= 48 && pkt[0]>>4 == 6 && pkt[6] == 58:
		end := 40 + int(be.Uint16(pkt[4:]))
		if end > len(pkt) || end < 48 {
			return false
		}
		m := pkt[40:end]
		q := m[8:]
		if m[0] != 1 || m[1] != 1 && m[1] != 4 || len(q) < 40 {
			return false
		}
		next, off := q[6], 40
		for next == 0 || next == 43 || next == 44 || next == 51 || next == 60 {
			if off+4 > len(q) {
				return false
			}
			hl := (int(q[off+1]) + 1) * 8
			switch next {
			case 44:
				if be.Uint16(q[off+2:])&^7 != 0 {
					return false // a later fragment's header: no handler
				}
				hl = 8
			case 51:
				hl = (int(q[off+1]) + 2) * 4
			}
			next, off = q[off], off+hl
		}
		if next != 6 || off+8 > len(q) {
			return false
		}
		return tuple(netip.AddrFrom16([16]byte(q[8:24])), netip.AddrFrom16([16]byte(q[24:40])), q[off:])
	}
	return false
}

// FuzzICMP: whatever ICMP error arrives, the layer never panics, and
// every one the kernel would take as a §7.8 hard error for a tracked
// TCP-AO session (kernelActs) is dropped.
func FuzzICMP(f *testing.F) {
	r4, r6 := netip.MustParseAddr("203.0.113.254"), netip.MustParseAddr("2001:db8:ff::1")
	var pairs [2]*pair
	var wires [2][]byte
	for i, v6 := range []bool{false, true} {
		pairs[i] = aoPair(f, v6, "k", "k")
		pairs[i].handshake()
		wires[i], _ = pairs[i].send(pairs[i].a, pairs[i].b, segment.ACK|segment.PSH, payload)
	}
	// msg is the destination unreachable with code from router to
	// quoted's source, quoting it, as icmpFor makes it.
	msg := func(router netip.Addr, quoted []byte, code uint8) []byte {
		to := netip.AddrFrom4([4]byte(quoted[12:16]))
		typ := uint8(3)
		if router.Is6() {
			to, typ = netip.AddrFrom16([16]byte(quoted[8:24])), 1
		}
		body := slices.Concat([]byte{typ, code, 0, 0, 0, 0, 0, 0}, quoted)
		pkt, err := segment.AppendIP(nil, segment.IP{Src: router, Dst: to}, len(body))
		if err != nil {
			f.Fatal(err)
		}
		if router.Is4() {
			pkt[9] = 1
			binary.BigEndian.PutUint16(pkt[10:], segment.IPv4Checksum(pkt))
		} else {
			pkt[6] = 58
		}
		return append(pkt, body...)
	}
	f.Add(msg(r4, wires[0], 3))
	f.Add(msg(r6, wires[1], 4))
	f.Add(msg(r6, chainExt(wires[1], 60, 0, 44), 1))
	f.Add(firstFragment(chainExt(msg(r6, wires[1], 4), 44), 16))
	f.Fuzz(func(t *testing.T, pkt []byte) {
		for _, p := range pairs {
			_, err := p.a.l.Inbound(nil, slices.Clone(pkt))
			if kernelActs(pkt, p.a.ap, p.b.ap) && !errors.Is(err, ErrICMP) {
				t.Fatalf("the kernel would act on %x; the layer: %v", pkt, err)
			}
		}
	})
}
