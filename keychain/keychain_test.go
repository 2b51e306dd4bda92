package keychain

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/keys"
)

// yangDir holds verbatim copies of the four modules (RFC 8177, RFC 9648,
// RFC 9643, RFC 8341) and RFC 9648's example-style document.
const yangDir = "testdata/yang"

// YanglintArgs are the arguments, before the document, with which
// yanglint checks a document against ietf-key-chain and ietf-tcp with
// the features the documents use.
var yanglintArgs = []string{"-p", yangDir,
	"-F", "ietf-key-chain:hex-key-string,accept-tolerance,independent-send-accept-lifetime",
	"-F", "ietf-tcp:authentication",
	yangDir + "/ietf-tcp@2024-10-10.yang", yangDir + "/ietf-key-chain@2017-06-15.yang",
	"-t", "config"}

// yanglint checks doc with yanglint (Debian's libyang2-tools), skipping
// the test when it is not installed; it returns yanglint's complaint, ""
// when the document is valid.
func yanglint(t *testing.T, doc []byte) string {
	t.Helper()
	bin, err := exec.LookPath("yanglint")
	if err != nil {
		t.Skip("yanglint is not installed (apt-get install libyang2-tools): the documents are not checked against the YANG modules")
	}
	path := filepath.Join(t.TempDir(), "doc.json")
	if err := os.WriteFile(path, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, append(yanglintArgs, path)...).CombinedOutput()
	if err != nil {
		return strings.TrimSpace(string(out)) + " (" + err.Error() + ")"
	}
	return ""
}

func example(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(yangDir + "/example-key-chain.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var (
	peer1 = netip.MustParsePrefix("192.0.2.1/32")
	peer2 = netip.MustParsePrefix("2001:db8::1/128")
)

// TestImportExample: the example imports to the entries it describes, and
// yanglint accepts it (so the test's modules and arguments are right).
func TestImportExample(t *testing.T) {
	doc := example(t)
	if msg := yanglint(t, doc); msg != "" {
		t.Fatalf("yanglint refuses the example: %s", msg)
	}
	f, err := Import(doc, map[string][]netip.Prefix{"bgp-192.0.2.1": {peer1}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Wipe()
	if len(f.AO) != 2 || len(f.MD5) != 0 {
		t.Fatalf("got %v", f)
	}
	jan1 := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	k1, k2 := f.AO[0], f.AO[1]
	if k1.Name != "bgp-192.0.2.1/1" || k1.Config.Algorithm != "hmac(sha1)" || string(k1.Config.Key) != "example-only-secret-1" ||
		k1.Config.SendID != 1 || k1.Config.RecvID != 1 || k1.Config.ExcludeOptions || k1.Config.MACLen != 12 ||
		!k1.Config.Lifetime.Send.End.Equal(jan1) || !k1.Config.Lifetime.Accept.End.Equal(jan1.AddDate(0, 0, 1)) ||
		k1.Config.Lifetime.Tolerance != time.Minute {
		t.Errorf("key 1: %v", k1)
	}
	if k2.Name != "bgp-192.0.2.1/2" || k2.Config.Algorithm != "cmac(aes128)" || len(k2.Config.Key) != 16 || k2.Config.Key[15] != 0xff ||
		k2.Config.SendID != 2 || !k2.Config.Lifetime.Send.Start.Equal(jan1) || !k2.Config.Lifetime.Accept.End.IsZero() {
		t.Errorf("key 2: %v", k2)
	}
	if f.AcceptTolerance != time.Minute {
		t.Errorf("file tolerance %v", f.AcceptTolerance)
	}
}

// TestRoundTrip: import then export gives a document yanglint accepts
// and that imports to the same entries, for every form: independent and
// shared lifetimes, open ends, TCP-MD5, two peers of one chain,
// options excluded, every algorithm the model names, keys in ASCII and
// in hex.
func TestRoundTrip(t *testing.T) {
	docs := map[string][]byte{"example": example(t)}
	f := &keyfile.File{AcceptTolerance: 30 * time.Second}
	t0 := time.Date(2027, 3, 1, 12, 0, 0, 0, time.UTC)
	for i, alg := range []string{"hmac(sha1)", "hmac(sha256)", "hmac(sha384)", "hmac(sha512)", "cmac(aes128)"} {
		l := keys.Lifetime{Send: keys.Window{Start: t0, End: t0.Add(time.Hour)}, Accept: keys.Window{End: t0.Add(2 * time.Hour)}, Tolerance: 30 * time.Second}
		if i%2 == 1 {
			l = keys.Lifetime{Send: keys.Window{Start: t0}, Accept: keys.Window{Start: t0}, Tolerance: 30 * time.Second}
		}
		for _, p := range []netip.Prefix{peer1, peer2} {
			f.AO = append(f.AO, keyfile.AO{Name: "r/" + string(rune('1'+i)), Config: keys.AO{Peer: p, SendID: uint8(i), RecvID: uint8(10 + i),
				Algorithm: alg, Key: []byte{0, 1, 2, byte(i), 0xff, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, ExcludeOptions: i == 2, Lifetime: l}})
		}
	}
	f.MD5 = []keyfile.MD5{
		{Config: keys.MD5{Peer: netip.MustParsePrefix("198.51.100.0/24"), Key: []byte("text-secret"),
			Lifetime: keys.Lifetime{Send: keys.Window{End: t0}, Accept: keys.Window{End: t0.Add(time.Minute)}, Tolerance: 30 * time.Second}}},
		{Config: keys.MD5{Peer: netip.MustParsePrefix("198.51.100.0/24"), Key: []byte("next-secret"),
			Lifetime: keys.Lifetime{Send: keys.Window{Start: t0}, Accept: keys.Window{Start: t0.Add(-time.Minute)}, Tolerance: 30 * time.Second}}},
	}
	b, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if f, err = keyfile.Parse(b); err != nil {
		t.Fatal(err)
	}
	doc, peers, err := Export(f)
	if err != nil {
		t.Fatal(err)
	}
	docs["built"] = doc
	for name, doc := range docs {
		chains, err := Parse(doc)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		peers := peers
		if name == "example" {
			peers = map[string][]netip.Prefix{chains[0].Name: {peer1, peer2}}
		}
		first, err := Import(doc, peers)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out, peers2, err := Export(first)
		if err != nil {
			t.Fatalf("%s: export: %v", name, err)
		}
		if msg := yanglint(t, out); msg != "" {
			t.Errorf("%s: yanglint refuses the exported document: %s\n%s", name, msg, out)
		}
		second, err := Import(out, peers2)
		if err != nil {
			t.Fatalf("%s: import of the export: %v\n%s", name, err, out)
		}
		a, _ := first.Marshal()
		c, _ := second.Marshal()
		if string(a) != string(c) {
			t.Errorf("%s: import, export, import gives other entries:\n%s\nwant\n%s", name, c, a)
		}
	}
	if !strings.Contains(string(doc), `"keystring": "text-secret"`) || !strings.Contains(string(doc), `"hexadecimal-string": "00:01:02:00:ff:05`) ||
		!strings.Contains(string(doc), `"include-tcp-options": false`) || !strings.Contains(string(doc), `"no-end-time": [`) {
		t.Errorf("the document lacks a form:\n%s", doc)
	}
	if len(peers["r"]) != 2 || len(peers["198.51.100.0/24"]) != 1 {
		t.Errorf("peers %v", peers)
	}
}

// TestRefuseModel: documents that break the model are refused, naming the
// data path; so is what the keys file cannot hold.
func TestRefuseModel(t *testing.T) {
	base := string(example(t))
	for _, c := range []struct {
		name     string
		old, new string
		want     error
		path     string
	}{
		{"send-id 300", `"send-id": 2,`, `"send-id": 300,`, ErrModel,
			"/ietf-key-chain:key-chains/key-chain[name='bgp-192.0.2.1']/key[key-id='2']/ietf-tcp:authentication/ao/send-id: 300 is not a uint8"},
		{"unknown identity", `"crypto-algorithm": "ietf-tcp:aes-128"`, `"crypto-algorithm": "ietf-tcp:aes-256"`, ErrModel,
			"/ietf-key-chain:key-chains/key-chain[name='bgp-192.0.2.1']/key[key-id='2']/crypto-algorithm: unknown identity"},
		{"aes-128 without its module", `"crypto-algorithm": "ietf-tcp:aes-128"`, `"crypto-algorithm": "aes-128"`, ErrModel, "/crypto-algorithm: unknown identity"},
		{"same send-id, overlapping send lifetimes", `"send-id": 2,`, `"send-id": 1,`, nil, ""}, // key 2 starts as key 1 stops: no overlap
		{"same send-id, overlapping", `"send-id": 2,` + ` "recv-id": 2}}`, `"send-id": 1, "recv-id": 2}}`, nil, ""},
		{"cleartext", `"crypto-algorithm": "hmac-sha-1"`, `"crypto-algorithm": "cleartext"`, ErrModel, "key[key-id='1']/crypto-algorithm: cleartext is not an algorithm"},
		{"bad hex", `00:11:22`, `00:1:22`, ErrModel, "key[key-id='2']/key-string/hexadecimal-string: not a yang:hex-string"},
		{"end before start", `"end-date-time": "2027-01-01T00:00:00Z"}`, `"end-date-time": "2026-01-01T00:00:00Z"}`, ErrModel,
			"key[key-id='1']/lifetime/send-lifetime/end-date-time: not after"},
		{"bad time", `"2027-01-01T00:00:00Z", "no-end-time"`, `"2027-01-01", "no-end-time"`, ErrModel,
			"key[key-id='2']/lifetime/send-accept-lifetime/start-date-time: not a yang:date-and-time"},
		{"unknown member", `"crypto-algorithm": "hmac-sha-1",`, `"crypto-algorithm": "hmac-sha-1", "colour": "red",`, ErrModel, `unknown field "colour"`},
		{"key-id twice", `"key-id": "2"`, `"key-id": "1"`, ErrModel, "key[key-id='1']: a second key with this key-id"},
		{"accept-key-mismatch", `"recv-id": 2}`, `"recv-id": 2, "accept-key-mismatch": true}`, ErrUnsupported, "ao/accept-key-mismatch"},
		{"md5 with ao", `"crypto-algorithm": "hmac-sha-1"`, `"crypto-algorithm": "md5"`, ErrModel, "key[key-id='1']/ietf-tcp:authentication/ao: crypto-algorithm md5"},
		{"AES key wrap", `"key-chain": [`, `"aes-key-wrap": {"enable": true}, "key-chain": [`, ErrUnsupported, "/ietf-key-chain:key-chains/aes-key-wrap: AES key wrap"},
		{"always with a start", `{"start-date-time": "2027-01-01T00:00:00Z", "no-end-time": [null]}`, `{"always": [null], "start-date-time": "2027-01-01T00:00:00Z"}`, ErrModel, "send-accept-lifetime: always and start-date-time"},
		{"send-id a string", `"send-id": 2,`, `"send-id": "2",`, ErrModel, "key[key-id='2']/ietf-tcp:authentication/ao/send-id: not a uint8 (a JSON number"},
		{"tolerance a string", `"duration": 60`, `"duration": "60"`, ErrModel, "key-chain[name='bgp-192.0.2.1']/accept-tolerance/duration: not a uint32"},
	} {
		doc := strings.Replace(base, c.old, c.new, 1)
		if doc == base {
			t.Fatalf("%s: %q is not in the example", c.name, c.old)
		}
		_, err := Import([]byte(doc), map[string][]netip.Prefix{"bgp-192.0.2.1": {peer1}})
		if c.want == nil {
			continue // checked below
		}
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.path) {
			t.Errorf("%s: %v, want %v at %s", c.name, err, c.want, c.path)
		}
		if err != nil && strings.Contains(err.Error(), "example-only-secret") {
			t.Errorf("%s: the error quotes the key: %v", c.name, err)
		}
	}
	// Two keys of one chain with the same send-id whose send lifetimes
	// overlap: key 2 made to start a day before key 1 stops sending.
	doc := strings.Replace(strings.Replace(base, `"send-id": 2,`, `"send-id": 1,`, 1), `{"start-date-time": "2027-01-01T00:00:00Z", "no-end-time"`,
		`{"start-date-time": "2026-12-31T00:00:00Z", "no-end-time"`, 1)
	_, err := Parse([]byte(doc))
	if !errors.Is(err, ErrModel) || !strings.Contains(err.Error(),
		"/ietf-key-chain:key-chains/key-chain[name='bgp-192.0.2.1']/key[key-id='2']/ietf-tcp:authentication/ao/send-id: send-id 1 is also key 1's, and their send lifetimes overlap") {
		t.Errorf("overlapping send-ids: %v", err)
	}
	// The same send-id without overlap is the model's, but not the keys
	// file's: one MKT per peer and KeyID.
	doc = strings.Replace(base, `"send-id": 2,`, `"send-id": 1,`, 1)
	if _, err := Parse([]byte(doc)); err != nil {
		t.Errorf("same send-id, no overlap: Parse = %v", err)
	}
	if _, err := Import([]byte(doc), map[string][]netip.Prefix{"bgp-192.0.2.1": {peer1}}); !errors.Is(err, keyfile.ErrDuplicate) {
		t.Errorf("same send-id, no overlap: Import = %v, want keyfile.ErrDuplicate", err)
	}
	if _, err := Import(example(t), map[string][]netip.Prefix{"nope": {peer1}}); !errors.Is(err, ErrPeers) || !strings.Contains(err.Error(), "[name='nope']") {
		t.Errorf("a chain not in the document: %v", err)
	}
}

// TestExportRefuses: what the model cannot say is an error naming the
// entry, never a silent substitution.
func TestExportRefuses(t *testing.T) {
	ok := keys.AO{Peer: peer1, SendID: 1, RecvID: 1, Algorithm: "hmac(sha256)", Key: make([]byte, 32)}
	for _, c := range []struct {
		name string
		f    func(*keys.AO)
		msg  string
	}{
		{"KMAC", func(c *keys.AO) { c.Algorithm = "kmac256-128"; c.MACLen = 16 }, `ao[0] ("x"): kmac256-128 has no identity`},
		{"draft HMAC", func(c *keys.AO) { c.Algorithm = "hmac-sha256-128"; c.MACLen = 16 }, "hmac-sha256-128 has no identity"},
		{"hmac(md5)", func(c *keys.AO) { c.Algorithm = "hmac(md5)" }, "hmac(md5) has no identity"},
		{"maclen 16", func(c *keys.AO) { c.MACLen = 16 }, "maclen 16"},
		{"ifindex", func(c *keys.AO) { c.IfIndex, c.HasIfIndex = 3, true }, "an ifindex"},
	} {
		cfg := ok
		c.f(&cfg)
		_, _, err := Export(&keyfile.File{AO: []keyfile.AO{{Name: "x", Config: cfg}}})
		if !errors.Is(err, ErrUnrepresentable) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want %q", c.name, err, c.msg)
		}
	}
	// Two entries of one chain with different tolerances.
	a, b := ok, ok
	b.SendID, b.RecvID = 2, 2
	a.Lifetime.Tolerance, b.Lifetime.Tolerance = time.Second, 2*time.Second
	_, _, err := Export(&keyfile.File{AO: []keyfile.AO{{Config: a}, {Config: b}}})
	if !errors.Is(err, ErrUnrepresentable) || !strings.Contains(err.Error(), "one per chain") {
		t.Errorf("two tolerances: %v", err)
	}
	// A chain that one of its peers has only part of.
	c := ok
	c.Peer = peer2
	b.Lifetime.Tolerance = 0
	_, _, err = Export(&keyfile.File{AO: []keyfile.AO{{Name: "r/1", Config: ok}, {Name: "r/2", Config: b}, {Name: "r/1", Config: c}}})
	if !errors.Is(err, ErrUnrepresentable) || !strings.Contains(err.Error(), "has 1 of the chain's 2 keys") {
		t.Errorf("partial chain: %v", err)
	}
}

// TestKeyRedacted: no fmt verb nor json.Marshal shows a chain's key.
func TestKeyRedacted(t *testing.T) {
	secret := []byte("Zebra-Quokka-Chain-Key")
	k := Key{ID: 1, Algorithm: "hmac(sha1)", Key: secret}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%q"} {
		for _, v := range []any{k, &k, Chain{Name: "c", Keys: []Key{k}}} {
			if out := fmt.Sprintf(verb, v); strings.Contains(out, string(secret)) || strings.Contains(out, fmt.Sprintf("%x", secret)) {
				t.Errorf("%s shows the key: %s", verb, out)
			}
		}
	}
	b, _ := json.Marshal(Chain{Name: "c", Keys: []Key{k}})
	if strings.Contains(string(b), "Zebra") || strings.Contains(string(b), "WmVicm") {
		t.Errorf("json.Marshal shows the key: %s", b)
	}
}
