package diagnose

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"

	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/keys"
)

// Nil, zero and garbage inputs give a diagnosis, never a panic.
func TestExplainInputs(t *testing.T) {
	kf := &keyfile.File{AO: []keyfile.AO{{Config: keys.AO{Peer: netip.MustParsePrefix("192.0.2.1/32"), Algorithm: "hmac(sha1)", Key: []byte("k"), MACLen: 12}}}}
	for _, c := range []struct {
		name string
		kf   *keyfile.File
		d    Direction
		want Cause
	}{
		{"nil keys, nothing", nil, Direction{}, Secret},
		{"no segment", kf, Direction{Failed: 3}, Secret},
		{"garbage", kf, Direction{Segments: []Segment{{}, {Packet: []byte{0x45}}, {Packet: bytes.Repeat([]byte{0xff}, 60)}}, Failed: 3}, Secret},
		{"most verify", kf, Direction{Verified: 20, Failed: 1}, Tampered},
		{"half verify", nil, Direction{Verified: 2, Failed: 2}, Secret},
	} {
		d := Explain(c.kf, c.d)
		if d.Cause != c.want || d.Fix == "" {
			t.Errorf("%s: %+v, want %s with a fix", c.name, d, c.want)
		}
	}
}

// The readings of a secret differ from it, and their fixes never hold it.
func TestEncodings(t *testing.T) {
	for _, key := range [][]byte{[]byte("bgp-secret-42"), []byte("bgp-secret-42\n"), []byte(" 0a1b2c3d "), []byte("0A1B2C3D"), {0xa5}} {
		seen := map[string]bool{}
		for _, e := range encodings(key) {
			if bytes.Equal(e.key, key) || len(e.key) == 0 || seen[string(e.key)] {
				t.Errorf("%q: reading %q is the key, empty or twice", key, e.key)
			}
			seen[string(e.key)] = true
			if k := strings.TrimSpace(string(key)); len(k) > 2 && strings.Contains(e.fix, k) {
				t.Errorf("%q: the fix %q holds the key", key, e.fix)
			}
		}
	}
	if d, ok := hexDigits([]byte("0x0a1b")); !ok || !bytes.Equal(d, []byte{0x0a, 0x1b}) {
		t.Errorf("hexDigits(0x0a1b) = %x, %v", d, ok)
	}
	for _, s := range []string{"", "a", "abc", "zz", "0x"} {
		if _, ok := hexDigits([]byte(s)); ok {
			t.Errorf("hexDigits(%q) is ok", s)
		}
	}
}

// Lint of a nil or empty file finds nothing; MirrorDiff of an entry and
// its mirror is empty.
func TestLintEdges(t *testing.T) {
	if f := Lint(nil); f != nil {
		t.Errorf("Lint(nil) = %v", f)
	}
	if f := Lint(&keyfile.File{}); f != nil {
		t.Errorf("Lint(empty) = %v", f)
	}
	a := keys.AO{Peer: netip.MustParsePrefix("192.0.2.2/32"), SendID: 1, RecvID: 2, Algorithm: "hmac(sha1)", Key: []byte("k"), MACLen: 12}
	b := a
	b.Peer, b.SendID, b.RecvID, b.Algorithm = netip.MustParsePrefix("192.0.2.1/32"), 2, 1, "HMAC-SHA-1-96"
	if d := MirrorDiff(a, b); len(d) != 0 {
		t.Errorf("MirrorDiff of a mirror: %v", d)
	}
	b.SendID, b.RecvID = 1, 2
	if d := MirrorDiff(a, b); len(d) != 1 || d[0] != "sndid and rcvid swapped" {
		t.Errorf("MirrorDiff, IDs swapped on one end: %v", d)
	}
}
