package md5sig

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/segment"
	"github.com/tcpsig/tcpsig/sigpool"
)

func TestAppendOption(t *testing.T) {
	got := AppendOption([]byte{0xaa})
	want := append([]byte{0xaa, 1, 1, 19, 18}, make([]byte, 16)...)
	if !bytes.Equal(got, want) {
		t.Fatalf("AppendOption = %x, want %x", got, want)
	}
	if len(got)-1 != OptionSpace || OptionSpace%4 != 0 {
		t.Fatalf("option space %d", len(got)-1)
	}
}

// Sign then Verify, IPv4 and IPv6, with the payload contiguous, scattered
// over fragments, and as a whole packet; every digest is also checked
// against crypto/md5 directly.
func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct{ name, a, b string }{
		{"IPv4", "192.0.2.1", "192.0.2.2"},
		{"IPv6", "2001:db8::1", "2001:db8::2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := addr(tc.a), addr(tc.b)
			key := []byte("bgp-session-secret")
			ra, rb := NewKeyring(nil), NewKeyring(nil)
			mustAdd(t, ra, keys.MD5{Peer: netip.PrefixFrom(b, b.BitLen()), Key: key})
			mustAdd(t, rb, keys.MD5{Peer: netip.PrefixFrom(a, a.BitLen()), Key: key})

			payload := bytes.Repeat([]byte("0123456789abcdef"), 100)
			hdr := tcpHeader(40000, 179, 1000, 2000, segment.ACK|segment.PSH, true, 8, 10, 1, 2, 3, 4, 5, 6, 7, 8)
			layouts := map[string]func() segment.Segment{
				"contiguous": func() segment.Segment {
					return mustSeg(t, a, b, append(append([]byte(nil), hdr...), payload...))
				},
				"scattered": func() segment.Segment {
					tcp := append(append([]byte(nil), hdr...), payload[:7]...)
					frags := [][]byte{payload[7:100], nil, payload[100:101], payload[101:]}
					return mustSeg(t, a, b, tcp, frags...)
				},
				"frags only": func() segment.Segment {
					return mustSeg(t, a, b, append([]byte(nil), hdr...), payload[:1000], payload[1000:])
				},
				"packet": func() segment.Segment {
					s, err := segment.ParsePacket(packet(a, b, append(append([]byte(nil), hdr...), payload...)))
					if err != nil {
						t.Fatal(err)
					}
					return s
				},
				"no payload": func() segment.Segment {
					return mustSeg(t, a, b, append([]byte(nil), hdr...))
				},
			}
			var first []byte
			for name, mk := range layouts {
				seg := mk()
				if err := ra.Sign(&seg, 0); err != nil {
					t.Fatalf("%s: Sign: %v", name, err)
				}
				got := digestOf(t, &seg)
				want := refDigest(a, b, whole(&seg), key)
				if !bytes.Equal(got, want[:]) {
					t.Fatalf("%s: digest %x, crypto/md5 reference %x", name, got, want)
				}
				if err := rb.Verify(&seg, 0); err != nil {
					t.Fatalf("%s: Verify: %v", name, err)
				}
				if name != "no payload" {
					if first == nil {
						first = append([]byte(nil), got...)
					} else if !bytes.Equal(first, got) {
						t.Fatalf("%s: digest %x differs from another layout's %x", name, got, first)
					}
				}
			}
			if c := rb.Counters(); c != (Counters{Good: uint64(len(layouts))}) {
				t.Fatalf("counters %+v", c)
			}
		})
	}
}

// The digest covers the pseudo-header, the 20-byte header, the payload and
// the key, and nothing else: one flipped byte in each covered place fails,
// in the checksum or another option it does not.
func TestCoverage(t *testing.T) {
	a, b := addr("10.0.0.1"), addr("10.0.0.2")
	key := []byte("k")
	r := NewKeyring(nil)
	mustAdd(t, r, keys.MD5{Peer: pfx("10.0.0.0/8"), Key: key})
	mss := []byte{2, 4, 0x05, 0xb4}
	tcp := append(tcpHeader(1, 2, 3, 4, segment.ACK, true, mss...), "payload"...)
	pkt := packet(a, b, tcp)
	seg, _ := segment.ParsePacket(pkt)
	if err := r.Sign(&seg, 0); err != nil {
		t.Fatal(err)
	}
	const ip = 20
	covered := map[string]int{"src addr": 15, "dst addr": 19, "seq": ip + 4, "flags": ip + 13, "window": ip + 15,
		"urgent": ip + 19, "digest": ip + 20 + 4 + 7, "payload": len(pkt) - 1}
	for name, off := range covered {
		bad := append([]byte(nil), pkt...)
		bad[off] ^= 1
		s, err := segment.ParsePacket(bad)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Verify(&s, 0); !errors.Is(err, ErrBadMAC) {
			t.Errorf("flipped %s: Verify = %v, want ErrBadMAC", name, err)
		}
	}
	for name, off := range map[string]int{"checksum": ip + 16, "mss option": ip + 20 + 20 + 3} {
		odd := append([]byte(nil), pkt...)
		odd[off] ^= 1
		s, _ := segment.ParsePacket(odd)
		if err := r.Verify(&s, 0); err != nil {
			t.Errorf("flipped %s (not covered): Verify = %v", name, err)
		}
	}
}

func TestDecisionTable(t *testing.T) {
	a, b := addr("198.51.100.7"), addr("198.51.100.1")
	signer := NewKeyring(nil)
	mustAdd(t, signer, keys.MD5{Peer: pfx("198.51.100.1/32"), Key: []byte("secret")})
	signed := mustSeg(t, a, b, tcpHeader(1, 2, 3, 4, segment.ACK, true))
	if err := signer.Sign(&signed, 0); err != nil {
		t.Fatal(err)
	}
	forged := mustSeg(t, a, b, bytes.Clone(signed.Header()))
	digestOf(t, &forged)[0] ^= 0x80
	unsigned := mustSeg(t, a, b, tcpHeader(1, 2, 3, 4, segment.ACK, false))
	ao := mustSeg(t, a, b, tcpHeader(1, 2, 3, 4, segment.ACK, false, 29, 16, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))

	withKey := func() *Keyring {
		r := NewKeyring(nil)
		mustAdd(t, r, keys.MD5{Peer: pfx("198.51.100.0/24"), Key: []byte("secret")})
		return r
	}
	for _, tc := range []struct {
		name string
		ring *Keyring
		seg  segment.Segment
		want error
		c    Counters
	}{
		{"no key, no option", NewKeyring(nil), unsigned, nil, Counters{}},
		{"key, no option", withKey(), unsigned, ErrMissing, Counters{Missing: 1}},
		{"option, no key", NewKeyring(nil), signed, ErrUnexpected, Counters{Unexpected: 1}},
		{"good signature", withKey(), signed, nil, Counters{Good: 1}},
		{"bad signature", withKey(), forged, ErrBadMAC, Counters{Bad: 1}},
		{"AO option, key", withKey(), ao, ErrAOOption, Counters{}},
		{"AO option, no key", NewKeyring(nil), ao, ErrAOOption, Counters{}},
	} {
		err := tc.ring.Verify(&tc.seg, 0)
		if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
			t.Errorf("%s: Verify = %v, want %v", tc.name, err, tc.want)
		}
		if c := tc.ring.Counters(); c != tc.c {
			t.Errorf("%s: counters %+v, want %+v", tc.name, c, tc.c)
		}
		if k := tc.ring.Lookup(a, 0); k != nil {
			good, bad := k.Counters()
			if good != tc.c.Good || bad != tc.c.Bad {
				t.Errorf("%s: key counters %d/%d, want %d/%d", tc.name, good, bad, tc.c.Good, tc.c.Bad)
			}
		}
	}

	// Sign's own refusals.
	r := withKey()
	if err := r.Sign(&unsigned, 0); !errors.Is(err, ErrNoOption) {
		t.Errorf("Sign without option: %v", err)
	}
	s := mustSeg(t, b, addr("192.0.2.1"), tcpHeader(1, 2, 3, 4, segment.ACK, true))
	if err := r.Sign(&s, 0); !errors.Is(err, ErrNoKey) {
		t.Errorf("Sign without key: %v", err)
	}
	if c := r.Counters(); c != (Counters{KeyNotFound: 1}) {
		t.Errorf("counters after Sign without key: %+v", c)
	}
}

// Malformed options are refused with segment's typed errors, at parse time
// and again by Verify and Sign if the header changed after parsing.
func TestMalformedOptions(t *testing.T) {
	a, b := addr("10.1.1.1"), addr("10.1.1.2")
	r := NewKeyring(nil)
	mustAdd(t, r, keys.MD5{Peer: pfx("10.1.1.0/24"), Key: []byte("x")})
	md5opt := AppendOption(nil)[2:]
	aoopt := []byte{29, 16, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	for _, tc := range []struct {
		name  string
		extra []byte
		want  error
	}{
		{"duplicate MD5", md5opt, segment.ErrDuplicateAuth},
		{"MD5 and AO", aoopt, segment.ErrBothAuth},
		{"MD5 of length 17", append([]byte{19, 17}, make([]byte, 15)...), segment.ErrAuthOption},
		{"option past the header", []byte{8, 40, 0, 0, 0, 0}, segment.ErrOptionLength},
	} {
		tcp := tcpHeader(1, 2, 3, 4, segment.ACK, true, tc.extra...)
		if _, err := segment.FromTCP(a, b, tcp); !errors.Is(err, tc.want) {
			t.Errorf("%s: FromTCP = %v, want %v", tc.name, err, tc.want)
		}
	}
	// A parsed header whose MD5 option was overwritten afterwards: the
	// one check refuses it, as it refuses a Segment the parser did not
	// make (options changed elsewhere in the header are judged as parsed:
	// a stack that changes them parses again).
	seg := mustSeg(t, a, b, tcpHeader(1, 2, 3, 4, segment.ACK, true))
	seg.Header()[seg.Auth().MD5] = segment.OptionKindNOP
	if err := r.Verify(&seg, 0); !errors.Is(err, segment.ErrUnparsed) {
		t.Errorf("MD5 option overwritten after the parse: Verify = %v", err)
	}
	if err := r.Sign(&seg, 0); !errors.Is(err, segment.ErrUnparsed) {
		t.Errorf("MD5 option overwritten after the parse: Sign = %v", err)
	}
	var zero segment.Segment // its fields are the parser's to set: a zero one is all a caller can make
	if err := r.Verify(&zero, 0); !errors.Is(err, segment.ErrUnparsed) {
		t.Errorf("zero Segment: %v", err)
	}
}

// Key selection: longest prefix; a key bound to an L3 index only in that
// domain, winning over unbound keys even with a shorter prefix; a key
// bound to the default domain (index 0) only outside VRFs; IPv4-mapped
// prefixes and addresses as IPv4.
func TestSelection(t *testing.T) {
	r := NewKeyring(nil)
	add := func(p string, l3 int, bound bool, key string) *Key {
		return mustAdd(t, r, keys.MD5{Peer: pfx(p), Key: []byte(key), IfIndex: l3, HasIfIndex: bound})
	}
	any4 := add("0.0.0.0/0", 0, false, "any4")
	net8 := add("10.0.0.0/8", 0, false, "net8")
	net24 := add("10.1.2.0/24", 0, false, "net24")
	host := add("10.1.2.3/32", 0, false, "host")
	vrf5 := add("10.0.0.0/8", 5, true, "vrf5/8")
	vrf5h := add("10.9.9.9/32", 5, true, "vrf5/32")
	vrf0 := add("10.1.2.0/25", 0, true, "vrf0/25")
	v6 := add("2001:db8::/32", 0, false, "v6")
	mapped := add("::ffff:172.16.0.0/108", 0, false, "mapped") // 172.16.0.0/12
	if r.Len() != 9 {
		t.Fatalf("Len = %d", r.Len())
	}
	for _, tc := range []struct {
		addr string
		l3   int
		want *Key
	}{
		{"10.1.2.3", 0, host},
		{"10.1.2.4", 0, vrf0}, // /25 bound to domain 0 beats /24 unbound there
		{"10.1.2.200", 0, net24},
		{"10.1.3.1", 0, net8},
		{"11.0.0.1", 0, any4},
		{"10.1.2.3", 5, vrf5},  // bound to 5 beats the unbound /32
		{"10.9.9.9", 5, vrf5h}, // longest among the bound
		{"11.0.0.1", 5, any4},  // no bound key covers it: unbound
		{"10.1.2.4", 7, net24}, // the domain-0 key does not apply in 7
		{"10.1.2.3", 7, host},  // unbound keys apply in every domain
		{"::ffff:10.1.2.3", 0, host},
		{"172.20.0.1", 0, mapped},
		{"2001:db8::1", 0, v6},
		{"2001:db9::1", 0, nil}, // no IPv6 key covers it; IPv4 /0 does not
	} {
		if got := r.Lookup(addr(tc.addr), tc.l3); got != tc.want {
			t.Errorf("Lookup(%s, %d) = %v, want %v", tc.addr, tc.l3, got, tc.want)
		}
	}
	if p := mapped.Peer(); p != pfx("172.16.0.0/12") {
		t.Errorf("mapped peer stored as %v", p)
	}

	// Sign picks by destination and Verify by source, in the given domain.
	src := addr("192.0.2.1")
	for _, tc := range []struct {
		peer string
		l3   int
		key  string
	}{{"10.1.2.3", 0, "host"}, {"10.1.2.3", 5, "vrf5/8"}, {"10.1.2.4", 0, "vrf0/25"}, {"10.77.0.1", 0, "net8"}} {
		seg := mustSeg(t, src, addr(tc.peer), tcpHeader(1, 2, 3, 4, segment.ACK, true), []byte("data"))
		if err := r.Sign(&seg, tc.l3); err != nil {
			t.Fatal(err)
		}
		want := refDigest(seg.Src(), seg.Dst(), whole(&seg), []byte(tc.key))
		if !bytes.Equal(digestOf(t, &seg), want[:]) {
			t.Errorf("Sign to %s in %d did not use key %q", tc.peer, tc.l3, tc.key)
		}
		in := mustSeg(t, addr(tc.peer), src, bytes.Clone(seg.Header()), []byte("data"))
		copy(digestOf(t, &in), refDigestSlice(in.Src(), in.Dst(), whole(&in), []byte(tc.key)))
		if err := r.Verify(&in, tc.l3); err != nil {
			t.Errorf("Verify from %s in %d with key %q: %v", tc.peer, tc.l3, tc.key, err)
		}
	}

	// Find matches exactly, as Linux's delete by description does.
	for _, tc := range []struct {
		p     string
		l3    int
		bound bool
		want  *Key
	}{
		{"10.0.0.0/8", 0, false, net8}, {"10.0.0.0/8", 5, true, vrf5}, {"10.1.2.0/25", 0, true, vrf0},
		{"10.1.2.0/25", 0, false, nil}, {"10.0.0.0/9", 0, false, nil}, {"10.1.2.77/24", 0, false, nil},
		{"::ffff:10.1.2.3/128", 0, false, host}, {"10.0.0.0/8", 6, true, nil},
	} {
		if got := r.Find(pfx(tc.p), tc.l3, tc.bound); got != tc.want {
			t.Errorf("Find(%s, %d, %v) = %v, want %v", tc.p, tc.l3, tc.bound, got, tc.want)
		}
	}
}

func refDigestSlice(src, dst netip.Addr, tcp, key []byte) []byte {
	d := refDigest(src, dst, tcp, key)
	return d[:]
}

func TestKeyLengths(t *testing.T) {
	r := new(Keyring) // the zero Keyring works, on sigpool.Default
	for _, n := range []int{0, 81, 200} {
		if _, err := r.Add(keys.MD5{Peer: pfx("10.0.0.1/32"), Key: make([]byte, n)}); !errors.Is(err, keys.ErrInvalid) {
			t.Errorf("%d-byte key: %v, want keys.ErrInvalid", n, err)
		}
	}
	if r.Len() != 0 {
		t.Fatalf("refused keys were added: %d", r.Len())
	}
	a, b := addr("10.0.0.2"), addr("10.0.0.1")
	for _, n := range []int{1, 16, 80} {
		key := bytes.Repeat([]byte{byte(n)}, n)
		mustAdd(t, r, keys.MD5{Peer: pfx("10.0.0.1/32"), Key: key})
		seg := mustSeg(t, a, b, tcpHeader(1, 2, 3, 4, segment.SYN, true))
		if err := r.Sign(&seg, 0); err != nil {
			t.Fatal(err)
		}
		want := refDigest(a, b, whole(&seg), key)
		if !bytes.Equal(digestOf(t, &seg), want[:]) {
			t.Errorf("%d-byte key: digest differs from crypto/md5", n)
		}
	}
	for _, cfg := range []keys.MD5{
		{Peer: netip.Prefix{}, Key: []byte("k")},
		{Peer: pfx("::ffff:0.0.0.0/95"), Key: []byte("k")},
		{Peer: pfx("10.0.0.0/8"), Key: []byte("k"), IfIndex: 3},
		{Peer: pfx("10.0.0.0/8"), Key: []byte("k"), IfIndex: -1, HasIfIndex: true},
	} {
		if _, err := r.Add(cfg); !errors.Is(err, keys.ErrInvalid) {
			t.Errorf("Add(%v) = %v, want keys.ErrInvalid", cfg, err)
		}
	}
}

// Adding a key with the same prefix and binding replaces the old one
// (Linux's setsockopt overwrites it); the old handle goes stale and its
// bytes are wiped.
func TestReplace(t *testing.T) {
	r := NewKeyring(nil)
	old := mustAdd(t, r, keys.MD5{Peer: pfx("10.0.0.0/24"), Key: []byte("old")})
	other := mustAdd(t, r, keys.MD5{Peer: pfx("10.0.0.0/24"), Key: []byte("bound"), HasIfIndex: true})
	cur := mustAdd(t, r, keys.MD5{Peer: pfx("10.0.0.0/24"), Key: []byte("new")})
	if _, err := r.Add(keys.MD5{Peer: pfx("10.0.0.9/24"), Key: []byte("x")}); !errors.Is(err, keys.ErrInvalid) {
		t.Fatalf("prefix with host bits: %v, want keys.ErrInvalid", err)
	}
	if r.Len() != 2 {
		t.Fatalf("Len = %d, want 2", r.Len())
	}
	if got := r.Find(pfx("10.0.0.0/24"), 0, false); got != cur {
		t.Fatalf("Find = %v, want the new key", got)
	}
	if got := r.Find(pfx("10.0.0.0/24"), 0, true); got != other {
		t.Fatalf("the key bound to domain 0 was replaced too")
	}
	if err := r.Delete(old, DeleteOptions{}); !errors.Is(err, ErrNoSuchKey) {
		t.Fatalf("Delete of the replaced key: %v", err)
	}
	if !old.secret.Empty() {
		t.Fatal("replaced key not wiped")
	}
	a, b := addr("10.0.0.1"), addr("10.0.0.5")
	seg := mustSeg(t, a, b, tcpHeader(1, 2, 3, 4, segment.ACK, true))
	if err := r.Sign(&seg, 3); err != nil {
		t.Fatal(err)
	}
	if want := refDigest(a, b, whole(&seg), []byte("new")); !bytes.Equal(digestOf(t, &seg), want[:]) {
		t.Fatal("Sign did not use the replacing key")
	}
}

func TestDelete(t *testing.T) {
	pool, _ := sigpool.New(sigpool.Config{Shards: 2})
	r := NewKeyring(pool)
	k := mustAdd(t, r, keys.MD5{Peer: pfx("2001:db8::/64"), Key: []byte("sync")})
	req, err := pool.Start(k.poolID)
	if err != nil {
		t.Fatalf("key holds no pool entry: %v", err)
	}
	req.End()
	if err := r.Delete(k, DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if !k.secret.Empty() {
		t.Fatal("synchronous delete returned before the wipe")
	}
	// The refcount: the key held the pool's entry, and it went with it.
	if _, err := pool.Start(k.poolID); !errors.Is(err, sigpool.ErrNotAllocated) {
		t.Fatalf("the pool's entry outlived its last key: %v", err)
	}
	if r.Len() != 0 || r.Lookup(addr("2001:db8::1"), 0) != nil {
		t.Fatal("deleted key still found")
	}
	if err := r.Delete(k, DeleteOptions{}); !errors.Is(err, ErrNoSuchKey) {
		t.Fatalf("second delete: %v", err)
	}
	if err := NewKeyring(pool).Delete(mustAdd(t, r, keys.MD5{Peer: pfx("::/0"), Key: []byte("x")}), DeleteOptions{}); !errors.Is(err, ErrNoSuchKey) {
		t.Fatalf("delete from another keyring: %v", err)
	}
	if err := r.Delete(nil, DeleteOptions{}); !errors.Is(err, ErrNoSuchKey) {
		t.Fatalf("delete of nil: %v", err)
	}

	// Async delete while a reader holds the key: the wipe waits for it.
	k = mustAdd(t, r, keys.MD5{Peer: pfx("2001:db8::/64"), Key: []byte("async")})
	g := r.group(addr("2001:db8::2"), 0)
	got, pin, _ := g.signer(nil)
	if got != k {
		t.Fatal("the signer's pin found another key")
	}
	if err := r.Delete(k, DeleteOptions{Async: true}); err != nil {
		t.Fatal(err)
	}
	if r.Lookup(addr("2001:db8::2"), 0) == k {
		t.Fatal("async-deleted key still found")
	}
	if k.secret.Algorithm() == nil {
		t.Fatal("async delete wiped a key a reader holds")
	}
	k.guard.Release(pin)
	if !k.secret.Empty() {
		t.Fatal("key not wiped after its last reader")
	}
}

// No key byte, raw or hex, appears in any formatting of a keys.MD5, a Key
// or a Keyring.
func TestFormatRedacts(t *testing.T) {
	// The key's first four bytes in hex hold letters (4b33792d): an
	// all-digit needle turns up inside a random number printed in decimal
	// (a hash seed did once).
	secret := []byte("K3y-Sup3r-Secr3t-BGP")
	r := NewKeyring(nil)
	k := mustAdd(t, r, keys.MD5{Peer: pfx("10.0.0.0/8"), Key: secret, IfIndex: 4, HasIfIndex: true})
	cfg := keys.MD5{Peer: pfx("10.0.0.0/8"), Key: secret}
	type wrapper struct {
		C keys.MD5
		K *Key
	}
	needles := []string{string(secret), hex.EncodeToString(secret), strings.ToUpper(hex.EncodeToString(secret)),
		fmt.Sprint(secret), fmt.Sprintf("%v", []byte(secret)[:4]), hex.EncodeToString(secret[:4])}
	keyValue := reflect.ValueOf(k).Elem().Interface() // a Key copied by value: vet would refuse *k
	for _, v := range []any{cfg, &cfg, k, keyValue, *k.secret, k.secret, r, wrapper{cfg, k}, []*Key{k}, map[string]keys.MD5{"x": cfg}} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%X", "%q", "%d"} {
			out := fmt.Sprintf(verb, v)
			for _, n := range needles {
				if strings.Contains(out, n) {
					t.Errorf("fmt %s of %T shows the key: %s", verb, v, out)
				}
			}
		}
	}
	if s := k.String(); !strings.Contains(s, "10.0.0.0/8") || !strings.Contains(s, "ifindex 4") || !strings.Contains(s, "redacted") {
		t.Errorf("Key.String = %q", s)
	}
}

// Sign and Verify allocate nothing.
func TestZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	a, b := addr("192.0.2.1"), addr("192.0.2.2")
	r := NewKeyring(nil)
	mustAdd(t, r, keys.MD5{Peer: pfx("192.0.2.0/24"), Key: []byte("alloc-free")})
	mustAdd(t, r, keys.MD5{Peer: pfx("192.0.2.0/24"), Key: []byte("vrf"), IfIndex: 9, HasIfIndex: true})
	payload := make([]byte, 1448)
	frags := [][]byte{payload[:1000], payload[1000:]}
	seg := mustSeg(t, a, b, tcpHeader(1, 2, 3, 4, segment.ACK, true), frags...)
	in := mustSeg(t, b, a, tcpHeader(1, 2, 3, 4, segment.ACK, true), frags...)
	for _, l3 := range []int{0, 9} {
		if n := testing.AllocsPerRun(200, func() {
			if err := r.Sign(&seg, l3); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("Sign (l3 %d): %v allocs/op", l3, n)
		}
		if err := r.Sign(&in, l3); err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(200, func() {
			if err := r.Verify(&in, l3); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("Verify (l3 %d): %v allocs/op", l3, n)
		}
	}
}
