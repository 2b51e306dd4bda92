package pcapverify

import (
	"encoding/binary"
	"net/netip"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// unsupportedLink is the error of a capture of link type lt, named if known.
func unsupportedLink(lt uint32) error {
	name := "unknown"
	if lt < 1<<16 {
		name = layers.LinkType(lt).String()
	}
	return captureErrorf(nil, "link type %d (%s) is not supported: %s", lt, name, supportedLinks)
}

const supportedLinks = "Ethernet, Linux cooked (SLL, SLL2), raw IPv4/IPv6 and BSD loopback/null are"

// Link types of raw IP: LINKTYPE_RAW, and the DLT_RAW values some
// systems write (12, 14), LINKTYPE_IPV4, LINKTYPE_IPV6.
func supportedLink(lt layers.LinkType) bool {
	switch lt {
	case layers.LinkTypeEthernet, layers.LinkTypeLinuxSLL, layers.LinkTypeLinuxSLL2,
		layers.LinkTypeNull, layers.LinkTypeLoop,
		layers.LinkTypeRaw, 12, 14, layers.LinkTypeIPv4, layers.LinkTypeIPv6:
		return true
	}
	return false
}

// linkDecoder strips link-layer headers with gopacket's decoders into
// reused layer values (no allocation per frame).
type linkDecoder struct {
	eth   layers.Ethernet
	dot1q layers.Dot1Q
	sll   layers.LinuxSLL
	sll2  layers.LinuxSLL2
	loop  layers.Loopback
}

// ip returns the IPv4 or IPv6 packet in frame, or nil.
func (d *linkDecoder) ip(lt layers.LinkType, frame []byte) []byte {
	nf := gopacket.NilDecodeFeedback
	var et layers.EthernetType
	var payload []byte
	switch lt {
	case layers.LinkTypeEthernet:
		if d.eth.DecodeFromBytes(frame, nf) != nil {
			return nil
		}
		et, payload = d.eth.EthernetType, d.eth.Payload
		for range 2 { // 802.1Q, QinQ
			if et != layers.EthernetTypeDot1Q && et != layers.EthernetTypeQinQ {
				break
			}
			if d.dot1q.DecodeFromBytes(payload, nf) != nil {
				return nil
			}
			et, payload = d.dot1q.Type, d.dot1q.Payload
		}
	case layers.LinkTypeLinuxSLL:
		if d.sll.DecodeFromBytes(frame, nf) != nil {
			return nil
		}
		et, payload = d.sll.EthernetType, d.sll.Payload
	case layers.LinkTypeLinuxSLL2:
		if d.sll2.DecodeFromBytes(frame, nf) != nil {
			return nil
		}
		et, payload = d.sll2.ProtocolType, d.sll2.Payload
	case layers.LinkTypeNull, layers.LinkTypeLoop:
		if d.loop.DecodeFromBytes(frame, nf) != nil {
			return nil
		}
		switch d.loop.Family {
		case layers.ProtocolFamilyIPv4:
			et = layers.EthernetTypeIPv4
		case layers.ProtocolFamilyIPv6BSD, layers.ProtocolFamilyIPv6FreeBSD, layers.ProtocolFamilyIPv6Darwin, layers.ProtocolFamilyIPv6Linux:
			et = layers.EthernetTypeIPv6
		}
		payload = d.loop.Payload
	default: // raw IP
		return ipVersion(frame)
	}
	if et != layers.EthernetTypeIPv4 && et != layers.EthernetTypeIPv6 {
		return nil
	}
	return payload
}

// ipVersion returns b if it starts like an IPv4 or IPv6 packet, else nil.
func ipVersion(b []byte) []byte {
	if len(b) > 0 && (b[0]>>4 == 4 || b[0]>>4 == 6) {
		return b
	}
	return nil
}

// peekTCP reads the addresses and ports of a packet that did not parse,
// as far as its bytes allow: enough to attribute it to a flow. tcp is what
// there is of the TCP header and after.
func peekTCP(ip []byte) (src, dst netip.AddrPort, tcp []byte, ok bool) {
	var s, d netip.Addr
	var l4 []byte
	switch {
	case len(ip) >= 20 && ip[0]>>4 == 4 && ip[9] == 6:
		s, d = netip.AddrFrom4([4]byte(ip[12:16])), netip.AddrFrom4([4]byte(ip[16:20]))
		if ihl := int(ip[0]&0x0f) * 4; ihl >= 20 && ihl <= len(ip) {
			l4 = ip[ihl:]
		}
	case len(ip) >= 40 && ip[0]>>4 == 6 && ip[6] == 6:
		s, d = netip.AddrFrom16([16]byte(ip[8:24])).Unmap(), netip.AddrFrom16([16]byte(ip[24:40])).Unmap()
		l4 = ip[40:]
	default:
		return src, dst, nil, false
	}
	if len(l4) < 4 {
		return src, dst, nil, false
	}
	return netip.AddrPortFrom(s, binary.BigEndian.Uint16(l4[0:])), netip.AddrPortFrom(d, binary.BigEndian.Uint16(l4[2:])), l4, true
}
