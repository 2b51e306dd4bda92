//go:build linux

// Package netns runs test code inside a fresh Linux network namespace and
// configures that namespace's interfaces over rtnetlink, without iproute2.
//
// A network namespace belongs to an OS thread, not to a goroutine. [Run]
// therefore locks a new goroutine to its thread, moves the thread into a new
// namespace with unshare(CLONE_NEWNET), brings lo up and calls the given
// function on that goroutine. Sockets, packet sockets, TUN devices and
// netlink sockets created by that goroutine live in the namespace and stay
// there whichever thread later uses them, so the function may hand them to
// other goroutines; but a socket created by another goroutine is created in
// that goroutine's namespace, usually the host's. When the function returns,
// the thread is left locked and the runtime destroys it, so no other
// goroutine ever runs in the namespace; the namespace disappears with its
// last socket.
//
// The configuration helpers ([LinkUp], [SetMTU], [AddAddr], [AddRoute],
// [AddDefaultRoute], [AddVeth])
// act on the namespace of the calling thread: call them from the function
// given to Run, or to a [Keeper]'s Do (a namespace a test acts in many
// times).
package netns

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// Run runs f on a goroutine locked to an OS thread in a new network
// namespace whose lo is up, and returns f's error. Creating the namespace
// needs CAP_SYS_ADMIN; without it Run returns an error wrapping
// [syscall.EPERM].
func Run(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: the thread dies with this goroutine, taking the
		// namespace membership with it.
		runtime.LockOSThread()
		if err := syscall.Unshare(syscall.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("netns: unshare(CLONE_NEWNET): %w", err)
			return
		}
		if err := LinkUp("lo"); err != nil {
			errc <- err
			return
		}
		errc <- f()
	}()
	return <-errc
}

// LinkUp sets the interface named name up.
func LinkUp(name string) error {
	return setLink(name, syscall.IFF_UP, 0)
}

// SetMTU sets the MTU of the interface named name.
func SetMTU(name string, mtu int) error {
	return setLink(name, 0, mtu)
}

func setLink(name string, up uint32, mtu int) error {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return fmt.Errorf("netns: %w", err)
	}
	var m msg
	m.header(syscall.RTM_NEWLINK, 0)
	m.ifinfo(int32(ifi.Index), up)
	if mtu > 0 {
		m.attr(syscall.IFLA_MTU, binary.NativeEndian.AppendUint32(nil, uint32(mtu)))
	}
	if err := m.do(); err != nil {
		return fmt.Errorf("netns: set link %s: %w", name, err)
	}
	return nil
}

// AddAddr adds the address p.Addr() with prefix length p.Bits() to the
// interface named name. The kernel then routes p.Masked() to the interface.
// IPv6 addresses are added without duplicate address detection, and
// AddAddr returns once the kernel accepts packets to the address: even
// without DAD, the local route of an IPv6 address is installed by a work
// queue, and a packet that arrives before it is dropped (Ip6InAddrErrors).
// For that wait, an interface given an IPv6 address must already be up.
func AddAddr(name string, p netip.Prefix) error {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return fmt.Errorf("netns: %w", err)
	}
	a := p.Addr().Unmap()
	family, flags := uint8(syscall.AF_INET), uint32(0)
	if a.Is6() {
		family, flags = syscall.AF_INET6, syscall.IFA_F_NODAD
		if p.Bits() == 128 {
			flags |= ifaNoPrefixRoute
		}
	}
	var m msg
	m.header(syscall.RTM_NEWADDR, syscall.NLM_F_CREATE|syscall.NLM_F_EXCL)
	// struct ifaddrmsg
	m.u8(family)
	m.u8(uint8(p.Bits()))
	m.u8(uint8(flags))
	m.u8(syscall.RT_SCOPE_UNIVERSE)
	m.u32(uint32(ifi.Index))
	m.attr(syscall.IFA_LOCAL, a.AsSlice())
	m.attr(syscall.IFA_ADDRESS, a.AsSlice())
	const ifaFlags = 8 // IFA_FLAGS
	m.attr(ifaFlags, binary.NativeEndian.AppendUint32(nil, flags))
	if err := m.do(); err != nil {
		return fmt.Errorf("netns: add address %v to %s: %w", p, name, err)
	}
	if a.Is6() {
		return waitLocalRoute6(a)
	}
	return nil
}

// ifaNoPrefixRoute is IFA_F_NOPREFIXROUTE (not in package syscall). A /128
// needs no prefix route, and on lo the kernel turns one into a reject route
// that answered the first SYN to the address with ENETUNREACH.
const ifaNoPrefixRoute = 0x200

// routable reports whether the kernel's route lookup resolves a.
func routable(a netip.Addr) bool {
	c, err := net.DialUDP("udp6", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(a, 9)))
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// waitLocalRoute6 polls /proc/thread-self/net/ipv6_route until the local
// route of a (a /128 entry) is there.
func waitLocalRoute6(a netip.Addr) error {
	want := hex.EncodeToString(a.AsSlice()) + " 80 "
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile("/proc/thread-self/net/ipv6_route")
		if err != nil {
			return fmt.Errorf("netns: %w", err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			// The route is listed; the kernel's route lookup may still
			// answer ENETUNREACH for a moment, so also wait until a
			// connected UDP socket (no packet is sent) resolves it.
			if strings.HasPrefix(line, want) && routable(a) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("netns: the local route of %v did not appear", a)
		}
		time.Sleep(time.Millisecond)
	}
}

// AddRoute routes the prefix p (masked) to the interface named name, as
// "ip route add p dev name" does.
func AddRoute(p netip.Prefix, name string) error {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return fmt.Errorf("netns: %w", err)
	}
	p = p.Masked()
	family := uint8(syscall.AF_INET)
	if p.Addr().Is6() {
		family = syscall.AF_INET6
	}
	var m msg
	m.header(syscall.RTM_NEWROUTE, syscall.NLM_F_CREATE|syscall.NLM_F_EXCL)
	// struct rtmsg
	m.u8(family)
	m.u8(uint8(p.Bits()))
	m.u8(0) // src_len
	m.u8(0) // tos
	m.u8(syscall.RT_TABLE_MAIN)
	m.u8(syscall.RTPROT_BOOT)
	m.u8(syscall.RT_SCOPE_LINK)
	m.u8(syscall.RTN_UNICAST)
	m.u32(0) // flags
	m.attr(syscall.RTA_DST, p.Addr().AsSlice())
	m.attr(syscall.RTA_OIF, binary.NativeEndian.AppendUint32(nil, uint32(ifi.Index)))
	if err := m.do(); err != nil {
		return fmt.Errorf("netns: add route %v dev %s: %w", p, name, err)
	}
	return nil
}

// AddDefaultRoute routes everything of gw's family through the gateway
// gw, as "ip route add default via gw" does.
func AddDefaultRoute(gw netip.Addr) error {
	family := uint8(syscall.AF_INET)
	if gw.Is6() {
		family = syscall.AF_INET6
	}
	var m msg
	m.header(syscall.RTM_NEWROUTE, syscall.NLM_F_CREATE|syscall.NLM_F_EXCL)
	// struct rtmsg: a universe-scope unicast route of prefix length 0
	m.u8(family)
	m.u8(0) // dst_len
	m.u8(0) // src_len
	m.u8(0) // tos
	m.u8(syscall.RT_TABLE_MAIN)
	m.u8(syscall.RTPROT_BOOT)
	m.u8(syscall.RT_SCOPE_UNIVERSE)
	m.u8(syscall.RTN_UNICAST)
	m.u32(0) // flags
	m.attr(syscall.RTA_GATEWAY, gw.AsSlice())
	if err := m.do(); err != nil {
		return fmt.Errorf("netns: add default route via %v: %w", gw, err)
	}
	return nil
}

// AddVeth creates a veth pair: name in the calling thread's namespace and
// peer in the namespace of the file descriptor peerNS (an open
// /proc/.../ns/net of another namespace; -1 for this one). Both ends start
// down.
func AddVeth(name, peer string, peerNS int) error {
	const (
		vethPeer    = 1  // VETH_INFO_PEER
		iflaNetNSFd = 28 // IFLA_NET_NS_FD
	)
	// The peer: struct ifinfomsg, then its name and namespace.
	var p msg
	p.ifinfo(0, 0)
	p.attr(syscall.IFLA_IFNAME, append([]byte(peer), 0))
	if peerNS >= 0 {
		p.attr(iflaNetNSFd, binary.NativeEndian.AppendUint32(nil, uint32(peerNS)))
	}
	var data msg
	data.attr(syscall.NLA_F_NESTED|vethPeer, p.b)
	m := newLinkMsg(name, "veth", data.b)
	if err := m.do(); err != nil {
		return fmt.Errorf("netns: add veth %s/%s: %w", name, peer, err)
	}
	return nil
}

// msg builds one rtnetlink request.
type msg struct{ b []byte }

func (m *msg) u8(v uint8)   { m.b = append(m.b, v) }
func (m *msg) u16(v uint16) { m.b = binary.NativeEndian.AppendUint16(m.b, v) }
func (m *msg) u32(v uint32) { m.b = binary.NativeEndian.AppendUint32(m.b, v) }

func (m *msg) header(typ uint16, flags uint16) {
	m.u32(0) // length, set by do
	m.u16(typ)
	m.u16(syscall.NLM_F_REQUEST | syscall.NLM_F_ACK | flags)
	m.u32(1) // seq
	m.u32(0) // pid: the kernel
}

func (m *msg) attr(typ uint16, data []byte) {
	m.u16(uint16(4 + len(data)))
	m.u16(typ)
	m.b = append(m.b, data...)
	for len(m.b)%4 != 0 {
		m.b = append(m.b, 0)
	}
}

// do sends the request on a new NETLINK_ROUTE socket and waits for the
// kernel's acknowledgement.
func (m *msg) do() error {
	binary.NativeEndian.PutUint32(m.b[0:], uint32(len(m.b)))
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, syscall.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	if err := syscall.Sendto(fd, m.b, 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 8192)
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
		for _, r := range msgs {
			if r.Header.Type != syscall.NLMSG_ERROR {
				continue
			}
			if len(r.Data) < 4 {
				return errors.New("short netlink error message")
			}
			if code := int32(binary.NativeEndian.Uint32(r.Data)); code != 0 {
				return syscall.Errno(-code)
			}
			return nil
		}
	}
}
