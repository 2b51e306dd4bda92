//go:build linux

package onpath

import (
	"fmt"
	"net/netip"
	"os"

	"github.com/tcpsig/tcpsig/harness/netns"
)

// The interfaces of [New]'s namespaces.
const (
	IfA  = "opA"  // A's, to M
	IfMA = "opMA" // M's, to A
	IfMB = "opMB" // M's, to B
	IfB  = "opB"  // B's, to M
)

// The addresses of [New]'s namespaces (documentation ranges, RFC 5737).
var (
	AddrA  = netip.MustParseAddr("192.0.2.1")
	AddrMA = netip.MustParseAddr("192.0.2.254")
	AddrMB = netip.MustParseAddr("198.51.100.254")
	AddrB  = netip.MustParseAddr("198.51.100.2")
)

// Net is the three namespaces: A and B, the hosts, and M, the router
// between them.
type Net struct {
	A, M, B *netns.Keeper
}

// New makes the namespaces and links of the package doc. It needs root.
// Close ends them.
func New() (*Net, error) {
	n := &Net{}
	for _, k := range []**netns.Keeper{&n.A, &n.M, &n.B} {
		var err error
		if *k, err = netns.NewKeeper(); err != nil {
			n.Close()
			return nil, fmt.Errorf("onpath: %w", err)
		}
	}
	if err := n.setup(); err != nil {
		n.Close()
		return nil, fmt.Errorf("onpath: %w", err)
	}
	return n, nil
}

func (n *Net) setup() error {
	if err := n.A.Do(func() error { return netns.AddVeth(IfA, IfMA, n.M.FD()) }); err != nil {
		return err
	}
	if err := n.B.Do(func() error { return netns.AddVeth(IfB, IfMB, n.M.FD()) }); err != nil {
		return err
	}
	host := func(ifname string, addr, gw netip.Addr) func() error {
		return func() error {
			if err := netns.LinkUp(ifname); err != nil {
				return err
			}
			if err := netns.AddAddr(ifname, netip.PrefixFrom(addr, 24)); err != nil {
				return err
			}
			return netns.AddDefaultRoute(gw)
		}
	}
	if err := n.A.Do(host(IfA, AddrA, AddrMA)); err != nil {
		return err
	}
	if err := n.B.Do(host(IfB, AddrB, AddrMB)); err != nil {
		return err
	}
	return n.M.Do(func() error {
		for _, x := range []struct {
			ifname string
			addr   netip.Addr
		}{{IfMA, AddrMA}, {IfMB, AddrMB}} {
			if err := netns.LinkUp(x.ifname); err != nil {
				return err
			}
			if err := netns.AddAddr(x.ifname, netip.PrefixFrom(x.addr, 24)); err != nil {
				return err
			}
		}
		// /proc/sys/net is the namespace of the thread that opens it.
		return os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1\n"), 0)
	})
}

// Close ends the namespaces (each goes with its last socket or process).
func (n *Net) Close() {
	for _, k := range []*netns.Keeper{n.A, n.M, n.B} {
		if k != nil {
			k.Close()
		}
	}
}
