package ao

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/tcpsig/tcpsig/keys"
)

// TestAddAll: a list goes in whole, in order (the last the newest), or
// not at all, the first error naming its entry and wrapping the
// keyring's sentinel.
func TestAddAll(t *testing.T) {
	bad := cfg4("192.0.2.9/32", 1, 2)
	bad.Algorithm = "hmac(nothing)"
	existing := cfg4("198.51.100.0/24", 7, 8)
	for _, c := range []struct {
		name     string
		cfgs     []keys.AO
		names    []string
		want     error
		index    int
		wantName string
		msg      []string // in the message
	}{
		{name: "all go in", cfgs: []keys.AO{cfg4("192.0.2.1/32", 1, 2), cfg4("192.0.2.2/32", 1, 2), cfg4("192.0.2.0/24", 3, 4)}},
		{name: "empty list", cfgs: nil},
		{name: "invalid entry", cfgs: []keys.AO{cfg4("192.0.2.1/32", 1, 2), cfg4("192.0.2.2/32", 1, 2), bad},
			names: []string{"a", "b", "c"}, want: keys.ErrInvalid, index: 2, wantName: "c", msg: []string{`ao[2] ("c"): keys: invalid MKT`}},
		{name: "clash with the keyring", cfgs: []keys.AO{cfg4("192.0.2.1/32", 1, 2), cfg4("198.51.100.7/32", 7, 1)},
			names: []string{"a"}, want: ErrKeyExists, index: 1,
			msg: []string{"ao[1]: ", "already covers the peer: ao.MKT{peer 198.51.100.0/24, SendID 7, RecvID 8", "(adding ao.MKT{peer 198.51.100.7/32, SendID 7, RecvID 1"}},
		{name: "clash within the list", cfgs: []keys.AO{cfg4("192.0.2.1/32", 1, 2), cfg4("192.0.2.3/32", 5, 6), cfg4("192.0.2.0/24", 9, 6)},
			names: []string{"a", "b", "c"}, want: ErrKeyExists, index: 2, wantName: "c",
			msg: []string{`ao[2] ("c"): `, `already covers the peer: ao[1] ("b") of the same list, ao.MKT{peer 192.0.2.3/32, SendID 5, RecvID 6`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := NewKeyring(nil)
			old := mustAdd(t, r, existing)
			ms, err := r.AddAll(c.cfgs, c.names)
			if c.want == nil {
				if err != nil || len(ms) != len(c.cfgs) || r.Len() != 1+len(c.cfgs) {
					t.Fatalf("AddAll: %d MKTs, %v; Len %d", len(ms), err, r.Len())
				}
				for i, m := range ms {
					if r.Find(c.cfgs[i].Peer, c.cfgs[i].SendID, c.cfgs[i].RecvID) != m {
						t.Errorf("MKT %d (%v) not found", i, m)
					}
				}
				if len(ms) > 0 && r.newest(netip.MustParseAddr("192.0.2.2"), 0) != ms[len(ms)-1] {
					t.Error("the last MKT of the list is not the newest")
				}
				return
			}
			var ee *keys.EntryError
			if !errors.Is(err, c.want) || !errors.As(err, &ee) || ee.Kind != "ao" || ee.Index != c.index || ee.Name != c.wantName || ms != nil {
				t.Fatalf("AddAll: %v, %v (%+v); want %v at ao[%d] %q", ms, err, ee, c.want, c.index, c.wantName)
			}
			for _, s := range c.msg {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("message %q lacks %q", err, s)
				}
			}
			// All or nothing: the keyring holds what it held, untouched.
			if r.Len() != 1 || masterWiped(old) {
				t.Fatalf("refused AddAll left Len %d (want 1), existing MKT wiped %v", r.Len(), masterWiped(old))
			}
			for _, cfg := range c.cfgs {
				if r.Find(cfg.Peer, cfg.SendID, cfg.RecvID) != nil {
					t.Errorf("%v stayed in the keyring", cfg)
				}
			}
			// The same list without the faulty entry goes in.
			ok := append(append([]keys.AO(nil), c.cfgs[:c.index]...), c.cfgs[c.index+1:]...)
			if _, err := r.AddAll(ok, nil); err != nil {
				t.Fatalf("AddAll without the faulty entry: %v", err)
			}
		})
	}
	var nilRing *Keyring
	if _, err := nilRing.AddAll([]keys.AO{existing}, nil); !errors.Is(err, ErrNotInitialized) {
		t.Errorf("nil keyring: %v", err)
	}
}

// TestKeyExistsNamesTheOther (issue 29): Add's ErrKeyExists names the MKT
// already in the keyring, not only the one being added.
func TestKeyExistsNamesTheOther(t *testing.T) {
	r := NewKeyring(nil)
	mustAdd(t, r, cfg4("192.0.2.0/24", 1, 2))
	_, err := r.Add(cfg4("192.0.2.7/32", 1, 9))
	if !errors.Is(err, ErrKeyExists) ||
		!strings.Contains(err.Error(), "already covers the peer: ao.MKT{peer 192.0.2.0/24, SendID 1, RecvID 2") ||
		!strings.Contains(err.Error(), "(adding ao.MKT{peer 192.0.2.7/32, SendID 1, RecvID 9") {
		t.Fatalf("Add: %v", err)
	}
	if strings.Contains(err.Error(), string(testKey(1))) {
		t.Fatalf("the message shows a key: %v", err)
	}
}
