package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/keyfile"
)

// rotationSections are the sections of docs/rotation.md whose "$ …"
// transcripts TestRotationDoc runs, in order, in one directory.
var rotationSections = []string{"", "## Check both ends: `tcpsig keys check`", "## A peer without a keys file: a router's password", "## Key chains from routers: `tcpsig keys import` and `export`"}

// TestRotationDoc runs the commands of docs/rotation.md's transcripts in
// a fresh directory (with the example key chain where a clone has it)
// and holds their output, stdout then stderr, to the page's; then the
// shim's refusal of the rotated file to the page's "engine" section.
func TestRotationDoc(t *testing.T) {
	var blocks []string
	for _, h := range rotationSections {
		for _, b := range docBlocks(t, "docs/rotation.md", h) {
			if strings.HasPrefix(b, "$ ") {
				blocks = append(blocks, b)
			}
		}
	}
	example, err := os.ReadFile("../../keychain/testdata/yang/example-key-chain.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "keychain/testdata/yang"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "keychain/testdata/yang/example-key-chain.json"), example, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	n := 0
	for _, b := range blocks {
		for _, c := range strings.Split(strings.TrimPrefix(b, "$ "), "\n$ ") {
			line, want, _ := strings.Cut(c, "\n")
			if want != "" && !strings.HasSuffix(want, "\n") {
				want += "\n" // a command's output before the next "$ "
			}
			words := shellWords(t, line)
			var got string
			switch words[0] {
			case "cp":
				body, err := os.ReadFile(words[1])
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(words[2], body, 0o600); err != nil {
					t.Fatal(err)
				}
			case "tcpsig":
				_, out, errOut := cli(t, words[1:]...)
				got = out + errOut
			default:
				t.Fatalf("docs/rotation.md runs %q, which the test cannot", line)
			}
			n++
			if got != want {
				t.Errorf("$ %s printed\n%s\ndocs/rotation.md shows\n%s", line, got, want)
			}
		}
	}
	// A second rotation to the router's file, which exists: nothing is
	// written.
	before, _ := os.ReadFile("h.json")
	if code, _, errOut := cli(t, "keys", "rotate", "h.json", "-peer", "192.0.2.2", "-self", "192.0.2.1", "-mirror-out", "router.json",
		"-at", "2027-03-01T00:00:00Z"); code != 2 || !strings.Contains(errOut, "router.json exists: not overwritten") {
		t.Errorf("-mirror-out over a file: exit %d, %q", code, errOut)
	}
	if after, _ := os.ReadFile("h.json"); string(after) != string(before) {
		t.Error("a refused rotation changed h.json")
	}
	if code, _, _ := cli(t, "keys", "check", "-at", "2027-02-01T00:00:00Z", "h.json", "router.json"); code != 0 {
		t.Errorf("keys check h.json router.json: exit %d", code)
	}
	if n < 9 {
		t.Errorf("ran %d commands of docs/rotation.md, want at least 7", n)
	}
	for _, k := range []string{"a.json", "b.json", "h.json", "router.json"} {
		if b, _ := os.ReadFile(k); strings.Count(string(b), `"key": "text:`) != 2 {
			t.Errorf("%s: the rotated file does not keep both typed keys as text:\n%s", k, b)
		}
	}
}

// TestKeysImportExportCLI: a document that breaks the model is exit 2
// with its data path; export never overwrites a file nor writes to the
// terminal.
func TestKeysImportExportCLI(t *testing.T) {
	example, err := os.ReadFile("../../keychain/testdata/yang/example-key-chain.json")
	if err != nil {
		t.Fatal(err)
	}
	bad := writeFile(t, "bad.json", []byte(strings.Replace(string(example), `"send-id": 2,`, `"send-id": 300,`, 1)))
	out := filepath.Join(t.TempDir(), "k.json")
	code, _, errOut := cli(t, "keys", "import", bad, "-chain", "bgp-192.0.2.1=192.0.2.1", "-o", out)
	if code != 2 || !strings.Contains(errOut, "key[key-id='2']/ietf-tcp:authentication/ao/send-id: 300 is not a uint8") {
		t.Errorf("send-id 300: exit %d, %q", code, errOut)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused import wrote its file")
	}
	good := writeFile(t, "good.json", example)
	if code, _, errOut := cli(t, "keys", "import", good, "-chain", "bgp-192.0.2.1=192.0.2.1", "-o", out); code != 0 {
		t.Fatalf("import: exit %d, %s", code, errOut)
	}
	if code, _, errOut := cli(t, "keys", "export", out); code != 2 || !strings.Contains(errOut, "never to the terminal") {
		t.Errorf("export without -o: exit %d, %q", code, errOut)
	}
	if code, _, errOut := cli(t, "keys", "export", out, "-o", good); code != 2 || !strings.Contains(errOut, "not overwritten") {
		t.Errorf("export over a file: exit %d, %q", code, errOut)
	}
	if code, _, errOut := cli(t, "keys", "import", good, "-chain", "nope=192.0.2.1", "-o", out+"2"); code != 2 || !strings.Contains(errOut, "key-chain[name='nope']: no such key-chain") {
		t.Errorf("a chain the document lacks: exit %d, %q", code, errOut)
	}
}

// TestKeysDocLifetimes: docs/keys.md's lifetimes example is a keys file
// that loads with its lifetimes, and the error it shows is keys check's
// for that file with the start it names added.
func TestKeysDocLifetimes(t *testing.T) {
	blocks := docBlocks(t, "docs/keys.md", "## Lifetimes")
	if len(blocks) != 2 {
		t.Fatalf("docs/keys.md's Lifetimes has %d blocks, want the file and the error", len(blocks))
	}
	f, err := keyfile.Parse([]byte(blocks[0]))
	if err != nil {
		t.Fatalf("the example does not load: %v", err)
	}
	if f.ClockSkew != 30*time.Second || !f.AO[0].Config.Lifetime.Scheduled() || f.AO[1].Config.Lifetime.Tolerance != 2*time.Minute ||
		f.AO[0].Config.Lifetime.Tolerance != time.Minute {
		t.Errorf("the example's lifetimes: %v", f)
	}
	bad := strings.Replace(blocks[0], `{"end": "2027-01-01T00:00:00Z"}`, `{"start": "2027-06-01T00:00:00Z", "end": "2027-01-01T00:00:00Z"}`, 1)
	t.Chdir(t.TempDir())
	if err := os.WriteFile("k.json", []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := cli(t, "keys", "check", "k.json"); code != 2 || errOut != blocks[1] {
		t.Errorf("keys check: exit %d\n%s\ndocs/keys.md shows\n%s", code, errOut, blocks[1])
	}
}

// TestKeysCheckMD5Schedule: two TCP-MD5 keys of one peer with lifetimes
// are a schedule, not a keyring's refusal; keys check prints their
// timeline and warns of a tolerance below the file's clock_skew.
func TestKeysCheckMD5Schedule(t *testing.T) {
	path := writeFile(t, "md5.json", []byte(`{"clock_skew": 30, "md5": [
	  {"name": "old", "peer": "192.0.2.2", "key": "text:Old-Password", "send_lifetime": {"end": "2027-01-10T00:00:00Z"}, "accept_lifetime": {"end": "2027-01-10T01:00:00Z"}},
	  {"name": "new", "peer": "192.0.2.2", "key": "text:New-Password", "send_lifetime": {"start": "2027-01-10T00:00:00Z"}, "accept_lifetime": {"start": "2027-01-09T23:00:00Z"}, "accept_tolerance": 30}]}`))
	code, out, errOut := cli(t, "keys", "check", "-at", "2027-01-09T00:00:00Z", path)
	want := `timeline of peer 192.0.2.2/32 (TCP-MD5):
  2027-01-09T00:00:00Z .. 2027-01-09T22:59:30Z  sends md5[0] ("old"); accepts md5[0] ("old")
  2027-01-09T22:59:30Z .. 2027-01-10T00:00:00Z  sends md5[0] ("old"); accepts md5[0] ("old"), md5[1] ("new")
  2027-01-10T00:00:00Z .. 2027-01-10T01:00:00Z  sends md5[1] ("new"); accepts md5[0] ("old"), md5[1] ("new")
  2027-01-10T01:00:00Z .. (no end)              sends md5[1] ("new"); accepts md5[1] ("new")
`
	if code != 1 || errOut != "" || !strings.Contains(out, want) || !strings.Contains(out, `warning: md5[0] ("old"): accept tolerance 0s is smaller than the file's clock_skew 30s`) ||
		strings.Contains(out, "md5[1] (\"new\"): accept tolerance") {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}
}

// TestVerifyIgnoresLifetimes: tcpsig verify judges a capture with every
// key of the file, whatever its lifetimes (docs/rotation.md, "Captures"):
// the demo capture's keys given lifetimes that ended in 2000 still judge
// every segment good.
func TestVerifyIgnoresLifetimes(t *testing.T) {
	f, err := keyfile.Parse(demoKeys(t))
	if err != nil {
		t.Fatal(err)
	}
	for i := range f.AO {
		f.AO[i].Config.Lifetime.Send.End = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
		f.AO[i].Config.Lifetime.Accept.End = f.AO[i].Config.Lifetime.Send.End
	}
	b, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	keysPath := writeFile(t, "k.json", b)
	code, out, errOut := cli(t, "verify", "-json", "-keys", keysPath, writeFile(t, "c.pcap", demoPcap))
	segs, _ := jsonLines(t, out)
	if v := verdictsOf(segs); code != 0 || len(segs) == 0 || v["good"] != len(segs) {
		t.Errorf("exit %d, verdicts %v: %s", code, v, errOut)
	}
}
