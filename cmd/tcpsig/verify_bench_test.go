package main

import (
	"testing"

	"github.com/tcpsig/tcpsig/keyfile"
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
	ks, err := loadKeys(kf)
	if err != nil {
		b.Fatal(err)
	}
	v := newVerifier(ks, &verifyOptions{}, func(r *result) {
		if r.verdict != good {
			b.Fatalf("frame %d: %v %s", r.frame, r.verdict, r.reason)
		}
	})
	for i, p := range cv.pkts {
		v.packet(i+1, p, false)
	}
	data := cv.pkts[len(cv.pkts)-5]
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		v.packet(99, data, false)
	}
}
