package packetauth

import (
	"fmt"
	"math"
	"net/netip"

	"github.com/tcpsig/tcpsig/ao"
)

// ErrL3Index: InboundL3 or OutboundL3 was given an L3 domain outside
// 0..MaxInt32 (an interface index is a positive int32).
var ErrL3Index = fmt.Errorf("%w: L3 domain outside 0..%d", ErrConfig, math.MaxInt32)

// OutboundL3 is [Layer.Outbound] for a packet of L3 domain l3: the
// ifindex of the VRF (L3 master) device the packet is routed through, 0
// for the default domain, as Linux's l3mdev_master_ifindex gives it. Keys
// bound to a domain (keys.AO.HasIfIndex, keys.MD5.HasIfIndex) cover the
// peer only in that domain, unbound keys in every domain, as Linux looks
// them up for a socket of that VRF; the same addresses and ports in two
// domains are two connections. A front end that learns each packet's
// interface (a netfilter queue does) passes its domain here. An l3 out of
// range is refused with ErrL3Index.
func (l *Layer) OutboundL3(dst, pkt []byte, l3 int) ([]byte, error) {
	if !l.setUp() {
		return nil, ErrNotSetUp
	}
	if uint(l3) > math.MaxInt32 {
		return nil, l.drop(&l.shards[0], nil, ErrL3Index)
	}
	return l.outbound(dst, pkt, l3)
}

// InboundL3 is [Layer.Inbound] for a packet of L3 domain l3 (see
// [Layer.OutboundL3]): the ifindex of the VRF device it arrived through,
// or of the VRF its interface is enslaved to, 0 for the default domain.
func (l *Layer) InboundL3(dst, pkt []byte, l3 int) ([]byte, error) {
	if !l.setUp() {
		return nil, ErrNotSetUp
	}
	if uint(l3) > math.MaxInt32 {
		return nil, l.drop(&l.shards[0], nil, ErrL3Index)
	}
	return l.inbound(dst, pkt, l3)
}

// listenerIn returns the listener that verifies SYNs of L3 domain l3: the
// layer's own for Config.L3Index, else one for this SYN (a listener keeps
// no state between SYNs but counters, which the layer does not report).
func (l *Layer) listenerIn(l3 int) *ao.Listener {
	if l3 == l.cfg.L3Index {
		return l.listener
	}
	return ao.NewListener(l.cfg.AO, l.cfg.Policy, l3)
}

// ExportL3 is [Layer.Export] for the connection local↔remote of L3
// domain l3 ([ConnInfo.L3Index]); its Endpoint's L3Index is l3.
func (l *Layer) ExportL3(local, remote netip.AddrPort, l3 int) (ao.Endpoint, bool) {
	if !l.setUp() || uint(l3) > math.MaxInt32 {
		return ao.Endpoint{}, false
	}
	return l.export(local, remote, l3)
}

// SeedL3 is [Layer.Seed] in the L3 domain ep.L3Index, as ExportL3 gives
// it: a front end that restarts takes each connection back into its own
// domain.
func (l *Layer) SeedL3(ep ao.Endpoint) error {
	if !l.setUp() {
		return ErrNotSetUp
	}
	if uint(ep.L3Index) > math.MaxInt32 {
		return ErrL3Index
	}
	return l.seed(ep, ep.L3Index)
}

// SeedRevokedL3 is [Layer.SeedRevoked] for a connection of L3 domain l3:
// its packets in that domain are dropped until it expires.
func (l *Layer) SeedRevokedL3(local, remote netip.AddrPort, kind Kind, l3 int) error {
	if !l.setUp() {
		return ErrNotSetUp
	}
	if uint(l3) > math.MaxInt32 {
		return ErrL3Index
	}
	return l.seedRevoked(local, remote, kind, l3)
}
