package md5sig

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/tcpsig/tcpsig/keys"
)

// TestAddAll: a list goes in whole, each entry replacing a key of its
// description as Add does, or not at all, the first error naming its
// entry and wrapping the sentinel.
func TestAddAll(t *testing.T) {
	md5 := func(peer, key string) keys.MD5 { return keys.MD5{Peer: netip.MustParsePrefix(peer), Key: []byte(key)} }
	bound := md5("192.0.2.1/32", "v")
	bound.IfIndex, bound.HasIfIndex = 5, true
	for _, c := range []struct {
		name     string
		cfgs     []keys.MD5
		names    []string
		want     error
		index    int
		wantName string
		msg      string
	}{
		{name: "all go in, one replacing", cfgs: []keys.MD5{md5("192.0.2.1/32", "a"), md5("198.51.100.0/24", "new"), bound}},
		{name: "empty list"},
		{name: "invalid entry", cfgs: []keys.MD5{md5("192.0.2.1/32", "a"), md5("198.51.100.0/24", "new"), md5("192.0.2.3/32", "")},
			names: []string{"a", "b", "c"}, want: keys.ErrInvalid, index: 2, wantName: "c", msg: `md5[2] ("c"): keys: invalid TCP-MD5 key: key length 0`},
		{name: "twice the same peer", cfgs: []keys.MD5{md5("192.0.2.1/32", "a"), md5("198.51.100.0/24", "b"), md5("::ffff:198.51.100.0/120", "c")},
			names: []string{"a", "b"}, want: ErrDuplicate, index: 2, msg: `md5[2]: md5sig: another entry of the list has this peer and binding: md5[1] ("b")`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := NewKeyring(nil)
			old := mustAdd(t, r, md5("198.51.100.0/24", "old"))
			ks, err := r.AddAll(c.cfgs, c.names)
			if c.want == nil {
				if err != nil || len(ks) != len(c.cfgs) {
					t.Fatalf("AddAll: %d keys, %v", len(ks), err)
				}
				for i, k := range ks {
					if r.Find(c.cfgs[i].Peer, c.cfgs[i].IfIndex, c.cfgs[i].HasIfIndex) != k {
						t.Errorf("key %d (%v) not found", i, k)
					}
				}
				replaced := len(ks) > 0 && r.Find(old.Peer(), 0, false) != old
				if want := 1 + len(c.cfgs) - map[bool]int{true: 1}[replaced]; r.Len() != want {
					t.Errorf("Len %d, want %d", r.Len(), want)
				}
				return
			}
			var ee *keys.EntryError
			if !errors.Is(err, c.want) || !errors.As(err, &ee) || ee.Kind != "md5" || ee.Index != c.index || ee.Name != c.wantName || ks != nil {
				t.Fatalf("AddAll: %v, %v (%+v); want %v at md5[%d] %q", ks, err, ee, c.want, c.index, c.wantName)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("message %q lacks %q", err, c.msg)
			}
			// All or nothing: the key the list would have replaced is
			// still the keyring's, and nothing else went in.
			if r.Len() != 1 || r.Find(old.Peer(), 0, false) != old || old.secret.Empty() {
				t.Fatalf("refused AddAll: Len %d, old key kept %v", r.Len(), r.Find(old.Peer(), 0, false) == old)
			}
		})
	}
	var nilRing *Keyring
	if _, err := nilRing.AddAll([]keys.MD5{md5("192.0.2.1/32", "a")}, nil); !errors.Is(err, ErrNotInitialized) {
		t.Errorf("nil keyring: %v", err)
	}
}
