package ao

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/tcpsig/tcpsig/kdf"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/mac"
	"github.com/tcpsig/tcpsig/segment"
)

// secretKey is the master key of the formatting test: printable, so that
// a raw leak is a substring, and long enough not to appear by chance.
var secretKey = []byte("Sup3r-Secret-MKT-Key-0123456789")

// leakForms returns the ways a byte string shows up in formatted output:
// raw, hex either case, and Go's %v and %#v of a []byte.
func leakForms(b []byte) []string {
	v := fmt.Sprint(b)
	gv := fmt.Sprintf("%#v", b)
	return []string{
		string(b),
		hex.EncodeToString(b),
		strings.ToUpper(hex.EncodeToString(b)),
		v[1 : len(v)-1], // "83 117 112 ..."
		gv[strings.Index(gv, "{")+1 : strings.Index(gv, "}")], // "0x53, 0x75, ..."
	}
}

// TestFormatNoKey formats every key-bearing type, and the errors every API
// returns around a known key, with every verb, and searches the output
// for the master key (raw, hex, byte lists) and for the connection's
// traffic keys (hex, byte lists).
func TestFormatNoKey(t *testing.T) {
	ring := NewKeyring(nil)
	cfg := keys.AO{Peer: host(srv4.Addr()), SendID: 1, RecvID: 2, Algorithm: "hmac(sha256)", Key: secretKey, ExcludeOptions: true, IfIndex: 3, HasIfIndex: true}
	m := mustAdd(t, ring, cfg)
	cmac := mustAdd(t, ring, keys.AO{Peer: host(srv4.Addr()), SendID: 3, RecvID: 4, Algorithm: "cmac(aes128)", Key: secretKey[:16]})
	sring := NewKeyring(nil)
	mustAdd(t, sring, keys.AO{Peer: host(cli4.Addr()), SendID: 2, RecvID: 1, Algorithm: "hmac(sha256)", Key: secretKey, ExcludeOptions: true, IfIndex: 3, HasIfIndex: true})

	// A live connection with derived, cached traffic keys in every slot
	// it uses, and an accepted one.
	var c, s Conn
	defer c.Close()
	defer s.Close()
	if err := c.Init(ring, Endpoint{Local: cli4, Remote: srv4, L3Index: 3, LocalISN: 77}, Policy{}); err != nil {
		t.Fatal(err)
	}
	if err := c.SetCurrent(1); err != nil {
		t.Fatal(err)
	}
	if err := c.SetRNext(2); err != nil {
		t.Fatal(err)
	}
	syn := testSeg(t, cli4, srv4, 77, 0, segment.SYN, 12, nil)
	if err := c.Sign(syn); err != nil {
		t.Fatal(err)
	}
	l := NewListener(sring, Policy{}, 3)
	if ok, err := l.Accept(syn, &s); !ok || err != nil {
		t.Fatal(ok, err)
	}
	synack := testSeg(t, srv4, cli4, 99, 78, segment.SYN|segment.ACK, 12, nil)
	if err := s.Sign(synack); err != nil {
		t.Fatal(err)
	}
	if err := c.Verify(synack); err != nil {
		t.Fatal(err)
	}
	data := testSeg(t, cli4, srv4, 78, 100, segment.ACK, 12, []byte("x"))
	if err := c.Sign(data); err != nil {
		t.Fatal(err)
	}
	if err := s.Verify(data); err != nil {
		t.Fatal(err)
	}

	// What must never appear: the master key and the traffic keys.
	secrets := leakForms(secretKey)
	a, _ := mac.Lookup("hmac(sha256)")
	var km kdf.Master
	if err := km.Init(a, secretKey); err != nil {
		t.Fatal(err)
	}
	for _, in := range []kdf.Input{
		{Src: cli4.Addr(), Dst: srv4.Addr(), SrcPort: cli4.Port(), DstPort: srv4.Port(), SrcISN: 77},
		sendOtherInput(cli4, srv4, 77, 99),
		sendOtherInput(srv4, cli4, 99, 77),
	} {
		tk, err := km.Derive(a.NewContext(), make([]byte, kdf.MaxInputLen), &in, nil)
		if err != nil {
			t.Fatal(err)
		}
		secrets = append(secrets, leakForms(tk)[1:]...)
	}

	// Errors of every API, made around the known key.
	var errs []error
	add := func(err error) {
		if err == nil {
			t.Fatal("expected an error")
		}
		errs = append(errs, err)
	}
	_, err := ring.Add(cfg)
	add(err) // duplicate: the message names the existing MKT
	for _, bad := range []func(*keys.AO){
		func(c *keys.AO) { c.MACLen = 17 },
		func(c *keys.AO) { c.Algorithm = "hmac(nope)" },
		func(c *keys.AO) { c.Key = append(bytes.Clone(secretKey), make([]byte, 60)...) },
		func(c *keys.AO) { c.Peer = netip.MustParsePrefix("192.0.2.2/24") },
		func(c *keys.AO) { c.HasIfIndex = false },
		func(c *keys.AO) { c.Algorithm = "md5" },
	} {
		x := cfg
		bad(&x)
		_, err := NewKeyring(nil).Add(x)
		add(err)
	}
	add(NewKeyring(nil).Delete(m, DeleteOptions{})) // another keyring's MKT
	add(ring.Delete(m, DeleteOptions{Current: m}))
	add(c.SetCurrent(200))
	add(c.SetRNext(200))
	add(c.Sign(testSeg(t, cli4, srv4, 80, 100, segment.ACK, 0, nil)))
	add(c.Sign(testSeg(t, cli4, srv4, 80, 100, segment.ACK, 8, nil)))
	forged := testSeg(t, srv4, cli4, 100, 80, segment.ACK, 12, []byte("forged"))
	forged.Header()[forged.Auth().AO+2] = 2
	add(c.Verify(forged))
	forged.Header()[forged.Auth().AO+2] = 9
	add(c.Verify(forged))
	add(c.Verify(testSeg(t, srv4, cli4, 100, 80, segment.ACK, 0, nil)))
	add(c.Verify(testSeg(t, srv4, cli4, 100, 80, segment.ACK, 4, nil)))
	bad := testSeg(t, cli4, srv4, 77, 0, segment.SYN, 12, nil)
	bad.Header()[bad.Auth().AO+2] = 1
	_, err = l.Accept(bad, new(Conn))
	add(err)
	add(restore(new(Conn), ring, Endpoint{Local: cli4, Remote: srv4}, Policy{}, Endpoint{CurrentSendID: 9}))
	add(new(Conn).Init(NewKeyring(nil), Endpoint{Local: cli4, Remote: srv4}, Policy{}))
	_, err = ParseOption([]byte{29, 3})
	add(err)

	values := []struct {
		name string
		v    any
	}{
		{"*MKT", m}, {"*MKT cmac", cmac},
		{"keys.AO", cfg}, {"*keys.AO", &cfg},
		{"*Keyring", ring}, {"*Conn", &c}, {"*Conn accepted", &s}, {"*Listener", l},
		{"Endpoint", c.Endpoint()}, {"Counters", c.Counters()},
		{"[]*MKT", []*MKT{m, cmac}}, {"[]keys.AO", []keys.AO{cfg}},
		{"map", map[string]any{"mkt": m, "cfg": cfg, "conn": &c}},
		{"struct holding them", struct {
			M *MKT
			C keys.AO
			R *Keyring
			K *Conn
		}{m, cfg, ring, &c}},
	}
	for i, err := range errs {
		values = append(values, struct {
			name string
			v    any
		}{fmt.Sprintf("error %d (%v)", i, err), err})
	}
	for _, v := range values {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%X", "%q", "%d"} {
			out := fmt.Sprintf(verb, v.v)
			for _, sec := range secrets {
				if strings.Contains(out, sec) {
					t.Errorf("%s formatted with %s shows key material %q:\n%s", v.name, verb, sec, out)
				}
			}
		}
		if e, ok := v.v.(error); ok {
			for _, sec := range secrets {
				if strings.Contains(e.Error(), sec) {
					t.Errorf("%s: Error() shows key material", v.name)
				}
				for u := errors.Unwrap(e); u != nil; u = errors.Unwrap(u) {
					if strings.Contains(u.Error(), sec) {
						t.Errorf("%s: a wrapped error shows key material", v.name)
					}
				}
			}
		}
	}
	// And the redacted forms say what they are.
	for _, v := range []any{m, cfg} {
		if out := fmt.Sprintf("%+v", v); !strings.Contains(out, "redacted") {
			t.Errorf("%T prints %q", v, out)
		}
	}
}

// TestFormatMKTValue formats a dereferenced MKT (a copy, or an MKT inside
// a user's struct value): fmt then walks its fields without calling its
// methods. For hmac(rmd160) the keyed template holds key⊕ipad and
// key⊕opad, the key in all but name; for every algorithm it holds the
// keyed state. None of it may show.
func TestFormatMKTValue(t *testing.T) {
	r := NewKeyring(nil)
	var secrets []string
	for _, x := range []byte{0, 0x36, 0x5c} {
		k := bytes.Clone(secretKey)
		for i := range k {
			k[i] ^= x
		}
		secrets = append(secrets, leakForms(k)...)
	}
	for i, alg := range []string{"hmac(rmd160)", "hmac(sha1)", "cmac(aes128)"} {
		m := mustAdd(t, r, keys.AO{Peer: host(srv4.Addr()), SendID: uint8(i), RecvID: uint8(i), Algorithm: alg, Key: secretKey})
		// reflect.Value prints the struct as fmt would print *m, without
		// copying its locks.
		for _, verb := range []string{"%v", "%+v", "%#v", "%x", "%d"} {
			out := fmt.Sprintf(verb, reflect.ValueOf(m).Elem())
			for _, sec := range secrets {
				if strings.Contains(out, sec) {
					t.Errorf("%s MKT value with %s shows key material", alg, verb)
					break
				}
			}
			if strings.Contains(out, "state:[[") {
				t.Errorf("%s MKT value with %s shows the keyed MAC state", alg, verb)
			}
		}
	}
}
