package pcapverify

import (
	"net/netip"
	"testing"

	"github.com/tcpsig/tcpsig/keyfile"
)

// LoadKeys spreads entries one kernel keyring would refuse side by side
// over keyrings (each filled by one AddAll), adds an identical entry once,
// and names every MKT and key by its entry of the file.
func TestLoadKeysSpread(t *testing.T) {
	kf, err := keyfile.Parse([]byte(`{"ao": [
	  {"name": "a", "alg": "hmac(sha1)", "key": "text:k", "sndid": 1, "rcvid": 2, "peer": "10.0.0.0/8"},
	  {"name": "b", "alg": "hmac(sha1)", "key": "text:k", "sndid": 1, "rcvid": 3, "peer": "10.0.0.2"},
	  {"name": "c", "alg": "hmac(sha1)", "key": "text:k", "sndid": 5, "rcvid": 6, "peer": "10.0.0.3", "ifindex": 4},
	  {"name": "d", "alg": "hmac(sha1)", "key": "text:k", "sndid": 5, "rcvid": 6, "peer": "10.0.0.3", "ifindex": 7}],
	 "md5": [{"name": "m", "peer": "192.0.2.1", "key": "text:x"}, {"name": "n", "peer": "192.0.2.1", "key": "text:y", "ifindex": 5},
	  {"name": "o", "peer": "192.0.2.1", "key": "text:x", "ifindex": 3}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ks, err := LoadKeys(kf)
	if err != nil {
		t.Fatal(err)
	}
	// a and b clash (SendID 1 on overlapping peers); c and d are the same
	// MKT once their ifindex is gone, so d is not added.
	if len(ks.aoRings) != 2 || ks.aoRings[0].Len() != 2 || ks.aoRings[1].Len() != 1 || len(ks.aoEntry) != 3 {
		t.Fatalf("%d rings, %d MKTs named", len(ks.aoRings), len(ks.aoEntry))
	}
	if m := ks.aoRings[1].LookupRecv(netip.MustParseAddr("10.0.0.2"), 3, 0); m == nil || ks.aoName(m) != "b" {
		t.Errorf("second ring: %v named %q", m, ks.aoName(m))
	}
	if m := ks.aoRings[0].LookupRecv(netip.MustParseAddr("10.0.0.3"), 6, 0); m == nil || ks.aoName(m) != "c" {
		t.Errorf("first ring: %v named %q", m, ks.aoName(m))
	}
	// m and n name one peer with two keys: two readings; o is m again.
	if len(ks.md5.rings) != 2 || len(ks.md5.entry) != 2 {
		t.Fatalf("%d md5 rings, %d keys named", len(ks.md5.rings), len(ks.md5.entry))
	}
	if got := ks.md5.names(netip.MustParseAddr("192.0.2.1")); len(got) != 2 || got[0] != "m" || got[1] != "n" {
		t.Errorf("md5 readings %q", got)
	}
}
