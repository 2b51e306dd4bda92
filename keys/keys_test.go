package keys

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/tcpsig/tcpsig/mac"
)

func TestValidateAO(t *testing.T) {
	ok := AO{Peer: netip.MustParsePrefix("192.0.2.0/24"), SendID: 1, RecvID: 2, Algorithm: "hmac(sha1)", Key: []byte("k")}
	with := func(f func(*AO)) AO { c := ok; f(&c); return c }
	for _, tc := range []struct {
		name string
		c    AO
		want error
	}{
		{"valid", ok, nil},
		{"RFC 5926 name", with(func(c *AO) { c.Algorithm = "HMAC-SHA-1-96" }), nil},
		{"unknown algorithm", with(func(c *AO) { c.Algorithm = "hmac(crc32)" }), ErrInvalid},
		{"TCP-MD5 is no MKT algorithm", with(func(c *AO) { c.Algorithm = "md5" }), ErrInvalid},
		{"empty key", with(func(c *AO) { c.Key = nil }), ErrInvalid},
		{"81-byte key", with(func(c *AO) { c.Key = make([]byte, 81) }), ErrInvalid},
		{"80-byte key", with(func(c *AO) { c.Key = make([]byte, 80) }), nil},
		// RFC 5926 §3.1.1.2 reduces any cmac(aes128) master key; Linux's
		// cmac(aes) takes 16 or 32 bytes only.
		{"cmac(aes128), 7 bytes", with(func(c *AO) { c.Algorithm = "cmac(aes128)"; c.Key = make([]byte, 7) }), nil},
		{"cmac(aes), 24 bytes", with(func(c *AO) { c.Algorithm = "cmac(aes)"; c.Key = make([]byte, 24) }), ErrInvalid},
		{"cmac(aes), 32 bytes", with(func(c *AO) { c.Algorithm = "cmac(aes)"; c.Key = make([]byte, 32) }), nil},
		{"maclen 16", with(func(c *AO) { c.MACLen = 16 }), nil},
		{"maclen 17", with(func(c *AO) { c.MACLen = 17 }), ErrMACTooLong},
		{"maclen -1", with(func(c *AO) { c.MACLen = -1 }), ErrMACTooLong},
		{"maclen beyond a 16-byte digest", with(func(c *AO) { c.Algorithm = "hmac(md5)"; c.MACLen = 16 }), nil},
		{"no peer", with(func(c *AO) { c.Peer = netip.Prefix{} }), ErrInvalid},
		{"host bits set", with(func(c *AO) { c.Peer = netip.MustParsePrefix("192.0.2.1/24") }), ErrInvalid},
		{"ifindex without the flag", with(func(c *AO) { c.IfIndex = 3 }), ErrInvalid},
		{"ifindex with the flag", with(func(c *AO) { c.IfIndex, c.HasIfIndex = 3, true }), nil},
		// draft-ietf-tcpm-tcp-ao-algs: 16-byte MACs only, master keys of
		// at least 32 bytes, as properties of the algorithm.
		{"kmac256-128, 32-byte key", with(func(c *AO) { c.Algorithm = "kmac256-128"; c.Key = make([]byte, 32) }), nil},
		{"hmac-sha256-128 maclen 12", with(func(c *AO) { c.Algorithm = "hmac-sha256-128"; c.Key = make([]byte, 32); c.MACLen = 12 }), mac.ErrMACLen},
		{"hmac-sha256-128 31-byte key", with(func(c *AO) { c.Algorithm = "hmac-sha256-128"; c.Key = make([]byte, 31) }), mac.ErrMasterKeyLen},
	} {
		_, err := tc.c.Validate()
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: Validate = %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestValidateAONormalises(t *testing.T) {
	c, err := AO{Peer: netip.MustParsePrefix("::ffff:192.0.2.0/120"), Algorithm: "HMAC-SHA-1-96", Key: []byte("k")}.Validate()
	if err != nil {
		t.Fatal(err)
	}
	if c.Peer != netip.MustParsePrefix("192.0.2.0/24") || c.MACLen != DefaultMACLen || c.Algorithm != "hmac(sha1)" {
		t.Errorf("Validate = %v, want peer 192.0.2.0/24, maclen 12, hmac(sha1)", c)
	}
	c, err = AO{Peer: netip.MustParsePrefix("::/0"), Algorithm: "KMAC256-128", Key: make([]byte, 32)}.Validate()
	if err != nil || c.MACLen != 16 || c.Algorithm != "kmac256-128" {
		t.Errorf("Validate = %v, %v; want maclen 16, kmac256-128", c, err)
	}
}

func TestValidateMD5(t *testing.T) {
	ok := MD5{Peer: netip.MustParsePrefix("198.51.100.7/32"), Key: []byte("secret")}
	with := func(f func(*MD5)) MD5 { c := ok; f(&c); return c }
	for _, tc := range []struct {
		name string
		c    MD5
		want error
	}{
		{"valid", ok, nil},
		{"empty key", with(func(c *MD5) { c.Key = []byte{} }), ErrInvalid},
		{"81-byte key", with(func(c *MD5) { c.Key = make([]byte, 81) }), ErrInvalid},
		{"no peer", with(func(c *MD5) { c.Peer = netip.Prefix{} }), ErrInvalid},
		{"host bits set", with(func(c *MD5) { c.Peer = netip.MustParsePrefix("198.51.100.7/24") }), ErrInvalid},
		{"IPv4-mapped /96", with(func(c *MD5) { c.Peer = netip.MustParsePrefix("::ffff:0.0.0.0/96") }), nil},
		{"IPv4-mapped /80", with(func(c *MD5) { c.Peer = netip.MustParsePrefix("::ffff:0.0.0.0/80") }), ErrInvalid},
		{"negative ifindex", with(func(c *MD5) { c.IfIndex, c.HasIfIndex = -1, true }), ErrInvalid},
		{"ifindex without the flag", with(func(c *MD5) { c.IfIndex = 2 }), ErrInvalid},
	} {
		_, err := tc.c.Validate()
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: Validate = %v, want %v", tc.name, err, tc.want)
		}
	}
}

// No verb prints key bytes, of either kind, nor does an error.
func TestRedacted(t *testing.T) {
	key := []byte("TOPSECRETKEY")
	a := AO{Peer: netip.MustParsePrefix("192.0.2.0/24"), Algorithm: "hmac(sha1)", Key: key, MACLen: 99}
	m := MD5{Peer: netip.MustParsePrefix("192.0.2.0/24"), Key: key, IfIndex: -1}
	_, errA := a.Validate()
	_, errM := m.Validate()
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%X", "%q"} {
		for _, v := range []any{a, m, &a, &m, []AO{a}, errA, errM} {
			out := fmt.Sprintf(verb, v)
			if strings.Contains(out, "TOPSECRET") || strings.Contains(strings.ToLower(out), fmt.Sprintf("%x", key[:4])) {
				t.Errorf("%s of %T prints the key: %s", verb, v, out)
			}
		}
	}
}

// EntryError is the entry's label, then its error, which errors.Is finds.
func TestEntryError(t *testing.T) {
	for _, c := range []struct {
		e    EntryError
		want string
	}{
		{EntryError{Kind: "ao", Index: 3, Name: "r1", Err: ErrInvalid}, `ao[3] ("r1"): keys: invalid`},
		{EntryError{Kind: "md5", Index: 0, Err: ErrMACTooLong}, `md5[0]: keys: MAC length does not fit the SYN option space`},
	} {
		err := error(&c.e)
		if err.Error() != c.want || !errors.Is(err, c.e.Err) {
			t.Errorf("%q, want %q (Is %v)", err, c.want, errors.Is(err, c.e.Err))
		}
	}
}

// An EntryError a careless caller built, zero, without Err, or nil,
// says so and unwraps to ErrNoCause: never a panic.
func TestEntryErrorMisuse(t *testing.T) {
	for _, c := range []struct {
		e    *EntryError
		want string
	}{
		{&EntryError{}, `entry[0]: keys: entry error without a cause`},
		{&EntryError{Kind: "ao", Index: 2, Name: "r1"}, `ao[2] ("r1"): keys: entry error without a cause`},
		{&EntryError{Index: -1, Err: ErrInvalid}, `entry[-1]: keys: invalid`},
		{nil, `keys: nil *EntryError`},
	} {
		var msg string
		var unwrapped error
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%#v panics: %v", c.e, r)
				}
			}()
			msg, unwrapped = c.e.Error(), c.e.Unwrap()
		}()
		want := ErrNoCause
		if c.e != nil && c.e.Err != nil {
			want = c.e.Err
		}
		if msg != c.want || unwrapped != want || !errors.Is(c.e, want) {
			t.Errorf("%#v: %q, unwraps to %v; want %q, %v", c.e, msg, unwrapped, c.want, want)
		}
	}
}

// TestAOClashes: the one KeyID-clash rule (RFC 5925 §3.1, Linux's
// EEXIST), which the keyring, the shim's file check and reload, and
// pcapverify's grouping all use.
func TestAOClashes(t *testing.T) {
	base := AO{Peer: netip.MustParsePrefix("192.0.2.0/24"), SendID: 1, RecvID: 2}
	for _, c := range []struct {
		name string
		o    AO
		want bool
	}{
		{"same IDs, same peer", base, true},
		{"same SendID, a peer inside", AO{Peer: netip.MustParsePrefix("192.0.2.9/32"), SendID: 1, RecvID: 9}, true},
		{"same RecvID", AO{Peer: base.Peer, SendID: 9, RecvID: 2}, true},
		{"other IDs", AO{Peer: base.Peer, SendID: 2, RecvID: 1}, false},
		{"disjoint peers", AO{Peer: netip.MustParsePrefix("198.51.100.0/24"), SendID: 1, RecvID: 2}, false},
		{"one bound to a domain, one to none", AO{Peer: base.Peer, SendID: 1, RecvID: 2, IfIndex: 7, HasIfIndex: true}, true},
	} {
		if got := base.Clashes(c.o); got != c.want || c.o.Clashes(base) != c.want {
			t.Errorf("%s: Clashes %v, want %v (both ways)", c.name, got, c.want)
		}
	}
	a := AO{Peer: base.Peer, SendID: 1, RecvID: 2, IfIndex: 7, HasIfIndex: true}
	b := AO{Peer: base.Peer, SendID: 1, RecvID: 2, IfIndex: 8, HasIfIndex: true}
	if a.Clashes(b) {
		t.Error("the same IDs bound to two L3 domains clash; they do not overlap")
	}
}
