package pcapverify_test

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/tcpsig/tcpsig/pcapverify"
	"github.com/tcpsig/tcpsig/segment"
)

// feed judges every packet of capture b with v, numbering the frames
// from first+1, and returns the endpoints of its first segment.
func feed(t testing.TB, v *pcapverify.Verifier, b []byte, first int) (src, dst netip.AddrPort) {
	t.Helper()
	c, err := pcapverify.Open(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	for n := first + 1; ; n++ {
		ip, trunc, err := c.Next()
		if err != nil {
			break
		}
		if !src.IsValid() && ip != nil {
			seg, err := segment.ParsePacket(ip)
			if err != nil {
				t.Fatal(err)
			}
			src = netip.AddrPortFrom(seg.Src().Unmap(), seg.Header().SrcPort())
			dst = netip.AddrPortFrom(seg.Dst().Unmap(), seg.Header().DstPort())
		}
		if err := v.Packet(n, ip, trunc); err != nil {
			t.Fatal(err)
		}
	}
	return src, dst
}

// Issue 38 (finding 5): spoofed segments from the covered addresses, each
// pair of ports a flow of its own, filled the verifier's 65,536 flows,
// and a real session after them was only untracked. Now each new flow
// evicts the least recently seen one that never verified: 70,000 spoofed
// one-segment flows, then the built-in sample, whose 49 segments all
// verify; the spoofed flows evicted are counted; a good segment still
// costs no allocation.
func TestEvictSpoofedFlows(t *testing.T) {
	demo, keys := loadDemo(t)
	const spoofed = 70000
	counts := map[pcapverify.Verdict]int{}
	v, err := pcapverify.NewVerifier(keys, nil, func(r *pcapverify.Result) {
		if r.Frame > spoofed {
			counts[r.Verdict]++
			if r.Verdict != pcapverify.Good {
				t.Errorf("frame %d of the sample: %v (%s)", r.Frame-spoofed, r.Verdict, r.Reason)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	client, server := netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2")
	var buf []byte
	for i := range spoofed {
		src := netip.AddrPortFrom(client, uint16(1024+i%60000))
		dst := netip.AddrPortFrom(server, uint16(60000+i/60000))
		buf = pkt(t, buf, src, dst, segment.ACK, withAO)
		if err := v.Packet(i+1, buf, false); err != nil {
			t.Fatal(err)
		}
	}
	feed(t, v, demo, spoofed)
	tot := v.Totals()
	t.Logf("%d spoofed flows, then the sample: %v; %d flows evicted, %d untracked", spoofed, counts, tot.EvictedFlows, tot.UntrackedFlows)
	if counts[pcapverify.Good] != 49 {
		t.Errorf("the sample after the flood: %v, want 49 good", counts)
	}
	if want := uint64(spoofed + 1 - pcapverify.DefaultMaxFlows); tot.EvictedFlows != want || tot.UntrackedFlows != 0 || tot.MaxFlows != pcapverify.DefaultMaxFlows {
		t.Errorf("evicted %d, untracked %d, max %d; want %d evicted, none untracked", tot.EvictedFlows, tot.UntrackedFlows, tot.MaxFlows, want)
	}
	var sample *pcapverify.FlowSummary
	fs := v.Flows()
	for i := range fs {
		if fs[i].Flow == spoofed+1 {
			sample = &fs[i]
		}
	}
	if len(fs) != pcapverify.DefaultMaxFlows || sample == nil {
		t.Fatalf("%d flows in the report (want %d), the sample's %v", len(fs), pcapverify.DefaultMaxFlows, sample)
	}
	if g := sample.Directions[0].Verdicts.Good + sample.Directions[1].Verdicts.Good; g != 49 {
		t.Errorf("the sample's table: %+v", *sample)
	}

	// The sample's last segment again, verified on its kept flow; a
	// spoofed segment again, on a flow still tracked.
	c, err := pcapverify.Open(bytes.NewReader(demo))
	if err != nil {
		t.Fatal(err)
	}
	var last []byte
	for ip, _, err := c.Next(); err == nil; ip, _, err = c.Next() {
		last = append(last[:0], ip...)
	}
	counts = map[pcapverify.Verdict]int{}
	if allocs := testing.AllocsPerRun(100, func() { _ = v.Packet(spoofed+100, last, false) }); allocs != 0 && !raceEnabled {
		t.Errorf("%v allocations per good segment after the flood, want 0", allocs)
	}
	if counts[pcapverify.Good] != 101 {
		t.Errorf("the sample's last segment again: %v, want good", counts)
	}
}

// A real flow that does not verify (its KeyID in no key) keeps its place
// while its segments keep coming: with MaxFlows 4, a flow seen between
// every two spoofed ones outlives 1,000 of them.
func TestEvictLeastRecent(t *testing.T) {
	_, keys := loadDemo(t)
	v, err := pcapverify.NewVerifier(keys, &pcapverify.Options{MaxFlows: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	real := pkt(t, nil, netip.MustParseAddrPort("127.0.0.1:40000"), netip.MustParseAddrPort("127.0.0.2:179"), segment.ACK, withAO)
	var buf []byte
	for i := range 1000 {
		_ = v.Packet(2*i+1, real, false)
		buf = pkt(t, buf, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(1024+i)), netip.MustParseAddrPort("127.0.0.2:179"), segment.ACK, withAO)
		_ = v.Packet(2*i+2, buf, false)
	}
	fs := v.Flows()
	var realFlow *pcapverify.FlowSummary
	for i := range fs {
		if fs[i].Endpoints[0] == "127.0.0.1:40000" {
			realFlow = &fs[i]
		}
	}
	if realFlow == nil || realFlow.Flow != 1 || realFlow.Directions[0].Verdicts.NoKey != 1000 {
		t.Fatalf("the real flow: %+v; flows %d", realFlow, len(fs))
	}
	if tot := v.Totals(); tot.EvictedFlows != 1000-3 || tot.UntrackedFlows != 0 {
		t.Errorf("evicted %d, untracked %d; want %d, 0", tot.EvictedFlows, tot.UntrackedFlows, 1000-3)
	}
}
