//go:build linux

package onpath

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"syscall"

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
			return addDefaultRoute(gw)
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

// addDefaultRoute adds "default via gw" (IPv4) in the calling thread's
// namespace over rtnetlink; package netns adds only routes to a device.
func addDefaultRoute(gw netip.Addr) error {
	if !gw.Is4() {
		return fmt.Errorf("default route via %v: IPv4 only", gw)
	}
	const hdr = syscall.SizeofNlMsghdr
	b := make([]byte, hdr, 64)
	// struct rtmsg: family, dst_len, src_len, tos, table, protocol,
	// scope, type, flags.
	b = append(b, syscall.AF_INET, 0, 0, 0, syscall.RT_TABLE_MAIN, syscall.RTPROT_BOOT, syscall.RT_SCOPE_UNIVERSE, syscall.RTN_UNICAST, 0, 0, 0, 0)
	gw4 := gw.As4()
	b = binary.NativeEndian.AppendUint16(b, 4+4) // struct rtattr
	b = binary.NativeEndian.AppendUint16(b, syscall.RTA_GATEWAY)
	b = append(b, gw4[:]...)
	binary.NativeEndian.PutUint32(b[0:], uint32(len(b)))
	binary.NativeEndian.PutUint16(b[4:], syscall.RTM_NEWROUTE)
	binary.NativeEndian.PutUint16(b[6:], syscall.NLM_F_REQUEST|syscall.NLM_F_ACK|syscall.NLM_F_CREATE|syscall.NLM_F_EXCL)
	binary.NativeEndian.PutUint32(b[8:], 1) // seq
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, syscall.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	if err := syscall.Sendto(fd, b, 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 4096)
	for {
		n, _, err := syscall.Recvfrom(fd, buf, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if m.Header.Type != syscall.NLMSG_ERROR {
				continue
			}
			if len(m.Data) < 4 {
				return errors.New("short netlink error message")
			}
			if code := int32(binary.NativeEndian.Uint32(m.Data)); code != 0 {
				return fmt.Errorf("default route via %v: %w", gw, syscall.Errno(-code))
			}
			return nil
		}
	}
}
