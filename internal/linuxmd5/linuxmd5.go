//go:build linux

// Package linuxmd5 configures Linux's own TCP-MD5 (RFC 2385) on sockets and
// reads the kernel's TCP-MD5 counters. Tests use it to make the kernel sign
// and check segments, the reference that tcpsig's md5sig package is proven
// against.
//
// Keys are installed with setsockopt(IPPROTO_TCP, TCP_MD5SIG) for one exact
// peer address, or TCP_MD5SIG_EXT with TCP_MD5SIG_FLAG_PREFIX (and
// TCP_MD5SIG_FLAG_IFINDEX) for a peer prefix, both taking struct tcp_md5sig
// (216 bytes on x86-64: the peer as a sockaddr_storage at 0, flags at 128,
// prefix length at 129, key length at 130, ifindex at 132, key at 136).
// A listening socket's keys are copied to the connections it accepts.
package linuxmd5

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Socket option numbers and struct tcp_md5sig constants from
// include/uapi/linux/tcp.h.
const (
	// TCP_MD5SIG sets a key for one exact peer address.
	TCP_MD5SIG = 14
	// TCP_MD5SIG_EXT sets a key with the flags below.
	TCP_MD5SIG_EXT = 32
	// TCP_MD5SIG_FLAG_PREFIX makes tcpm_prefixlen count: a key for a
	// prefix of peers.
	TCP_MD5SIG_FLAG_PREFIX = 0x1
	// TCP_MD5SIG_FLAG_IFINDEX makes tcpm_ifindex count: a key bound to an
	// L3 master device (VRF).
	TCP_MD5SIG_FLAG_IFINDEX = 0x2
	// MaxKeyLen is TCP_MD5SIG_MAXKEYLEN.
	MaxKeyLen = 80
	// structLen is sizeof(struct tcp_md5sig).
	structLen = 216
)

// ErrNotSupported is returned (wrapped) when the kernel has no TCP-MD5
// (built without CONFIG_TCP_MD5SIG, or MD5 disabled by FIPS mode).
var ErrNotSupported = errors.New("linuxmd5: kernel without TCP-MD5 (CONFIG_TCP_MD5SIG)")

// Key is a TCP-MD5 key as the kernel holds it for one socket.
type Key struct {
	// Peer is the remote address or prefix the key applies to. A prefix
	// of full length is one address.
	Peer netip.Prefix
	// Key is the secret, 1 to MaxKeyLen bytes.
	Key []byte
	// Ifindex, if not zero, restricts the key to peers reached through
	// that L3 master device (a VRF); it forces TCP_MD5SIG_EXT.
	Ifindex int
	// Ext forces TCP_MD5SIG_EXT with TCP_MD5SIG_FLAG_PREFIX even for a
	// single address. Prefixes shorter than an address always use it.
	Ext bool
}

// String describes the key without its secret.
func (k Key) String() string {
	s := fmt.Sprintf("md5 key for %v (%d bytes)", k.Peer, len(k.Key))
	if k.Ifindex != 0 {
		s += fmt.Sprintf(" on ifindex %d", k.Ifindex)
	}
	return s
}

// Marshal returns the struct tcp_md5sig for k and the socket option to
// pass it with (TCP_MD5SIG or TCP_MD5SIG_EXT), for a socket of the peer's
// address family.
func (k Key) Marshal() (opt int, b []byte, err error) {
	return k.marshal(false)
}

// marshal encodes k; for6 encodes an IPv4 peer as an IPv4-mapped IPv6
// address, which is how an AF_INET6 socket (a dual-stack listener) takes
// keys for IPv4 peers.
func (k Key) marshal(for6 bool) (opt int, b []byte, err error) {
	if len(k.Key) == 0 || len(k.Key) > MaxKeyLen {
		return 0, nil, fmt.Errorf("linuxmd5: key length %d, want 1..%d", len(k.Key), MaxKeyLen)
	}
	b, opt, err = marshal(k.Peer, k.Ifindex, k.Ext, for6)
	if err != nil {
		return 0, nil, err
	}
	binary.NativeEndian.PutUint16(b[130:], uint16(len(k.Key)))
	copy(b[136:], k.Key)
	return opt, b, nil
}

func marshal(peer netip.Prefix, ifindex int, ext, for6 bool) ([]byte, int, error) {
	if !peer.IsValid() {
		return nil, 0, errors.New("linuxmd5: invalid peer prefix")
	}
	a := peer.Addr()
	bits := peer.Bits()
	if a.Is4In6() {
		a, bits = a.Unmap(), max(bits-96, 0)
	}
	b := make([]byte, structLen)
	if a.Is4() && for6 {
		// ::ffff:a.b.c.d with the IPv4 prefix length, as
		// tcp_v6_parse_md5_keys expects.
		binary.NativeEndian.PutUint16(b[0:], syscall.AF_INET6)
		a16 := netip.AddrFrom16(a.As16()).As16()
		copy(b[8:24], a16[:])
	} else if a.Is4() {
		binary.NativeEndian.PutUint16(b[0:], syscall.AF_INET)
		a4 := a.As4()
		copy(b[4:8], a4[:]) // sin_addr
	} else {
		binary.NativeEndian.PutUint16(b[0:], syscall.AF_INET6)
		a16 := a.As16()
		copy(b[8:24], a16[:]) // sin6_addr
	}
	opt := TCP_MD5SIG
	if ext || bits != a.BitLen() || ifindex != 0 {
		opt = TCP_MD5SIG_EXT
		b[128] = TCP_MD5SIG_FLAG_PREFIX
		b[129] = uint8(bits)
		if ifindex != 0 {
			b[128] |= TCP_MD5SIG_FLAG_IFINDEX
			binary.NativeEndian.PutUint32(b[132:], uint32(int32(ifindex)))
		}
	}
	return b, opt, nil
}

// Set installs k on the TCP socket fd. On an AF_INET6 socket an IPv4
// peer is passed as an IPv4-mapped address, as the kernel requires.
func Set(fd int, k Key) error {
	domain, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_DOMAIN)
	if err != nil {
		return fmt.Errorf("linuxmd5: SO_DOMAIN: %w", err)
	}
	opt, b, err := k.marshal(domain == syscall.AF_INET6)
	if err != nil {
		return err
	}
	return setsockopt(fd, opt, b, k.String())
}

// Delete removes the key for peer (and ifindex) from the TCP socket fd.
func Delete(fd int, peer netip.Prefix, ifindex int) error {
	domain, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_DOMAIN)
	if err != nil {
		return fmt.Errorf("linuxmd5: SO_DOMAIN: %w", err)
	}
	b, opt, err := marshal(peer, ifindex, false, domain == syscall.AF_INET6)
	if err != nil {
		return err
	}
	return setsockopt(fd, opt, b, "md5 key delete for "+peer.String())
}

func setsockopt(fd, opt int, b []byte, what string) error {
	err := syscall.SetsockoptString(fd, syscall.IPPROTO_TCP, opt, string(b))
	clear(b)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.ENOPROTOOPT):
		return fmt.Errorf("%w: %s: %v", ErrNotSupported, what, err)
	}
	return fmt.Errorf("linuxmd5: %s: %w", what, err)
}

// Control returns a function for net.Dialer.Control or
// net.ListenConfig.Control that installs keys on the socket before it
// connects or listens.
func Control(keys ...Key) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			for _, k := range keys {
				if serr = Set(int(fd), k); serr != nil {
					return
				}
			}
		})
		if err != nil {
			return err
		}
		return serr
	}
}

// Supported reports whether the kernel accepts TCP-MD5 keys: nil, or an
// error wrapping ErrNotSupported, or another error if the probe itself
// failed. It probes in the calling thread's network namespace.
func Supported() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("linuxmd5: socket: %w", err)
	}
	defer syscall.Close(fd)
	return Set(fd, Key{Peer: netip.MustParsePrefix("192.0.2.1/32"), Key: []byte{1}})
}

// Pending reports whether a kernel listener has a connection to accept,
// that is whether the kernel completed a handshake; it does not wait.
// Tests use it to show that the kernel refused a peer. A connection it
// finds is accepted and closed.
func Pending(ln *net.TCPListener) bool {
	rc, err := ln.SyscallConn()
	if err != nil {
		return false
	}
	got := false
	rc.Control(func(fd uintptr) {
		nfd, _, err := syscall.Accept4(int(fd), syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC)
		if err == nil {
			got = true
			syscall.Close(nfd)
		}
	})
	return got
}

// Counters are the kernel's per-network-namespace TCP-MD5 counters
// (TcpExt in /proc/net/netstat).
type Counters struct {
	// Failure counts segments dropped for a wrong signature
	// (TCPMD5Failure).
	Failure uint64
	// NotFound counts unsigned segments dropped from a peer that has a
	// key (TCPMD5NotFound).
	NotFound uint64
	// Unexpected counts signed segments dropped from a peer without a
	// key (TCPMD5Unexpected).
	Unexpected uint64
}

// ReadCounters returns the TCP-MD5 counters of the calling thread's
// network namespace.
func ReadCounters() (Counters, error) {
	m, err := ReadTCPExt()
	if err != nil {
		return Counters{}, err
	}
	return Counters{Failure: m["TCPMD5Failure"], NotFound: m["TCPMD5NotFound"], Unexpected: m["TCPMD5Unexpected"]}, nil
}

// ReadTCPExt returns the TcpExt counters of the calling thread's network
// namespace, read from /proc/thread-self/net/netstat. (/proc/net is the
// process's namespace, which differs from a thread moved elsewhere.)
func ReadTCPExt() (map[string]uint64, error) {
	b, err := os.ReadFile("/proc/thread-self/net/netstat")
	if err != nil {
		return nil, fmt.Errorf("linuxmd5: %w", err)
	}
	return parseNetstat(b, "TcpExt")
}

// parseNetstat parses the header/value line pairs of /proc/net/netstat for
// one section.
func parseNetstat(b []byte, section string) (map[string]uint64, error) {
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != section+":" {
			continue
		}
		if names == nil {
			names = f[1:]
			continue
		}
		if len(f)-1 != len(names) {
			return nil, fmt.Errorf("linuxmd5: %s: %d names, %d values", section, len(names), len(f)-1)
		}
		m := make(map[string]uint64, len(names))
		for i, s := range f[1:] {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("linuxmd5: %s %s: %w", section, names[i], err)
			}
			m[names[i]] = v
		}
		return m, nil
	}
	return nil, fmt.Errorf("linuxmd5: no %s section in netstat", section)
}
