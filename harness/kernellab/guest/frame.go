//go:build linux

package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/tcpsig/tcpsig/harness/capture"
	"github.com/tcpsig/tcpsig/segment"
)

// seg is the little the checks need to know about a captured TCP segment.
type seg struct {
	src, dst       netip.Addr
	sport, dport   uint16
	seq, ack       uint32
	flags          segment.Flags
	payload        int
	opts           []uint8 // option kinds in order (NOPs and an EOL included)
	hasAO          bool
	aoLen          int
	keyID, rnextID uint8
	hasTS          bool
	tsVal, tsEcr   uint32
	hasSACKp       bool
}

func (s seg) srcAP() netip.AddrPort { return netip.AddrPortFrom(s.src, s.sport) }
func (s seg) dstAP() netip.AddrPort { return netip.AddrPortFrom(s.dst, s.dport) }

func (s seg) String() string {
	ao := ""
	if s.hasAO {
		ao = fmt.Sprintf(" AO(len %d, %d/%d)", s.aoLen, s.keyID, s.rnextID)
	}
	return fmt.Sprintf("%v > %v [%v] seq %d ack %d len %d%s", s.srcAP(), s.dstAP(), s.flags, s.seq, s.ack, s.payload, ao)
}

// parseFrame summarises a frame of a capture on lo (Ethernet). The segment
// package parses the IP packet and the TCP header and locates the TCP-AO
// option the way Linux does (so a segment with a malformed or duplicate
// authentication option, or MD5 next to AO, is an error); gopacket decodes
// the other options, which segment leaves alone: their order (full sockets
// put AO first, TIME-WAIT replies put it after TS), timestamps and
// SACK-permitted.
func parseFrame(frame []byte) (seg, error) {
	ip := capture.LinkTypeEthernet.IP(frame)
	if ip == nil {
		return seg{}, errors.New("not an IPv4 or IPv6 frame")
	}
	p, err := segment.ParsePacket(ip)
	if err != nil {
		return seg{}, err
	}
	h := p.Header()
	s := seg{src: p.Src(), dst: p.Dst(), sport: h.SrcPort(), dport: h.DstPort(),
		seq: h.Seq(), ack: h.Ack(), flags: h.Flags(), payload: len(p.Payload())}
	if p.Auth().AO > 0 {
		s.hasAO, s.aoLen, s.keyID, s.rnextID = true, p.Auth().AOLen, h[p.Auth().AO+2], h[p.Auth().AO+3]
	}
	var tcp layers.TCP
	if err := tcp.DecodeFromBytes(h, gopacket.NilDecodeFeedback); err != nil {
		return s, err
	}
	for _, o := range tcp.Options {
		s.opts = append(s.opts, uint8(o.OptionType))
		switch o.OptionType {
		case layers.TCPOptionKindTimestamps:
			if len(o.OptionData) == 8 {
				s.hasTS = true
				s.tsVal, s.tsEcr = binary.BigEndian.Uint32(o.OptionData), binary.BigEndian.Uint32(o.OptionData[4:])
			}
		case layers.TCPOptionKindSACKPermitted:
			s.hasSACKp = true
		}
	}
	// gopacket stops quietly at an option whose length cannot be followed
	// (the rest becomes padding); here that is an error.
	if n := len(tcp.Options); len(tcp.Padding) > 0 && (n == 0 || tcp.Options[n-1].OptionType != layers.TCPOptionKindEndList) {
		return s, fmt.Errorf("malformed TCP option after %v", s.opts)
	}
	return s, nil
}
