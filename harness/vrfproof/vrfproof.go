//go:build linux

// Package vrfproof shows, with the kernel's verdicts, that TCP-MD5 keys
// bound to an L3 domain through package linuxsock are scoped as Linux
// scopes them. It runs in the calling thread's network namespace (give
// it a fresh one, netns.Run) on a kernel with CONFIG_NET_VRF and
// CONFIG_VETH; the linuxsock tests run it on such a host, and the qemu
// guest (harness/kernellab/guest) runs it under Linux 6.12.
package vrfproof

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"

	"github.com/tcpsig/tcpsig/harness/kstat"
	"github.com/tcpsig/tcpsig/harness/netns"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/linuxsock"
)

// The layout: soveth0 (192.0.2.1/24) enslaved to the VRF sovrf0 (table
// 10), its peer soveth1 (192.0.2.2/24) in the default domain. A listener
// bound to the VRF serves clients in the default domain across the pair.
var (
	srvAddr = netip.MustParseAddr("192.0.2.1")
	cliAddr = netip.MustParseAddr("192.0.2.2")
)

// Run builds the layout and checks three listeners: with a key bound to
// the VRF it accepts the signed client; with the same key bound to the
// default domain it does not (the SYN comes through the VRF:
// TCPMD5Unexpected); with a VRF-bound /24 and an unbound /32 for the
// client, the VRF-bound key wins although its prefix is shorter. logf
// reports each step.
func Run(logf func(format string, a ...any)) error {
	if err := setup(); err != nil {
		return err
	}
	vrf, err := net.InterfaceByName("sovrf0")
	if err != nil {
		return err
	}
	key, wrong := []byte("vrf-key"), []byte("not-the-key")
	cli := linuxsock.Dialer(linuxsock.Keys{MD5: []keys.MD5{{Peer: netip.PrefixFrom(srvAddr, 32), Key: key}}})
	cli.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(cliAddr, 0))
	for _, tc := range []struct {
		name string
		keys []keys.MD5
		ok   bool
	}{
		{"key bound to the VRF", []keys.MD5{{Peer: netip.MustParsePrefix("192.0.2.0/24"), Key: key, HasIfIndex: true, IfIndex: vrf.Index}}, true},
		{"key bound to the default domain", []keys.MD5{{Peer: netip.MustParsePrefix("192.0.2.0/24"), Key: key, HasIfIndex: true}}, false},
		{"VRF-bound /24 over an unbound /32", []keys.MD5{
			{Peer: netip.MustParsePrefix("192.0.2.2/32"), Key: wrong},
			{Peer: netip.MustParsePrefix("192.0.2.0/24"), Key: key, HasIfIndex: true, IfIndex: vrf.Index}}, true},
	} {
		before, err := kstat.ReadMD5()
		if err != nil {
			return err
		}
		ok, err := connect(tc.keys, cli, tc.ok)
		if err != nil {
			return fmt.Errorf("%s: %w", tc.name, err)
		}
		after, err := kstat.ReadMD5()
		if err != nil {
			return err
		}
		logf("%s (ifindex %d): connected %v, TCP-MD5 counters %+v -> %+v", tc.name, vrf.Index, ok, before, after)
		if ok != tc.ok {
			return fmt.Errorf("%s: connected %v, want %v", tc.name, ok, tc.ok)
		}
		if tc.ok && after != before {
			return fmt.Errorf("%s: counters moved %+v -> %+v", tc.name, before, after)
		}
		if !tc.ok && after.Unexpected <= before.Unexpected {
			return fmt.Errorf("%s: refused without TCPMD5Unexpected: %+v -> %+v", tc.name, before, after)
		}
	}
	return nil
}

func setup() error {
	for _, step := range []func() error{
		func() error { return netns.AddVRF("sovrf0", 10) },
		func() error { return netns.AddVeth("soveth0", "soveth1", -1) },
		func() error { return netns.SetMaster("soveth0", "sovrf0") },
		func() error { return netns.LinkUp("sovrf0") },
		func() error { return netns.LinkUp("soveth0") },
		func() error { return netns.LinkUp("soveth1") },
		func() error { return netns.AddAddr("soveth0", netip.PrefixFrom(srvAddr, 24)) },
		func() error { return netns.AddAddr("soveth1", netip.PrefixFrom(cliAddr, 24)) },
		// The rule for the local table comes before the VRF's (l3mdev)
		// rule, so the client's address, local in the default domain,
		// is a martian source to the VRF side unless it accepts local
		// sources.
		func() error {
			return os.WriteFile("/proc/sys/net/ipv4/conf/soveth0/accept_local", []byte("1"), 0o644)
		},
	} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// connect listens in the VRF with keys and dials it with d; it reports
// whether a byte came across.
func connect(keys []keys.MD5, d *net.Dialer, want bool) (bool, error) {
	lc := linuxsock.ListenConfig(linuxsock.Keys{MD5: keys})
	install := lc.Control
	lc.Control = func(network, address string, c syscall.RawConn) error {
		var err error
		c.Control(func(fd uintptr) { err = syscall.BindToDevice(int(fd), "sovrf0") })
		if err != nil {
			return fmt.Errorf("SO_BINDTODEVICE: %w", err)
		}
		return install(network, address, c)
	}
	ln, err := lc.Listen(context.Background(), "tcp4", netip.AddrPortFrom(srvAddr, 0).String())
	if err != nil {
		return false, err
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Write([]byte{42})
			c.Close()
		}
	}()
	bound := 1500 * time.Millisecond // a refusal shows within it
	if want {
		bound = 20 * time.Second
	}
	dd := *d
	dd.Timeout = bound
	c, err := dd.Dial("tcp4", ln.Addr().String())
	if err != nil {
		return false, nil
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(bound))
	b, err := io.ReadAll(c)
	return err == nil && bytes.Equal(b, []byte{42}), nil
}
