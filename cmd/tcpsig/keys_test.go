package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tcpsig/tcpsig/internal/redact"
	"github.com/tcpsig/tcpsig/keyfile"
)

// demoKeysFile is the built-in demo's keys file: both ends of two MKTs,
// mirrored.
func demoKeysFile(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/demo.keys.json")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestKeysCheck: tcpsig keys check prints every entry redacted and says
// ok for a sound file (exit 0); warns (exit 1) of a file others may read,
// of algorithms Linux 7.2 refuses or no kernel has, and of an entry
// without its mirror in a file that holds both ends; and refuses (exit 2,
// naming the entries) what a keyring refuses.
func TestKeysCheck(t *testing.T) {
	const aoEntry = `{"alg": %q, "key": "text:Check-Key-Qw3rty-Uiop", "sndid": %d, "rcvid": %d, "peer": %q%s}`
	entry := func(alg string, s, r int, peer, extra string) string {
		return strings.TrimSpace(fmt.Sprintf(aoEntry, alg, s, r, peer, extra))
	}
	pairA := entry("hmac(sha256)", 1, 2, "192.0.2.2/32", "")
	pairB := entry("hmac(sha256)", 2, 1, "192.0.2.1/32", "")
	for _, c := range []struct {
		name  string
		body  string
		mode  os.FileMode
		code  int
		wants []string
		not   []string
	}{
		{name: "demo", body: demoKeysFile(t), mode: 0o600, code: 0,
			wants: []string{"4 TCP-AO and 0 TCP-MD5 entries", "ao[0]: hmac(sha1) peer 127.0.0.1/32 sndid 100 rcvid 200 maclen 12 key [20 bytes]", "\nok\n"}},
		{name: "mode", body: demoKeysFile(t), mode: 0o644, code: 1,
			wants: []string{"warning: ", "permissions 0644 are too open", "tcpsig shim refuses it", "1 warning\n"}},
		{name: "linux 7.2", body: `{"ao": [` + entry("hmac(sha512)", 1, 1, "192.0.2.2/32", "") + `]}`, mode: 0o600, code: 1,
			wants: []string{"warning: ao[0]: hmac(sha512): Linux 7.2"}},
		{name: "draft", body: `{"ao": [{"alg": "KMAC256-128", "key": "text:Check-Key-Qw3rty-Uiop-0123456789ab", "sndid": 1, "rcvid": 1, "peer": "192.0.2.2/32"}]}`, mode: 0o600, code: 1,
			wants: []string{"warning: ao[0]: kmac256-128 is draft-ietf-tcpm-tcp-ao-algs's"}},
		{name: "cmac(aes) with a 16-byte key", body: `{"ao": [{"alg": "cmac(aes)", "key": "hex:000102030405060708090a0b0c0d0e0f", "sndid": 1, "rcvid": 1, "peer": "192.0.2.2/32"}]}`,
			mode: 0o600, code: 0},
		{name: "mirrored", body: `{"ao": [` + pairA + "," + pairB + `]}`, mode: 0o600, code: 0},
		{name: "one end lacks the new key", body: `{"ao": [` + pairA + "," + pairB + "," + entry("hmac(sha256)", 3, 4, "192.0.2.2/32", "") + `]}`,
			mode: 0o600, code: 1,
			wants: []string{"warning: ao[2]: its peer 192.0.2.2/32 has entries in the file but none mirrors this one (sndid 4, rcvid 3"}},
		{name: "mirrored IDs, another maclen", body: `{"ao": [` + pairA + "," + entry("hmac(sha256)", 2, 1, "192.0.2.1/32", `, "maclen": 16`) + `]}`,
			mode: 0o600, code: 1,
			wants: []string{"warning: ao[0] and ao[1] have mirrored KeyIDs (sndid 1, rcvid 2) but not the same alg, key, maclen and exclude_options"}},
		{name: "a third peer, not in the file", body: `{"ao": [` + pairA + "," + pairB + "," + entry("hmac(sha256)", 7, 7, "198.51.100.9/32", "") + `]}`,
			mode: 0o600, code: 0},
		{name: "md5 ends", body: `{"md5": [{"peer": "192.0.2.2/32", "key": "text:Md5-Pair"}, {"peer": "192.0.2.1/32", "key": "text:Md5-Pair"}, {"peer": "192.0.2.2/31", "key": "text:Other-One"}]}`,
			mode: 0o600, code: 1, wants: []string{"warning: md5[2]: its peer 192.0.2.2/31 has entries in the file but no TCP-MD5 entry with the same key"}},
		{name: "overlapping peers, one sndid", body: `{"ao": [` + entry("hmac(sha1)", 1, 1, "10.0.0.0/8", "") + "," + entry("hmac(sha1)", 1, 2, "10.1.0.0/16", "") + `]}`,
			mode: 0o600, code: 2, wants: []string{"tcpsig keys check: ao[1]: "}},
		{name: "not JSON", body: `{"ao": [`, mode: 0o600, code: 2, wants: []string{"tcpsig keys check: "}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "keys.json")
			if err := os.WriteFile(path, []byte(c.body), c.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, c.mode); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := cli(t, "keys", "check", path)
			if code != c.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, c.code, out, errOut)
			}
			for _, w := range c.wants {
				if !strings.Contains(out+errOut, w) {
					t.Errorf("no %q in\n%s%s", w, out, errOut)
				}
			}
			if c.code == 0 && strings.Contains(out, "warning") {
				t.Errorf("a warning for a sound file:\n%s", out)
			}
			for _, k := range []string{"Check-Key-Qw3rty-Uiop", "f559M2e2zGYSSM9BX-E5", "Md5-Pair"} {
				if leak := redact.Leak(out+errOut, []byte(k)); leak != "" {
					t.Errorf("the output shows a key (%q):\n%s%s", leak, out, errOut)
				}
			}
		})
	}
	if code, _, errOut := cli(t, "keys", "check"); code != 2 || !strings.Contains(errOut, "wants one FILE") {
		t.Errorf("keys check without FILE: exit %d, %q", code, errOut)
	}
}

// TestKeysGen: tcpsig keys gen writes the two ends' entries, mirrored,
// with one key from crypto/rand of the algorithm's size, to new files of
// mode 0600 whatever the umask; keys check finds the pair sound; no key is
// printed; an existing file is not overwritten.
func TestKeysGen(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := t.TempDir()
	both, fa, fb := filepath.Join(dir, "both.json"), filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	code, out, errOut := cli(t, "keys", "gen", "-a", "192.0.2.1", "-b", "192.0.2.2", "-alg", "HMAC-SHA-1-96", "-name", "r1",
		"-o", both, "-a-file", fa, "-b-file", fb)
	if code != 0 {
		t.Fatalf("keys gen: exit %d: %s", code, errOut)
	}
	var key []byte
	for _, c := range []struct {
		path           string
		peers          []string
		sndid, rcvid   []uint8
		wantsInStdout  string
		wantEntryCount int
	}{
		{both, []string{"192.0.2.2/32", "192.0.2.1/32"}, []uint8{1, 2}, []uint8{2, 1}, "wrote " + both + " (mode 0600): both ends", 2},
		{fa, []string{"192.0.2.2/32"}, []uint8{1}, []uint8{2}, "end A (192.0.2.1/32)", 1},
		{fb, []string{"192.0.2.1/32"}, []uint8{2}, []uint8{1}, "end B (192.0.2.2/32)", 1},
	} {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v under umask 0, want 0600", c.path, fi.Mode().Perm())
		}
		f, err := keyfile.Load(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if len(f.AO) != c.wantEntryCount {
			t.Fatalf("%s: %d entries, want %d", c.path, len(f.AO), c.wantEntryCount)
		}
		for i, e := range f.AO {
			cfg := e.Config
			if cfg.Peer.String() != c.peers[i] || cfg.SendID != c.sndid[i] || cfg.RecvID != c.rcvid[i] || cfg.Algorithm != "hmac(sha1)" || e.Name != "r1" {
				t.Errorf("%s: entry %d is %v (%s), want peer %s sndid %d rcvid %d hmac(sha1)", c.path, i, e, e.Name, c.peers[i], c.sndid[i], c.rcvid[i])
			}
			if key == nil {
				key = append([]byte(nil), cfg.Key...)
			}
			if !bytes.Equal(cfg.Key, key) {
				t.Errorf("%s: entry %d has another key than the first file's", c.path, i)
			}
		}
		if !strings.Contains(out, c.wantsInStdout) {
			t.Errorf("stdout lacks %q:\n%s", c.wantsInStdout, out)
		}
	}
	if len(key) != 20 || bytes.Count(key, []byte{0}) > 4 {
		t.Errorf("key of %d bytes (want hmac(sha1)'s 20, random)", len(key))
	}
	if leak := redact.Leak(out+errOut, key); leak != "" {
		t.Errorf("keys gen printed the key (%q)", leak)
	}
	if code, out, _ := cli(t, "keys", "check", both); code != 0 || !strings.HasSuffix(out, "ok\n") {
		t.Errorf("keys check of what gen wrote: exit %d\n%s", code, out)
	}
	before, _ := os.ReadFile(fa)
	if code, _, errOut := cli(t, "keys", "gen", "-a", "192.0.2.1", "-b", "192.0.2.2", "-a-file", fa); code != 2 || !strings.Contains(errOut, "not overwritten") {
		t.Errorf("gen over an existing file: exit %d, %q", code, errOut)
	}
	if after, _ := os.ReadFile(fa); !bytes.Equal(before, after) {
		t.Error("gen changed an existing file")
	}

	for _, c := range []struct {
		args    []string
		keyLen  int
		md5     bool
		text    bool
		maclen  int
		algName string
	}{
		{[]string{"-alg", "cmac(aes128)"}, 16, false, false, 12, "cmac(aes128)"},
		{[]string{}, 32, false, false, 12, "hmac(sha256)"},
		{[]string{"-alg", "KMAC256-128"}, 32, false, false, 16, "kmac256-128"},
		{[]string{"-md5", "-text"}, 32, true, true, 0, ""},
		{[]string{"-bytes", "40", "-maclen", "16", "-text"}, 40, false, true, 16, "hmac(sha256)"},
	} {
		path := filepath.Join(t.TempDir(), "k.json")
		args := append([]string{"keys", "gen", "-a", "2001:db8::1", "-b", "2001:db8::2", "-o", path}, c.args...)
		if code, _, errOut := cli(t, args...); code != 0 {
			t.Errorf("%q: exit %d: %s", args, code, errOut)
			continue
		}
		f, err := keyfile.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		var k []byte
		if c.md5 {
			if len(f.MD5) != 2 || len(f.AO) != 0 {
				t.Fatalf("%q: %d md5, %d ao entries", args, len(f.MD5), len(f.AO))
			}
			k = f.MD5[0].Config.Key
		} else {
			if len(f.AO) != 2 || f.AO[0].Config.Algorithm != c.algName || f.AO[0].Config.MACLen != c.maclen {
				t.Fatalf("%q: %v", args, f.AO)
			}
			k = f.AO[0].Config.Key
		}
		if len(k) != c.keyLen {
			t.Errorf("%q: key of %d bytes, want %d", args, len(k), c.keyLen)
		}
		if c.text && bytes.ContainsFunc(k, func(r rune) bool {
			return !strings.ContainsRune("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", r)
		}) {
			t.Errorf("%q: -text, and the key is not printable", args)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-a", "192.0.2.1", "-b", "192.0.2.2"}, "needs -o FILE"},
		{[]string{"-b", "192.0.2.2", "-o", "x"}, "-a: required"},
		{[]string{"-a", "192.0.2.0/24", "-b", "192.0.2.2", "-o", "x"}, "do not overlap"},
		{[]string{"-a", "192.0.2.1", "-b", "2001:db8::2", "-o", "x"}, "one family"},
		{[]string{"-a", "192.0.2.1/24", "-b", "192.0.2.9", "-o", "x"}, "host bits set"},
		{[]string{"-a", "192.0.2.1", "-b", "192.0.2.2", "-sndid", "256", "-o", "x"}, "want 0..255"},
		{[]string{"-a", "192.0.2.1", "-b", "192.0.2.2", "-alg", "hex:5ecret", "-o", "x"}, "unknown algorithm: want one of"},
	} {
		code, _, errOut := cli(t, append([]string{"keys", "gen"}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "5ecret") {
			t.Errorf("keys gen %q: exit %d, %q; want 2 and %q (and never the -alg value)", c.args, code, errOut, c.want)
		}
	}
}

// TestKeysHelp: tcpsig keys -h (and keys check -h, keys gen -h) print the
// command's help with its flags and examples; tcpsig help keys stays the
// keys file's format; the help's examples run as written from the clone's
// top (check exits 0, or 1 for the file's mode as git checked it out).
func TestKeysHelp(t *testing.T) {
	for _, args := range [][]string{{"keys", "-h"}, {"keys", "check", "-h"}, {"keys", "gen", "-h"}, {"keys", "gen", "--help"}} {
		code, out, errOut := cli(t, args...)
		if code != 0 || out != keysCmdHelp || errOut != "" {
			t.Errorf("%q: exit %d, stderr %q, not the keys command's help", args, code, errOut)
		}
	}
	for _, f := range []string{"a", "alg", "md5", "sndid", "rcvid", "bytes", "maclen", "text", "name", "o", "a-file", "b-file"} {
		if !strings.Contains(keysCmdHelp, "\n  -"+f+" ") && !strings.Contains(keysCmdHelp, ", -"+f+" ") {
			t.Errorf("keys -h lacks the flag -%s", f)
		}
	}
	if _, out, _ := cli(t, "help", "keys"); out != keysHelp {
		t.Error("tcpsig help keys is no longer the keys file's format")
	}
	if code, _, errOut := cli(t, "keys"); code != 2 || !strings.Contains(errOut, "needs check or gen") {
		t.Errorf("keys alone: exit %d, %q", code, errOut)
	}
	if code, _, errOut := cli(t, "keys", "frob"); code != 2 || !strings.Contains(errOut, `unknown subcommand "frob"`) {
		t.Errorf("keys frob: exit %d, %q", code, errOut)
	}
	_, examples, _ := strings.Cut(keysCmdHelp, "\nExamples")
	_, examples, _ = strings.Cut(examples, "\n\n")
	inClone(t)
	n := 0
	for _, l := range strings.Split(examples, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(l), "tcpsig ")
		if !ok {
			continue
		}
		n++
		args := shellWords(t, rest)
		code, out, errOut := cli(t, args...)
		if code != 0 && !(code == 1 && strings.Contains(out, "permissions 0644 are too open") && strings.HasSuffix(out, "1 warning\n")) {
			t.Errorf("the help's example tcpsig %s: exit %d\n%s%s", rest, code, out, errOut)
		}
	}
	if n != 2 {
		t.Errorf("found %d examples in keys -h, want 2", n)
	}
}
