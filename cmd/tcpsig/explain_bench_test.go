package main

import (
	"encoding/binary"
	"io"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/pcapverify"
	"github.com/tcpsig/tcpsig/segment"
)

// goodVerifier is a verifier of the demo conversation that has judged all
// of it, and a data segment to judge again.
func goodVerifier(tb testing.TB, explain bool) (*pcapverify.Verifier, []byte) {
	cv := newConvo(tb, demoConfig())
	cv.session(3, 0)
	kf, err := keyfile.Parse(cv.keys())
	if err != nil {
		tb.Fatal(err)
	}
	ks, err := pcapverify.LoadKeys(kf)
	if err != nil {
		tb.Fatal(err)
	}
	v, err := pcapverify.NewVerifier(ks, &pcapverify.Options{Explain: explain}, func(r *pcapverify.Result) {
		if r.Verdict != pcapverify.Good {
			tb.Fatalf("frame %d: %v %s", r.Frame, r.Verdict, r.Reason)
		}
	})
	if err != nil {
		tb.Fatal(err)
	}
	for i, p := range cv.pkts {
		v.Packet(i+1, p, false)
	}
	return v, cv.pkts[len(cv.pkts)-5]
}

// With -explain a good segment allocates nothing either: the explainer
// keeps only failing ones.
func TestExplainAllocations(t *testing.T) {
	v, data := goodVerifier(t, true)
	if allocs := testing.AllocsPerRun(200, func() { v.Packet(99, data, false) }); allocs != 0 && !raceEnabled {
		t.Errorf("%v allocations per good segment with -explain, want 0", allocs)
	}
	if ds := v.Diagnoses(); ds == nil || len(ds) != 0 {
		t.Errorf("diagnoses %v, want an empty list", ds)
	}
}

// BenchmarkExplainGood is a good TCP-AO data segment in steady state,
// without and with -explain: the same work, but for one call.
func BenchmarkExplainGood(b *testing.B) {
	for _, explain := range []bool{false, true} {
		b.Run(map[bool]string{false: "off", true: "on"}[explain], func(b *testing.B) {
			v, data := goodVerifier(b, explain)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				v.Packet(99, data, false)
			}
		})
	}
}

// flowsCapture returns the demo capture's IP packets repeated as n flows
// (the client's port changed per flow, and with hosts its address too:
// 127.0.x.y), and the demo's keys.
func flowsCapture(tb testing.TB, n int, hosts ...bool) ([][]byte, []byte) {
	f, err := os.Open("testdata/demo.pcap")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	c, err := pcapverify.Open(f)
	if err != nil {
		tb.Fatal(err)
	}
	var demo [][]byte
	for {
		ip, _, err := c.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			tb.Fatal(err)
		}
		demo = append(demo, slices.Clone(ip))
	}
	var pkts [][]byte
	for i := range n {
		for _, p := range demo {
			q := slices.Clone(p)
			seg, err := segment.ParsePacket(q)
			if err != nil {
				tb.Fatal(err)
			}
			h := seg.Header()
			port := uint16(20000 + i)
			client := 12 // the IPv4 header's source address
			if seg.Src().String() == "127.0.0.2" {
				binary.BigEndian.PutUint16(h[0:], port)
			} else {
				binary.BigEndian.PutUint16(h[2:], port)
				client = 16
			}
			if len(hosts) > 0 && hosts[0] {
				q[client+2], q[client+3] = byte(3+i/250), byte(1+i%250)
			}
			pkts = append(pkts, q)
		}
	}
	keys, err := os.ReadFile("testdata/demo.keys.json")
	if err != nil {
		tb.Fatal(err)
	}
	return pkts, keys
}

// BenchmarkExplainCapture verifies a whole capture, and diagnoses it
// with -explain. good: the demo capture with its keys (49 good segments),
// off and on. failing: the demo capture as 1,000 flows in which every
// segment fails (49,000 segments: each flow has another client port,
// which the MACs cover), so that no configuration verifies any segment
// and every direction's search runs to its end on all its segments: the
// longest there is ("secret").
func BenchmarkExplainCapture(b *testing.B) {
	good, keys := flowsCapture(b, 1)
	for i, p := range good { // the demo's own ports back
		seg, _ := segment.ParsePacket(p)
		if seg.Src().String() == "127.0.0.2" {
			binary.BigEndian.PutUint16(seg.Header()[0:], 40001)
		} else {
			binary.BigEndian.PutUint16(seg.Header()[2:], 40001)
		}
		good[i] = p
	}
	failing, _ := flowsCapture(b, 1000)
	hosts, _ := flowsCapture(b, 1000, true)
	for _, c := range []struct {
		name    string
		pkts    [][]byte
		explain bool
		cause   string
		dirs    int
	}{
		{"good/off", good, false, "", 0},
		{"good/on", good, true, "", 0},
		{"failing/off", failing, false, "", 0},
		{"failing/on", failing, true, "secret", 2000},
		{"failing-hosts/off", hosts, false, "", 0},
		{"failing-hosts/on", hosts, true, "secret", 2000},
	} {
		kf, err := keyfile.Parse(keys)
		if err != nil {
			b.Fatal(err)
		}
		ks, err := pcapverify.LoadKeys(kf)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				v, _ := pcapverify.NewVerifier(ks, &pcapverify.Options{Explain: c.explain}, nil)
				for i, p := range c.pkts {
					v.Packet(i+1, p, false)
				}
				ds := v.Diagnoses()
				if len(ds) != c.dirs || (c.dirs > 0 && string(ds[0].Cause) != c.cause) {
					b.Fatalf("%d diagnoses %v, want %d %s", len(ds), ds, c.dirs, c.cause)
				}
				if c.cause == "" && v.Totals().Counts[pcapverify.Good] != uint64(len(c.pkts)) && c.name[0] == 'g' {
					b.Fatalf("%+v", v.Totals().Verdicts())
				}
				v.Close()
			}
			b.ReportMetric(float64(len(c.pkts)), "segments/op")
		})
	}
}

// BenchmarkExplainInterleaved measures a good capture with and without
// -explain in turns, in one process: each round times 16 good data
// segments on a verifier without -explain and 16 on one with it (which
// goes first alternates), or one whole demo capture each way (a new
// verifier, its 49 segments, its diagnoses). It reports the median ratio
// on/off over the rounds: 1.00 is the same cost.
func BenchmarkExplainInterleaved(b *testing.B) {
	b.Run("segment", func(b *testing.B) {
		off, data := goodVerifier(b, false)
		on, _ := goodVerifier(b, true)
		interleave(b, func(v *pcapverify.Verifier) func() {
			return func() {
				for range 16 {
					v.Packet(99, data, false)
				}
			}
		}(off), func(v *pcapverify.Verifier) func() {
			return func() {
				for range 16 {
					v.Packet(99, data, false)
				}
			}
		}(on))
	})
	b.Run("capture", func(b *testing.B) {
		pkts, keys := flowsCapture(b, 1)
		for _, p := range pkts { // the demo's own ports back
			seg, _ := segment.ParsePacket(p)
			if seg.Src().String() == "127.0.0.2" {
				binary.BigEndian.PutUint16(seg.Header()[0:], 40001)
			} else {
				binary.BigEndian.PutUint16(seg.Header()[2:], 40001)
			}
		}
		kf, err := keyfile.Parse(keys)
		if err != nil {
			b.Fatal(err)
		}
		ks, err := pcapverify.LoadKeys(kf)
		if err != nil {
			b.Fatal(err)
		}
		run := func(explain bool) func() {
			return func() {
				v, _ := pcapverify.NewVerifier(ks, &pcapverify.Options{Explain: explain}, nil)
				for i, p := range pkts {
					v.Packet(i+1, p, false)
				}
				if len(v.Diagnoses()) != 0 || v.Totals().Counts[pcapverify.Good] != 49 {
					b.Fatalf("%+v", v.Totals().Verdicts())
				}
				v.Close()
			}
		}
		interleave(b, run(false), run(true))
	})
}

// interleave times off and on in turns, b.N rounds, and reports the
// median of on's time over off's.
func interleave(b *testing.B, off, on func()) {
	ratios := make([]float64, 0, b.N)
	var toff, ton time.Duration
	for i := 0; b.Loop(); i++ {
		var a, c time.Duration
		if i%2 == 0 {
			a, c = timed(off), timed(on)
		} else {
			c, a = timed(on), timed(off)
		}
		toff, ton = toff+a, ton+c
		ratios = append(ratios, float64(c)/float64(a))
	}
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "on/off")
	b.ReportMetric(float64(toff.Nanoseconds())/float64(len(ratios)), "off-ns/round")
	b.ReportMetric(float64(ton.Nanoseconds())/float64(len(ratios)), "on-ns/round")
}

// timed is how long f takes.
func timed(f func()) time.Duration {
	t := time.Now()
	f()
	return time.Since(t)
}
