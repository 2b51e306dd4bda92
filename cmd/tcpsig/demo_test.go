package main

import (
	"encoding/json"
	"flag"
	"net/netip"
	"os"
	"strings"
	"testing"
)

var updateDemo = flag.Bool("update-demo", false, "regenerate the engine-generated testdata/demo.pcap and demo.json")

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

// TestDemoGenerate rewrites the built-in sample (go test -run
// TestDemoGenerate -update-demo).
func TestDemoGenerate(t *testing.T) {
	if !*updateDemo {
		t.Skip("run with -update-demo to regenerate testdata/demo.pcap")
	}
	cv := newConvo(t, demoConfig())
	cv.session(4, 2)
	if err := os.WriteFile("testdata/demo.pcap", pcapFile(ltEthernet, false, framed(ltEthernet, cv.pkts)), 0o644); err != nil {
		t.Fatal(err)
	}
	var keys map[string]any
	if err := json.Unmarshal(cv.keys(), &keys); err != nil {
		t.Fatal(err)
	}
	// Text keys read better in the README than their hex.
	for _, k := range keys["ao"].([]any) {
		e := k.(map[string]any)
		switch e["key"] {
		case "hex:6267702d616f2d6b65792d32303234":
			e["key"] = "text:bgp-ao-key-2024"
		case "hex:6267702d616f2d6b65792d32303235":
			e["key"] = "text:bgp-ao-key-2025"
		}
	}
	entry := map[string]any{
		"name":   "bgp-hmac-sha1-rotation",
		"source": "engine-generated: tcpsig's ao package signing both ends, not a kernel capture",
		"notes": "A BGP session 192.0.2.1:50179 -> 192.0.2.2:179 with TCP-AO HMAC-SHA-1-96: handshake, " +
			"4 exchanges, a key rotation from KeyIDs 100/200 to 101/201 driven by the client, FIN close.",
		"keys": keys,
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(entry); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("testdata/demo.json", []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
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
