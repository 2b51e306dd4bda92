package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/pcapverify"
)

// Issue 26 item 7: the flows past the verifier's limit (Options.MaxFlows)
// are not tracked; their segments are untracked, and the text and JSON
// summaries count the flows. Two connections with MaxFlows 1: the first is
// verified, the second's segments are untracked.
func TestReportUntrackedFlows(t *testing.T) {
	first := newConvo(t, demoConfig())
	first.session(2, 0)
	cfg := demoConfig()
	cfg.client = netip.AddrPortFrom(cfg.client.Addr(), 50180)
	second := newConvo(t, cfg)
	second.session(2, 0)
	pcap := pcapFile(ltEthernet, false, framed(ltEthernet, append(append([][]byte{}, first.pkts...), second.pkts...)))
	kf, err := keyfile.Parse(first.keys())
	if err != nil {
		t.Fatal(err)
	}
	ks, err := pcapverify.LoadKeys(kf)
	if err != nil {
		t.Fatal(err)
	}
	in := input{name: "c.pcap", title: "c.pcap", open: func() (io.ReadCloser, int64, error) {
		return io.NopCloser(bytes.NewReader(pcap)), 0, nil
	}}
	run := func(rep reporter) *pcapverify.Totals {
		tot, err := verifyOne(in, verifySetup{keys: ks, opts: &pcapverify.Options{MaxFlows: 1}, rep: rep, stderr: io.Discard})
		if err != nil {
			t.Fatal(err)
		}
		exit, why := exitStatus(tot, 0)
		if exit != exitFailed {
			t.Errorf("exit %d (%s), want %d: untracked segments are not a pass", exit, why, exitFailed)
		}
		rep.summary(tot, outcome{files: 1, exit: exit, why: why})
		return tot
	}
	n1, n2 := len(first.pkts), len(second.pkts)

	var text bytes.Buffer
	tot := run(&textReporter{w: &text})
	if tot.UntrackedFlows != 1 || tot.Counts[pcapverify.Untracked] != uint64(n2) || tot.Counts[pcapverify.Good] != uint64(n1) {
		t.Fatalf("totals %+v", *tot)
	}
	out := text.String()
	for _, want := range []string{
		"c.pcap: " + strconv.Itoa(n1+n2) + " packets, " + strconv.Itoa(n1+n2) + " segments judged: " + strconv.Itoa(n1) + " good, " + strconv.Itoa(n2) +
			" untracked; 1 flow not tracked (a verifier tracks 1 flows per capture)\n",
		"result: FAILED: " + strconv.Itoa(n2) + " segments were not checked (untracked: their flows came after the 1 a verifier tracks per capture)\n",
		"[S] seq " + strconv.Itoa(int(cfg.clientISN)) + " ao keyid 100 rnext 200 sne 0 UNTRACKED: flow not tracked: a verifier tracks 1 flows that keys cover at once, each of them had a verified segment, and this one came after them\n",
		"flow 1: 192.0.2.1:50179 <-> 192.0.2.2:179\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the text report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "flow 2:") {
		t.Errorf("an untracked flow has a table:\n%s", out)
	}

	var js bytes.Buffer
	run(newJSONReporter(&js, false))
	segs, sum := jsonLines(t, js.String())
	wantVerdicts(t, segs, map[string]int{"good": n1, "untracked": n2})
	for _, s := range segs[n1:] {
		if s.Flow != 0 || !strings.HasPrefix(s.Reason, "flow not tracked") {
			t.Fatalf("untracked segment %+v", s)
		}
	}
	var raw struct {
		Summary struct {
			UntrackedFlows uint64 `json:"untracked_flows"`
			MaxFlows       int    `json:"max_flows"`
			Verdicts       struct {
				Untracked uint64 `json:"untracked"`
			} `json:"verdicts"`
			Files []struct {
				UntrackedFlows uint64            `json:"untracked_flows"`
				Flows          []json.RawMessage `json:"flows"`
			} `json:"files"`
		} `json:"summary"`
	}
	lines := strings.Split(strings.TrimSpace(js.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &raw); err != nil {
		t.Fatal(err)
	}
	s := raw.Summary
	if s.UntrackedFlows != 1 || s.MaxFlows != 1 || s.Verdicts.Untracked != uint64(n2) || len(s.Files) != 1 || s.Files[0].UntrackedFlows != 1 || len(s.Files[0].Flows) != 1 {
		t.Errorf("JSON summary %+v", s)
	}
	if sum.Summary.Exit != exitFailed {
		t.Errorf("JSON exit %d", sum.Summary.Exit)
	}
}

// Without untracked flows, the summary line says nothing of them, and
// the JSON summary's untracked_flows is 0.
func TestReportNoUntrackedFlows(t *testing.T) {
	t.Parallel()
	tot := &pcapverify.Totals{Packets: 2, Counts: [pcapverify.NumVerdicts]uint64{pcapverify.Good: 2}}
	if got := describe(tot); got != "2 packets, 2 segments judged: 2 good" {
		t.Errorf("describe: %q", got)
	}
	tot.UntrackedFlows, tot.UntrackedMore, tot.MaxFlows = 65536, true, 65536
	if got := describe(tot); !strings.HasSuffix(got, "; more than 65536 flows not tracked (a verifier tracks 65536 flows per capture)") {
		t.Errorf("describe, more: %q", got)
	}
	var js bytes.Buffer
	rep := newJSONReporter(&js, false)
	rep.summary(&pcapverify.Totals{}, outcome{files: 1, exit: exitNothing, why: "x"})
	if !strings.Contains(js.String(), `"untracked_flows":0,`) || strings.Contains(js.String(), "max_flows") || !strings.Contains(js.String(), `"evicted_flows":0`) {
		t.Errorf("JSON summary %s", js.String())
	}
}

// Issue 38: the flows that never verified, evicted for room, are counted
// in the summary line and the JSON summary.
func TestReportEvictedFlows(t *testing.T) {
	t.Parallel()
	tot := &pcapverify.Totals{Packets: 70049, Counts: [pcapverify.NumVerdicts]uint64{pcapverify.Good: 49, pcapverify.NoKey: 70000},
		EvictedFlows: 4465, MaxFlows: 65536}
	if got := describe(tot); !strings.HasSuffix(got, "; 4465 flows that never verified evicted for room (a verifier tracks 65536 at once)") {
		t.Errorf("describe: %q", got)
	}
	var js bytes.Buffer
	newJSONReporter(&js, false).summary(tot, outcome{files: 1, exit: exitFailed})
	if !strings.Contains(js.String(), `"evicted_flows":4465`) || !strings.Contains(js.String(), `"max_flows":65536`) {
		t.Errorf("JSON summary %s", js.String())
	}
}
