package aopacket_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/netip"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/ao/aopacket"
	"github.com/tcpsig/tcpsig/harness/usertcp"
	"github.com/tcpsig/tcpsig/keys"
)

var _ usertcp.Auth = (*aopacket.Auth)(nil)

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
// with its aopacket.Auth.
type session struct {
	client, server *usertcp.Conn
	cauth, sauth   *aopacket.Auth
	listener       *ao.Listener
}

const (
	clientISN = 0x10000001
	serverISN = 0xfffff000 // the server's sequence numbers wrap during the test
)

var greeting = []byte("220 aopacket ready\r\n")

// open runs the handshake: the server greets in its SYN-ACK.
func open(t *testing.T, client, server netip.AddrPort, maclen int, mkts ...mkt) *session {
	t.Helper()
	cring, sring := rings(t, client, server, mkts...)
	a, b := usertcp.Pipe()
	s := &session{listener: ao.NewListener(sring, ao.Policy{}, 0)}
	s.sauth = mustServer(t, s.listener, serverISN, maclen)
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
	s.cauth, err = aopacket.NewClient(cring, ao.Endpoint{Local: client, Remote: server, LocalISN: clientISN}, ao.Policy{}, maclen)
	if err != nil {
		t.Fatal(err)
	}
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
	s.cauth.Close()
	s.sauth.Close()
}

// checkCounters: every packet an endpoint processed verified, none failed.
func (s *session) checkCounters(t *testing.T) {
	t.Helper()
	for _, e := range []struct {
		name string
		c    *usertcp.Conn
		a    *aopacket.Auth
	}{{"client", s.client, s.cauth}, {"server", s.server, s.sauth}} {
		st, ct := e.c.Stats(), e.a.Conn().Counters()
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
	if lc := s.listener.Counters(); lc.Good != 1 || lc.Bad != 0 {
		t.Errorf("listener counters %+v", lc)
	}
}

// Two endpoints over an in-memory link, each signing with its own ao.Conn:
// the handshake with a greeting on the SYN-ACK, data both ways in segments
// of up to the MSS, the close.
func TestSession(t *testing.T) {
	for _, tc := range []struct {
		name           string
		client, server netip.AddrPort
		m              mkt
		reserve        int
	}{
		{"hmac-sha1-v4", v4Client, v4Server, mkt{alg: "hmac(sha1)", key: "key-one", send: 1, recv: 2}, 12},
		{"hmac-sha256-v6-maclen16", v6Client, v6Server, mkt{alg: "hmac(sha256)", key: "key-two", send: 1, recv: 2, maclen: 16}, 16},
		{"cmac-aes128-v4-exclopt", v4Client, v4Server, mkt{alg: "cmac(aes128)", key: "0123456789abcdef", send: 5, recv: 5, excludeOpts: true}, 0},
		{"hmac-sha3-512-v6-maclen4", v6Client, v6Server, mkt{alg: "hmac(sha3-512)", key: "k", send: 7, recv: 9, maclen: 4}, 4},
		{"cmac-aes-key32-v4-maclen6", v4Client, v4Server, mkt{alg: "cmac(aes)", key: "0123456789abcdef0123456789abcdef", send: 1, recv: 2, maclen: 6}, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t, tc.client, tc.server, tc.reserve, tc.m)
			for _, n := range []int{1, 1000, 5000} {
				s.exchange(t, n)
			}
			if !s.sauth.Signed() || !s.cauth.Signed() {
				t.Error("a side is not signed")
			}
			s.checkCounters(t)
			s.close(t)
		})
	}
}

// Rotation driven from each side: SetRNext on one side moves the other
// side's current key once a segment carrying the new RNextKeyID verifies.
func TestRotation(t *testing.T) {
	s := open(t, v4Client, v4Server, 12,
		mkt{alg: "hmac(sha256)", key: "key-A", send: 100, recv: 200},
		mkt{alg: "hmac(sha256)", key: "key-B", send: 101, recv: 201})
	cur := func(a *aopacket.Auth) uint8 { return a.Conn().Current().SendID() }
	// The listener made the server's current key the one the SYN asked
	// for, whichever the client picked.
	if got, want := cur(s.sauth), s.cauth.Conn().RNext().RecvID(); got != want {
		t.Fatalf("server current %d, the client asked for %d", got, want)
	}
	c0, s0 := cur(s.cauth), cur(s.sauth)
	other := func(id, a, b uint8) uint8 {
		if id == a {
			return b
		}
		return a
	}
	c1, s1 := other(c0, 100, 101), other(s0, 200, 201)

	// Client asks for the other key: the server's current key follows.
	if err := s.cauth.Conn().SetRNext(s1); err != nil {
		t.Fatal(err)
	}
	s.exchange(t, 100)
	if cur(s.sauth) != s1 || cur(s.cauth) != c0 {
		t.Errorf("after client SetRNext(%d): client current %d, server current %d", s1, cur(s.cauth), cur(s.sauth))
	}
	// Server asks for the other key: the client's follows.
	if err := s.sauth.Conn().SetRNext(c1); err != nil {
		t.Fatal(err)
	}
	s.exchange(t, 100)
	if cur(s.cauth) != c1 || cur(s.sauth) != s1 {
		t.Errorf("after server SetRNext(%d): client current %d, server current %d", c1, cur(s.cauth), cur(s.sauth))
	}
	s.checkCounters(t)
	s.close(t)
}

// A wrong key: every SYN fails at the listener, the handshake times out.
func TestWrongKey(t *testing.T) {
	cring, sring := rings(t, v4Client, v4Server, mkt{alg: "hmac(sha1)", key: "right", serverKey: "wrong", send: 1, recv: 2})
	a, b := usertcp.Pipe()
	l := ao.NewListener(sring, ao.Policy{}, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	acc := make(chan error, 1)
	go func() {
		_, err := usertcp.Accept(ctx, b, usertcp.Config{Local: v4Server, Auth: mustServer(t, l, serverISN, 12), ISS: serverISN})
		acc <- err
	}()
	cauth, err := aopacket.NewClient(cring, ao.Endpoint{Local: v4Client, Remote: v4Server, LocalISN: clientISN}, ao.Policy{}, 12)
	if err != nil {
		t.Fatal(err)
	}
	_, err = usertcp.Dial(ctx, a, usertcp.Config{Local: v4Client, Remote: v4Server, Auth: cauth, ISS: clientISN,
		RTO: 10 * time.Millisecond, MaxRetries: 2})
	if !errors.Is(err, usertcp.ErrTimeout) {
		t.Errorf("dial: %v, want ErrTimeout", err)
	}
	cancel()
	if err := <-acc; err == nil {
		t.Error("the server accepted a connection")
	}
	if c := l.Counters(); c.Bad != 3 || c.Good != 0 {
		t.Errorf("listener counters %+v, want 3 bad", c)
	}
}

// A listener whose MKTs do not cover the peer accepts it unsigned, as
// Linux does; the connection then neither signs nor accepts signatures.
func TestUnsignedPeer(t *testing.T) {
	ring := ao.NewKeyring(nil) // covers other peers, not the client
	if _, err := ring.Add(keys.AO{Peer: netip.MustParsePrefix("198.51.100.0/24"), SendID: 1, RecvID: 1, Algorithm: "hmac(sha1)", Key: []byte("k")}); err != nil {
		t.Fatal(err)
	}
	a, b := usertcp.Pipe()
	sauth := mustServer(t, ao.NewListener(ring, ao.Policy{}, 0), serverISN, 12)
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
	if sauth.Signed() {
		t.Error("the server signs an unsigned connection")
	}
}

// Sign refuses what it cannot do right.
func TestSignErrors(t *testing.T) {
	cring, sring := rings(t, v4Client, v4Server, mkt{alg: "hmac(sha1)", key: "k", send: 1, recv: 2, maclen: 16})
	pkt := func(flags byte, seq uint32, optLen int) []byte {
		p := make([]byte, 40+optLen)
		p[0], p[2], p[3], p[8], p[9] = 0x45, 0, byte(len(p)), 64, 6
		copy(p[12:], []byte{192, 0, 2, 1, 192, 0, 2, 2})
		tcp := p[20:]
		tcp[0], tcp[1], tcp[2], tcp[3] = 0x9c, 0x40, 0, 179
		tcp[4], tcp[5], tcp[6], tcp[7] = byte(seq>>24), byte(seq>>16), byte(seq>>8), byte(seq)
		tcp[12], tcp[13] = byte((20+optLen)/4<<4), flags
		for i := range optLen {
			tcp[20+i] = 1
		}
		return p
	}
	srv := mustServer(t, ao.NewListener(sring, ao.Policy{}, 0), serverISN, 0)
	if err := srv.Sign(pkt(0x12, serverISN, srv.OptionLen())); !errors.Is(err, aopacket.ErrNotAccepted) {
		t.Errorf("server Sign before a SYN: %v", err)
	}
	cli, err := aopacket.NewClient(cring, ao.Endpoint{Local: v4Client, Remote: v4Server, LocalISN: clientISN}, ao.Policy{}, 12)
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.Sign(pkt(0x02, clientISN, 16)); !errors.Is(err, aopacket.ErrNoRoom) {
		t.Errorf("maclen 16 in 16 reserved bytes: %v", err)
	}
	cli, err = aopacket.NewClient(cring, ao.Endpoint{Local: v4Client, Remote: v4Server, LocalISN: clientISN}, ao.Policy{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := cli.OptionLen(); got != 20 {
		t.Errorf("OptionLen with maclen 0 = %d, want 20", got)
	}
	if err := cli.Sign(pkt(0x02, clientISN+1, 20)); !errors.Is(err, aopacket.ErrISN) {
		t.Errorf("SYN with another ISN: %v", err)
	}
	if err := cli.Sign(pkt(0x02, clientISN, 20)); err != nil {
		t.Errorf("SYN: %v", err)
	}
}

func mustServer(t testing.TB, l *ao.Listener, isn uint32, maclen int) *aopacket.Auth {
	a, err := aopacket.NewServer(l, isn, maclen)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
