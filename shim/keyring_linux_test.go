//go:build linux

package shim

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/tcpsig/tcpsig/keys"
)

// TestKeyringListed (issue 38, finding 1): a key in the keyring that the
// keys file does not name — what a failed delete left before — is listed
// by the status (in_file false) and the metrics (keyring_keys with
// in_file="false", its own segment counts), never unseen; the next apply
// deletes it, fails loudly (ErrKeyringDiffers, an error in the log), and
// leaves the keyring holding exactly the file's keys.
func TestKeyringListed(t *testing.T) {
	var log bytes.Buffer
	s, _ := metricsShim(t, &log)
	ln, err := s.serveStatus()
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	stray, err := s.aoRing.Add(keys.AO{Peer: netip.MustParsePrefix("192.0.2.0/24"), SendID: 9, RecvID: 9,
		Algorithm: "hmac(sha256)", Key: []byte("stray-key-Wm4")})
	if err != nil {
		t.Fatal(err)
	}

	// Listed while it is there.
	_, body := getStatus(t, s.cfg.Status, "/")
	var st Status
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatalf("status: %v\n%s", err, body)
	}
	if len(st.MKTs) != 2 || !st.MKTs[0].InFile || st.MKTs[1].InFile || st.MKTs[1].SendID != 9 ||
		st.MKTs[1].Peer != stray.Peer() || st.MKTs[1].Algorithm != "hmac(sha256)" {
		t.Errorf("status ao_mkts %+v, want the file's MKT and the stray (sndid 9, in_file false)", st.MKTs)
	}
	fams, text := scrape(t, s)
	for l := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(l, "tcpsig_shim_keyring_keys{") || strings.Contains(l, `sndid="9"`) {
			t.Log(l) // docs/shim.md shows these lines
		}
	}
	for _, c := range []struct {
		labels []string
		want   float64
	}{{[]string{"kind", "ao", "in_file", "true"}, 1}, {[]string{"kind", "ao", "in_file", "false"}, 1},
		{[]string{"kind", "md5", "in_file", "true"}, 1}, {[]string{"kind", "md5", "in_file", "false"}, 0}} {
		if v, ok := value(fams, "tcpsig_shim_keyring_keys", c.labels...); !ok || v != c.want {
			t.Errorf("tcpsig_shim_keyring_keys%v = %v (found %v), want %v", c.labels, v, ok, c.want)
		}
	}
	if _, ok := value(fams, "tcpsig_shim_segments_total", "kind", "ao", "sndid", "9", "rcvid", "9", "verdict", "good"); !ok {
		t.Error("the stray MKT's segment counts are not in the metrics")
	}
	if strings.Contains(string(body)+text, "stray-key-Wm4") {
		t.Error("the stray's key bytes are in the status or the metrics")
	}

	// The next apply deletes it and fails.
	k, err := loadKeys(s.cfg.Keys)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	err = s.apply(k)
	mkts := s.mktStatus()
	s.mu.Unlock()
	if !errors.Is(err, ErrKeyringDiffers) {
		t.Errorf("apply with a stray MKT in the keyring: %v, want ErrKeyringDiffers", err)
	}
	if !strings.Contains(log.String(), "level=ERROR") || !strings.Contains(log.String(), "in the keyring but not in the keys file") {
		t.Errorf("no error logged:\n%s", log.String())
	}
	if s.aoRing.LookupRecv(netip.MustParseAddr("192.0.2.7"), 9, 0) != nil || s.aoRing.Len() != 1 {
		t.Errorf("the stray is still in the keyring (%d MKTs)", s.aoRing.Len())
	}
	if len(mkts) != 1 || !mkts[0].InFile {
		t.Errorf("status after the apply: ao_mkts %+v, want the file's one", mkts)
	}

	// And an apply of a keyring that matches says nothing.
	if k, err = loadKeys(s.cfg.Keys); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	err = s.apply(k)
	s.mu.Unlock()
	if err != nil {
		t.Errorf("apply of the same file again: %v", err)
	}
}
