package md5

// The generator of this package's fixtures. As root on a kernel with
// CONFIG_TCP_MD5SIG, TestKernelCaptures opens TCP-MD5 connections inside a
// fresh network namespace, captures them on lo and checks every segment
// with the independent computation in check_test.go; with -update it also
// rewrites the pcap files and manifest.json:
//
//	go test ./testvectors/md5 -run TestKernelCaptures -update

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/harness/capture"
	"github.com/tcpsig/tcpsig/harness/kstat"
	"github.com/tcpsig/tcpsig/harness/netns"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/linuxsock"
)

var update = flag.Bool("update", false, "rewrite the pcap files and manifest.json from the running kernel (needs root)")

// Payload sizes written by the client, then echoed by the server. With an
// MSS of 1468 and the 20-byte MD5 option, a full segment carries 1448
// bytes, so 1448 fills one segment and 4000 spans three.
var sizes = []int{1, 100, 1000, 1448, 4000}

const (
	port = 179  // BGP's port, the classic TCP-MD5 user
	mss  = 1468 // TCP_MAXSEG on both ends: 1468 - 20 (MD5 option) = 1448 payload
)

type closeKind int

const (
	closeFIN       closeKind = iota // both ends close normally
	closeClientRST                  // the client closes with SO_LINGER {1, 0}
	closeServerRST                  // the server closes with SO_LINGER {1, 0}
)

// endpoint is one connection of a scenario.
type endpoint struct {
	client, server netip.Addr
	clientKey      keys.MD5
	close          closeKind
}

type scenario struct {
	name       string
	listen     netip.Addr // the listener's address (possibly unspecified)
	serverKeys []keys.MD5
	conns      []endpoint
	notes      string
	// keys are the manifest's spellings of the keys, by secret.
	spell map[string]string
}

func addr(s string) netip.Addr     { return netip.MustParseAddr(s) }
func prefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }
func host(a netip.Addr) netip.Prefix {
	return netip.PrefixFrom(a, a.BitLen())
}

func key80() []byte {
	k := make([]byte, 80)
	for i := range k {
		k[i] = byte(i*37 + 11)
	}
	k[40] = 0 // a NUL inside: the key is bytes, not a C string
	return k
}

// scenarios returns the captures to make. Single connections: the client
// at .2 keys its one server (TCP_MD5SIG), the listener keys a prefix of
// peers (TCP_MD5SIG_EXT, TCP_MD5SIG_FLAG_PREFIX). Two peers: one listener
// on the wildcard address with a key per client plus a decoy key for the
// rest of the prefix, so only a longest-prefix match finds the right key;
// the clients reach it at different server addresses so that the keys of
// the whole capture can be told apart by address alone.
func scenarios() []scenario {
	var out []scenario
	typical := []byte("bgp-secret-42")
	one := []byte{0xa5}
	long := key80()
	peerA, peerB, decoy := []byte("peer-two-secret"), []byte("peer-three-secret"), []byte("decoy-for-the-rest-of-the-prefix")
	spell := map[string]string{
		string(typical): "text:bgp-secret-42",
		string(one):     "hex:a5",
		string(long):    "hex:" + hex.EncodeToString(long),
		string(peerA):   "text:peer-two-secret",
		string(peerB):   "text:peer-three-secret",
		string(decoy):   "text:decoy-for-the-rest-of-the-prefix",
	}
	for _, fam := range []struct {
		v                  string
		srv, cli, cli2, s2 netip.Addr
		net                netip.Prefix
		any                netip.Addr
	}{
		{"v4", addr("127.0.0.1"), addr("127.0.0.2"), addr("127.0.0.3"), addr("127.0.0.4"), prefix("127.0.0.0/8"), addr("0.0.0.0")},
		{"v6", addr("2001:db8::1"), addr("2001:db8::2"), addr("2001:db8::3"), addr("2001:db8::4"), prefix("2001:db8::/64"), addr("::")},
	} {
		single := func(name string, k []byte, ck closeKind, what string) scenario {
			return scenario{
				name:       fam.v + "-" + name,
				listen:     fam.srv,
				serverKeys: []keys.MD5{{Peer: fam.net, Key: k}},
				conns:      []endpoint{{client: fam.cli, server: fam.srv, clientKey: keys.MD5{Peer: host(fam.srv), Key: k}, close: ck}},
				notes: fmt.Sprintf("%s; one connection %v -> %v:%d, %s; listener key TCP_MD5SIG_EXT prefix %v, client key TCP_MD5SIG %v; "+
					"client writes %v bytes in turn, server echoes each; MSS %d, so 1448-byte segments are full; TCP_NODELAY; %s",
					what, fam.cli, fam.srv, port, fam.v, fam.net, fam.srv, sizes, mss, closeNote(ck)),
				spell: spell,
			}
		}
		out = append(out,
			single("key1", one, closeFIN, "1-byte key"),
			single("typical", typical, closeFIN, "typical text key"),
			single("key80", long, closeClientRST, "80-byte key (TCP_MD5SIG_MAXKEYLEN)"),
			scenario{
				name:   fam.v + "-two-peers",
				listen: fam.any,
				serverKeys: []keys.MD5{
					{Peer: fam.net, Key: decoy},
					{Peer: host(fam.cli), Key: peerA},
					{Peer: host(fam.cli2), Key: peerB},
				},
				conns: []endpoint{
					{client: fam.cli, server: fam.srv, clientKey: keys.MD5{Peer: host(fam.srv), Key: peerA}, close: closeFIN},
					{client: fam.cli2, server: fam.s2, clientKey: keys.MD5{Peer: host(fam.s2), Key: peerB}, close: closeServerRST},
				},
				notes: fmt.Sprintf("two concurrent connections, different keys, one listener on %v with per-peer keys "+
					"(TCP_MD5SIG_EXT %v and %v) and a decoy key for %v that only a longest-prefix match avoids; "+
					"%v -> %v (key peer-two-secret, %s) and %v -> %v (key peer-three-secret, %s); "+
					"each client writes %v bytes in turn, the server echoes each; MSS %d",
					netip.AddrPortFrom(fam.any, port), host(fam.cli), host(fam.cli2), fam.net,
					fam.cli, fam.srv, closeNote(closeFIN), fam.cli2, fam.s2, closeNote(closeServerRST), sizes, mss),
				spell: spell,
			},
		)
	}
	return out
}

func closeNote(c closeKind) string {
	switch c {
	case closeClientRST:
		return "closed by the client with SO_LINGER {1, 0}: an MD5-signed RST"
	case closeServerRST:
		return "closed by the server with SO_LINGER {1, 0}: an MD5-signed RST"
	}
	return "closed with FIN by both ends"
}

// manifestKeys lists every key configured on any endpoint in the keys-file
// shape (a received segment is judged with the receiver's key for the
// sender, so each entry's peer is the address it signs towards).
func (s scenario) manifestKeys() []Key {
	var ks []Key
	seen := map[Key]bool{}
	add := func(k keys.MD5) {
		e := Key{Peer: k.Peer.String(), Key: s.spell[string(k.Key)]}
		if !seen[e] {
			seen[e] = true
			ks = append(ks, e)
		}
	}
	for _, k := range s.serverKeys {
		add(k)
	}
	for _, c := range s.conns {
		add(c.clientKey)
	}
	return ks
}

func (s scenario) refKeys() []refKey {
	var ks []refKey
	for _, k := range s.serverKeys {
		ks = append(ks, refKey{k.Peer, k.Key})
	}
	for _, c := range s.conns {
		ks = append(ks, refKey{c.clientKey.Peer, c.clientKey.Key})
	}
	return ks
}

func payload(n, salt int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + n + salt)
	}
	return b
}

func setMSS(network, address string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_MAXSEG, mss)
	})
	return errors.Join(err, serr)
}

func both(fs ...func(string, string, syscall.RawConn) error) func(string, string, syscall.RawConn) error {
	return func(n, a string, c syscall.RawConn) error {
		for _, f := range fs {
			if err := f(n, a, c); err != nil {
				return err
			}
		}
		return nil
	}
}

// run makes one scenario's connections and returns the captured packets.
// It must run on the namespace's goroutine: the sockets and the packet
// socket are created here.
func (s scenario) run() (capture.LinkType, []capture.Packet, error) {
	c, err := capture.Start(capture.Options{Interface: "lo", Filter: capture.TCPPorts(port)})
	if err != nil {
		return 0, nil, err
	}
	defer c.Stop()
	lc := net.ListenConfig{Control: both(linuxsock.Control(linuxsock.Keys{MD5: s.serverKeys}), setMSS), KeepAlive: -1}
	network := "tcp6"
	if s.listen.Is4() {
		network = "tcp4" // an AF_INET socket, even on 0.0.0.0
	}
	ln, err := lc.Listen(context.Background(), network, netip.AddrPortFrom(s.listen, port).String())
	if err != nil {
		return 0, nil, err
	}
	defer ln.Close()

	// Dial every connection here, on this goroutine (so in this
	// namespace), then run the exchanges concurrently.
	clients := make([]*net.TCPConn, len(s.conns))
	for i, e := range s.conns {
		d := net.Dialer{
			LocalAddr: &net.TCPAddr{IP: e.client.AsSlice()},
			Control:   both(linuxsock.Control(linuxsock.Keys{MD5: []keys.MD5{e.clientKey}}), setMSS),
			KeepAlive: -1,
			Timeout:   10 * time.Second,
		}
		cc, err := d.Dial("tcp", netip.AddrPortFrom(e.server, port).String())
		if err != nil {
			return 0, nil, fmt.Errorf("dial %v: %w", e.client, err)
		}
		defer cc.Close()
		clients[i] = cc.(*net.TCPConn)
	}
	servers := map[netip.Addr]*net.TCPConn{}
	for range s.conns {
		sc, err := ln.Accept()
		if err != nil {
			return 0, nil, err
		}
		defer sc.Close()
		servers[sc.RemoteAddr().(*net.TCPAddr).AddrPort().Addr().Unmap()] = sc.(*net.TCPConn)
	}

	var wg sync.WaitGroup
	errs := make([]error, 2*len(s.conns))
	for i, e := range s.conns {
		srv := servers[e.client]
		if srv == nil {
			return 0, nil, fmt.Errorf("no accepted connection from %v", e.client)
		}
		wg.Add(2)
		go func() { defer wg.Done(); errs[2*i] = clientSide(clients[i], e.close, i) }()
		go func() { defer wg.Done(); errs[2*i+1] = serverSide(srv, e.close) }()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, nil, err
	}
	if !c.WaitIdle(300*time.Millisecond, 20*time.Second) {
		return 0, nil, errors.New("traffic did not settle")
	}
	if err := c.Stop(); err != nil {
		return 0, nil, err
	}
	return c.LinkType(), c.Packets(), nil
}

func clientSide(c *net.TCPConn, ck closeKind, salt int) error {
	c.SetDeadline(time.Now().Add(30 * time.Second))
	for _, n := range sizes {
		out := payload(n, salt)
		if _, err := c.Write(out); err != nil {
			return err
		}
		in := make([]byte, n)
		if _, err := io.ReadFull(c, in); err != nil {
			return fmt.Errorf("client read %d: %w", n, err)
		}
		if !bytes.Equal(in, out) {
			return fmt.Errorf("echo of %d bytes differs", n)
		}
	}
	switch ck {
	case closeClientRST:
		c.SetLinger(0)
		return c.Close()
	case closeServerRST:
		// Wait for the server's RST.
		_, err := c.Read(make([]byte, 1))
		if !errors.Is(err, syscall.ECONNRESET) {
			return fmt.Errorf("client: want a reset, got %v", err)
		}
		return c.Close()
	}
	if err := c.Close(); err != nil {
		return err
	}
	return nil
}

func serverSide(c *net.TCPConn, ck closeKind) error {
	c.SetDeadline(time.Now().Add(30 * time.Second))
	for _, n := range sizes {
		in := make([]byte, n)
		if _, err := io.ReadFull(c, in); err != nil {
			return fmt.Errorf("server read %d: %w", n, err)
		}
		if _, err := c.Write(in); err != nil {
			return err
		}
	}
	switch ck {
	case closeServerRST:
		c.SetLinger(0)
		return c.Close()
	case closeClientRST:
		_, err := c.Read(make([]byte, 1))
		if !errors.Is(err, syscall.ECONNRESET) {
			return fmt.Errorf("server: want a reset, got %v", err)
		}
		return c.Close()
	}
	// Normal close: wait for the client's FIN, then close.
	if n, err := c.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		return fmt.Errorf("server: want EOF, got %d, %v", n, err)
	}
	return c.Close()
}

// check verifies every packet of a capture with the reference computation
// and, for each signed one, that corrupted copies fail where the signature
// covers the change and pass where it does not.
func check(t *testing.T, name string, lt capture.LinkType, pkts []capture.Packet, keys []refKey) (signed int) {
	t.Helper()
	for i, p := range pkts {
		ip := lt.IP(p.Data)
		ok, err := verifyIP(ip, keys)
		if err != nil {
			t.Errorf("%s frame %d: %v", name, i+1, err)
			continue
		}
		if !ok {
			continue
		}
		signed++
		covered, uncovered := corruptions(ip)
		for what, bad := range covered {
			if _, err := verifyIP(bad, keys); err == nil {
				t.Errorf("%s frame %d: changed %s still verifies", name, i+1, what)
			}
		}
		for what, c := range uncovered {
			if _, err := verifyIP(c, keys); err != nil {
				t.Errorf("%s frame %d: changed %s (not covered) fails: %v", name, i+1, what, err)
			}
		}
	}
	return signed
}

// summary counts what a capture shows, for the test's log and the notes.
type summary struct{ syn, synack, fin, rst, data, bytes int }

func summarize(lt capture.LinkType, pkts []capture.Packet) summary {
	var s summary
	for _, p := range pkts {
		seg, err := parseSegment(lt.IP(p.Data))
		if err != nil {
			continue
		}
		f := seg.tcp[13]
		switch {
		case f&0x12 == 0x02:
			s.syn++
		case f&0x12 == 0x12:
			s.synack++
		}
		if f&0x01 != 0 {
			s.fin++
		}
		if f&0x04 != 0 {
			s.rst++
		}
		if n := len(seg.tcp) - int(seg.tcp[12]>>4)*4; n > 0 {
			s.data++
			s.bytes += n
		}
	}
	return s
}

func TestKernelCaptures(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: the kernel captures need a network namespace and AF_PACKET")
	}
	if err := linuxsock.ProbeMD5(); errors.Is(err, linuxsock.ErrNoMD5) {
		t.Skip("no CONFIG_TCP_MD5SIG: ", err)
	} else if err != nil {
		t.Fatal(err)
	}
	var uts syscall.Utsname
	if err := syscall.Uname(&uts); err != nil {
		t.Fatal(err)
	}
	m := Manifest{Kernel: utsString(uts.Release[:])}

	err := netns.Run(func() error {
		for _, a := range []string{"2001:db8::1/128", "2001:db8::2/128", "2001:db8::3/128", "2001:db8::4/128"} {
			if err := netns.AddAddr("lo", prefix(a)); err != nil {
				return err
			}
		}
		before, err := kstat.ReadMD5()
		if err != nil {
			return err
		}
		for _, s := range scenarios() {
			lt, pkts, err := s.run()
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			signed := check(t, s.name, lt, pkts, s.refKeys())
			sum := summarize(lt, pkts)
			t.Logf("%s: %d packets, %d signed, %+v", s.name, len(pkts), signed, sum)
			if signed != len(pkts) {
				t.Errorf("%s: %d of %d packets signed, want all", s.name, signed, len(pkts))
			}
			// A fixture should show each segment once; a retransmission
			// (the kernel's RTO under heavy load) spoils one, but is no
			// error of the kernel or of the checker.
			shapeErr := t.Logf
			if *update {
				shapeErr = t.Errorf
			}
			if sum.syn != len(s.conns) || sum.synack != len(s.conns) || (sum.rst > 0) != hasRST(s) {
				shapeErr("%s: %+v does not show the expected handshakes/resets", s.name, sum)
			}
			if want := 2 * sum0(sizes) * len(s.conns); sum.bytes != want {
				shapeErr("%s: %d payload bytes on the wire, want %d (a retransmission?)", s.name, sum.bytes, want)
			}
			file := s.name + ".pcap"
			m.Captures = append(m.Captures, Capture{
				Name: s.name, File: file, Keys: KeysFile{MD5: s.manifestKeys()},
				Packets: len(pkts), MD5Signed: signed,
				Notes: fmt.Sprintf("%s; %d SYN, %d SYN-ACK, %d FIN, %d RST, %d data segments", s.notes, sum.syn, sum.synack, sum.fin, sum.rst, sum.data),
			})
			if *update {
				if err := capture.WriteFile(file, lt, pkts); err != nil {
					return err
				}
			}
		}
		after, err := kstat.ReadMD5()
		if err != nil {
			return err
		}
		if after != before {
			t.Errorf("kernel TCP-MD5 counters moved: %+v -> %+v", before, after)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if *update && !t.Failed() {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(m); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("manifest.json", b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote manifest.json and %d captures in %s", len(m.Captures), mustAbs("."))
	}
}

func hasRST(s scenario) bool {
	for _, c := range s.conns {
		if c.close != closeFIN {
			return true
		}
	}
	return false
}

func sum0(xs []int) (n int) {
	for _, x := range xs {
		n += x
	}
	return n
}

func utsString(b []int8) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return sb.String()
}

func mustAbs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}
