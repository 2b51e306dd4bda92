package capture

import "encoding/binary"

// TCPPorts returns a filter for [Options.Filter] that keeps the TCP
// segments, IPv4 or IPv6, whose source or destination port is one of ports.
// IPv6 extension headers are not walked: a segment behind one is dropped.
func TCPPorts(ports ...uint16) func(ip []byte) bool {
	want := make(map[uint16]bool, len(ports))
	for _, p := range ports {
		want[p] = true
	}
	return func(ip []byte) bool {
		tcp := tcpOf(ip)
		if len(tcp) < 4 {
			return false
		}
		return want[binary.BigEndian.Uint16(tcp[0:])] || want[binary.BigEndian.Uint16(tcp[2:])]
	}
}

// tcpOf returns the TCP part of an IPv4 or IPv6 packet, or nil.
func tcpOf(ip []byte) []byte {
	if len(ip) < 1 {
		return nil
	}
	switch ip[0] >> 4 {
	case 4:
		if len(ip) < 20 || ip[9] != 6 {
			return nil
		}
		ihl := int(ip[0]&0x0f) * 4
		if ihl < 20 || ihl > len(ip) {
			return nil
		}
		return ip[ihl:]
	case 6:
		if len(ip) < 40 || ip[6] != 6 {
			return nil
		}
		return ip[40:]
	}
	return nil
}
