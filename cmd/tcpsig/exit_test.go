package main

import (
	"fmt"
	"strings"
	"testing"
)

// Issue 14 item 2: a run that verified nothing exits 3, with one line
// saying why and what to do. Before, these exited 0 ("no segment was
// judged", or unknown-isn only).
func TestNothingVerifiedExit(t *testing.T) {
	cv := newConvo(t, demoConfig())
	cv.session(2, 0)
	cut, _ := withoutHandshake(t, pcapFile(ltEthernet, false, framed(ltEthernet, cv.pkts)))
	unrelated := newConvo(t, convoConfig{client: cli6, server: srv6, clientISN: 1, serverISN: 2, md5Key: []byte("x")})
	unrelated.session(1, 0)
	for _, tc := range []struct {
		name    string
		capture []byte
		why     string
	}{
		{"pcap header only", pcapFile(ltEthernet, false, nil)[:24], "the capture holds no packets"},
		{"pcapng header blocks only", pcapngFile(ltRaw, nil), "the capture holds no packets"},
		{"no key concerns it", pcapFile(ltRaw, false, stripAuth(t, unrelated.pkts)), "none of the 10 packets carries TCP-AO or TCP-MD5"},
		{"unknown-isn only", cut, fmt.Sprintf("give -isn %v=ISN -isn %v=ISN", cv.c.ap, cv.s.ap)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys := writeFile(t, "k.json", cv.keys())
			c := writeFile(t, "c.pcap", tc.capture)
			code, out, errOut := cli(t, "verify", "-keys", keys, c)
			if code != 3 || !strings.Contains(out, "result: NOTHING VERIFIED (exit 3): "+"") || !strings.Contains(out, tc.why) || errOut != "" {
				t.Errorf("exit %d, stderr %q\n%s", code, errOut, out)
			}
			code, out, errOut = cli(t, "verify", "-json", "-keys", keys, c)
			_, sum := jsonLines(t, out)
			if code != 3 || sum.Summary.Exit != 3 || !strings.Contains(sum.Summary.Why, tc.why) {
				t.Errorf("-json: exit %d, summary %+v", code, sum.Summary)
			}
			oneLine(t, errOut)
			if !strings.HasPrefix(errOut, "tcpsig verify: nothing was verified: ") {
				t.Errorf("-json: stderr %q", errOut)
			}
		})
	}
	// A single good segment among unknown-isn ones is a check: exit 0.
	code, _, _, _ := verifyPcap(t, pcapFile(ltEthernet, false, framed(ltEthernet, cv.pkts[:3])), cv.keys())
	if code != 0 {
		t.Errorf("handshake only: exit %d", code)
	}
}

// stripAuth returns the packets with their TCP-MD5 option replaced by
// NOPs: TCP that no key in the file concerns.
func stripAuth(t *testing.T, pkts [][]byte) [][]byte {
	t.Helper()
	var out [][]byte
	for _, p := range pkts {
		q := append([]byte(nil), p...)
		ihl := int(q[0]&0x0f) * 4
		if q[0]>>4 == 6 {
			ihl = 40
		}
		tcp := q[ihl:]
		hl := int(tcp[12]>>4) * 4
		for i := 20; i < hl; {
			switch tcp[i] {
			case 0:
				i = hl
			case 1:
				i++
			default:
				n := int(tcp[i+1])
				if tcp[i] == 19 {
					for k := i; k < i+n; k++ {
						tcp[k] = 1
					}
				}
				i += max(n, 2)
			}
		}
		out = append(out, q)
	}
	return out
}

// Issue 14 item 3: -isn and -sne that change nothing, or that the
// captured handshake overrides, are warned about, one line each. Before,
// they were silently ignored.
func TestISNSNEWarnings(t *testing.T) {
	keys := writeFile(t, "k.json", demoKeys(t))
	c := writeFile(t, "c.pcap", demoPcap)
	for _, tc := range []struct {
		flags []string
		want  []string
	}{
		{[]string{"-isn", "192.0.2.9:179=5"}, []string{"warning: -isn 192.0.2.9:179=5: no segment of the capture is from or to 192.0.2.9:179: ignored"}},
		{[]string{"-sne", "[2001:db8::1]:179=2"}, []string{"warning: -sne [2001:db8::1]:179=2: no segment"}},
		{[]string{"-isn", "127.0.0.2:40001=12345", "-sne", "127.0.0.1:40002=7"}, []string{
			"warning: -isn 127.0.0.2:40001=12345 contradicts the capture: 127.0.0.2:40001's SYN has ISN ",
			"warning: -sne 127.0.0.1:40002=7 ignored: the capture has 127.0.0.1:40002's SYN-ACK, where its SNE is 0"}},
	} {
		code, _, errOut := cli(t, append(append([]string{"verify", "-keys", keys}, tc.flags...), c)...)
		if code != 0 || strings.Count(errOut, "\n") != len(tc.want) {
			t.Errorf("%q: exit %d, stderr %q", tc.flags, code, errOut)
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, "tcpsig verify: "+w) {
				t.Errorf("%q: stderr %q lacks %q", tc.flags, errOut, w)
			}
		}
	}
	// The right ISN, and SNE 0, warn of nothing.
	_, out, _ := cli(t, "verify", "-json", "-keys", keys, c)
	segs, _ := jsonLines(t, out)
	isn := *segs[0].Seq
	code, _, errOut := cli(t, "verify", "-keys", keys, "-isn", fmt.Sprintf("%s=%d", segs[0].Src, isn), "-sne", segs[0].Src+"=0", c)
	if code != 0 || errOut != "" {
		t.Errorf("matching -isn: exit %d, stderr %q", code, errOut)
	}
}

// Issue 14 item 6: when the second of three captures fails, the third is
// still verified and the summary says one stopped at an error. Before,
// the run stopped and the summary said "all 3 captures".
func TestSeveralCapturesOneFails(t *testing.T) {
	keys := writeFile(t, "k.json", demoKeys(t))
	a, b, c := writeFile(t, "a.pcap", demoPcap), writeFile(t, "b.pcap", []byte("not a capture at all, not even close")), writeFile(t, "c.pcap", demoPcap)
	code, out, errOut := cli(t, "verify", "-keys", keys, a, b, c)
	if code != 2 || strings.Contains(out, "all 3 captures") || !strings.Contains(out, "3 captures, 1 of them stopped at an error: 98 packets, 98 segments judged: 98 good") ||
		!strings.Contains(out, "result: ERROR") || strings.Contains(out, b) {
		t.Errorf("exit %d (b.pcap, of which nothing was read, has no report)\n%s", code, out)
	}
	oneLine(t, errOut)
	if !strings.Contains(errOut, "b.pcap: ") {
		t.Errorf("stderr %q does not name b.pcap", errOut)
	}
	code, out, _ = cli(t, "verify", "-json", "-keys", keys, a, b, c)
	segs, sum := jsonLines(t, out)
	if code != 2 || sum.Summary.Exit != 2 || sum.Summary.Errors != 1 || len(sum.Summary.Files) != 3 || sum.Summary.Files[1].Error == "" || segs[len(segs)-1].File != c {
		t.Errorf("-json: exit %d, summary %+v", code, sum.Summary)
	}
}

// A capture broken after some packets keeps the report of what was read
// (and says where it stopped); one broken before its first packet has
// none (issue 29).
func TestTruncatedCaptureReport(t *testing.T) {
	keys := writeFile(t, "k.json", demoKeys(t))
	cut := writeFile(t, "cut.pcap", demoPcap[:len(demoPcap)-7])
	code, out, errOut := cli(t, "verify", "-keys", keys, cut)
	if code != 2 || !strings.HasPrefix(out, cut+"\n") || !strings.Contains(out, "segments judged: 48 good") ||
		!strings.Contains(out, cut+": stopped at an error: frame 49: ") || !strings.Contains(out, "result: ERROR") {
		t.Errorf("exit %d\n%s", code, out)
	}
	oneLine(t, errOut)
	first := writeFile(t, "first.pcap", demoPcap[:24+10])
	if code, out, _ := cli(t, "verify", "-keys", keys, first); code != 2 || out != "" {
		t.Errorf("broken at its first packet: exit %d, stdout %q", code, out)
	}
}
