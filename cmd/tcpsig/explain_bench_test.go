package main

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"slices"
	"testing"

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
// (the client's port changed per flow), and the demo's keys.
func flowsCapture(tb testing.TB, n int) ([][]byte, []byte) {
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
			if seg.Src().String() == "127.0.0.2" {
				binary.BigEndian.PutUint16(h[0:], port)
			} else {
				binary.BigEndian.PutUint16(h[2:], port)
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

// BenchmarkExplainWorst is a capture of 1,000 flows in which every
// segment fails (49,000 segments: the demo's, each flow with another
// client port, which the MACs cover), verified and diagnosed whole,
// without -explain and with it. No configuration verifies any segment,
// so every direction's search runs to its end on all its segments: the
// longest there is ("secret").
func BenchmarkExplainWorst(b *testing.B) {
	pkts, keys := flowsCapture(b, 1000)
	for _, c := range []struct {
		name    string
		explain bool
		from    string
		to      string
		cause   string
	}{
		{"off", false, `"text:`, `"text:x`, ""},
		{"explain", true, `"text:`, `"text:x`, "secret"},
	} {
		kf, err := keyfile.Parse(bytes.ReplaceAll(keys, []byte(c.from), []byte(c.to)))
		if err != nil {
			b.Fatal(err)
		}
		ks, err := pcapverify.LoadKeys(kf)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				v, _ := pcapverify.NewVerifier(ks, &pcapverify.Options{Explain: c.explain}, nil)
				for i, p := range pkts {
					v.Packet(i+1, p, false)
				}
				ds := v.Diagnoses()
				if c.explain && (len(ds) != 2000 || string(ds[0].Cause) != c.cause) {
					b.Fatalf("%d diagnoses, the first %v", len(ds), ds[0])
				}
				v.Close()
			}
			b.ReportMetric(float64(len(pkts)), "segments/op")
		})
	}
}
