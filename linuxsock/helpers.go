package linuxsock

import (
	"net"
	"net/netip"
	"syscall"
)

// Control returns a function for net.Dialer.Control or
// net.ListenConfig.Control that installs k on the socket before it
// connects or listens. On an IPv4 socket keys for IPv6 peers are left
// out (the kernel would refuse them); an IPv6 socket takes both, IPv4
// peers as IPv4-mapped addresses. Prefer ListenConfig and Dialer, which
// also turn MPTCP off.
func Control(k Keys) func(network, address string, c syscall.RawConn) error {
	return control(k, false)
}

// control installs the keys of k that a socket of network can hold; for
// an outgoing connection (dial) only those of the peer it dials, which
// are the ones Linux keeps at connect().
func control(k Keys, dial bool) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, c syscall.RawConn) error {
		v4 := network == "tcp4"
		var remote netip.Addr
		if dial {
			if ap, err := netip.ParseAddrPort(address); err == nil {
				remote = ap.Addr().Unmap()
			}
		}
		keep := func(p netip.Prefix) bool {
			a, bits, err := peer(p)
			if err != nil {
				return true // Install reports it
			}
			if v4 && !a.Is4() {
				return false
			}
			return !remote.IsValid() || netip.PrefixFrom(a, bits).Contains(remote)
		}
		var sub Keys
		for _, c := range k.AO {
			if keep(c.Peer) {
				sub.AO = append(sub.AO, c)
			}
		}
		for _, c := range k.MD5 {
			if keep(c.Peer) {
				sub.MD5 = append(sub.MD5, c)
			}
		}
		return Install(Raw(c), sub)
	}
}

// ListenConfig returns a net.ListenConfig whose listeners carry k from
// before listen(), so that no SYN is ever answered unsigned, and are
// plain TCP: Go 1.24+ makes listeners Multipath TCP by default, and an
// MPTCP socket refuses TCP-MD5 and TCP-AO keys (ErrMPTCP), so keys added
// to it later would fail. Connections it accepts inherit the keys.
func ListenConfig(k Keys) *net.ListenConfig {
	lc := &net.ListenConfig{Control: control(k, false)}
	lc.SetMultipathTCP(false)
	return lc
}

// Dialer returns a net.Dialer that installs the keys of k for the
// address it dials before connect(), on a plain TCP socket.
func Dialer(k Keys) *net.Dialer {
	d := &net.Dialer{Control: control(k, true)}
	d.SetMultipathTCP(false)
	return d
}
