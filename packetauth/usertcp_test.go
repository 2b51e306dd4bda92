package packetauth_test

// Two harness/usertcp endpoints over an in-memory link, each signing and
// verifying through its own Layer: what a userspace stack that builds
// whole IP packets does, TCP-AO and TCP-MD5.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/netip"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/harness/usertcp"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/packetauth"
)

var _ usertcp.Auth = (*packetauth.Layer)(nil)

var (
	v4Client = netip.MustParseAddrPort("192.0.2.1:40000")
	v4Server = netip.MustParseAddrPort("192.0.2.2:179")
	v6Client = netip.MustParseAddrPort("[2001:db8::1]:40000")
	v6Server = netip.MustParseAddrPort("[2001:db8::2]:179")
)

// mkt is one MKT as the client sees it; the server's copy swaps the IDs.
type mkt struct {
	alg          string
	key          string
	send, recv   uint8
	maclen       int
	excludeOpts  bool
	serverKey    string // if set, the server's copy has this key instead
	serverMACLen int    // if set, the server's copy has this MAC length
}

func rings(t *testing.T, client, server netip.AddrPort, mkts ...mkt) (cring, sring *ao.Keyring) {
	t.Helper()
	cring, sring = ao.NewKeyring(nil), ao.NewKeyring(nil)
	host := func(a netip.Addr) netip.Prefix { return netip.PrefixFrom(a, a.BitLen()) }
	for _, m := range mkts {
		skey, sml := m.key, m.maclen
		if m.serverKey != "" {
			skey = m.serverKey
		}
		if m.serverMACLen != 0 {
			sml = m.serverMACLen
		}
		if _, err := cring.Add(keys.AO{Peer: host(server.Addr()), SendID: m.send, RecvID: m.recv, Algorithm: m.alg,
			Key: []byte(m.key), MACLen: m.maclen, ExcludeOptions: m.excludeOpts}); err != nil {
			t.Fatal(err)
		}
		if _, err := sring.Add(keys.AO{Peer: host(client.Addr()), SendID: m.recv, RecvID: m.send, Algorithm: m.alg,
			Key: []byte(skey), MACLen: sml, ExcludeOptions: m.excludeOpts}); err != nil {
			t.Fatal(err)
		}
	}
	return cring, sring
}

// session is a client and a server endpoint over an in-memory link, each
// with its Layer.
type session struct {
	client, server *usertcp.Conn
	cauth, sauth   *packetauth.Layer
	caddr, saddr   netip.AddrPort
}

func newLayer(t testing.TB, cfg packetauth.Config) *packetauth.Layer {
	t.Helper()
	l, err := packetauth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// conns returns the client's and the server's ao.Conn.
func (s *session) conns(t *testing.T) (c, srv *ao.Conn) {
	t.Helper()
	c, ok1 := s.cauth.Conn(s.caddr, s.saddr)
	srv, ok2 := s.sauth.Conn(s.saddr, s.caddr)
	if !ok1 || !ok2 {
		t.Fatalf("tracked: client %v, server %v", ok1, ok2)
	}
	return c, srv
}

const (
	clientISN = 0x10000001
	serverISN = 0xfffff000 // the server's sequence numbers wrap during the test
)

var greeting = []byte("220 packetauth ready\r\n")

// open runs the handshake: the server greets in its SYN-ACK.
func open(t *testing.T, client, server netip.AddrPort, mkts ...mkt) *session {
	t.Helper()
	cring, sring := rings(t, client, server, mkts...)
	a, b := usertcp.Pipe()
	s := &session{caddr: client, saddr: server}
	s.sauth = newLayer(t, packetauth.Config{AO: sring})
	s.cauth = newLayer(t, packetauth.Config{AO: cring})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type result struct {
		c   *usertcp.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := usertcp.Accept(ctx, b, usertcp.Config{Local: server, Auth: s.sauth, ISS: serverISN, Greeting: greeting})
		done <- result{c, err}
	}()
	var err error
	s.client, err = usertcp.Dial(ctx, a, usertcp.Config{Local: client, Remote: server, Auth: s.cauth, ISS: clientISN})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("accept: %v", r.err)
	}
	s.server = r.c
	deadline := time.Now().Add(20 * time.Second)
	s.client.SetDeadline(deadline)
	s.server.SetDeadline(deadline)
	got := make([]byte, len(greeting))
	if _, err := io.ReadFull(s.client, got); err != nil || !bytes.Equal(got, greeting) {
		t.Fatalf("greeting %q, %v", got, err)
	}
	return s
}

// exchange sends n bytes each way, one direction at a time (a usertcp Conn
// only reads its link while one of its methods runs).
func (s *session) exchange(t *testing.T, n int) {
	t.Helper()
	send := func(from, to *usertcp.Conn, fill byte) {
		t.Helper()
		want := bytes.Repeat([]byte{fill}, n)
		errc := make(chan error, 1)
		go func() { _, err := from.Write(want); errc <- err }()
		got := make([]byte, n)
		_, rerr := io.ReadFull(to, got)
		if err := errors.Join(<-errc, rerr); err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%d bytes arrived damaged", n)
		}
	}
	send(s.client, s.server, 'c')
	send(s.server, s.client, 's')
}

func (s *session) close(t *testing.T) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		n, err := s.server.Read(make([]byte, 1))
		if n != 0 || err != io.EOF {
			errc <- errors.New("server: no EOF")
			return
		}
		errc <- s.server.Close()
	}()
	if err := errors.Join(s.client.Close(), <-errc); err != nil {
		t.Fatal(err)
	}
}

// checkCounters: every packet an endpoint processed verified, none failed.
func (s *session) checkCounters(t *testing.T) {
	t.Helper()
	cc, sc := s.conns(t)
	for _, e := range []struct {
		name string
		c    *usertcp.Conn
		a    *ao.Conn
	}{{"client", s.client, cc}, {"server", s.server, sc}} {
		st, ct := e.c.Stats(), e.a.Counters()
		if st.AuthDropped != 0 || ct.Bad != 0 || ct.KeyNotFound != 0 || ct.AORequired != 0 {
			t.Errorf("%s: %+v, counters %+v", e.name, st, ct)
		}
		// The server's SYN was verified by the listener, not its Conn.
		want := uint64(st.Received)
		if e.name == "server" {
			want--
		}
		if ct.Good != want {
			t.Errorf("%s: %d good for %d packets received", e.name, ct.Good, st.Received)
		}
	}
	if lc := s.sauth.Counters(); lc.Started != 1 || lc.Dropped.Total() != 0 {
		t.Errorf("server layer counters %+v, want one connection and no drop", lc)
	}
}

// Two endpoints over an in-memory link, each signing with its own ao.Conn:
// the handshake with a greeting on the SYN-ACK, data both ways in segments
// of up to the MSS, the close.
func TestUsertcpAO(t *testing.T) {
	for _, tc := range []struct {
		name           string
		client, server netip.AddrPort
		m              mkt
	}{
		{"hmac-sha1-v4", v4Client, v4Server, mkt{alg: "hmac(sha1)", key: "key-one", send: 1, recv: 2}},
		{"hmac-sha256-v6-maclen16", v6Client, v6Server, mkt{alg: "hmac(sha256)", key: "key-two", send: 1, recv: 2, maclen: 16}},
		{"cmac-aes128-v4-exclopt", v4Client, v4Server, mkt{alg: "cmac(aes128)", key: "0123456789abcdef", send: 5, recv: 5, excludeOpts: true}},
		{"hmac-sha3-512-v6-maclen4", v6Client, v6Server, mkt{alg: "hmac(sha3-512)", key: "k", send: 7, recv: 9, maclen: 4}},
		{"cmac-aes-key32-v4-maclen6", v4Client, v4Server, mkt{alg: "cmac(aes)", key: "0123456789abcdef0123456789abcdef", send: 1, recv: 2, maclen: 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t, tc.client, tc.server, tc.m)
			for _, n := range []int{1, 1000, 5000} {
				s.exchange(t, n)
			}
			for _, l := range []*packetauth.Layer{s.cauth, s.sauth} {
				if c := l.Counters(); c.Signed == 0 || c.Verified == 0 || c.Passed != 0 {
					t.Errorf("a side did not sign and verify everything: %+v", c)
				}
			}
			s.checkCounters(t)
			s.close(t)
		})
	}
}

// Rotation driven from each side: SetRNext on one side moves the other
// side's current key once a segment carrying the new RNextKeyID verifies.
func TestUsertcpRotation(t *testing.T) {
	s := open(t, v4Client, v4Server,
		mkt{alg: "hmac(sha256)", key: "key-A", send: 100, recv: 200},
		mkt{alg: "hmac(sha256)", key: "key-B", send: 101, recv: 201})
	cconn, sconn := s.conns(t)
	cur := func(a *ao.Conn) uint8 { return a.Current().SendID() }
	// The listener made the server's current key the one the SYN asked
	// for, whichever the client picked.
	if got, want := cur(sconn), cconn.RNext().RecvID(); got != want {
		t.Fatalf("server current %d, the client asked for %d", got, want)
	}
	c0, s0 := cur(cconn), cur(sconn)
	other := func(id, a, b uint8) uint8 {
		if id == a {
			return b
		}
		return a
	}
	c1, s1 := other(c0, 100, 101), other(s0, 200, 201)

	// Client asks for the other key: the server's current key follows.
	if err := s.cauth.SetRNext(v4Client, v4Server, s1); err != nil {
		t.Fatal(err)
	}
	s.exchange(t, 100)
	if cur(sconn) != s1 || cur(cconn) != c0 {
		t.Errorf("after client SetRNext(%d): client current %d, server current %d", s1, cur(cconn), cur(sconn))
	}
	// Server asks for the other key: the client's follows.
	if err := s.sauth.SetRNext(v4Server, v4Client, c1); err != nil {
		t.Fatal(err)
	}
	s.exchange(t, 100)
	if cur(cconn) != c1 || cur(sconn) != s1 {
		t.Errorf("after server SetRNext(%d): client current %d, server current %d", c1, cur(cconn), cur(sconn))
	}
	s.checkCounters(t)
	s.close(t)
}

// A wrong key: every SYN fails at the listener, the handshake times out.
func TestUsertcpWrongKey(t *testing.T) {
	cring, sring := rings(t, v4Client, v4Server, mkt{alg: "hmac(sha1)", key: "right", serverKey: "wrong", send: 1, recv: 2})
	a, b := usertcp.Pipe()
	l := newLayer(t, packetauth.Config{AO: sring})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	acc := make(chan error, 1)
	go func() {
		_, err := usertcp.Accept(ctx, b, usertcp.Config{Local: v4Server, Auth: l, ISS: serverISN})
		acc <- err
	}()
	cauth := newLayer(t, packetauth.Config{AO: cring})
	_, err := usertcp.Dial(ctx, a, usertcp.Config{Local: v4Client, Remote: v4Server, Auth: cauth, ISS: clientISN,
		RTO: 10 * time.Millisecond, MaxRetries: 2})
	if !errors.Is(err, usertcp.ErrTimeout) {
		t.Errorf("dial: %v, want ErrTimeout", err)
	}
	cancel()
	if err := <-acc; err == nil {
		t.Error("the server accepted a connection")
	}
	if c := l.Counters(); c.Dropped.BadMAC != 3 || c.Started != 0 || c.Verified != 0 {
		t.Errorf("server layer counters %+v, want 3 bad SYNs", c)
	}
}

// A layer whose MKTs do not cover the peer lets its connection through
// unsigned, as a Linux listener accepts it; nothing is signed or tracked.
func TestUsertcpUnsignedPeer(t *testing.T) {
	ring := ao.NewKeyring(nil) // covers other peers, not the client
	if _, err := ring.Add(keys.AO{Peer: netip.MustParsePrefix("198.51.100.0/24"), SendID: 1, RecvID: 1, Algorithm: "hmac(sha1)", Key: []byte("k")}); err != nil {
		t.Fatal(err)
	}
	a, b := usertcp.Pipe()
	sauth := newLayer(t, packetauth.Config{AO: ring})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	acc := make(chan error, 1)
	go func() {
		c, err := usertcp.Accept(ctx, b, usertcp.Config{Local: v4Server, Auth: sauth, ISS: serverISN, Greeting: greeting})
		if err == nil {
			err = c.Close()
		}
		acc <- err
	}()
	c, err := usertcp.Dial(ctx, a, usertcp.Config{Local: v4Client, Remote: v4Server})
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(greeting))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(c.Close(), <-acc); err != nil {
		t.Fatal(err)
	}
	if c := sauth.Counters(); c.Signed != 0 || c.Verified != 0 || c.Started != 0 || c.Passed == 0 || c.Dropped.Total() != 0 {
		t.Errorf("server layer counters %+v, want every packet passed untouched", c)
	}
}

// TCP-MD5 both ways: the handshake, data both ways in segments up to the
// MSS, and the close pass with every segment verified; with the wrong key
// the handshake fails and the server's keyring counts the bad SYNs.
func TestUsertcpMD5(t *testing.T) {
	host := func(a netip.Addr, bits int) netip.Prefix { return netip.PrefixFrom(a, a.BitLen()-bits).Masked() }
	rings := func(t *testing.T, client, server netip.AddrPort, ckey, skey string) (cring, sring *md5sig.Keyring) {
		cring, sring = md5sig.NewKeyring(nil), md5sig.NewKeyring(nil)
		if _, err := cring.Add(keys.MD5{Peer: host(server.Addr(), 0), Key: []byte(ckey)}); err != nil {
			t.Fatal(err)
		}
		if _, err := sring.Add(keys.MD5{Peer: host(client.Addr(), 8), Key: []byte(skey)}); err != nil {
			t.Fatal(err)
		}
		return cring, sring
	}
	for _, tc := range []struct {
		name           string
		client, server netip.AddrPort
	}{{"v4", v4Client, v4Server}, {"v6", v6Client, v6Server}} {
		t.Run(tc.name, func(t *testing.T) {
			cring, sring := rings(t, tc.client, tc.server, "usertcp-md5-key", "usertcp-md5-key")
			a, b := usertcp.Pipe()
			req, rep := bytes.Repeat([]byte("q"), 5000), bytes.Repeat([]byte("r"), 7000)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			st, _, err := usertcp.Exchange(ctx, a, b,
				usertcp.Config{Local: tc.client, Remote: tc.server, Auth: newLayer(t, packetauth.Config{MD5: cring})},
				usertcp.Config{Local: tc.server, Auth: newLayer(t, packetauth.Config{MD5: sring})}, nil, req, rep)
			if err != nil {
				t.Fatal(err)
			}
			cc, sc := cring.Counters(), sring.Counters()
			if cc.Good == 0 || sc.Good == 0 || cc.Bad+sc.Bad+cc.Missing+sc.Missing+cc.Unexpected+sc.Unexpected != 0 {
				t.Errorf("client counters %+v, server counters %+v", cc, sc)
			}
			if st.AuthDropped != 0 {
				t.Errorf("client stats %+v", st)
			}
		})
	}
	t.Run("wrong key", func(t *testing.T) {
		cring, sring := rings(t, v4Client, v4Server, "wrong", "right")
		a, b := usertcp.Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := usertcp.Accept(ctx, b, usertcp.Config{Local: v4Server, Auth: newLayer(t, packetauth.Config{MD5: sring})})
			done <- err
		}()
		_, err := usertcp.Dial(context.Background(), a, usertcp.Config{Local: v4Client, Remote: v4Server,
			Auth: newLayer(t, packetauth.Config{MD5: cring}), RTO: 5 * time.Millisecond, MaxRetries: 2})
		if !errors.Is(err, usertcp.ErrTimeout) {
			t.Errorf("Dial with the wrong key = %v, want ErrTimeout", err)
		}
		cancel()
		<-done
		if c := sring.Counters(); c.Bad != 3 || c.Good != 0 {
			t.Errorf("server keyring counters %+v, want 3 bad SYNs", c)
		}
	})
}
