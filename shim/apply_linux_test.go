//go:build linux

package shim

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"
)

// TestApplyDiff: a reload changes only what the keys file changed — an
// unchanged MKT or MD5 key stays the same object (its sessions keep it),
// an MKT whose key bytes changed under the same IDs is replaced, a removed
// one is gone, a new one is added — and the peers follow the file.
func TestApplyDiff(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keys.json")
	write := func(body string) *keySet {
		t.Helper()
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		k, err := loadKeys(path)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	write(`{"ao": [
		{"alg": "hmac(sha1)", "key": "text:one", "sndid": 1, "rcvid": 1, "peer": "192.0.2.1/32"},
		{"alg": "hmac(sha1)", "key": "text:two", "sndid": 2, "rcvid": 2, "peer": "192.0.2.1/32"},
		{"alg": "hmac(sha1)", "key": "text:three", "sndid": 3, "rcvid": 3, "peer": "192.0.2.1/32"}],
	 "md5": [{"peer": "198.51.100.1/32", "key": "text:md5-a"}, {"peer": "198.51.100.2/32", "key": "text:md5-b"}]}`)
	s, err := New(Config{Keys: path, Queue: 1})
	if err != nil {
		t.Fatal(err)
	}
	peer := netip.MustParsePrefix("192.0.2.1/32")
	m1, m2, m3 := s.aoRing.Find(peer, 1, 1), s.aoRing.Find(peer, 2, 2), s.aoRing.Find(peer, 3, 3)
	a, b := s.md5Ring.Lookup(netip.MustParseAddr("198.51.100.1"), 0), s.md5Ring.Lookup(netip.MustParseAddr("198.51.100.2"), 0)
	if m1 == nil || m2 == nil || m3 == nil || a == nil || b == nil {
		t.Fatal("keys missing after New")
	}

	// MKT 1 unchanged, MKT 2 with a new key, MKT 3 gone, MKT 4 new; MD5
	// a unchanged, b gone, c new.
	k := write(`{"ao": [
		{"alg": "hmac(sha1)", "key": "text:one", "sndid": 1, "rcvid": 1, "peer": "192.0.2.1/32"},
		{"alg": "hmac(sha1)", "key": "text:two-new", "sndid": 2, "rcvid": 2, "peer": "192.0.2.1/32"},
		{"alg": "hmac(sha1)", "key": "text:four", "sndid": 4, "rcvid": 4, "peer": "192.0.2.1/32"}],
	 "md5": [{"peer": "198.51.100.1/32", "key": "text:md5-a"}, {"peer": "198.51.100.3/32", "key": "text:md5-c"}]}`)
	if err := s.apply(k); err != nil {
		t.Fatal(err)
	}
	if got := s.aoRing.Find(peer, 1, 1); got != m1 {
		t.Error("unchanged MKT 1 was replaced")
	}
	if got := s.aoRing.Find(peer, 2, 2); got == nil || got == m2 {
		t.Errorf("MKT 2 with a new key: %v (old %v), want a new MKT", got, m2)
	}
	if got := s.aoRing.Find(peer, 3, 3); got != nil {
		t.Error("removed MKT 3 still there")
	}
	if s.aoRing.Find(peer, 4, 4) == nil {
		t.Error("new MKT 4 missing")
	}
	if s.aoRing.Len() != 3 {
		t.Errorf("%d MKTs, want 3", s.aoRing.Len())
	}
	if got := s.md5Ring.Lookup(netip.MustParseAddr("198.51.100.1"), 0); got != a {
		t.Error("unchanged MD5 key a was replaced")
	}
	if s.md5Ring.Lookup(netip.MustParseAddr("198.51.100.2"), 0) != nil {
		t.Error("removed MD5 key b still there")
	}
	if s.md5Ring.Lookup(netip.MustParseAddr("198.51.100.3"), 0) == nil {
		t.Error("new MD5 key c missing")
	}
	want := []netip.Prefix{peer, netip.MustParsePrefix("198.51.100.1/32"), netip.MustParsePrefix("198.51.100.3/32")}
	if len(s.keys.Peers) != len(want) {
		t.Fatalf("peers %v, want %v", s.keys.Peers, want)
	}
	for i := range want {
		if s.keys.Peers[i] != want[i] {
			t.Errorf("peers %v, want %v", s.keys.Peers, want)
		}
	}
}

// TestNewBadKeys: a keys file that does not load is New's error.
func TestNewBadKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(path, []byte(`{"md5": [{"peer": "198.51.100.1/32"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Keys: path}); err == nil {
		t.Error("a keys file without a key was accepted")
	}
	if _, err := New(Config{Keys: filepath.Join(t.TempDir(), "none.json")}); err == nil {
		t.Error("a missing keys file was accepted")
	}
}
