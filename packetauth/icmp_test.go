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
