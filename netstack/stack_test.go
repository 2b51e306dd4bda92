package netstack

import (
	"context"
	"fmt"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"net/netip"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/network/arp"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
)

// newStack returns a gVisor stack with IPv4, IPv6 and TCP (SACK on,
// buffers of a few MiB) whose one NIC is link, with address a and routes
// everywhere through link.
func newStack(link stack.LinkEndpoint, a netip.Prefix) (*stack.Stack, error) {
	s := stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol, ipv6.NewProtocol, arp.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol},
	})
	sack := tcpip.TCPSACKEnabled(true)
	rcv := tcpip.TCPReceiveBufferSizeRangeOption{Min: 4 << 10, Default: 1 << 20, Max: 8 << 20}
	snd := tcpip.TCPSendBufferSizeRangeOption{Min: 4 << 10, Default: 1 << 20, Max: 8 << 20}
	for _, o := range []tcpip.SettableTransportProtocolOption{&sack, &rcv, &snd} {
		if err := s.SetTransportProtocolOption(tcp.ProtocolNumber, o); err != nil {
			s.Close()
			return nil, fmt.Errorf("netstack: %v", err)
		}
	}
	if err := s.CreateNIC(nicID, link); err != nil {
		s.Close()
		return nil, fmt.Errorf("netstack: CreateNIC: %v", err)
	}
	proto := ipv4.ProtocolNumber
	if a.Addr().Is6() {
		proto = ipv6.ProtocolNumber
	}
	pa := tcpip.ProtocolAddress{Protocol: proto, AddressWithPrefix: tcpip.AddressWithPrefix{
		Address: tcpip.AddrFromSlice(a.Addr().AsSlice()), PrefixLen: a.Bits()}}
	if err := s.AddProtocolAddress(nicID, pa, stack.AddressProperties{}); err != nil {
		s.Close()
		return nil, fmt.Errorf("netstack: AddProtocolAddress: %v", err)
	}
	s.SetRouteTable([]tcpip.Route{
		{Destination: header.IPv4EmptySubnet, NIC: nicID},
		{Destination: header.IPv6EmptySubnet, NIC: nicID},
	})
	return s, nil
}

// fullAddr is a in the form of gVisor's socket API.
func fullAddr(a netip.AddrPort) (tcpip.FullAddress, tcpip.NetworkProtocolNumber) {
	proto := ipv4.ProtocolNumber
	if a.Addr().Is6() {
		proto = ipv6.ProtocolNumber
	}
	return tcpip.FullAddress{NIC: nicID, Addr: tcpip.AddrFromSlice(a.Addr().AsSlice()), Port: a.Port()}, proto
}

func dialGonet(s *stack.Stack, to netip.AddrPort, timeout time.Duration) (*gonet.TCPConn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	fa, proto := fullAddr(to)
	return gonet.DialContextTCP(ctx, s, fa, proto)
}

func listenGonet(s *stack.Stack, at netip.AddrPort) (*gonet.TCPListener, error) {
	fa, proto := fullAddr(at)
	return gonet.ListenTCP(s, fa, proto)
}
