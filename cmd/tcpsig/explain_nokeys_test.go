package main

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/tcpsig/tcpsig/diagnose"
	"github.com/tcpsig/tcpsig/pcapverify"
	"github.com/tcpsig/tcpsig/segment"
)

// verify -explain without -keys: each flow direction is judged by what
// the wire shows alone (unsigned, isn, auth-kind), on the kernel captures
// of testvectors/linux and testvectors/md5 and on synthetic MD5-against-AO
// flows. Each case passes only when exactly the expected cause is named
// for the affected directions and nothing else.

// keylessRun verifies pcap with -json -explain and no -keys, checks the
// summary's "diagnoses" against the contract (an array, each object
// exactly from, to, cause, message and entry, entry "" as there is no
// keys file) and returns them by direction, with the exit status.
func keylessRun(t *testing.T, pcap string, flags []string) (map[dir]pcapverify.Diagnosis, int) {
	t.Helper()
	args := append(append([]string{"verify", "-json", "-explain"}, flags...), pcap)
	code, out, errOut := cli(t, args...)
	if code == exitError {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	last := out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:]
	var raw struct {
		Summary map[string]json.RawMessage `json:"summary"`
	}
	if err := json.Unmarshal([]byte(last), &raw); err != nil {
		t.Fatalf("summary: %v: %s", err, last)
	}
	var objs []map[string]any
	if err := json.Unmarshal(raw.Summary["diagnoses"], &objs); err != nil || objs == nil {
		t.Fatalf("\"diagnoses\" is not an array (%v): %s", err, last)
	}
	got := map[dir]pcapverify.Diagnosis{}
	for _, o := range objs {
		if keys := slices.Sorted(func(yield func(string) bool) {
			for k := range o {
				if !yield(k) {
					return
				}
			}
		}); !slices.Equal(keys, []string{"cause", "entry", "from", "message", "to"}) {
			t.Errorf("a diagnosis has the fields %v", keys)
		}
		d := pcapverify.Diagnosis{From: o["from"].(string), To: o["to"].(string), Cause: diagnose.Cause(o["cause"].(string)),
			Message: o["message"].(string), Entry: o["entry"].(string)}
		k := dir{d.From, d.To}
		if _, dup := got[k]; dup {
			t.Fatalf("two diagnoses for %v", k)
		}
		if d.Message == "" || d.Entry != "" {
			t.Errorf("%v: %s with message %q and entry %q, want a message and no entry", k, d.Cause, d.Message, d.Entry)
		}
		for _, ap := range []string{d.From, d.To} {
			if _, err := netip.ParseAddrPort(ap); err != nil {
				t.Errorf("%v: %q is not ip:port", k, ap)
			}
		}
		got[k] = d
	}
	return got, code
}

// stripSigns returns a copy of a pcap file in which the TCP-AO or TCP-MD5
// option of every segment from addr is NOPs, its TCP (and IPv4 header)
// checksum set again.
func stripSigns(t *testing.T, b []byte, addrs ...netip.Addr) []byte {
	t.Helper()
	out := slices.Clone(b)
	_, recs := pcapRecords(t, out)
	n := 0
	for _, r := range recs {
		if r.ipOff < 0 {
			continue
		}
		ip := out[r.ipOff : r.off+r.n]
		seg, err := segment.ParsePacket(ip)
		if err != nil || !slices.Contains(addrs, seg.Src().Unmap()) {
			continue
		}
		at := seg.Auth().AO
		if at == 0 {
			at = seg.Auth().MD5
		}
		if at == 0 {
			continue
		}
		h := seg.Header()
		for i, end := at, at+int(h[at+1]); i < end; i++ {
			h[i] = segment.OptionKindNOP
		}
		if err := segment.SetTCPChecksum(ip); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n == 0 {
		t.Fatalf("no signed segment from %v to strip", addrs)
	}
	return out
}

// TestExplainNoKeys: the kernel captures, without -keys. Whole (with the
// manifest's -isn where the handshake is not on the wire): nothing to
// diagnose, an empty array, exit 3. Without their handshake and -isn:
// isn for every direction. The client's options stripped: unsigned for
// the client's direction only.
func TestExplainNoKeys(t *testing.T) {
	for _, kind := range []string{"linux", "md5"} {
		for _, f := range fixtures(t, kind) {
			if skipAO(f.name) {
				continue
			}
			t.Run(f.name, func(t *testing.T) {
				c2s, all := directions(t, f)
				var clients []netip.Addr
				for _, d := range c2s {
					clients = append(clients, netip.MustParseAddrPort(d.from).Addr())
				}
				got, code := keylessRun(t, f.file, f.flags())
				checkDiagnoses(t, got, "", nil)
				if code != exitNothing {
					t.Errorf("clean capture without keys: exit %d, want %d", code, exitNothing)
				}
				if kind == "linux" {
					t.Run("isn", func(t *testing.T) {
						pcap := f.file
						if len(f.isn) == 0 {
							b, _ := withoutHandshake(t, mustRead(t, f.file))
							pcap = writeFile(t, "nohandshake.pcap", b)
						}
						got, code := keylessRun(t, pcap, nil)
						checkDiagnoses(t, got, "isn", all)
						if code != exitFailed {
							t.Errorf("exit %d, want %d", code, exitFailed)
						}
					})
				}
				t.Run("unsigned", func(t *testing.T) {
					pcap := writeFile(t, "unsigned.pcap", stripSigns(t, mustRead(t, f.file), clients...))
					got, _ := keylessRun(t, pcap, f.flags())
					checkDiagnoses(t, got, "unsigned", c2s)
					for k, d := range got {
						if !strings.Contains(d.Message, netip.MustParseAddrPort(k.from).Addr().String()+" sends no TCP-AO or TCP-MD5 option") {
							t.Errorf("message: %s", d.Message)
						}
					}
				})
			})
		}
	}
}

// mixedFlow is a synthetic session whose client signs with TCP-MD5 and
// whose server signs with TCP-AO (md5Client false: the reverse), as two
// stacks configured with different kinds would send it.
func mixedFlow(t *testing.T, client, server netip.AddrPort, md5Client bool) []byte {
	cfg := convoConfig{client: client, server: server, clientISN: 1000, serverISN: 900000, md5Key: []byte("mixed-kind-secret")}
	md5 := newConvo(t, cfg)
	cfg.mkts = []mktSpec{{alg: "hmac(sha256)", key: []byte("mixed-kind-secret"), sndID: 3, rcvID: 4}}
	aoc := newConvo(t, cfg)
	md5.session(2, 0)
	aoc.session(2, 0)
	var pkts [][]byte
	for i := range md5.pkts {
		p := aoc.pkts[i]
		if fromClient := bytes.Equal(p[12:16], client.Addr().AsSlice()) || (p[0]>>4 == 6 && bytes.Equal(p[8:24], client.Addr().AsSlice())); fromClient == md5Client {
			p = md5.pkts[i]
		}
		pkts = append(pkts, p)
	}
	return pcapFile(ltRaw, false, framed(ltRaw, pkts))
}

// TestExplainNoKeysAuthKind: one end signs with TCP-MD5, the other with
// TCP-AO: auth-kind for both directions, each naming what it sees.
func TestExplainNoKeysAuthKind(t *testing.T) {
	for _, c := range []struct {
		name           string
		client, server string
		md5Client      bool
	}{
		{"md5 client v4", "192.0.2.1:40000", "192.0.2.2:179", true},
		{"ao client v6", "[2001:db8::1]:40000", "[2001:db8::2]:179", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl, sv := netip.MustParseAddrPort(c.client), netip.MustParseAddrPort(c.server)
			pcap := writeFile(t, "mixed.pcap", mixedFlow(t, cl, sv, c.md5Client))
			got, code := keylessRun(t, pcap, nil)
			checkDiagnoses(t, got, "auth-kind", []dir{{c.client, c.server}, {c.server, c.client}})
			if code != exitFailed {
				t.Errorf("exit %d, want %d", code, exitFailed)
			}
			clientKind, serverKind := "TCP-AO", "TCP-MD5"
			if c.md5Client {
				clientKind, serverKind = serverKind, clientKind
			}
			want := "the peer " + sv.Addr().String() + " signs with " + serverKind + ", this end " + cl.Addr().String() + " with " + clientKind + ": configure the same kind on both"
			if m := got[dir{c.client, c.server}].Message; m != want {
				t.Errorf("client's message %q, want %q", m, want)
			}
		})
	}
}

// TestExplainNoKeysText: the text report's diagnosis section, and the
// line saying which causes need -keys once, for two captures; without
// -explain -keys is still required, and with no CAPTURE the built-in
// sample runs with its keys.
func TestExplainNoKeysText(t *testing.T) {
	f := fixtures(t, "linux")[0]
	c2s, _ := directions(t, f)
	pcap := writeFile(t, "unsigned.pcap", stripSigns(t, mustRead(t, f.file), netip.MustParseAddrPort(c2s[0].from).Addr()))
	code, out, errOut := cli(t, append(append([]string{"verify", "-explain"}, f.flags()...), pcap, f.file)...)
	if code != exitFailed {
		t.Errorf("exit %d (%s), want %d", code, errOut, exitFailed)
	}
	if n := strings.Count(out, "need the keys: give -keys FILE"); n != 1 {
		t.Errorf("the causes that need -keys are said %d times:\n%s", n, out)
	}
	if !strings.Contains(out, "\ndiagnosis:\n  "+c2s[0].String()+": unsigned: ") ||
		!strings.Contains(out, "\ndiagnosis: the wire shows no unsigned, isn or auth-kind cause\n") {
		t.Errorf("diagnosis sections:\n%s", out)
	}
	if code, _, errOut := cli(t, "verify", f.file); code != exitError || !strings.Contains(errOut, "-keys FILE is required") {
		t.Errorf("without -explain: exit %d: %s", code, errOut)
	}
	if code, out, _ := cli(t, "verify", "-explain"); code != exitGood || !strings.Contains(out, "diagnosis: nothing to explain") {
		t.Errorf("the built-in sample with -explain: exit %d:\n%s", code, out)
	}
}
