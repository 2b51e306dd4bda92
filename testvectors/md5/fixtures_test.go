package md5

import (
	"bytes"
	"fmt"
	"testing"
)

// TestFixtures checks the committed captures on any machine: each file
// holds the packets the manifest says, every one of them carries a TCP-MD5
// signature that the independent computation in check_test.go accepts
// with the manifest's keys, and corrupted copies fail. The real engine's
// fixture test lives in md5sig.
func TestFixtures(t *testing.T) {
	m, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if m.Kernel == "" {
		t.Error("manifest names no kernel")
	}
	total := 0
	for _, c := range m.Captures {
		t.Run(c.Name, func(t *testing.T) {
			lt, pkts, err := c.Read()
			if err != nil {
				t.Fatal(err)
			}
			var keys []refKey
			for _, k := range c.Keys.MD5 {
				p, _ := k.Prefix()
				b, _ := k.Bytes()
				keys = append(keys, refKey{p, b})
			}
			signed := check(t, c.Name, lt, pkts, keys)
			if signed != c.MD5Signed || signed != c.Packets {
				t.Errorf("%d signed, manifest says %d of %d", signed, c.MD5Signed, c.Packets)
			}
			total += signed
		})
	}
	t.Logf("%d captures, %d kernel-signed segments verified", len(m.Captures), total)
}

// The keys of one capture must not verify another's segments: the fixtures
// really depend on their keys.
func TestFixturesWrongKeys(t *testing.T) {
	m, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Capture{}
	for _, c := range m.Captures {
		byName[c.Name] = c
	}
	for _, pair := range [][2]string{{"v4-key1", "v4-typical"}, {"v6-key80", "v6-key1"}} {
		c, other := byName[pair[0]], byName[pair[1]]
		lt, pkts, err := c.Read()
		if err != nil {
			t.Fatal(err)
		}
		var keys []refKey
		for _, k := range other.Keys.MD5 {
			p, _ := k.Prefix()
			b, _ := k.Bytes()
			keys = append(keys, refKey{p, b})
		}
		for i, p := range pkts {
			if _, err := verifyIP(lt.IP(p.Data), keys); err == nil {
				t.Errorf("%s frame %d verifies with the keys of %s", c.Name, i+1, other.Name)
			}
		}
	}
}

func TestParseKey(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []byte
		ok   bool
	}{
		{"text:bgp-secret-42", []byte("bgp-secret-42"), true},
		{"text:", []byte{}, true},
		{"hex:a500", []byte{0xa5, 0}, true},
		{"hex:zz", nil, false},
		{"secret", nil, false},
	} {
		got, err := ParseKey(tc.in)
		if (err == nil) != tc.ok || tc.ok && !bytes.Equal(got, tc.want) {
			t.Errorf("ParseKey(%q) = %x, %v", tc.in, got, err)
		}
	}
}

func ExampleLoad() {
	m, err := Load()
	if err != nil {
		panic(err)
	}
	for _, c := range m.Captures[:2] {
		fmt.Println(c.Name, c.File, len(c.Keys.MD5), "keys", c.Packets == c.MD5Signed)
	}
	// Output:
	// v4-key1 v4-key1.pcap 2 keys true
	// v4-typical v4-typical.pcap 2 keys true
}
