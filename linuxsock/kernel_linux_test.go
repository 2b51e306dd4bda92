//go:build linux

package linuxsock_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/harness/kstat"
	"github.com/tcpsig/tcpsig/harness/netns"
	"github.com/tcpsig/tcpsig/harness/vrfproof"
	"github.com/tcpsig/tcpsig/keys"
	. "github.com/tcpsig/tcpsig/linuxsock"
)

// kernelHasAO reports whether the running kernel knows TCP_AO_ADD_KEY.
func kernelHasAO(t *testing.T) bool {
	t.Helper()
	err := ProbeAO()
	if err != nil && !errors.Is(err, ErrNoAO) {
		t.Fatal(err)
	}
	return err == nil
}

// On a kernel without CONFIG_TCP_AO every TCP-AO call, on a listener, a
// connection and a RawConn alike, and the helpers given TCP-AO keys,
// return an error wrapping ErrNoAO and errors.ErrUnsupported that names
// the option.
func TestAOUnsupported(t *testing.T) {
	if kernelHasAO(t) {
		t.Skip("this kernel has CONFIG_TCP_AO; the calls are proven under qemu (testvectors/linux, linuxsock-* cases)")
	}
	ln, err := ListenConfig(Keys{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := Dialer(Keys{}).Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	key := keys.AO{Peer: netip.MustParsePrefix("127.0.0.1/32"), Algorithm: "hmac(sha256)", SendID: 1, RecvID: 2, Key: []byte("k")}
	calls := map[string]func(s Socket) error{
		"AddAOKey":      func(s Socket) error { return AddAOKey(s, key, Current) },
		"DeleteAOKey":   func(s Socket) error { return DeleteAOKey(s, key, AODelete{}) },
		"AOKeys":        func(s Socket) error { _, err := AOKeys(s); return err },
		"ReadAOInfo":    func(s Socket) error { _, err := ReadAOInfo(s); return err },
		"SelectAOKeys":  func(s Socket) error { return SelectAOKeys(s, Current|RNext, 1, 2) },
		"SetAOFlags":    func(s Socket) error { return SetAOFlags(s, true, false) },
		"SetAOCounters": func(s Socket) error { return SetAOCounters(s, AOCounters{}) },
		"ReadAORepair":  func(s Socket) error { _, err := ReadAORepair(s); return err },
		"SetAORepair":   func(s Socket) error { return SetAORepair(s, AORepair{}) },
		"Install":       func(s Socket) error { return Install(s, Keys{AO: []keys.AO{key}}) },
	}
	socks := map[string]Socket{"listener": ln.(*net.TCPListener), "conn": c.(*net.TCPConn), "raw": Raw(rc)}
	for name, call := range calls {
		for sname, s := range socks {
			err := call(s)
			if !errors.Is(err, ErrNoAO) || !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(fmtErr(err), "CONFIG_TCP_AO") {
				t.Errorf("%s on a %s: %v", name, sname, err)
			}
		}
	}
	_, err = ListenConfig(Keys{AO: []keys.AO{key}}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if !errors.Is(err, ErrNoAO) {
		t.Errorf("ListenConfig with a TCP-AO key: %v", err)
	}
	_, err = Dialer(Keys{AO: []keys.AO{key}}).Dial("tcp", ln.Addr().String())
	if !errors.Is(err, ErrNoAO) {
		t.Errorf("Dialer with a TCP-AO key: %v", err)
	}
	t.Logf("e.g. %v", AddAOKey(ln.(*net.TCPListener), key, 0))

	// Issue 21: a plain net.Listen listener is MPTCP where the kernel has
	// MPTCP; its refusal must still say that TCP-AO is missing (turning
	// MPTCP off would not help), first, and that it is MPTCP too.
	plain, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if p, err := protocol(plain.(*net.TCPListener)); err != nil || p != 262 {
		t.Logf("net.Listen made a listener of protocol %d (%v), not MPTCP: the MPTCP case is not shown here", p, err)
		return
	}
	err = AddAOKey(plain.(*net.TCPListener), key, 0)
	if !errors.Is(err, ErrNoAO) || !errors.Is(err, ErrMPTCP) || !strings.Contains(fmtErr(err), "CONFIG_TCP_AO") ||
		strings.Index(err.Error(), "TCP-AO") > strings.Index(err.Error(), "MPTCP") {
		t.Errorf("AddAOKey on an MPTCP listener of a kernel without TCP-AO: %v, want ErrNoAO first, then ErrMPTCP", err)
	}
	t.Logf("MPTCP listener: %v", err)
}

func fmtErr(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// A nil socket or RawConn is ErrInvalid, never a panic.
func TestNilSockets(t *testing.T) {
	var tc *net.TCPConn
	for _, s := range []Socket{nil, Raw(nil), tc} {
		if err := AddMD5Key(s, keys.MD5{Peer: netip.MustParsePrefix("192.0.2.1/32"), Key: []byte("k")}); err == nil {
			t.Errorf("%T: no error", s)
		}
		if _, err := ReadAOInfo(s); err == nil {
			t.Errorf("%T: no error", s)
		}
	}
}

// skip is returned by a function given to inNetns to skip the test: t.Skip
// must run on the test's goroutine, and netns.Run runs f on another.
type skip string

func (s skip) Error() string { return string(s) }

// inNetns runs f in a fresh network namespace on a kernel with TCP-MD5,
// skipping where the test cannot run the kernel side or f says so. f must
// not call t.Fatal or t.Skip (other goroutine); it reports with t.Errorf
// and its error.
func inNetns(t *testing.T, f func() error) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("not root: the test creates a network namespace")
	}
	if err := ProbeMD5(); errors.Is(err, ErrNoMD5) {
		t.Skip(err)
	} else if err != nil {
		t.Fatal(err)
	}
	err := netns.Run(f)
	var sk skip
	if errors.As(err, &sk) {
		t.Skip(string(sk))
	}
	if err != nil {
		t.Fatal(err)
	}
}

// exchange accepts one connection on ln, which sends a byte; it dials
// ln from local with d and reports whether the byte arrived within
// bound. It must run on the namespace's goroutine.
func exchange(ln net.Listener, d *net.Dialer, local string, bound time.Duration) bool {
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Write([]byte{42})
			c.Close()
		}
	}()
	if local != "" {
		la, err := net.ResolveTCPAddr("tcp", local)
		if err != nil {
			return false
		}
		d.LocalAddr = la
	}
	d.Timeout = bound
	target := ln.Addr().(*net.TCPAddr)
	if target.IP.IsUnspecified() { // a dual-stack listener, reached over IPv4
		target = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: target.Port}
	}
	c, err := d.Dial("tcp", target.String())
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(bound))
	b, err := io.ReadAll(c)
	return err == nil && bytes.Equal(b, []byte{42})
}

// protocol returns SO_PROTOCOL of s: 6 for TCP, 262 for MPTCP.
func protocol(s Socket) (int, error) {
	rc, err := s.SyscallConn()
	if err != nil {
		return 0, err
	}
	var p int
	var perr error
	if err := rc.Control(func(fd uintptr) { p, perr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, 38 /* SO_PROTOCOL */) }); err != nil {
		return 0, err
	}
	return p, perr
}

// A failure must show within the bound; success has a generous one.
const (
	refusedBound = 1500 * time.Millisecond
	okBound      = 20 * time.Second
)

// TCP-MD5 through the package on the running kernel: a listener made by
// ListenConfig with a prefix key accepts a client whose Dialer holds its
// one address's key, over IPv4, IPv6 and to a dual-stack listener; a
// wrong key is dropped and counted (TCPMD5Failure); a deleted key is
// gone (TCPMD5Unexpected).
func TestMD5Kernel(t *testing.T) {
	inNetns(t, func() error {
		good, bad := []byte("good-key"), []byte("bad-key")
		k := func(p string, key []byte) keys.MD5 {
			return keys.MD5{Peer: netip.MustParsePrefix(p), Key: key}
		}
		for _, tc := range []struct {
			name          string
			listen, local string
			srv, cli      keys.MD5
			ok            bool
			moved         func(b, a kstat.MD5) bool
		}{
			{"v4 prefix listener", "127.0.0.1:0", "127.0.0.2:0", k("127.0.0.0/8", good), k("127.0.0.1/32", good), true, nil},
			{"v4 wrong key", "127.0.0.1:0", "127.0.0.2:0", k("127.0.0.0/8", good), k("127.0.0.1/32", bad), false,
				func(b, a kstat.MD5) bool { return a.Failure > b.Failure }},
			{"v4 peer of a dual-stack listener", ":0", "127.0.0.2:0", k("127.0.0.0/8", good), k("127.0.0.1/32", good), true, nil},
			{"v4 peer of a dual-stack listener, wrong key", ":0", "127.0.0.2:0", k("127.0.0.2/32", good), k("127.0.0.1/32", bad), false,
				func(b, a kstat.MD5) bool { return a.Failure > b.Failure }},
			{"v6 prefix", "[::1]:0", "[::1]:0", k("::/64", good), k("::1/128", good), true, nil},
		} {
			before, err := kstat.ReadMD5()
			if err != nil {
				return err
			}
			ln, err := ListenConfig(Keys{MD5: []keys.MD5{tc.srv}}).Listen(context.Background(), "tcp", tc.listen)
			if err != nil {
				return err
			}
			if p, err := protocol(ln.(*net.TCPListener)); err != nil || p != syscall.IPPROTO_TCP {
				t.Errorf("%s: ListenConfig made a listener of protocol %d", tc.name, p)
			}
			bound := refusedBound
			if tc.ok {
				bound = okBound
			}
			ok := exchange(ln, Dialer(Keys{MD5: []keys.MD5{tc.cli}}), tc.local, bound)
			ln.Close()
			after, err := kstat.ReadMD5()
			if err != nil {
				return err
			}
			if ok != tc.ok {
				t.Errorf("%s: connected %v, want %v", tc.name, ok, tc.ok)
			}
			if tc.moved != nil && !tc.moved(before, after) {
				t.Errorf("%s: counters %+v -> %+v", tc.name, before, after)
			}
			if tc.ok && after != before {
				t.Errorf("%s: counters moved %+v -> %+v", tc.name, before, after)
			}
		}

		// Delete: the listener's key goes, so the client's signed SYN is
		// unexpected.
		srv := k("127.0.0.0/8", good)
		ln, err := ListenConfig(Keys{MD5: []keys.MD5{srv}}).Listen(context.Background(), "tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer ln.Close()
		if err := DeleteMD5Key(ln.(*net.TCPListener), srv); err != nil {
			return err
		}
		before, _ := kstat.ReadMD5()
		if exchange(ln, Dialer(Keys{MD5: []keys.MD5{k("127.0.0.1/32", good)}}), "127.0.0.2:0", refusedBound) {
			t.Error("connected after the listener's key was deleted")
		}
		if after, _ := kstat.ReadMD5(); after.Unexpected <= before.Unexpected {
			t.Errorf("deleted key: TCPMD5Unexpected %d -> %d", before.Unexpected, after.Unexpected)
		}
		return nil
	})
}

// An ifindex-scoped TCP-MD5 key (TCP_MD5SIG_FLAG_IFINDEX). Bound to the
// default L3 domain (ifindex 0) it serves connections over lo; bound to
// lo, which is not an L3 master device, the kernel refuses it with
// EINVAL. A key bound to a VRF needs CONFIG_NET_VRF: where the kernel has
// it, this test runs that case too; where it has not, the qemu guest's
// linuxsock-md5-vrf case does.
func TestMD5IfIndex(t *testing.T) {
	inNetns(t, func() error {
		key := []byte("scoped-key")
		scoped := keys.MD5{Peer: netip.MustParsePrefix("127.0.0.0/8"), Key: key, HasIfIndex: true}
		ln, err := ListenConfig(Keys{MD5: []keys.MD5{scoped}}).Listen(context.Background(), "tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer ln.Close()
		cli := Dialer(Keys{MD5: []keys.MD5{{Peer: netip.MustParsePrefix("127.0.0.1/32"), Key: key}}})
		if !exchange(ln, cli, "127.0.0.2:0", okBound) {
			t.Error("a key bound to the default L3 domain did not serve lo")
		}
		lo, err := net.InterfaceByName("lo")
		if err != nil {
			return err
		}
		err = AddMD5Key(ln.(*net.TCPListener), keys.MD5{Peer: netip.MustParsePrefix("127.0.0.0/8"), Key: key, HasIfIndex: true, IfIndex: lo.Index})
		if !errors.Is(err, syscall.EINVAL) {
			t.Errorf("a key bound to lo (not an L3 master): %v, want EINVAL", err)
		}
		t.Logf("bound to lo: %v", err)
		err = vrfproof.Run(t.Logf)
		if errors.Is(err, syscall.EOPNOTSUPP) {
			t.Logf("this kernel has no CONFIG_NET_VRF (%v): the VRF-bound key is proven under qemu (linuxsock-md5-vrf)", err)
			return nil
		}
		return err
	})
}

// Why ListenConfig turns MPTCP off: a plain Go listener (net.Listen; Go
// 1.24+ makes listeners Multipath TCP where the kernel has it) refuses a
// TCP-MD5 key (ErrMPTCP, not ErrNoMD5, although the kernel answers
// ENOPROTOOPT to both), so a client signing with the key is not served:
// its SYNs are dropped as unexpected (TCPMD5Unexpected). The same key
// added after listen() to a ListenConfig listener works.
func TestMPTCPListener(t *testing.T) {
	inNetns(t, func() error {
		key := keys.MD5{Peer: netip.MustParsePrefix("127.0.0.0/8"), Key: []byte("late-key")}
		cli := keys.MD5{Peer: netip.MustParsePrefix("127.0.0.1/32"), Key: []byte("late-key")}

		plain, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer plain.Close()
		if p, err := protocol(plain.(*net.TCPListener)); err != nil {
			return err
		} else if p != 262 {
			return skip(fmt.Sprintf("net.Listen made a listener of protocol %d, not MPTCP (262): kernel without CONFIG_MPTCP or net.mptcp.enabled=0", p))
		}
		err = AddMD5Key(plain.(*net.TCPListener), key)
		if !errors.Is(err, ErrMPTCP) || !errors.Is(err, errors.ErrUnsupported) || errors.Is(err, ErrNoMD5) {
			t.Errorf("TCP-MD5 key on an MPTCP listener: %v, want ErrMPTCP", err)
		}
		t.Logf("plain Go listener (MPTCP): %v", err)
		before, _ := kstat.ReadMD5()
		if exchange(plain, Dialer(Keys{MD5: []keys.MD5{cli}}), "127.0.0.2:0", refusedBound) {
			t.Error("a signed client was served by the MPTCP listener")
		}
		after, _ := kstat.ReadMD5()
		if after.Unexpected <= before.Unexpected {
			t.Errorf("MPTCP listener: TCPMD5Unexpected %d -> %d", before.Unexpected, after.Unexpected)
		}

		ln, err := ListenConfig(Keys{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer ln.Close()
		if p, err := protocol(ln.(*net.TCPListener)); err != nil || p != syscall.IPPROTO_TCP {
			t.Errorf("ListenConfig listener of protocol %d", p)
		}
		if err := AddMD5Key(ln.(*net.TCPListener), key); err != nil {
			t.Errorf("TCP-MD5 key after listen(): %v", err)
		}
		before, _ = kstat.ReadMD5()
		if !exchange(ln, Dialer(Keys{MD5: []keys.MD5{cli}}), "127.0.0.2:0", okBound) {
			t.Error("the ListenConfig listener did not serve the signed client")
		}
		if after, _ := kstat.ReadMD5(); after != before {
			t.Errorf("ListenConfig listener: counters moved %+v -> %+v", before, after)
		}
		return nil
	})
}

// Example_tcpAO on a kernel with TCP-AO (the qemu guest runs this test
// binary under Linux 6.12): a listener and a dialer from one keys file
// exchange data over TCP-AO, and the dialer reads its key and counters.
func TestExampleTCPAO(t *testing.T) {
	if err := ProbeAO(); err != nil {
		t.Skip(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	func() {
		defer func() { os.Stdout = stdout }()
		Example_tcpAO()
	}()
	w.Close()
	out, _ := io.ReadAll(r)
	if !regexp.MustCompile(`^hello over TCP-AO: key 1, [1-9][0-9]* segments verified\n$`).Match(out) {
		t.Errorf("Example_tcpAO printed %q", out)
	}
	t.Logf("Example_tcpAO printed: %s", out)
}

// The helpers give a socket only the keys it can hold: an IPv4 listener
// skips IPv6 peers (the kernel refuses them on an AF_INET socket, as
// Install shows), an IPv6 listener takes both, and a Dialer only the
// dialled peer's. Setting TCP-MD5 keys needs no privilege.
func TestHelperKeySelection(t *testing.T) {
	if err := ProbeMD5(); errors.Is(err, ErrNoMD5) {
		t.Skip(err)
	}
	keys := Keys{MD5: []keys.MD5{
		{Peer: netip.MustParsePrefix("192.0.2.0/24"), Key: []byte("v4")},
		{Peer: netip.MustParsePrefix("2001:db8::/32"), Key: []byte("v6")},
	}}
	ln4, err := ListenConfig(keys).Listen(context.Background(), "tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("IPv4 listener with an IPv6 key in Keys: %v", err)
	}
	defer ln4.Close()
	if err := Install(ln4.(*net.TCPListener), keys); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Install of an IPv6 key on an IPv4 socket: %v, want EINVAL", err)
	}
	ln6, err := ListenConfig(keys).Listen(context.Background(), "tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	defer ln6.Close()
	// The Dialer leaves out the keys of other peers, the IPv6 one among
	// them, which the AF_INET socket would refuse.
	d := Dialer(keys)
	d.Timeout = okBound
	c, err := d.Dial("tcp4", ln4.Addr().String())
	if err != nil {
		t.Fatalf("a Dialer holding other peers' keys: %v", err)
	}
	c.Close()
}

// The kernel's refusals come back as its errno, and AOKeys reads back
// what AddAOKey packed (the qemu guest runs this under Linux 6.12).
func TestAOKernelErrors(t *testing.T) {
	if err := ProbeAO(); err != nil {
		t.Skip(err)
	}
	listen := func(addr string) *net.TCPListener {
		ln, err := ListenConfig(Keys{}).Listen(context.Background(), "tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		return ln.(*net.TCPListener)
	}
	ln := listen("127.0.0.1:0")
	if _, err := ReadAOInfo(ln); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("TCP_AO_INFO before any key: %v, want ENOENT", err)
	}
	k := keys.AO{Peer: netip.MustParsePrefix("192.0.2.0/24"), Algorithm: "HMAC-SHA-1-96", SendID: 100, RecvID: 200,
		Key: bytes.Repeat([]byte{7}, 80), ExcludeOptions: true}
	if err := AddAOKey(ln, k, 0); err != nil {
		t.Fatal(err)
	}
	ks, err := AOKeys(ln)
	if err != nil || len(ks) != 1 {
		t.Fatalf("%v %v", ks, err)
	}
	if g := ks[0]; g.Peer != k.Peer || g.Algorithm != "hmac(sha1)" || g.SendID != 100 || g.RecvID != 200 || g.MACLen != 12 ||
		!g.ExcludeOptions || g.HasIfIndex || !bytes.Equal(g.Key, k.Key) {
		t.Errorf("read back %v (%d key bytes)", g, len(g.Key))
	}
	// A second key: the kernel strides the list by one struct
	// (tcp_ao_copy_mkts_to_user), and each entry reads back whole.
	k2 := keys.AO{Peer: netip.MustParsePrefix("198.51.100.64/26"), Algorithm: "hmac(sha256)", SendID: 101, RecvID: 201,
		Key: []byte("second key"), MACLen: 16}
	if err := AddAOKey(ln, k2, 0); err != nil {
		t.Fatal(err)
	}
	if ks, err = AOKeys(ln); err != nil || len(ks) != 2 {
		t.Fatalf("two keys: %v %v", ks, err)
	}
	for _, want := range []keys.AO{k, k2} {
		found := false
		for _, g := range ks {
			if g.SendID == want.SendID {
				found = g.Peer == want.Peer && g.RecvID == want.RecvID && bytes.Equal(g.Key, want.Key)
			}
		}
		if !found {
			t.Errorf("key %d/%d not read back whole among %v", want.SendID, want.RecvID, ks)
		}
	}
	if err := DeleteAOKey(ln, k2, AODelete{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		err   error
		errno syscall.Errno
		alg   bool // the algorithm is the kernel's to refuse: ErrAlgorithmUnavailable, naming it
	}{
		{"overlapping KeyIDs", AddAOKey(ln, keys.AO{Peer: netip.MustParsePrefix("192.0.2.1/32"), Algorithm: "hmac(sha1)", SendID: 100, RecvID: 9, Key: []byte("k")}, 0), syscall.EEXIST, false},
		{"maclen 17", AddAOKey(ln, keys.AO{Peer: netip.MustParsePrefix("198.51.100.1/32"), Algorithm: "hmac(sha256)", SendID: 1, RecvID: 1, MACLen: 17, Key: []byte("k")}, 0), syscall.EMSGSIZE, false},
		{"unknown algorithm", AddAOKey(ln, keys.AO{Peer: netip.MustParsePrefix("198.51.100.2/32"), Algorithm: "hmac(nosuchhash)", SendID: 2, RecvID: 2, Key: []byte("k")}, 0), syscall.ENOENT, true},
		{"current key on a listener", AddAOKey(ln, keys.AO{Peer: netip.MustParsePrefix("198.51.100.3/32"), Algorithm: "hmac(sha1)", SendID: 3, RecvID: 3, Key: []byte("k")}, Current), syscall.EINVAL, false},
		{"delete a missing key", DeleteAOKey(ln, keys.AO{Peer: netip.MustParsePrefix("198.51.100.4/32"), SendID: 4, RecvID: 4}, AODelete{}), syscall.ENOENT, false},
		{"repair state outside repair mode", SetAORepair(ln, AORepair{}), syscall.EPERM, false},
		{"TCP-AO next to TCP-MD5", func() error {
			m := keys.MD5{Peer: netip.MustParsePrefix("198.51.100.5/32"), Key: []byte("k")}
			if err := AddMD5Key(ln, m); err != nil {
				return err
			}
			return AddAOKey(ln, keys.AO{Peer: m.Peer, Algorithm: "hmac(sha1)", SendID: 5, RecvID: 5, Key: []byte("k")}, 0)
		}(), syscall.EKEYREJECTED, false},
	} {
		if !errors.Is(tc.err, tc.errno) || errors.Is(tc.err, errors.ErrUnsupported) != tc.alg ||
			errors.Is(tc.err, ErrAlgorithmUnavailable) != tc.alg || (tc.alg && !strings.Contains(tc.err.Error(), "hmac(nosuchhash)")) {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.errno)
		}
	}
	if err := DeleteAOKey(ln, k, AODelete{Async: true}); err != nil {
		t.Errorf("async delete on a listener: %v", err)
	}

	// An IPv6 socket takes an IPv4 peer as IPv4-mapped, and reports it
	// as IPv4.
	ln6, err := ListenConfig(Keys{}).Listen(context.Background(), "tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	defer ln6.Close()
	if err := AddAOKey(ln6.(*net.TCPListener), k, 0); err != nil {
		t.Fatal(err)
	}
	if ks, err := AOKeys(ln6.(*net.TCPListener)); err != nil || len(ks) != 1 || ks[0].Peer != k.Peer {
		t.Errorf("IPv4 key on an IPv6 socket: %v %v", ks, err)
	}
}

// Deleting a connection's current and RNext key: refused (EBUSY) alone,
// done when the same call chooses replacements; the connection then
// carries data on them (the qemu guest runs this under Linux 6.12).
func TestAODeleteCurrent(t *testing.T) {
	if err := ProbeAO(); err != nil {
		t.Skip(err)
	}
	mkt := func(peer string, snd, rcv uint8, key string) keys.AO {
		return keys.AO{Peer: netip.MustParsePrefix(peer), Algorithm: "hmac(sha256)", SendID: snd, RecvID: rcv, Key: []byte(key)}
	}
	// B first, A last: A is where the connection starts.
	keys := Keys{AO: []keys.AO{
		mkt("127.0.0.1/32", 11, 21, "B"), mkt("127.0.0.2/32", 21, 11, "B"),
		mkt("127.0.0.1/32", 10, 20, "A"), mkt("127.0.0.2/32", 20, 10, "A"),
	}}
	ln, err := ListenConfig(keys).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		done <- b
	}()
	d := Dialer(keys)
	d.LocalAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}
	c, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	tc := c.(*net.TCPConn)
	defer tc.Close()
	if i, err := ReadAOInfo(tc); err != nil || i.Current != 10 || i.RNext != 20 {
		t.Fatalf("start: %+v %v, want current 10, RNext 20", i, err)
	}
	a := keys.AO[2]
	if err := DeleteAOKey(tc, a, AODelete{}); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("deleting the current key alone: %v, want EBUSY", err)
	}
	if err := DeleteAOKey(tc, a, AODelete{SetCurrent: true, Current: 11, SetRNext: true, RNext: 21}); err != nil {
		t.Fatal(err)
	}
	if _, err := tc.Write([]byte("after the delete")); err != nil {
		t.Fatal(err)
	}
	i, err := ReadAOInfo(tc)
	ks, kerr := AOKeys(tc)
	if err != nil || kerr != nil || i.Current != 11 || i.RNext != 21 || len(ks) != 1 || ks[0].SendID != 11 {
		t.Errorf("after the delete: %+v %v, keys %v %v", i, err, ks, kerr)
	}
	tc.CloseWrite()
	if b := <-done; string(b) != "after the delete" {
		t.Errorf("the server read %q", b)
	}
}
