package ao

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"
	"unsafe"

	"github.com/tcpsig/tcpsig/kdf"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/mac"
	"github.com/tcpsig/tcpsig/segment"
	"github.com/tcpsig/tcpsig/sigpool"
)

// allZero reports whether the n bytes at p are zero: the whole memory of
// a wiped kdf.Master or mac.Key (Wipe clears the key-derived arrays and
// nils the algorithm and AES schedule pointers).
func allZero(p unsafe.Pointer, n uintptr) bool {
	for _, b := range unsafe.Slice((*byte)(p), n) {
		if b != 0 {
			return false
		}
	}
	return true
}

// masterWiped reports whether m's prepared master key is all zero.
func masterWiped(m *MKT) bool { return allZero(unsafe.Pointer(m.master), unsafe.Sizeof(*m.master)) }

// connKeyWiped reports whether k's traffic key holds no key and no byte
// of one.
func connKeyWiped(k *laneKey) bool { return k.key.Empty() && !k.ready }

// entries lists every traffic-key entry of l.
func (l *lane) entries() []*laneKey {
	ks := []*laneKey{&l.keys[0], &l.keys[1]}
	return append(ks, l.more...)
}

// connKeysOf returns the traffic-key holders c derived from m, in both
// lanes.
func connKeysOf(c *Conn, m *MKT) []*laneKey {
	var ks []*laneKey
	for _, l := range []*lane{&c.send, &c.recv} {
		l.mu.Lock()
		if k := l.find(m); k != nil {
			ks = append(ks, k)
		}
		l.mu.Unlock()
	}
	return ks
}

func cfg4(peer string, send, recv uint8) keys.AO {
	return keys.AO{Peer: netip.MustParsePrefix(peer), SendID: send, RecvID: recv, Algorithm: "hmac(sha1)", Key: testKey(int(send))}
}

// TestAddValidation checks Add against Linux's TCP_AO_ADD_KEY rules
// , each failure with its errno's sentinel.
// key32 is a master key as long as the draft's algorithms need.
var key32 = bytes.Repeat([]byte{0x5a}, 32)

func TestAddValidation(t *testing.T) {
	with := func(f func(*keys.AO)) keys.AO {
		c := cfg4("192.0.2.2/32", 1, 2)
		f(&c)
		return c
	}
	for _, c := range []struct {
		name    string
		cfg     keys.AO
		want    error // nil: accepted
		also    error
		wantMAC int
	}{
		{"maclen 0 means 12", with(func(c *keys.AO) { c.MACLen = 0 }), nil, nil, 12},
		{"maclen 1", with(func(c *keys.AO) { c.MACLen = 1 }), nil, nil, 1},
		{"maclen 4", with(func(c *keys.AO) { c.MACLen = 4 }), nil, nil, 4},
		{"maclen 13 pads to 20", with(func(c *keys.AO) { c.MACLen = 13 }), nil, nil, 13},
		{"maclen 16", with(func(c *keys.AO) { c.MACLen = 16 }), nil, nil, 16},
		{"maclen 16 cmac", with(func(c *keys.AO) { c.MACLen = 16; c.Algorithm = "cmac(aes128)" }), nil, nil, 16},
		{"maclen 17", with(func(c *keys.AO) { c.MACLen = 17 }), keys.ErrMACTooLong, nil, 0},
		{"maclen 20 (sha1's digest) does not fit a SYN", with(func(c *keys.AO) { c.MACLen = 20 }), keys.ErrMACTooLong, nil, 0},
		{"maclen 17 > hmac(md5) digest: EMSGSIZE first", with(func(c *keys.AO) { c.MACLen = 17; c.Algorithm = "hmac(md5)" }), keys.ErrMACTooLong, nil, 0},
		{"maclen 255", with(func(c *keys.AO) { c.MACLen = 255 }), keys.ErrMACTooLong, nil, 0},
		{"key length 0", with(func(c *keys.AO) { c.Key = nil }), keys.ErrInvalid, nil, 0},
		{"key length 1", with(func(c *keys.AO) { c.Key = []byte{7} }), nil, nil, 12},
		{"key length 80", with(func(c *keys.AO) { c.Key = bytes.Repeat([]byte{7}, 80) }), nil, nil, 12},
		{"key length 80 cmac", with(func(c *keys.AO) { c.Key = bytes.Repeat([]byte{7}, 80); c.Algorithm = "cmac(aes128)" }), nil, nil, 12},
		{"key length 81", with(func(c *keys.AO) { c.Key = bytes.Repeat([]byte{7}, 81) }), keys.ErrInvalid, nil, 0},
		{"unknown algorithm", with(func(c *keys.AO) { c.Algorithm = "hmac(sha0)" }), keys.ErrInvalid, mac.ErrUnknownAlgorithm, 0},
		{"empty algorithm", with(func(c *keys.AO) { c.Algorithm = "" }), keys.ErrInvalid, mac.ErrUnknownAlgorithm, 0},
		{"TCP-MD5 is not a TCP-AO algorithm", with(func(c *keys.AO) { c.Algorithm = "md5" }), keys.ErrInvalid, nil, 0},
		{"RFC 5926 name", with(func(c *keys.AO) { c.Algorithm = "AES-128-CMAC-96" }), nil, nil, 12},
		{"host bits set", with(func(c *keys.AO) { c.Peer = netip.MustParsePrefix("192.0.2.1/24") }), keys.ErrInvalid, nil, 0},
		{"host bits set v6", with(func(c *keys.AO) { c.Peer = netip.MustParsePrefix("2001:db8::1/64") }), keys.ErrInvalid, nil, 0},
		{"host bits set v4-mapped", with(func(c *keys.AO) { c.Peer = netip.MustParsePrefix("::ffff:192.0.2.1/120") }), keys.ErrInvalid, nil, 0},
		{"zero prefix", with(func(c *keys.AO) { c.Peer = netip.Prefix{} }), keys.ErrInvalid, nil, 0},
		{"any v4", with(func(c *keys.AO) { c.Peer = netip.MustParsePrefix("0.0.0.0/0") }), nil, nil, 12},
		{"ifindex without the flag", with(func(c *keys.AO) { c.IfIndex = 5 }), keys.ErrInvalid, nil, 0},
		{"ifindex with the flag", with(func(c *keys.AO) { c.IfIndex = 5; c.HasIfIndex = true }), nil, nil, 12},
		// draft-ietf-tcpm-tcp-ao-algs: 16-byte MACs only, master keys of 32 bytes or more.
		{"HMAC-SHA256-128 maclen 0 means 16", with(func(c *keys.AO) { c.Algorithm = "HMAC-SHA256-128"; c.Key = key32; c.MACLen = 0 }), nil, nil, 16},
		{"kmac256-128 maclen 16", with(func(c *keys.AO) { c.Algorithm = "kmac256-128"; c.Key = key32; c.MACLen = 16 }), nil, nil, 16},
		{"kmac256-128 80-byte key", with(func(c *keys.AO) { c.Algorithm = "kmac256-128"; c.Key = bytes.Repeat([]byte{7}, 80); c.MACLen = 16 }), nil, nil, 16},
		{"hmac-sha256-128 maclen 12", with(func(c *keys.AO) { c.Algorithm = "hmac-sha256-128"; c.Key = key32; c.MACLen = 12 }), keys.ErrInvalid, mac.ErrMACLen, 0},
		{"kmac256-128 maclen 4", with(func(c *keys.AO) { c.Algorithm = "kmac256-128"; c.Key = key32; c.MACLen = 4 }), keys.ErrInvalid, mac.ErrMACLen, 0},
		{"hmac-sha256-128 31-byte key", with(func(c *keys.AO) { c.Algorithm = "hmac-sha256-128"; c.Key = key32[:31] }), keys.ErrInvalid, mac.ErrMasterKeyLen, 0},
		{"kmac256-128 1-byte key", with(func(c *keys.AO) { c.Algorithm = "kmac256-128"; c.Key = key32[:1] }), keys.ErrInvalid, mac.ErrMasterKeyLen, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := NewKeyring(nil)
			m, err := r.Add(c.cfg)
			if c.want == nil {
				if err != nil {
					t.Fatalf("Add: %v", err)
				}
				if m.MACLen() != c.wantMAC {
					t.Errorf("MACLen %d, want %d", m.MACLen(), c.wantMAC)
				}
				if r.Len() != 1 {
					t.Errorf("Len %d", r.Len())
				}
				return
			}
			if !errors.Is(err, c.want) || m != nil {
				t.Fatalf("Add: %v, %v; want %v", m, err, c.want)
			}
			if c.also != nil && !errors.Is(err, c.also) {
				t.Fatalf("Add: %v; want it to wrap %v too", err, c.also)
			}
			for _, other := range []error{keys.ErrInvalid, keys.ErrMACTooLong, ErrKeyExists} {
				if other != c.want && errors.Is(err, other) {
					t.Fatalf("Add: %v is also %v", err, other)
				}
			}
			if r.Len() != 0 {
				t.Errorf("failed Add left %d keys", r.Len())
			}
		})
	}
}

// TestAddOverlap checks the EEXIST rule: an MKT whose SendID equals an
// existing SendID, or whose RecvID equals an existing RecvID, for an
// overlapping peer prefix in an overlapping L3 domain, is refused.
func TestAddOverlap(t *testing.T) {
	l3 := func(c keys.AO, idx int) keys.AO { c.IfIndex, c.HasIfIndex = idx, true; return c }
	for _, c := range []struct {
		name          string
		first, second keys.AO
		want          error
	}{
		{"same peer, same IDs", cfg4("192.0.2.2/32", 1, 2), cfg4("192.0.2.2/32", 1, 2), ErrKeyExists},
		{"same peer, same SendID", cfg4("192.0.2.2/32", 1, 2), cfg4("192.0.2.2/32", 1, 3), ErrKeyExists},
		{"same peer, same RecvID", cfg4("192.0.2.2/32", 1, 2), cfg4("192.0.2.2/32", 3, 2), ErrKeyExists},
		{"same peer, IDs swapped", cfg4("192.0.2.2/32", 1, 2), cfg4("192.0.2.2/32", 2, 1), nil},
		{"same peer, other IDs", cfg4("192.0.2.2/32", 1, 2), cfg4("192.0.2.2/32", 3, 4), nil},
		{"covering prefix", cfg4("192.0.2.2/32", 1, 2), cfg4("192.0.2.0/24", 1, 9), ErrKeyExists},
		{"covered prefix", cfg4("192.0.2.0/24", 1, 2), cfg4("192.0.2.2/32", 9, 2), ErrKeyExists},
		{"any address", cfg4("0.0.0.0/0", 1, 2), cfg4("192.0.2.2/32", 1, 9), ErrKeyExists},
		{"disjoint prefixes", cfg4("192.0.2.0/24", 1, 2), cfg4("198.51.100.0/24", 1, 2), nil},
		{"other family", cfg4("0.0.0.0/0", 1, 2), cfg4("::/0", 1, 2), nil},
		{"v4-mapped is v4", cfg4("192.0.2.2/32", 1, 2), cfg4("::ffff:192.0.2.2/128", 1, 2), ErrKeyExists},
		{"v4-mapped prefix is v4", cfg4("192.0.2.0/24", 1, 2), cfg4("::ffff:192.0.2.2/128", 5, 2), ErrKeyExists},
		{"different L3 domains", l3(cfg4("192.0.2.2/32", 1, 2), 5), l3(cfg4("192.0.2.2/32", 1, 2), 6), nil},
		{"same L3 domain", l3(cfg4("192.0.2.2/32", 1, 2), 5), l3(cfg4("192.0.2.2/32", 1, 2), 5), ErrKeyExists},
		{"default L3 domain only vs VRF 5", l3(cfg4("192.0.2.2/32", 1, 2), 0), l3(cfg4("192.0.2.2/32", 1, 2), 5), nil},
		{"unbound key covers every L3 domain", cfg4("192.0.2.2/32", 1, 2), l3(cfg4("192.0.2.2/32", 1, 2), 5), ErrKeyExists},
		{"VRF key vs unbound key", l3(cfg4("192.0.2.2/32", 1, 2), 5), cfg4("192.0.2.2/32", 1, 2), ErrKeyExists},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := NewKeyring(nil)
			first := mustAdd(t, r, c.first)
			m, err := r.Add(c.second)
			if !errors.Is(err, c.want) {
				t.Fatalf("second Add: %v, want %v", err, c.want)
			}
			if c.want != nil {
				if m != nil || r.Len() != 1 {
					t.Fatalf("refused Add returned %v, Len %d", m, r.Len())
				}
				// The refused key's material is not left behind, and the
				// first key is untouched.
				if masterWiped(first) {
					t.Fatal("refused Add wiped the existing key")
				}
				return
			}
			if r.Len() != 2 {
				t.Fatalf("Len %d", r.Len())
			}
		})
	}
}

// TestLookup checks the read side: by RecvID and SendID, v4-mapped
// addresses as IPv4, longest prefix first, L3 binding, and Find.
func TestLookup(t *testing.T) {
	r := NewKeyring(nil)
	net24 := mustAdd(t, r, cfg4("192.0.2.0/24", 1, 2))
	host32 := mustAdd(t, r, cfg4("192.0.2.7/32", 3, 4))
	mapped := mustAdd(t, r, cfg4("::ffff:198.51.100.7/128", 1, 2))
	vrf := mustAdd(t, r, keys.AO{Peer: netip.MustParsePrefix("203.0.113.0/24"), SendID: 1, RecvID: 2, Algorithm: "hmac(sha1)", Key: testKey(1), IfIndex: 5, HasIfIndex: true})
	v6 := mustAdd(t, r, keys.AO{Peer: netip.MustParsePrefix("2001:db8::/32"), SendID: 1, RecvID: 2, Algorithm: "hmac(sha1)", Key: testKey(1)})
	if got := mapped.Peer(); got != netip.MustParsePrefix("198.51.100.7/32") {
		t.Errorf("v4-mapped peer stored as %v", got)
	}
	a := netip.MustParseAddr
	for _, c := range []struct {
		addr       string
		id         uint8
		l3         int
		recv, send *MKT
	}{
		{"192.0.2.9", 2, 0, net24, nil},
		{"192.0.2.9", 1, 0, nil, net24},
		{"::ffff:192.0.2.9", 2, 0, net24, nil},
		{"::ffff:192.0.2.9", 1, 0, nil, net24},
		{"192.0.2.7", 4, 0, host32, nil},
		{"192.0.2.7", 3, 0, nil, host32},
		{"192.0.2.7", 2, 0, net24, nil},
		{"192.0.2.7", 9, 0, nil, nil},
		{"198.51.100.7", 2, 0, mapped, nil},
		{"::ffff:198.51.100.7", 1, 0, nil, mapped},
		{"198.51.100.8", 2, 0, nil, nil},
		{"203.0.113.1", 2, 5, vrf, nil},
		{"203.0.113.1", 2, 0, nil, nil},
		{"203.0.113.1", 1, 6, nil, nil},
		{"192.0.2.9", 2, 5, net24, nil}, // unbound keys match every L3 domain
		{"2001:db8::5", 2, 0, v6, nil},
		{"2001:db8::5", 1, 0, nil, v6},
		{"::ffff:192.0.2.9", 2, 0, net24, nil},
		{"2001:db9::5", 2, 0, nil, nil},
	} {
		if got := r.LookupRecv(a(c.addr), c.id, c.l3); got != c.recv {
			t.Errorf("LookupRecv(%s, %d, %d) = %v, want %v", c.addr, c.id, c.l3, got, c.recv)
		}
		if got := r.LookupSend(a(c.addr), c.id, c.l3); got != c.send {
			t.Errorf("LookupSend(%s, %d, %d) = %v, want %v", c.addr, c.id, c.l3, got, c.send)
		}
	}
	if !r.Covers(a("::ffff:192.0.2.200"), 0) || r.Covers(a("192.0.3.1"), 0) || r.Covers(a("203.0.113.1"), 0) || !r.Covers(a("203.0.113.1"), 5) {
		t.Error("Covers")
	}
	if got := r.Find(netip.MustParsePrefix("192.0.2.0/24"), 1, 2); got != net24 {
		t.Errorf("Find /24: %v", got)
	}
	if got := r.Find(netip.MustParsePrefix("::ffff:198.51.100.7/128"), 1, 2); got != mapped {
		t.Errorf("Find mapped: %v", got)
	}
	if got := r.Find(netip.MustParsePrefix("192.0.2.0/24"), 1, 3); got != nil {
		t.Errorf("Find with the wrong SendID: %v", got)
	}
	if got := r.Find(netip.MustParsePrefix("192.0.2.7/32"), 1, 2); got != nil {
		t.Errorf("Find of a prefix that only a shorter key covers: %v", got)
	}
	// A new connection's default key is the newest that matches (here
	// also the most specific; TestDefaultKeyIsNewest separates the two).
	var c Conn
	defer c.Close()
	if err := c.Init(r, Endpoint{Local: netip.MustParseAddrPort("192.0.2.1:1"), Remote: netip.MustParseAddrPort("[::ffff:192.0.2.7]:2")}, Policy{}); err != nil {
		t.Fatal(err)
	}
	if c.Current() != host32 || c.RNext() != host32 {
		t.Errorf("Init picked %v / %v", c.Current(), c.RNext())
	}
	if err := c.Init(r, Endpoint{Local: netip.MustParseAddrPort("192.0.2.1:1"), Remote: netip.MustParseAddrPort("192.0.3.1:2")}, Policy{}); !errors.Is(err, ErrNoCurrentKey) {
		t.Errorf("Init for an uncovered peer: %v", err)
	}
}

// conn4 is an established client connection to srv4 over r, current and
// RNext key as given.
func conn4(t *testing.T, r *Keyring, cur, next uint8) *Conn {
	t.Helper()
	c := new(Conn)
	err := restore(c, r, Endpoint{Local: cli4, Remote: srv4}, Policy{}, Endpoint{LocalISN: 10, RemoteISN: 20, SendSeq: 11, RecvSeq: 21, CurrentSendID: cur, RNextRecvID: next})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// signData signs a data segment on c and returns its AO option.
func signData(t *testing.T, c *Conn, seq uint32) (Option, error) {
	t.Helper()
	seg := testSeg(t, cli4, srv4, seq, 21, segment.ACK, 12, []byte("data"))
	if err := c.Sign(seg); err != nil {
		return Option{}, err
	}
	return aoOpt(t, seg), nil
}

// TestDelete checks deletion: a delete naming replacements moves the
// connection to them (Linux's set_current/set_rnext in TCP_AO_DEL_KEY);
// deleting twice, nil or another keyring's key is ENOENT; a synchronous
// delete returns with the master key and every traffic key derived from
// it wiped.
func TestDelete(t *testing.T) {
	r := NewKeyring(nil)
	k1 := mustAdd(t, r, cfg4("192.0.2.2/32", 1, 2))
	k3 := mustAdd(t, r, cfg4("192.0.2.2/32", 3, 4))
	k5 := mustAdd(t, r, cfg4("192.0.2.2/32", 5, 6))
	c := conn4(t, r, 1, 4) // current k1, RNext k3
	if o, err := signData(t, c, 11); err != nil || o.KeyID != 1 || o.RNextKeyID != 4 {
		t.Fatalf("sign: %v %v", o, err)
	}
	if err := r.Delete(k1, DeleteOptions{Current: k1}); !errors.Is(err, ErrNoSuchKey) {
		t.Fatalf("delete naming itself as replacement: %v", err)
	}
	// A refused delete changed nothing.
	if r.Len() != 3 || r.LookupRecv(srv4.Addr(), 2, 0) != k1 || r.LookupSend(srv4.Addr(), 1, 0) != k1 {
		t.Fatal("refused delete changed the keyring")
	}
	if o, err := signData(t, c, 15); err != nil || o.KeyID != 1 {
		t.Fatalf("sign after refused deletes: %v %v", o, err)
	}
	derived := connKeysOf(c, k1)
	if len(derived) != 1 || connKeyWiped(derived[0]) {
		t.Fatalf("k1's traffic keys: %d holders", len(derived))
	}

	// Forced delete of the current key: the connection moves to k5 on its
	// next Sign.
	if err := r.Delete(k1, DeleteOptions{Current: k5}); err != nil {
		t.Fatalf("forced delete: %v", err)
	}
	if !masterWiped(k1) {
		t.Fatal("synchronous delete returned before k1's master key was wiped")
	}
	if r.Len() != 2 || r.LookupRecv(srv4.Addr(), 2, 0) != nil || r.LookupSend(srv4.Addr(), 1, 0) != nil || r.Find(host(srv4.Addr()), 1, 2) != nil {
		t.Fatal("deleted key still found")
	}
	if o, err := signData(t, c, 19); err != nil || o.KeyID != 5 || o.RNextKeyID != 4 {
		t.Fatalf("sign after forced delete: %+v %v", o, err)
	}
	// The connection wiped its traffic keys of k1 when it derived k5's.
	if len(connKeysOf(c, k1)) != 0 || !connKeyWiped(derived[0]) && derived[0].mkt == k1 {
		t.Fatal("the connection still holds k1's traffic keys after deriving k5's")
	}
	if c.Current() != k5 {
		t.Fatalf("current %v, want k5", c.Current())
	}
	// Forced delete of the RNext key.
	if err := r.Delete(k3, DeleteOptions{RNext: k5}); err != nil {
		t.Fatalf("forced RNext delete: %v", err)
	}
	if o, err := signData(t, c, 23); err != nil || o.KeyID != 5 || o.RNextKeyID != 6 {
		t.Fatalf("sign after forced RNext delete: %+v %v", o, err)
	}
	if c.RNext() != k5 {
		t.Fatalf("RNext %v, want k5", c.RNext())
	}

	for _, d := range []struct {
		name string
		m    *MKT
	}{{"twice", k1}, {"nil", nil}} {
		if err := r.Delete(d.m, DeleteOptions{}); !errors.Is(err, ErrNoSuchKey) {
			t.Errorf("delete %s: %v", d.name, err)
		}
	}
	// A replacement that is itself deleted is refused.
	k7 := mustAdd(t, r, cfg4("192.0.2.2/32", 7, 8))
	if err := r.Delete(k5, DeleteOptions{Current: k1, RNext: k7}); !errors.Is(err, ErrNoSuchKey) {
		t.Errorf("delete with a deleted replacement: %v", err)
	}
	// Once the connection is closed its keys are free.
	c.Close()
	if err := r.Delete(k5, DeleteOptions{}); err != nil {
		t.Errorf("delete after Close: %v", err)
	}
}

// TestDeleteOtherKeyring checks that an MKT of another keyring cannot be
// deleted through this one (it is not in it: ENOENT) and stays usable.
func TestDeleteOtherKeyring(t *testing.T) {
	r1, r2 := NewKeyring(nil), NewKeyring(nil)
	m := mustAdd(t, r2, cfg4("192.0.2.2/32", 1, 2))
	if err := r1.Delete(m, DeleteOptions{}); !errors.Is(err, ErrNoSuchKey) {
		t.Fatalf("delete through another keyring: %v", err)
	}
	if r2.LookupRecv(srv4.Addr(), 2, 0) != m || masterWiped(m) {
		t.Fatal("the key was deleted from its own keyring")
	}
	// Nor can it replace a key of this one.
	k := mustAdd(t, r1, cfg4("192.0.2.2/32", 1, 2))
	c := conn4(t, r1, 1, 2)
	if err := r1.Delete(k, DeleteOptions{Current: m, RNext: m}); !errors.Is(err, ErrNoSuchKey) {
		t.Fatalf("replacement from another keyring: %v", err)
	}
	if o, err := signData(t, c, 11); err != nil || o.KeyID != 1 {
		t.Fatalf("sign: %+v %v", o, err)
	}
	if err := r2.Delete(m, DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestDeleteWaitsForReaders checks both kinds of delete against a reader
// that holds the MKT: a synchronous delete returns only after the reader
// lets go, with the key wiped; an asynchronous one returns at once, the
// key still intact for the reader, and is wiped by the reader's release.
func TestDeleteWaitsForReaders(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(fmt.Sprintf("async=%v", async), func(t *testing.T) {
			r := NewKeyring(nil)
			m := mustAdd(t, r, cfg4("192.0.2.2/32", 1, 2))
			pin, ok := m.acquire(0)
			if !ok {
				t.Fatal("acquire")
			}
			done := make(chan error)
			go func() { done <- r.Delete(m, DeleteOptions{Async: async}) }()
			if async {
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			} else {
				// Wait until the delete has taken the key out of the
				// keyring (it does so before it waits for readers); it
				// must not have returned.
				for deadline := time.Now().Add(time.Minute); r.Len() != 0 && time.Now().Before(deadline); {
					time.Sleep(time.Millisecond)
				}
				select {
				case err := <-done:
					t.Fatalf("synchronous delete returned (%v) while a reader held the key", err)
				default:
				}
			}
			if masterWiped(m) {
				t.Fatal("key wiped under a reader")
			}
			if r.LookupRecv(srv4.Addr(), 2, 0) != nil || r.Len() != 0 {
				t.Fatal("deleted key still found")
			}
			if _, ok := m.acquire(0); ok {
				t.Fatal("new reader pinned a deleted key")
			}
			// The reader can still compute with it.
			a, _ := mac.Lookup("hmac(sha1)")
			out, err := m.master.Derive(a.NewContext(), make([]byte, kdf.MaxInputLen), &kdf.Input{Src: cli4.Addr(), Dst: srv4.Addr()}, nil)
			if err != nil || len(out) != 20 {
				t.Fatalf("derive under the pin: %v", err)
			}
			m.release(pin)
			if !async {
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			}
			if !masterWiped(m) {
				t.Fatal("key not wiped once its last reader let go")
			}
		})
	}
}

// TestPolicy checks unsigned segments (AO required), unknown KeyIDs (Linux
// drops, RFC 5925 §7.3 accepts) and their counters, on a connection and a
// listener.
func TestPolicy(t *testing.T) {
	newConn := func(t *testing.T, p Policy) (*Conn, *Keyring) {
		r := NewKeyring(nil)
		mustAdd(t, r, keys.AO{Peer: host(cli4.Addr()), SendID: 2, RecvID: 1, Algorithm: "hmac(sha1)", Key: testKey(1)})
		c := new(Conn)
		if err := restore(c, r, Endpoint{Local: srv4, Remote: cli4}, p, Endpoint{LocalISN: 1, RemoteISN: 2, SendSeq: 2, RecvSeq: 3, CurrentSendID: 2, RNextRecvID: 1}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c, r
	}
	unsigned := func() *segment.Segment { return testSeg(t, cli4, srv4, 3, 2, segment.ACK, 0, []byte("plain")) }
	unknown := func() *segment.Segment {
		s := testSeg(t, cli4, srv4, 3, 2, segment.ACK, 12, []byte("who?"))
		s.Header()[s.Auth().AO+2] = 77
		return s
	}
	t.Run("conn", func(t *testing.T) {
		for _, c := range []struct {
			name   string
			policy Policy
			seg    func() *segment.Segment
			want   error
			counts Counters
		}{
			{"unsigned from a covered peer", Policy{}, unsigned, ErrAORequired, Counters{AORequired: 1}},
			{"unsigned, AO required", Policy{AORequired: true}, unsigned, ErrAORequired, Counters{AORequired: 1}},
			{"unknown KeyID, Linux", Policy{}, unknown, ErrKeyNotFound, Counters{KeyNotFound: 1}},
			{"unknown KeyID, accept mismatch", Policy{AcceptUnknownKeyID: true}, unknown, nil, Counters{KeyNotFound: 1}},
		} {
			conn, _ := newConn(t, c.policy)
			if err := conn.Verify(c.seg()); !errors.Is(err, c.want) || (c.want == nil && err != nil) {
				t.Errorf("%s: %v, want %v", c.name, err, c.want)
			}
			if got := conn.Counters(); got != c.counts {
				t.Errorf("%s: counters %+v, want %+v", c.name, got, c.counts)
			}
		}
	})
	t.Run("listener", func(t *testing.T) {
		r := NewKeyring(nil)
		mustAdd(t, r, keys.AO{Peer: netip.MustParsePrefix("192.0.2.0/24"), SendID: 2, RecvID: 1, Algorithm: "hmac(sha1)", Key: testKey(1)})
		stranger := netip.MustParseAddrPort("198.51.100.1:5555")
		for _, c := range []struct {
			name   string
			policy Policy
			from   netip.AddrPort
			maclen int
			keyID  uint8
			signed bool
			want   error
			counts Counters
		}{
			{"unsigned SYN from a covered peer", Policy{}, cli4, 0, 0, false, ErrAORequired, Counters{AORequired: 1}},
			{"unsigned SYN from another peer", Policy{}, stranger, 0, 0, false, nil, Counters{}},
			{"unsigned SYN from another peer, AO required", Policy{AORequired: true}, stranger, 0, 0, false, ErrAORequired, Counters{AORequired: 1}},
			{"unknown KeyID", Policy{}, cli4, 12, 77, false, ErrKeyNotFound, Counters{KeyNotFound: 1}},
			{"signed SYN from another peer", Policy{}, stranger, 12, 1, false, ErrKeyNotFound, Counters{KeyNotFound: 1}},
			{"bad MAC", Policy{}, cli4, 12, 1, true, ErrBadMAC, Counters{Bad: 1}},
			{"MAC length 4", Policy{}, cli4, 4, 1, true, ErrMACLength, Counters{Bad: 1}},
		} {
			l := NewListener(r, c.policy, 0)
			syn := testSeg(t, c.from, srv4, 1000, 0, segment.SYN, c.maclen, nil)
			if c.maclen > 0 {
				syn.Header()[syn.Auth().AO+2] = c.keyID
			}
			var conn Conn
			signed, err := l.Accept(syn, &conn)
			if !errors.Is(err, c.want) || (c.want == nil && err != nil) || signed != c.signed {
				t.Errorf("%s: %v %v, want %v %v", c.name, signed, err, c.signed, c.want)
			}
			if got := l.Counters(); got != c.counts {
				t.Errorf("%s: counters %+v, want %+v", c.name, got, c.counts)
			}
			conn.Close()
		}
		if _, err := NewListener(r, Policy{}, 0).Accept(testSeg(t, cli4, srv4, 1, 1, segment.SYN|segment.ACK, 12, nil), new(Conn)); !errors.Is(err, ErrNotSYN) {
			t.Errorf("Accept of a SYN-ACK: %v", err)
		}
	})
}

// TestICMP is the RFC 5925 §7.8 table as Linux's tcp_ao_ignore_icmp
// applies it: hard errors are ignored and counted unless the policy
// accepts ICMP.
func TestICMP(t *testing.T) {
	for _, c := range []struct {
		v6        bool
		typ, code uint8
		act       bool // with the default policy
	}{
		{false, 3, 0, true}, // net unreachable
		{false, 3, 1, true}, // host unreachable
		{false, 3, 2, false},
		{false, 3, 3, false},
		{false, 3, 4, false},
		{false, 3, 5, true},
		{false, 3, 13, true},
		{false, 11, 0, true}, // time exceeded
		{false, 4, 2, true},
		{true, 1, 0, true},
		{true, 1, 1, false},
		{true, 1, 2, true},
		{true, 1, 3, true},
		{true, 1, 4, false},
		{true, 1, 5, true},
		{true, 2, 0, true}, // packet too big
		{true, 3, 1, true},
		{true, 3, 4, true},
	} {
		for _, accept := range []bool{false, true} {
			var conn Conn
			conn.policy = Policy{AcceptICMP: accept}
			want := c.act || accept
			if got := conn.ICMP(c.v6, c.typ, c.code); got != want {
				t.Errorf("v6=%v type %d code %d accept=%v: %v, want %v", c.v6, c.typ, c.code, accept, got, want)
			}
			dropped := uint64(0)
			if !want {
				dropped = 1
			}
			if got := conn.Counters().DroppedICMP; got != dropped {
				t.Errorf("v6=%v type %d code %d accept=%v: dropped %d", c.v6, c.typ, c.code, accept, got)
			}
		}
	}
}

// TestConnReuse checks that a Conn set up again for a new connection uses
// the new ISNs: Init after Init, Init after Import.
func TestConnReuse(t *testing.T) {
	r := NewKeyring(nil)
	key := testKey(1)
	mustAdd(t, r, keys.AO{Peer: host(srv4.Addr()), SendID: 1, RecvID: 2, Algorithm: "hmac(sha1)", Key: key})
	var c Conn
	defer c.Close()
	for i, isn := range []uint32{100, 200, 300} {
		if i == 2 {
			if err := restore(&c, r, Endpoint{Local: cli4, Remote: srv4}, Policy{}, Endpoint{LocalISN: 7, RemoteISN: 8, CurrentSendID: 1, RNextRecvID: 2}); err != nil {
				t.Fatal(err)
			}
			if _, err := signData(t, &c, 9); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Init(r, Endpoint{Local: cli4, Remote: srv4, LocalISN: isn}, Policy{}); err != nil {
			t.Fatal(err)
		}
		syn := testSeg(t, cli4, srv4, isn, 0, segment.SYN, 12, nil)
		if err := c.Sign(syn); err != nil {
			t.Fatal(err)
		}
		in := kdf.Input{Src: cli4.Addr(), Dst: srv4.Addr(), SrcPort: cli4.Port(), DstPort: srv4.Port(), SrcISN: isn}
		if want := refMAC(t, "hmac(sha1)", key, in, syn, 0, 12, false); !bytes.Equal(aoOpt(t, syn).MAC, want) {
			t.Fatalf("Init #%d (ISN %d): SYN signed with stale traffic keys", i+1, isn)
		}
	}
}

// TestDeleteReplacementChain checks that a key named as a replacement by a
// forced delete is the connection's current (RNext) key from then on, as
// Linux sets it at once (WRITE_ONCE in tcp_ao_del_cmd): deleting it before
// the connection has sent another segment is busy too, and a forced delete
// of it moves the connection on to its own replacement.
func TestDeleteReplacementChain(t *testing.T) {
	r := NewKeyring(nil)
	k1 := mustAdd(t, r, cfg4("192.0.2.2/32", 1, 2))
	k3 := mustAdd(t, r, cfg4("192.0.2.2/32", 3, 4))
	k5 := mustAdd(t, r, cfg4("192.0.2.2/32", 5, 6))
	c := conn4(t, r, 1, 2)
	if err := r.Delete(k1, DeleteOptions{Current: k3, RNext: k3}); err != nil {
		t.Fatal(err)
	}
	// The connection has not signed since: k3 is nevertheless its key.
	if st := c.Endpoint(); c.Current() != k3 || c.RNext() != k3 || st.CurrentSendID != 3 || st.RNextRecvID != 4 {
		t.Fatalf("after the forced delete: current %v RNext %v, exported %+v", c.Current(), c.RNext(), st)
	}
	if o, err := signData(t, c, 11); err != nil || o.KeyID != 3 || o.RNextKeyID != 4 {
		t.Fatalf("sign: %+v %v", o, err)
	}
	// Again, and this time the replacement is itself force-deleted.
	if err := r.Delete(k3, DeleteOptions{Current: k5, RNext: k5}); err != nil {
		t.Fatal(err)
	}
	k7 := mustAdd(t, r, cfg4("192.0.2.2/32", 7, 8))
	if err := r.Delete(k5, DeleteOptions{Current: k7, RNext: k7}); err != nil {
		t.Fatal(err)
	}
	if o, err := signData(t, c, 15); err != nil || o.KeyID != 7 || o.RNextKeyID != 8 {
		t.Fatalf("sign after two forced deletes: %+v %v", o, err)
	}
	// The last key of the peer: the delete wins and revokes the connection.
	if err := r.Delete(k7, DeleteOptions{}); err != nil {
		t.Fatalf("delete of the current key: %v", err)
	}
	if _, err := signData(t, c, 19); !errors.Is(err, ErrRevoked) {
		t.Fatalf("sign after the last key's delete: %v, want ErrRevoked", err)
	}
}

// TestDefaultKeyIsNewest checks the default current and RNext key of a new
// connection: the most recently added MKT that matches the peer, whatever
// its prefix length, as Linux picks the head of its newest-first key list
// — not the most specific prefix, which is TCP-MD5's
// rule. A deleted default gives way to the next newest.
func TestDefaultKeyIsNewest(t *testing.T) {
	for _, order := range [][]string{{"192.0.2.0/24", "192.0.2.2/32", "0.0.0.0/0"}, {"0.0.0.0/0", "192.0.2.2/32", "192.0.2.0/24"}} {
		r := NewKeyring(nil)
		var mkts []*MKT
		for i, p := range order {
			mkts = append(mkts, mustAdd(t, r, cfg4(p, uint8(10*i+1), uint8(10*i+2))))
		}
		mustAdd(t, r, cfg4("198.51.100.0/24", 100, 101)) // newer, other peer
		for want := len(mkts) - 1; want >= 0; want-- {
			var c Conn
			if err := c.Init(r, Endpoint{Local: cli4, Remote: srv4, LocalISN: 1}, Policy{}); err != nil {
				t.Fatal(err)
			}
			if c.Current() != mkts[want] || c.RNext() != mkts[want] {
				t.Errorf("keys added %v: default current %v, RNext %v, want %v", order, c.Current(), c.RNext(), mkts[want])
			}
			c.Close()
			if err := r.Delete(mkts[want], DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		var c Conn
		if err := c.Init(r, Endpoint{Local: cli4, Remote: srv4, LocalISN: 1}, Policy{}); !errors.Is(err, ErrNoCurrentKey) {
			t.Errorf("Init with no matching key: %v, want ErrNoCurrentKey", err)
		}
	}
}

// TestMKTHoldsPoolEntry: each MKT holds a reference on its algorithm's
// pool entry from its add to its wipe, so the entry (and every shard's
// context of the algorithm) goes with the algorithm's last MKT, and a
// connection that used it has given nothing back late.
func TestMKTHoldsPoolEntry(t *testing.T) {
	pool, _ := sigpool.New(sigpool.Config{Shards: 2})
	r := NewKeyring(pool)
	a := mustAdd(t, r, cfg4("192.0.2.0/24", 1, 1))
	b := mustAdd(t, r, cfg4("198.51.100.0/24", 2, 2))
	c := restoredOn(t, r, "192.0.2.7", 1, 1)
	if a.poolID != b.poolID {
		t.Fatalf("two hmac(sha1) MKTs on entries %d and %d", a.poolID, b.poolID)
	}
	c.Close()
	if err := r.Delete(a, DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	req, err := pool.Start(b.poolID)
	if err != nil {
		t.Fatalf("the entry went while an MKT of its algorithm is left: %v", err)
	}
	req.End()
	if err := r.Delete(b, DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Start(b.poolID); !errors.Is(err, sigpool.ErrNotAllocated) {
		t.Fatalf("the entry outlived its algorithm's last MKT: %v", err)
	}
}
