package main

import (
	"testing"

	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/pcapverify"
)

// BenchmarkVerifySegment is verify's cost per TCP-AO data segment in
// steady state: the flow's tracker, the MKT lookup and the flow's cached ao.TrafficKey.
func BenchmarkVerifySegment(b *testing.B) {
	cv := newConvo(b, demoConfig())
	cv.session(3, 0)
	kf, err := keyfile.Parse(cv.keys())
	if err != nil {
		b.Fatal(err)
	}
	ks, err := pcapverify.LoadKeys(kf)
	if err != nil {
		b.Fatal(err)
	}
	v, err := pcapverify.NewVerifier(ks, &pcapverify.Options{}, func(r *pcapverify.Result) {
		if r.Verdict != pcapverify.Good {
			b.Fatalf("frame %d: %v %s", r.Frame, r.Verdict, r.Reason)
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	for i, p := range cv.pkts {
		v.Packet(i+1, p, false)
	}
	data := cv.pkts[len(cv.pkts)-5]
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		v.Packet(99, data, false)
	}
}
