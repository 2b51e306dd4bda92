package main

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/pcapverify"
	"github.com/tcpsig/tcpsig/segment"
)

var (
	cli4 = netip.MustParseAddrPort("198.51.100.1:40001")
	srv4 = netip.MustParseAddrPort("198.51.100.2:179")
	cli6 = netip.MustParseAddrPort("[2001:db8::1]:40001")
	srv6 = netip.MustParseAddrPort("[2001:db8::2]:179")
)

func sha1MKTs() []mktSpec {
	return []mktSpec{
		{alg: "hmac(sha1)", key: []byte("first-key"), sndID: 100, rcvID: 200},
		{alg: "hmac(sha1)", key: []byte("second-key"), sndID: 101, rcvID: 201},
	}
}

// verifyPcap runs verify -json on a pcap with a keys file and extra flags.
func verifyPcap(t *testing.T, pcap, keys []byte, flags ...string) (int, []segmentJSON, summaryJSON, string) {
	t.Helper()
	args := append([]string{"verify", "-json", "-keys", writeFile(t, "keys.json", keys)}, flags...)
	args = append(args, writeFile(t, "c.pcap", pcap))
	code, out, errOut := cli(t, args...)
	segs, sum := jsonLines(t, out)
	return code, segs, sum, errOut
}

func wantVerdicts(t *testing.T, segs []segmentJSON, want map[string]int) {
	t.Helper()
	got := verdictsOf(segs)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		var lines []string
		for _, s := range segs {
			if s.Verdict != "good" {
				lines = append(lines, fmt.Sprintf("frame %d %s: %s", s.Frame, s.Verdict, s.Reason))
			}
		}
		t.Fatalf("verdicts %v, want %v\n%s", got, want, strings.Join(lines, "\n"))
	}
}

// Algorithms, MAC lengths, excluded options, IPv4 and IPv6, with a
// rotation mid-stream: all good, KeyIDs of both MKTs seen.
func TestSyntheticSessions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mkts   []mktSpec
		v6     bool
		rotate int
	}{
		{"sha1-rotation-v4", sha1MKTs(), false, 2},
		{"sha1-rotation-v6", sha1MKTs(), true, 1},
		{"cmac-maclen4-exclopt", []mktSpec{{alg: "cmac(aes128)", key: []byte("0123456789abcdef"), sndID: 1, rcvID: 2, maclen: 4, exclude: true}}, false, 0},
		{"sha256-maclen16", []mktSpec{{alg: "hmac(sha256)", key: []byte("k"), sndID: 7, rcvID: 7, maclen: 16}}, true, 0},
		{"rmd160", []mktSpec{{alg: "hmac(rmd160)", key: []byte("rmd"), sndID: 3, rcvID: 4}}, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, s := cli4, srv4
			if tc.v6 {
				c, s = cli6, srv6
			}
			cv := newConvo(t, convoConfig{client: c, server: s, clientISN: 1000, serverISN: 900000, mkts: tc.mkts})
			cv.session(4, tc.rotate)
			code, segs, sum, _ := verifyPcap(t, pcapFile(ltEthernet, false, framed(ltEthernet, cv.pkts)), cv.keys())
			if code != 0 {
				t.Fatalf("exit %d", code)
			}
			wantVerdicts(t, segs, map[string]int{"good": len(cv.pkts)})
			d := sum.Summary.Files[0].Flows[0].Directions
			if tc.rotate > 0 && (fmt.Sprint(d[0].KeyIDs) != "[100 101]" || fmt.Sprint(d[1].KeyIDs) != "[200 201]") {
				t.Errorf("KeyIDs %v / %v, want both MKTs of each side", d[0].KeyIDs, d[1].KeyIDs)
			}
			if d[0].From != c.String() || d[0].ISNFrom != "SYN" || d[1].ISNFrom != "SYN-ACK" {
				t.Errorf("flow table %+v", d)
			}
		})
	}
}

// The sequence numbers wrap: with the handshake the SNE goes 0 -> 1;
// without it, -isn and -sne give what the capture lacks.
func TestSNEWrap(t *testing.T) {
	cv := newConvo(t, convoConfig{client: cli4, server: srv4, clientISN: 0xffffffff - 2000, serverISN: 0xfffffff0, mkts: sha1MKTs()})
	cv.session(8, 0)
	pcap := pcapFile(ltEthernet, false, framed(ltEthernet, cv.pkts))
	code, segs, sum, _ := verifyPcap(t, pcap, cv.keys())
	wantVerdicts(t, segs, map[string]int{"good": len(cv.pkts)})
	if code != 0 || sum.Summary.Files[0].Flows[0].Directions[0].SNE != 1 || sum.Summary.Files[0].Flows[0].Directions[1].SNE != 1 {
		t.Fatalf("exit %d, flows %+v", code, sum.Summary.Files[0].Flows)
	}

	// A capture that starts after the wrap of the client's direction but
	// not of the server's: the client's data of round 2 is at seq 0.
	cut := newConvo(t, convoConfig{client: cli4, server: srv4, clientISN: 0xffffffff - 500, serverISN: 0x7fff0000, mkts: sha1MKTs()})
	cut.session(6, 0)
	const from = 3 + 4*2
	if seq := segSeq(t, cut.pkts[from]); seq != 0 {
		t.Fatalf("first captured segment at seq %d", seq)
	}
	pcap = pcapFile(ltEthernet, false, framed(ltEthernet, cut.pkts[from:]))
	code, _, _, _ = verifyPcap(t, pcap, cut.keys(), "-isn", fmt.Sprintf("%v=%d", cli4, uint32(0xffffffff-500)), "-isn", fmt.Sprintf("%v=0x7fff0000", srv4))
	if code != 1 {
		t.Fatalf("without -sne: exit %d, want 1 (the client's SNE is 1 by now)", code)
	}
	code, segs, _, _ = verifyPcap(t, pcap, cut.keys(), "-isn", fmt.Sprintf("%v=%d", cli4, uint32(0xffffffff-500)),
		"-isn", fmt.Sprintf("%v=0x7fff0000", srv4), "-sne", fmt.Sprintf("%v=1", cli4))
	if code != 0 {
		t.Fatalf("with -sne: exit %d", code)
	}
	wantVerdicts(t, segs, map[string]int{"good": len(cut.pkts) - from})
}

// A capture without the handshake: unknown-isn (exit 3: nothing was
// verified), then good with the ISNs on the command line.
func TestCutHandshake(t *testing.T) {
	cv := newConvo(t, demoConfig())
	cv.session(3, 0)
	full := pcapFile(ltEthernet, false, framed(ltEthernet, cv.pkts))
	pcap, isn := withoutHandshake(t, full)
	n := len(cv.pkts) - 2
	code, segs, _, _ := verifyPcap(t, pcap, cv.keys())
	if code != 3 {
		t.Errorf("exit %d, want 3", code)
	}
	wantVerdicts(t, segs, map[string]int{"unknown-isn": n})
	if !strings.Contains(segs[0].Reason, "-isn "+cv.c.ap.String()+"=ISN") {
		t.Errorf("reason %q does not say how to fix it", segs[0].Reason)
	}
	var flags []string
	for ep, v := range isn {
		flags = append(flags, "-isn", fmt.Sprintf("%s=%#x", ep, v))
	}
	code, segs, _, _ = verifyPcap(t, pcap, cv.keys(), flags...)
	if code != 0 {
		t.Errorf("with -isn: exit %d", code)
	}
	wantVerdicts(t, segs, map[string]int{"good": n})

	// Only the SYN-ACK is missing: the client's ISN comes from its SYN.
	var noSynAck [][]byte
	for i, p := range cv.pkts {
		if i != 1 {
			noSynAck = append(noSynAck, p)
		}
	}
	code, segs, _, _ = verifyPcap(t, pcapFile(ltEthernet, false, framed(ltEthernet, noSynAck)), cv.keys(),
		"-isn", fmt.Sprintf("%v=%d", cv.s.ap, cv.cfg.serverISN))
	if code != 0 {
		t.Errorf("SYN-ACK missing, server's -isn given: exit %d", code)
	}
	wantVerdicts(t, segs, map[string]int{"good": len(noSynAck)})
}

// A handshake segment that fails verification still gives its ISN.
func TestBadHandshakeStillTeachesISN(t *testing.T) {
	cv := newConvo(t, demoConfig())
	cv.session(2, 0)
	syn := cv.pkts[0]
	syn[len(syn)-1] ^= 1 // the last MAC byte of the SYN (the AO option is last)
	code, segs, _, _ := verifyPcap(t, pcapFile(ltEthernet, false, framed(ltEthernet, cv.pkts)), cv.keys())
	if code != 1 || segs[0].Verdict != "bad" {
		t.Fatalf("exit %d, SYN %s", code, segs[0].Verdict)
	}
	wantVerdicts(t, segs, map[string]int{"bad": 1, "good": len(cv.pkts) - 1})
}

// Both ends on one address with the same MKT (KeyIDs 5/5): one entry
// serves both ends.
func TestSameAddressSameMKT(t *testing.T) {
	lo := netip.MustParseAddr("127.0.0.1")
	c, s := netip.AddrPortFrom(lo, 40001), netip.AddrPortFrom(lo, 179)
	cv := newConvo(t, convoConfig{client: c, server: s, clientISN: 1, serverISN: 2,
		mkts: []mktSpec{{alg: "hmac(sha256)", key: []byte("client-and-server"), sndID: 5, rcvID: 5}}})
	cv.session(2, 0)
	code, segs, _, _ := verifyPcap(t, pcapFile(ltRaw, false, framed(ltRaw, cv.pkts)), cv.keys())
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	wantVerdicts(t, segs, map[string]int{"good": len(cv.pkts)})
}

// Issue 14 item 4: entries one keyring would refuse side by side (the
// same peer and KeyID), or an entry given twice, are refused naming both
// entries; before, both were taken as two "readings".
func TestDuplicateEntriesRefused(t *testing.T) {
	for _, tc := range []struct{ keys, want string }{
		{`{"ao": [
		{"alg": "hmac(sha256)", "key": "text:someone-else", "sndid": 5, "rcvid": 5, "peer": "127.0.0.1/32", "name": "decoy"},
		{"alg": "hmac(sha256)", "key": "text:client-and-server", "sndid": 5, "rcvid": 5, "peer": "127.0.0.1/32"}]}`,
			`ao[1].sndid: KeyID 5 for peer 127.0.0.1/32 is also the sndid of ao[0] ("decoy")`},
		{`{"ao": [
		{"alg": "hmac(sha256)", "key": "text:k", "sndid": 5, "rcvid": 6, "peer": "127.0.0.1/32"},
		{"alg": "hmac(sha256)", "key": "text:k", "sndid": 5, "rcvid": 6, "peer": "127.0.0.1"}]}`,
			`ao[1]: the same MKT as ao[0]`},
		{`{"md5": [{"peer": "192.0.2.1", "key": "text:a"}, {"peer": "192.0.2.1/32", "key": "text:b"}]}`,
			`md5[1].peer: 192.0.2.1/32 already has a key in md5[0]`},
		{`{"md5": [{"peer": "192.0.2.1", "key": "text:a"}, {"peer": "192.0.2.1/32", "key": "text:a"}]}`,
			`md5[1]: the same key as md5[0]`},
	} {
		code, _, errOut := cli(t, "verify", "-keys", writeFile(t, "keys.json", []byte(tc.keys)), writeFile(t, "c.pcap", demoPcap))
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("exit %d, stderr %q; want 2 and %q", code, errOut, tc.want)
		}
	}
}

// A keys file with one endpoint's MKTs only: the other direction is judged
// with them mirrored, and says so.
func TestOneSidedKeys(t *testing.T) {
	cv := newConvo(t, convoConfig{client: cli6, server: srv6, clientISN: 7, serverISN: 8, mkts: sha1MKTs()})
	cv.session(3, 2)
	code, segs, sum, _ := verifyPcap(t, pcapFile(ltSLL2, false, framed(ltSLL2, cv.pkts)), cv.keys(cv.c))
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	wantVerdicts(t, segs, map[string]int{"good": len(cv.pkts)})
	d := sum.Summary.Files[0].Flows[0].Directions
	if d[0].Reading != "sender" || d[1].Reading != "receiver" {
		t.Errorf("readings %q %q, want sender (client's own keys) and receiver", d[0].Reading, d[1].Reading)
	}
}

// The peer sends a KeyID the receiver has no MKT for (a key change on one
// side only): no-key, naming the RecvIDs the receiver has.
func TestNoKeyAfterKeyChange(t *testing.T) {
	cv := newConvo(t, demoConfig())
	cv.session(3, 0)
	keys := []byte(`{"ao": [
		{"alg": "hmac(sha1)", "key": "text:bgp-ao-key-2024", "sndid": 100, "rcvid": 200, "peer": "192.0.2.2/32"},
		{"alg": "hmac(sha1)", "key": "text:bgp-ao-key-2024", "sndid": 200, "rcvid": 99, "peer": "192.0.2.1/32", "name": "server-new"}]}`)
	code, segs, _, _ := verifyPcap(t, pcapFile(ltEthernet, false, framed(ltEthernet, cv.pkts)), keys)
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	n := verdictsOf(segs)
	if n["no-key"] == 0 || n["good"] == 0 || n["no-key"]+n["good"] != len(cv.pkts) {
		t.Fatalf("verdicts %v", n)
	}
	for _, s := range segs {
		if s.Verdict == "no-key" && !strings.Contains(s.Reason, "no MKT with RecvID 100") || s.Verdict == "no-key" && !strings.Contains(s.Reason, "server-new") {
			t.Fatalf("reason %q", s.Reason)
		}
	}
}

// Unsigned segments in a covered flow, a broken AO option, a segment
// signed with the wrong key: unsigned, malformed, bad.
func TestUnsignedMalformedBad(t *testing.T) {
	cv := newConvo(t, demoConfig())
	cv.send(cv.c, segment.SYN, nil)
	cv.send(cv.s, segment.SYN|segment.ACK, nil)
	cv.send(cv.c, segment.ACK, nil)
	cv.plain(cv.c, segment.PSH|segment.ACK, []byte("no signature"))
	p := cv.send(cv.s, segment.ACK, nil)
	broken := bytes.Clone(p)
	ihl := int(broken[0]&0xf) * 4
	// The AO option follows MSS-less options: NOP NOP TS(10), then kind 29.
	if broken[ihl+32] != segment.OptionKindAO {
		t.Fatalf("no AO option at the expected offset: % x", broken[ihl+20:ihl+36])
	}
	broken[ihl+33] = 3 // an AO option of length 3
	cv.pkts = append(cv.pkts, broken)
	code, segs, _, _ := verifyPcap(t, pcapFile(ltEthernet, false, framed(ltEthernet, cv.pkts)), cv.keys())
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	wantVerdicts(t, segs, map[string]int{"good": 4, "unsigned": 1, "malformed": 1})
	if segs[3].Kind != "none" || !strings.Contains(segs[3].Reason, "192.0.2.1") {
		t.Errorf("unsigned: %+v", segs[3])
	}
	if segs[5].Src != "192.0.2.2:179" || segs[5].Flow != 1 {
		t.Errorf("malformed not attributed to its flow: %+v", segs[5])
	}
}

// The same capture in every supported framing and file format.
func TestLinkTypesAndFormats(t *testing.T) {
	cv := newConvo(t, convoConfig{client: cli6, server: srv6, clientISN: 1, serverISN: 2, mkts: sha1MKTs()})
	cv.session(2, 1)
	v4 := newConvo(t, convoConfig{client: cli4, server: srv4, clientISN: 3, serverISN: 4, mkts: sha1MKTs()})
	v4.session(2, 0)
	pkts := append(append([][]byte{}, cv.pkts...), v4.pkts...)
	all := mergeKeys(t, cv.keys(), v4.keys())
	gz := func(b []byte) []byte {
		var w bytes.Buffer
		z := gzip.NewWriter(&w)
		z.Write(b)
		z.Close()
		return w.Bytes()
	}
	for _, lt := range []uint32{ltEthernet, ltSLL, ltSLL2, ltNull, ltLoop, ltRaw} {
		frames := framed(lt, pkts)
		nanos := pcapFile(lt, true, frames)
		binary.BigEndian.PutUint32(nanos, pcapMagicNano)
		for name, file := range map[string][]byte{
			"pcap":      pcapFile(lt, false, frames),
			"pcap-be":   pcapFile(lt, true, frames),
			"pcap-ns":   nanos,
			"pcapng":    pcapngFile(lt, frames),
			"pcapng-be": pcapngSection(binary.BigEndian, []uint32{lt}, frames),
			"pcap.gz":   gz(pcapFile(lt, false, frames)),
			"pcapng.gz": gz(pcapngFile(lt, frames)),
		} {
			t.Run(fmt.Sprintf("%d-%s", lt, name), func(t *testing.T) {
				code, segs, sum, errOut := verifyPcap(t, file, all)
				if code != 0 || len(sum.Summary.Files[0].Flows) != 2 {
					t.Fatalf("exit %d %s, flows %d", code, errOut, len(sum.Summary.Files[0].Flows))
				}
				wantVerdicts(t, segs, map[string]int{"good": len(pkts)})
			})
		}
	}
}

func segSeq(t *testing.T, ip []byte) uint32 {
	seg, err := segment.ParsePacket(ip)
	if err != nil {
		t.Fatal(err)
	}
	return seg.Header().Seq()
}

// mergeKeys concatenates the "ao" lists of keys files.
func mergeKeys(t *testing.T, files ...[]byte) []byte {
	var parts []string
	for _, f := range files {
		s := strings.TrimSuffix(strings.TrimPrefix(string(f), `{"ao":[`), "]}")
		parts = append(parts, s)
	}
	return []byte(`{"ao":[` + strings.Join(parts, ",") + `]}`)
}

// TCP-MD5 and TCP-AO flows in one capture, and traffic no key concerns.
func TestMixedCapture(t *testing.T) {
	aoc := newConvo(t, demoConfig())
	aoc.session(2, 0)
	md := newConvo(t, convoConfig{client: cli4, server: srv4, clientISN: 5, serverISN: 6, md5Key: []byte("md5-secret")})
	md.session(2, 0)
	other := newConvo(t, convoConfig{client: netip.MustParseAddrPort("203.0.113.1:5000"), server: netip.MustParseAddrPort("203.0.113.2:80"),
		md5Key: []byte("x")})
	other.plain(other.c, segment.SYN, nil)
	other.plain(other.s, segment.SYN|segment.ACK, nil)
	pkts := append(append(append([][]byte{}, aoc.pkts...), md.pkts...), other.pkts...)
	frames := framed(ltEthernet, pkts)
	frames = append(frames, append(make([]byte, 12), 0x08, 0x06, 1, 2, 3)) // ARP
	keys := []byte(strings.TrimSuffix(string(aoc.keys()), "}") + `,"md5":` +
		strings.TrimSuffix(strings.TrimPrefix(string(md.keys()), `{"md5":`), "}") + "}")
	code, segs, sum, errOut := verifyPcap(t, pcapFile(ltEthernet, false, frames), keys)
	if code != 0 {
		t.Fatalf("exit %d %s", code, errOut)
	}
	wantVerdicts(t, segs, map[string]int{"good": len(aoc.pkts) + len(md.pkts)})
	if sum.Summary.Skipped != 3 || sum.Summary.Packets != uint64(len(frames)) {
		t.Errorf("skipped %d packets of %d", sum.Summary.Skipped, sum.Summary.Packets)
	}
}

// The text report: a line per segment that is not good, a table per flow,
// the result.
func TestTextReport(t *testing.T) {
	cv := newConvo(t, demoConfig())
	cv.session(2, 0)
	bad, frame := corrupt(t, pcapFile(ltEthernet, false, framed(ltEthernet, cv.pkts)), "payload")
	code, out, errOut := cli(t, "verify", "-keys", writeFile(t, "k.json", cv.keys()), writeFile(t, "c.pcap", bad))
	if code != 1 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{
		fmt.Sprintf("  frame %d: 192.0.2.", frame), "BAD (ao[", "MAC does not match",
		"flow 1: 192.0.2.1:50179 <-> 192.0.2.2:179", "FROM", "UNKNOWN-ISN",
		"result: FAILED",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "  frame ") != 1 {
		t.Errorf("want one segment line:\n%s", out)
	}
	// -v lists the good segments too.
	_, out, _ = cli(t, "verify", "-v", "-keys", writeFile(t, "k.json", cv.keys()), writeFile(t, "c.pcap", bad))
	if n := strings.Count(out, "  frame "); n != len(cv.pkts) || !strings.Contains(out, "[S] seq 1016732935 ao keyid 100 rnext 200 sne 0 GOOD (ao[2], hmac(sha1))") {
		t.Errorf("-v: %d segment lines, want %d:\n%s", n, len(cv.pkts), out)
	}
}

// Verifying a data segment in steady state allocates nothing: memory
// does not grow with the capture.
func TestSteadyStateAllocations(t *testing.T) {
	cv := newConvo(t, demoConfig())
	cv.session(3, 0)
	kf, err := keyfile.Parse(cv.keys())
	if err != nil {
		t.Fatal(err)
	}
	ks, err := pcapverify.LoadKeys(kf)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	v, err := pcapverify.NewVerifier(ks, &pcapverify.Options{}, func(r *pcapverify.Result) {
		if r.Verdict != pcapverify.Good {
			t.Fatalf("frame %d: %v %s", r.Frame, r.Verdict, r.Reason)
		}
		n++
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range cv.pkts {
		v.Packet(i+1, p, false)
	}
	data := cv.pkts[len(cv.pkts)-5] // a data segment from the server, already verified
	// The flow keeps the traffic keys it derived (ao.TrafficKey), so a
	// segment under a key already seen allocates nothing.
	if allocs := testing.AllocsPerRun(200, func() { v.Packet(99, data, false) }); allocs != 0 && !raceEnabled {
		t.Errorf("%v allocations per segment, want 0", allocs)
	}
	if v.Totals().Counts[pcapverify.Good] != uint64(len(cv.pkts))+201 {
		t.Errorf("%d good segments, want %d (the repeats verify too)", v.Totals().Counts[pcapverify.Good], len(cv.pkts)+201)
	}
}

// Issue 14 item 1: both ends on one address (loopback) and a keys file
// with one end's MKTs. Each entry may be the receiver's MKT or the
// sender's, so both readings are tried; the report says whose MKTs they
// were read as. Before, the direction the file's end sends was no-key
// ("no MKT with RecvID 100 for peer 127.0.0.1; the receiver's MKTs for
// it have RecvID 200").
func TestSameAddressOneSidedKeys(t *testing.T) {
	lo := netip.MustParseAddr("127.0.0.1")
	c, s := netip.AddrPortFrom(lo, 40001), netip.AddrPortFrom(lo, 179)
	cv := newConvo(t, convoConfig{client: c, server: s, clientISN: 11, serverISN: 22, mkts: sha1MKTs()})
	cv.session(3, 2)
	pcap := pcapFile(ltRaw, false, framed(ltRaw, cv.pkts))
	for _, tc := range []struct {
		name    string
		keys    []byte
		owner   netip.AddrPort
		reading [2]string // of the client's and the server's direction
	}{
		{"client's keys", cv.keys(cv.c), c, [2]string{"sender", "receiver"}},
		{"server's keys", cv.keys(cv.s), s, [2]string{"receiver", "sender"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, segs, sum, errOut := verifyPcap(t, pcap, tc.keys)
			if code != 0 {
				t.Fatalf("exit %d %s", code, errOut)
			}
			wantVerdicts(t, segs, map[string]int{"good": len(cv.pkts)})
			f := sum.Summary.Files[0].Flows[0]
			if want := fmt.Sprintf("the entries read as %v's MKTs", tc.owner); !strings.Contains(f.Reading, want) {
				t.Errorf("flow reading %q, want %q", f.Reading, want)
			}
			for k, d := range f.Directions {
				if d.Reading != tc.reading[k] {
					t.Errorf("direction %s: reading %q, want %q", d.From, d.Reading, tc.reading[k])
				}
			}
			for _, sg := range segs {
				if want := map[bool]string{true: "sender", false: "receiver"}[(sg.Src == tc.owner.String())]; sg.Reading != want {
					t.Fatalf("frame %d from %s: reading %q, want %q", sg.Frame, sg.Src, sg.Reading, want)
				}
			}
			_, out, _ := cli(t, "verify", "-keys", writeFile(t, "k.json", tc.keys), writeFile(t, "c.pcap", pcap))
			if !strings.Contains(out, "  reading: both ends on 127.0.0.1: the entries read as "+tc.owner.String()+"'s MKTs") {
				t.Errorf("text report does not say the reading:\n%s", out)
			}
		})
	}
	// Both ends' keys: each direction under the receiver's reading.
	_, _, sum, _ := verifyPcap(t, pcap, cv.keys())
	if f := sum.Summary.Files[0].Flows[0]; !strings.Contains(f.Reading, "lists both ends' keys") || f.Directions[0].Reading != "receiver" {
		t.Errorf("both ends' keys: flow reading %q, directions %+v", f.Reading, f.Directions)
	}
	// The file says the client sends 100 and receives 200, but both ends
	// send 100: each segment alone verifies under one reading or the
	// other, but no one reading explains both directions. The flow reads
	// the entries as the client's (its SYN came first), so the server's
	// segments are no-key, as the client's kernel would find them.
	both100 := newConvo(t, convoConfig{client: c, server: s, clientISN: 11, serverISN: 22,
		mkts: []mktSpec{{alg: "hmac(sha1)", key: []byte("first-key"), sndID: 100, rcvID: 100}}})
	both100.session(2, 0)
	clientView := []byte(`{"ao": [{"alg": "hmac(sha1)", "key": "text:first-key", "sndid": 100, "rcvid": 200, "peer": "127.0.0.1"}]}`)
	code, segs, sum, _ := verifyPcap(t, pcapFile(ltRaw, false, framed(ltRaw, both100.pkts)), clientView)
	var fromServer int
	for _, sg := range segs {
		want := "good"
		if sg.Src == s.String() {
			want = "no-key"
			fromServer++
			if !strings.Contains(sg.Reason, "KeyID 100 verifies only if the entries were 127.0.0.1:179's MKTs, but the flow's segments read them as 127.0.0.1:40001's") {
				t.Errorf("frame %d reason %q", sg.Frame, sg.Reason)
			}
		}
		if sg.Verdict != want {
			t.Errorf("frame %d from %s: %s, want %s", sg.Frame, sg.Src, sg.Verdict, want)
		}
	}
	if code != 1 || fromServer == 0 || !strings.Contains(sum.Summary.Files[0].Flows[0].Reading, "the entries read as 127.0.0.1:40001's MKTs") {
		t.Errorf("mismatched IDs: exit %d, flow reading %q", code, sum.Summary.Files[0].Flows[0].Reading)
	}

	// A KeyID that neither reading has stays no-key, and says so.
	wrong := []byte(`{"ao": [{"alg": "hmac(sha1)", "key": "text:first-key", "sndid": 7, "rcvid": 8, "peer": "127.0.0.1"}]}`)
	code, segs, _, _ = verifyPcap(t, pcap, wrong)
	if code != 1 || segs[0].Verdict != "no-key" || !strings.Contains(segs[0].Reason, "under either reading") {
		t.Errorf("exit %d, first segment %+v", code, segs[0])
	}
}
