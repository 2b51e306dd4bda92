package linuxmd5

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/internal/harness/netns"
)

func TestMarshalLayout(t *testing.T) {
	for _, tc := range []struct {
		name      string
		k         Key
		opt       int
		family    uint16
		addrOff   int
		addr      []byte
		flags     byte
		prefixlen byte
		ifindex   uint32
	}{
		{"v4 exact", Key{Peer: netip.MustParsePrefix("127.0.0.2/32"), Key: []byte("k")},
			TCP_MD5SIG, syscall.AF_INET, 4, []byte{127, 0, 0, 2}, 0, 0, 0},
		{"v4 prefix", Key{Peer: netip.MustParsePrefix("127.0.0.0/8"), Key: []byte("k")},
			TCP_MD5SIG_EXT, syscall.AF_INET, 4, []byte{127, 0, 0, 0}, TCP_MD5SIG_FLAG_PREFIX, 8, 0},
		{"v4 forced ext", Key{Peer: netip.MustParsePrefix("10.0.0.1/32"), Key: []byte("k"), Ext: true},
			TCP_MD5SIG_EXT, syscall.AF_INET, 4, []byte{10, 0, 0, 1}, TCP_MD5SIG_FLAG_PREFIX, 32, 0},
		{"v4-mapped", Key{Peer: netip.MustParsePrefix("::ffff:10.0.0.0/104"), Key: []byte("k")},
			TCP_MD5SIG_EXT, syscall.AF_INET, 4, []byte{10, 0, 0, 0}, TCP_MD5SIG_FLAG_PREFIX, 8, 0},
		{"v6 ifindex", Key{Peer: netip.MustParsePrefix("2001:db8::1/128"), Key: []byte("k"), Ifindex: 7},
			TCP_MD5SIG_EXT, syscall.AF_INET6, 8, netip.MustParseAddr("2001:db8::1").AsSlice(),
			TCP_MD5SIG_FLAG_PREFIX | TCP_MD5SIG_FLAG_IFINDEX, 128, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opt, b, err := tc.k.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			ne := binary.NativeEndian
			if opt != tc.opt || len(b) != 216 || ne.Uint16(b) != tc.family ||
				!bytes.Equal(b[tc.addrOff:tc.addrOff+len(tc.addr)], tc.addr) ||
				b[128] != tc.flags || b[129] != tc.prefixlen || ne.Uint16(b[130:]) != 1 ||
				ne.Uint32(b[132:]) != tc.ifindex || b[136] != 'k' {
				t.Errorf("opt %d, struct %x", opt, b)
			}
		})
	}
	for _, n := range []int{0, 81} {
		if _, _, err := (Key{Peer: netip.MustParsePrefix("10.0.0.1/32"), Key: make([]byte, n)}).Marshal(); err == nil {
			t.Errorf("key of %d bytes accepted", n)
		}
	}
	if s := (Key{Peer: netip.MustParsePrefix("10.0.0.1/32"), Key: []byte("secret")}).String(); bytes.Contains([]byte(s), []byte("secret")) {
		t.Errorf("String shows the key: %s", s)
	}
}

func TestParseNetstat(t *testing.T) {
	in := "TcpExt: A TCPMD5Failure TCPMD5NotFound\nTcpExt: 1 2 3\nIpExt: X\nIpExt: 9\n"
	m, err := parseNetstat([]byte(in), "TcpExt")
	if err != nil || m["A"] != 1 || m["TCPMD5Failure"] != 2 || m["TCPMD5NotFound"] != 3 {
		t.Errorf("%v %v", m, err)
	}
	for _, bad := range []string{"", "TcpExt: A B\nTcpExt: 1\n", "TcpExt: A\nTcpExt: x\n"} {
		if _, err := parseNetstat([]byte(bad), "TcpExt"); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// inNetns runs f in a fresh network namespace, skipping when the machine
// cannot run the kernel side.
func inNetns(t *testing.T, f func() error) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("not root: the test creates a network namespace")
	}
	if err := Supported(); errors.Is(err, ErrNotSupported) {
		t.Skip("no CONFIG_TCP_MD5SIG: ", err)
	} else if err != nil {
		t.Fatal(err)
	}
	if err := netns.Run(f); err != nil {
		t.Fatal(err)
	}
}

// TestKernelKeys checks the sockopt encoding against the kernel: matching
// keys connect, a wrong key is dropped and counted, a key on one side only
// is counted as unexpected or not found.
func TestKernelKeys(t *testing.T) {
	inNetns(t, func() error {
		good, bad := []byte("good-key"), []byte("bad-key")
		for _, tc := range []struct {
			name      string
			srv, cli  []Key
			ok        bool
			counter   func(before, after Counters) bool
			listen    string
			localAddr string
		}{
			{"v4 prefix listener", []Key{{Peer: netip.MustParsePrefix("127.0.0.0/8"), Key: good}},
				[]Key{{Peer: netip.MustParsePrefix("127.0.0.1/32"), Key: good}}, true, nil, "127.0.0.1:0", "127.0.0.2:0"},
			{"v4 wrong key", []Key{{Peer: netip.MustParsePrefix("127.0.0.2/32"), Key: good}},
				[]Key{{Peer: netip.MustParsePrefix("127.0.0.1/32"), Key: bad}}, false,
				func(b, a Counters) bool { return a.Failure > b.Failure }, "127.0.0.1:0", "127.0.0.2:0"},
			{"v4 client only", nil,
				[]Key{{Peer: netip.MustParsePrefix("127.0.0.1/32"), Key: good}}, false,
				func(b, a Counters) bool { return a.Unexpected > b.Unexpected }, "127.0.0.1:0", "127.0.0.2:0"},
			{"v4 server only", []Key{{Peer: netip.MustParsePrefix("127.0.0.0/8"), Key: good}},
				nil, false,
				func(b, a Counters) bool { return a.NotFound > b.NotFound }, "127.0.0.1:0", "127.0.0.2:0"},
			{"v4 peer of a dual-stack listener", []Key{{Peer: netip.MustParsePrefix("127.0.0.0/8"), Key: good}},
				[]Key{{Peer: netip.MustParsePrefix("127.0.0.1/32"), Key: good}}, true, nil, ":0", "127.0.0.2:0"},
			{"v4 peer of a dual-stack listener, wrong key", []Key{{Peer: netip.MustParsePrefix("127.0.0.2/32"), Key: good}},
				[]Key{{Peer: netip.MustParsePrefix("127.0.0.1/32"), Key: bad}}, false,
				func(b, a Counters) bool { return a.Failure > b.Failure }, ":0", "127.0.0.2:0"},
			{"v6", []Key{{Peer: netip.MustParsePrefix("::1/128"), Key: good, Ext: true}},
				[]Key{{Peer: netip.MustParsePrefix("::1/128"), Key: good}}, true, nil, "[::1]:0", "[::1]:0"},
		} {
			before, err := ReadCounters()
			if err != nil {
				return err
			}
			// A failure must show within the bound; success has a generous one.
			bound := 1500 * time.Millisecond
			if tc.ok {
				bound = 20 * time.Second
			}
			ok, err := tryConnect(tc.listen, tc.localAddr, tc.srv, tc.cli, bound)
			if err != nil {
				return err
			}
			after, err := ReadCounters()
			if err != nil {
				return err
			}
			if ok != tc.ok {
				t.Errorf("%s: connected %v, want %v", tc.name, ok, tc.ok)
			}
			if tc.counter != nil && !tc.counter(before, after) {
				t.Errorf("%s: counters %+v -> %+v", tc.name, before, after)
			}
			if tc.ok && after != before {
				t.Errorf("%s: counters moved %+v -> %+v", tc.name, before, after)
			}
		}
		return nil
	})
}

// tryConnect listens with srv keys, dials with cli keys and exchanges a
// byte; it reports whether that worked within a short bound. It must run
// on the namespace's goroutine.
func tryConnect(listen, local string, srv, cli []Key, bound time.Duration) (bool, error) {
	lc := net.ListenConfig{Control: Control(srv...)}
	ln, err := lc.Listen(context.Background(), "tcp", listen)
	if err != nil {
		return false, err
	}
	defer ln.Close()
	la, err := net.ResolveTCPAddr("tcp", local)
	if err != nil {
		return false, err
	}
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Write([]byte{42})
			c.Close()
		}
	}()
	d := net.Dialer{Control: Control(cli...), LocalAddr: la, Timeout: bound}
	target := ln.Addr().(*net.TCPAddr)
	if target.IP.IsUnspecified() { // a dual-stack listener, reached over IPv4
		target = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: target.Port}
	}
	c, err := d.Dial("tcp", target.String())
	if err != nil {
		return false, nil
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(bound))
	b, err := io.ReadAll(c)
	return err == nil && bytes.Equal(b, []byte{42}), nil
}
