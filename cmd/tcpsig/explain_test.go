package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/tcpsig/tcpsig/internal/redact"
	"github.com/tcpsig/tcpsig/pcapverify"
	"github.com/tcpsig/tcpsig/segment"
)

// The contract of verify -explain, proved on the kernel captures of
// testvectors/linux (every algorithm, both families) and testvectors/md5:
// each capture is verified with a keys file that carries one mistake, and
// the case passes only when exactly the expected cause is named for the
// affected directions and no other diagnosis is given.

// keysDoc is a keys file as JSON, for making mistakes in.
type keysDoc map[string][]map[string]any

func parseKeysDoc(t *testing.T, raw json.RawMessage) keysDoc {
	t.Helper()
	var k keysDoc
	if err := json.Unmarshal(raw, &k); err != nil {
		t.Fatal(err)
	}
	return k
}

func (k keysDoc) bytes(t *testing.T) []byte {
	b, err := json.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// keyBytes decodes an entry's "key".
func keyBytes(t *testing.T, e map[string]any) []byte {
	s := e["key"].(string)
	if h, ok := strings.CutPrefix(s, "hex:"); ok {
		b, err := hex.DecodeString(h)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return []byte(strings.TrimPrefix(s, "text:"))
}

// dir is a flow direction, "from > to".
type dir struct{ from, to string }

func (d dir) String() string { return d.from + " > " + d.to }

// explainRun verifies pcap with keys and -explain -json, and returns
// the diagnoses by direction; it fails on a second diagnosis of one
// direction or an exit status of 2.
func explainRun(t *testing.T, keys []byte, pcap string, flags []string) map[dir]pcapverify.Diagnosis {
	t.Helper()
	args := append([]string{"verify", "-json", "-explain", "-keys", writeFile(t, "keys.json", keys)}, flags...)
	code, out, errOut := cli(t, append(args, pcap)...)
	if code == exitError {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	_, sum := jsonLines(t, out)
	var kd keysDoc
	if err := json.Unmarshal(keys, &kd); err != nil {
		t.Fatal(err)
	}
	for _, es := range kd {
		for _, e := range es {
			if k := keyBytes(t, e); len(k) >= 5 && sum.Summary.Diagnoses != nil {
				if leak := redact.Leak(fmt.Sprint(*sum.Summary.Diagnoses), k); leak != "" {
					t.Errorf("a diagnosis shows a key (%q)", leak)
				}
			}
		}
	}
	if sum.Summary.Diagnoses == nil {
		t.Fatalf("the summary has no \"diagnoses\": %s", out[strings.LastIndex(out, "{\"summary\""):])
	}
	got := map[dir]pcapverify.Diagnosis{}
	for _, d := range *sum.Summary.Diagnoses {
		k := dir{d.From, d.To}
		if _, dup := got[k]; dup {
			t.Fatalf("two diagnoses for %v", k)
		}
		if d.Message == "" {
			t.Errorf("%v: %s without a message", k, d.Cause)
		}
		got[k] = d
	}
	return got
}

// checkDiagnoses checks that want's directions, and no other, are
// diagnosed with cause.
func checkDiagnoses(t *testing.T, got map[dir]pcapverify.Diagnosis, cause string, want []dir) {
	t.Helper()
	for _, d := range want {
		g, ok := got[d]
		switch {
		case !ok:
			t.Errorf("%v: no diagnosis, want %s", d, cause)
		case string(g.Cause) != cause:
			t.Errorf("%v: %s (%s), want %s", d, g.Cause, g.Message, cause)
		}
	}
	for d, g := range got {
		if !slices.Contains(want, d) {
			t.Errorf("%v: unexpected diagnosis %s: %s", d, g.Cause, g.Message)
		}
	}
}

// directions are a capture's flow directions under the right keys: the
// client's (the flow's first endpoint) first.
func directions(t *testing.T, f fixture) (c2s, all []dir) {
	t.Helper()
	code, out, errOut := cli(t, f.args(t, "")...)
	if code != exitGood {
		t.Fatalf("right keys: exit %d: %s", code, errOut)
	}
	_, sum := jsonLines(t, out)
	for _, fl := range sum.Summary.Files[0].Flows {
		for _, d := range fl.Directions {
			all = append(all, dir{d.From, d.To})
			if d.From == fl.Endpoints[0] {
				c2s = append(c2s, dir{d.From, d.To})
			}
		}
	}
	return c2s, all
}

// aoCase is one mistake in a TCP-AO keys file: mutate changes the entries
// that judge what the client sends (their peer is the client), and says
// false when the mistake cannot be made in this capture.
type aoCase struct {
	cause  string
	both   bool // every direction is affected, not only the client's
	mutate func(t *testing.T, k keysDoc, client netip.Addr) bool
}

// clientEntries calls f on the "ao" entries whose peer is client.
func clientEntries(k keysDoc, client netip.Addr, f func(e map[string]any) bool) bool {
	ok := true
	for _, e := range k["ao"] {
		if p, err := netip.ParsePrefix(e["peer"].(string)); err == nil && p.Contains(client) {
			ok = f(e) && ok
		}
	}
	return ok
}

var aoCases = map[string]aoCase{
	"algorithm": {cause: "algorithm", mutate: func(t *testing.T, k keysDoc, c netip.Addr) bool {
		return clientEntries(k, c, func(e map[string]any) bool {
			e["alg"] = map[bool]string{true: "hmac(sha256)", false: "hmac(sha1)"}[e["alg"] == "hmac(sha1)"]
			return true
		})
	}},
	// Not on the -sack captures: Linux drops TS from a TCP-AO SYN-ACK
	// when SACK is on, so only the SYN carries options and every other
	// segment verifies either way: the direction is tampered, as most of
	// it verifies.
	"options": {cause: "options", mutate: func(t *testing.T, k keysDoc, c netip.Addr) bool {
		return clientEntries(k, c, func(e map[string]any) bool { e["exclude_options"] = !(e["exclude_options"] == true); return true })
	}},
	"key-id": {cause: "key-id", mutate: func(t *testing.T, k keysDoc, c netip.Addr) bool {
		return clientEntries(k, c, func(e map[string]any) bool { e["rcvid"] = e["rcvid"].(float64) + 50; return true })
	}},
	"key-id swapped": {cause: "key-id", mutate: func(t *testing.T, k keysDoc, c netip.Addr) bool {
		return clientEntries(k, c, func(e map[string]any) bool {
			e["sndid"], e["rcvid"] = e["rcvid"], e["sndid"]
			return e["sndid"] != e["rcvid"]
		})
	}},
	"mac-length": {cause: "mac-length", mutate: func(t *testing.T, k keysDoc, c netip.Addr) bool {
		return clientEntries(k, c, func(e map[string]any) bool {
			e["maclen"] = map[bool]float64{true: 16, false: 12}[e["maclen"] == 12.0]
			return true
		})
	}},
	"trailing newline": {cause: "key-encoding", mutate: func(t *testing.T, k keysDoc, c netip.Addr) bool {
		return clientEntries(k, c, func(e map[string]any) bool {
			b := append(keyBytes(t, e), '\n')
			e["key"] = "hex:" + hex.EncodeToString(b)
			return e["alg"] != "cmac(aes)" && len(b) <= 80 // cmac(aes): 16 or 32 bytes only
		})
	}},
	"hex typed as text": {cause: "key-encoding", mutate: func(t *testing.T, k keysDoc, c netip.Addr) bool {
		return clientEntries(k, c, func(e map[string]any) bool {
			b := keyBytes(t, e)
			e["key"] = "text:" + hex.EncodeToString(b)
			return (e["alg"] != "cmac(aes)" || len(b) == 16) && 2*len(b) <= 80
		})
	}},
	"secret": {cause: "secret", mutate: func(t *testing.T, k keysDoc, c netip.Addr) bool {
		return clientEntries(k, c, func(e map[string]any) bool {
			b := keyBytes(t, e)
			for i := range b {
				b[i] ^= 0x5a
			}
			e["key"] = "hex:" + hex.EncodeToString(b)
			return true
		})
	}},
	"auth-kind": {cause: "auth-kind", both: true, mutate: func(t *testing.T, k keysDoc, c netip.Addr) bool {
		var md5 []map[string]any
		for _, e := range k["ao"] {
			if !slices.ContainsFunc(md5, func(m map[string]any) bool { return m["peer"] == e["peer"] }) {
				md5 = append(md5, map[string]any{"peer": e["peer"], "key": e["key"]})
			}
		}
		delete(k, "ao")
		k["md5"] = md5
		return true
	}},
	"peer-address": {cause: "peer-address", both: true, mutate: func(t *testing.T, k keysDoc, c netip.Addr) bool {
		for _, e := range k["ao"] {
			p := netip.MustParsePrefix(e["peer"].(string))
			e["peer"] = elsewhere(p).String()
		}
		return true
	}},
}

// elsewhere moves a capture's address into a documentation prefix: the
// same last byte, another network.
func elsewhere(p netip.Prefix) netip.Prefix {
	b := p.Addr().As16()
	if p.Addr().Is4() {
		return netip.PrefixFrom(netip.AddrFrom4([4]byte{192, 0, 2, b[15]}), max(p.Bits(), 24)).Masked()
	}
	return netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0xff, 15: b[15]}), max(p.Bits(), 40)).Masked()
}

// skipAO are the captures the one-mistake cases do not use: both ends on
// one address, where an entry may be either end's (pcapverify judges them
// under two readings, and a mistake in one is the other's right key).
func skipAO(name string) bool { return strings.Contains(name, "sameaddr") }

func TestExplainAO(t *testing.T) {
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range aoCases {
			if !yield(n) {
				return
			}
		}
	})
	ran := map[string]int{}
	for _, f := range fixtures(t, "linux") {
		if skipAO(f.name) {
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			c2s, all := directions(t, f)
			client := netip.MustParseAddrPort(c2s[0].from).Addr()
			got := explainRun(t, parseKeysDoc(t, f.keys).bytes(t), f.file, f.flags())
			checkDiagnoses(t, got, "", nil) // right keys: nothing to explain
			for _, n := range names {
				c := aoCases[n]
				k := parseKeysDoc(t, f.keys)
				if !c.mutate(t, k, client) || (n == "options" && strings.HasSuffix(f.name, "-sack")) {
					continue
				}
				want := c2s
				if c.both {
					want = all
				}
				t.Run(n, func(t *testing.T) {
					checkDiagnoses(t, explainRun(t, k.bytes(t), f.file, f.flags()), c.cause, want)
				})
				ran[n]++
			}
			t.Run("tampered", func(t *testing.T) { explainTampered(t, f) })
			t.Run("unsigned", func(t *testing.T) {
				pcap := writeFile(t, "unsigned.pcap", stripAO(t, mustRead(t, f.file), client))
				checkDiagnoses(t, explainRun(t, f.keys, pcap, f.flags()), "unsigned", c2s)
			})
			t.Run("isn", func(t *testing.T) {
				pcap := f.file
				if len(f.isn) == 0 {
					b, _ := withoutHandshake(t, mustRead(t, f.file))
					pcap = writeFile(t, "nohandshake.pcap", b)
				}
				checkDiagnoses(t, explainRun(t, f.keys, pcap, nil), "isn", all)
			})
		})
	}
	t.Logf("cases run: %v", ran)
}

// explainTampered: right keys, one MAC bit flipped in the middle of the
// capture: that frame's direction is tampered, nothing else.
func explainTampered(t *testing.T, f fixture) {
	b, frame := corrupt(t, mustRead(t, f.file), "mac")
	pcap := writeFile(t, "tampered.pcap", b)
	args := append([]string{"verify", "-json", "-keys", writeFile(t, "keys.json", f.keys)}, f.flags()...)
	_, out, _ := cli(t, append(args, pcap)...)
	segs, _ := jsonLines(t, out)
	var d dir
	for _, s := range segs {
		if s.Frame == frame {
			d = dir{s.Src, s.Dst}
		}
	}
	checkDiagnoses(t, explainRun(t, f.keys, pcap, f.flags()), "tampered", []dir{d})
}

// stripAO returns a copy of a pcap file in which the TCP-AO option of
// every segment from addr is NOPs.
func stripAO(t *testing.T, b []byte, addr netip.Addr) []byte {
	t.Helper()
	out := slices.Clone(b)
	_, recs := pcapRecords(t, out)
	for _, r := range recs {
		if r.ipOff < 0 {
			continue
		}
		seg, err := segment.ParsePacket(out[r.ipOff : r.off+r.n])
		if err != nil || seg.Auth().AO == 0 || seg.Src().Unmap() != addr {
			continue
		}
		h, at := seg.Header(), seg.Auth().AO
		for i, n := at, int(h[at+1]); i < at+n; i++ {
			h[i] = 1 // NOP
		}
	}
	return out
}

// md5Cases are the TCP-MD5 mistakes: each changes every entry, so every
// direction is affected.
var md5Cases = map[string]struct {
	cause  string
	mutate func(t *testing.T, k keysDoc) bool
}{
	"secret": {"secret", func(t *testing.T, k keysDoc) bool {
		for i, e := range k["md5"] {
			e["key"] = fmt.Sprintf("text:not-the-secret-%d", i)
		}
		return true
	}},
	"trailing newline": {"key-encoding", func(t *testing.T, k keysDoc) bool {
		for _, e := range k["md5"] {
			b := append(keyBytes(t, e), '\n')
			if len(b) > 80 {
				return false
			}
			e["key"] = "hex:" + hex.EncodeToString(b)
		}
		return true
	}},
	"ao keys for an md5 peer": {"auth-kind", func(t *testing.T, k keysDoc) bool {
		for i, e := range k["md5"] {
			e["alg"], e["sndid"], e["rcvid"] = "hmac(sha1)", float64(i), float64(i)
		}
		k["ao"] = k["md5"]
		delete(k, "md5")
		return true
	}},
	"key for another address": {"peer-address", func(t *testing.T, k keysDoc) bool {
		for _, e := range k["md5"] {
			e["peer"] = elsewhere(netip.MustParsePrefix(e["peer"].(string))).String()
		}
		return true
	}},
}

func TestExplainMD5(t *testing.T) {
	for _, f := range fixtures(t, "md5") {
		t.Run(f.name, func(t *testing.T) {
			_, all := directions(t, f)
			checkDiagnoses(t, explainRun(t, f.keys, f.file, nil), "", nil)
			names := make([]string, 0, len(md5Cases))
			for n := range md5Cases {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				c := md5Cases[n]
				k := parseKeysDoc(t, f.keys)
				if !c.mutate(t, k) {
					continue
				}
				t.Run(n, func(t *testing.T) { checkDiagnoses(t, explainRun(t, k.bytes(t), f.file, nil), c.cause, all) })
			}
			t.Run("tampered", func(t *testing.T) { explainTampered(t, f) })
		})
	}
}

// Without -explain the summary has no "diagnoses", and the output is
// what it was.
func TestExplainOff(t *testing.T) {
	f := fixtures(t, "linux")[0]
	k := parseKeysDoc(t, f.keys)
	aoCases["options"].mutate(t, k, netip.MustParseAddr("127.0.0.2"))
	_, out, _ := cli(t, append([]string{"verify", "-json", "-keys", writeFile(t, "keys.json", k.bytes(t))}, f.file)...)
	if strings.Contains(out, "diagnos") {
		t.Errorf("without -explain: %s", out)
	}
	_, text, _ := cli(t, "verify", "-keys", writeFile(t, "keys.json", k.bytes(t)), f.file)
	_, textEx, _ := cli(t, "verify", "-explain", "-keys", writeFile(t, "keys.json", k.bytes(t)), f.file)
	if strings.Contains(text, "diagnosis") || !strings.Contains(textEx, "\ndiagnosis:\n") {
		t.Errorf("text without -explain:\n%s\nwith:\n%s", text, textEx)
	}
	if i := strings.Index(textEx, "\ndiagnosis:"); i < 0 || !strings.HasPrefix(textEx, text[:strings.Index(text, "\nflow 1")]) {
		t.Errorf("-explain changed the lines before the diagnosis")
	}
}
