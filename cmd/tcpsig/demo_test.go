package main

import (
	"encoding/hex"
	"encoding/json"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateDemo = flag.Bool("update-demo", false, "regenerate the built-in sample: testdata/demo.pcap, demo.json, demo.keys.json")

// demoConfig is the built-in sample while no kernel TCP-AO capture is in
// the tree: a BGP session between two endpoints signing with package ao,
// HMAC-SHA-1-96, rotated mid-stream from KeyID 100/200 to 101/201.
func demoConfig() convoConfig {
	return convoConfig{
		client: netip.MustParseAddrPort("192.0.2.1:50179"), server: netip.MustParseAddrPort("192.0.2.2:179"),
		clientISN: 0x3c9a1d07, serverISN: 0xe1f2a3b4,
		mkts: []mktSpec{
			{alg: "hmac(sha1)", key: []byte("bgp-ao-key-2024"), sndID: 100, rcvID: 200},
			{alg: "hmac(sha1)", key: []byte("bgp-ao-key-2025"), sndID: 101, rcvID: 201},
		},
	}
}

// demoKernelCapture is the kernel capture the built-in sample is copied
// from, when testvectors/linux has it.
const demoKernelCapture = "hmac-sha1-v4-maclen12"

// TestDemoGenerate rewrites the built-in sample (go test -run
// TestDemoGenerate -update-demo): a copy of a kernel capture of
// testvectors/linux, or, without one, a session signed by package ao.
func TestDemoGenerate(t *testing.T) {
	if !*updateDemo {
		t.Skip("run with -update-demo to regenerate testdata/demo.pcap")
	}
	entry, pcap := kernelDemo(t)
	if entry == nil {
		entry, pcap = engineDemo(t)
	}
	// Printable keys read better in the README as text than as hex.
	for _, k := range entry["keys"].(map[string]any)["ao"].([]any) {
		e := k.(map[string]any)
		if h, ok := strings.CutPrefix(e["key"].(string), "hex:"); ok {
			if b, err := hex.DecodeString(h); err == nil && printable(b) {
				e["key"] = "text:" + string(b)
			}
		}
	}
	keys := entry["keys"]
	delete(entry, "keys")
	if err := os.WriteFile("testdata/demo.pcap", pcap, 0o644); err != nil {
		t.Fatal(err)
	}
	for file, v := range map[string]any{"testdata/demo.json": entry, "testdata/demo.keys.json": keys} {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func printable(b []byte) bool {
	for _, c := range b {
		if c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// kernelDemo is the kernel capture demoKernelCapture and its manifest
// entry, or nil.
func kernelDemo(t *testing.T) (map[string]any, []byte) {
	dir := filepath.Join("..", "..", "testvectors", "linux")
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, nil
	}
	var m struct {
		Kernel   string           `json:"kernel"`
		Captures []map[string]any `json:"captures"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, c := range m.Captures {
		if c["name"] != demoKernelCapture {
			continue
		}
		pcap, err := os.ReadFile(filepath.Join(dir, c["file"].(string)))
		if err != nil {
			t.Fatal(err)
		}
		return map[string]any{
			"name":   c["name"],
			"source": "captured from Linux " + m.Kernel + ", kernel to kernel on lo under qemu: testvectors/linux",
			"notes": "TCP-AO between two Linux sockets, HMAC-SHA-1-96: handshake, data both ways, " +
				"a key rotation driven from both ends (MKT 100/200, then 101/201), FIN close.",
			"keys": c["keys"],
		}, pcap
	}
	return nil, nil
}

// engineDemo is a session between two endpoints signing with package ao.
func engineDemo(t *testing.T) (map[string]any, []byte) {
	cv := newConvo(t, demoConfig())
	cv.session(4, 2)
	var keys map[string]any
	if err := json.Unmarshal(cv.keys(), &keys); err != nil {
		t.Fatal(err)
	}
	return map[string]any{
		"name":   "bgp-hmac-sha1-rotation",
		"source": "engine-generated: tcpsig's ao package signing both ends, not a kernel capture",
		"notes": "A BGP session 192.0.2.1:50179 -> 192.0.2.2:179 with TCP-AO HMAC-SHA-1-96: handshake, " +
			"4 exchanges, a key rotation from KeyIDs 100/200 to 101/201 driven by the client, FIN close.",
		"keys": keys,
	}, pcapFile(ltEthernet, false, framed(ltEthernet, cv.pkts))
}

// TestDemo is "go run ./cmd/tcpsig verify" on a fresh clone.
func TestDemo(t *testing.T) {
	code, out, errOut := cli(t, "verify")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
	for _, want := range []string{"built-in sample", "every checked segment is good", "flow 1:", "100,101", "200,201"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = cli(t, "verify", "-json")
	segs, sum := jsonLines(t, out)
	if code != 0 || len(segs) == 0 || sum.Summary.Verdicts.Good != uint64(len(segs)) {
		t.Fatalf("-json: exit %d, %d segments, summary %+v", code, len(segs), sum.Summary)
	}
}
