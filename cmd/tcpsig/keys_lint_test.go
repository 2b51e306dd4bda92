package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tcpsig/tcpsig/internal/redact"
)

// TestKeysCheckLint: keys check names, without a capture, the mistakes of
// issue 39 (exit 1, or 0 with -warn-only), each with the entry and the
// field, never a key; the demo's sound file stays "ok".
func TestKeysCheckLint(t *testing.T) {
	const key = "Lint-Key-Zx9-Qw8"
	e := func(alg string, s, r int, peer, k, extra string) string {
		return fmt.Sprintf(`{"alg": %q, "key": %q, "sndid": %d, "rcvid": %d, "peer": %q%s}`, alg, k, s, r, peer, extra)
	}
	a := e("hmac(sha256)", 1, 2, "192.0.2.2/32", "text:"+key, "")
	for _, c := range []struct {
		name, body string
		wants      []string
	}{
		{"one-sided swap of the KeyIDs", `{"ao": [` + a + "," + e("hmac(sha256)", 1, 2, "192.0.2.1/32", "text:"+key, "") + `]}`,
			[]string{"warning: ao[1]: it has ao[0]'s secret for another peer, but is not its mirror: sndid and rcvid swapped differs"}},
		{"mirrored KeyIDs, another algorithm", `{"ao": [` + a + "," + e("hmac(sha1)", 2, 1, "192.0.2.1/32", "text:"+key, "") + `]}`,
			[]string{"warning: ao[0] and ao[1] have mirrored KeyIDs (sndid 1, rcvid 2) but not the same alg, key, maclen and exclude_options: the two ends would not verify each other (alg differs)"}},
		{"mirrored KeyIDs, options", `{"ao": [` + a + "," + e("hmac(sha256)", 2, 1, "192.0.2.1/32", "text:"+key, `, "exclude_options": true`) + `]}`,
			[]string{"(exclude_options differs)"}},
		{"no mirror at all: two fields", `{"ao": [` + a + "," + e("hmac(sha1)", 7, 8, "192.0.2.1/32", "text:"+key, `, "maclen": 16`) + `]}`,
			[]string{"ao[1]: it has ao[0]'s secret for another peer, but no entry mirrors either (they differ in rcvid, sndid, alg, maclen): give the other end sndid 2, rcvid 1"}},
		{"mirrored pair, two fields", `{"ao": [` + a + "," + e("hmac(sha1)", 2, 1, "192.0.2.1/32", "text:"+key, `, "maclen": 16`) + `]}`,
			[]string{"(alg, maclen differ)"}},
		{"mirrored pair, another maclen", `{"ao": [` + a + "," + e("hmac(sha256)", 2, 1, "192.0.2.1/32", "text:"+key, `, "maclen": 16`) + `]}`,
			[]string{"(maclen differs)"}},
		{"trailing newline", `{"ao": [` + a + "," + e("hmac(sha256)", 2, 1, "192.0.2.1/32", "text:"+key, "") + "," + e("hmac(sha256)", 5, 5, "198.51.100.1/32", "text:Other-Key-123\n", "") + `]}`,
			[]string{"warning: ao[2]: the key starts or ends with whitespace or a newline"}},
		{"text: of hex digits", `{"md5": [{"peer": "192.0.2.2/32", "key": "text:0a1b2c3d4e5f6a7b"}]}`,
			[]string{`warning: md5[0]: the key is 16 hex digits taken as text: if the peer has them as hex, write "hex:" and the same digits`}},
		{"one secret, two algorithms", `{"ao": [` + a + "," + e("hmac(sha256)", 2, 1, "192.0.2.1/32", "text:"+key, "") + "," + e("hmac(sha1)", 7, 7, "198.51.100.1/32", "text:"+key, "") + `]}`,
			[]string{"warning: ao[2]: the same secret as ao[0] under hmac(sha1), not hmac(sha256)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "keys.json")
			if err := os.WriteFile(path, []byte(c.body), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := cli(t, "keys", "check", path)
			if code != 1 {
				t.Errorf("exit %d, want 1\n%s%s", code, out, errOut)
			}
			for _, w := range c.wants {
				if !strings.Contains(out, w) {
					t.Errorf("no %q in\n%s%s", w, out, errOut)
				}
			}
			for _, k := range []string{key, "Other-Key-123", "0a1b2c3d4e5f6a7b"} {
				if leak := redact.Leak(out+errOut, []byte(k)); leak != "" {
					t.Errorf("the output shows a key (%q):\n%s", leak, out)
				}
			}
			if code, _, _ := cli(t, "keys", "check", "-warn-only", path); code != 0 {
				t.Errorf("-warn-only: exit %d, want 0", code)
			}
		})
	}
	if code, out, _ := cli(t, "keys", "check", writeFile(t, "demo.json", []byte(demoKeysFile(t)))); code != 0 || !strings.HasSuffix(out, "\nok\n") {
		t.Errorf("the demo's keys: exit %d\n%s", code, out)
	}
}
