package pcapverify_test

import (
	"net/netip"
	"runtime"
	"strings"
	"testing"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/pcapverify"
	"github.com/tcpsig/tcpsig/segment"
)

// Issue 26 item 7: a capture must not make the verifier's memory grow
// without bound. Before, every packet with a TCP-AO option made a flow
// of some 6.7 KiB, covered by a key or not: the 20,000 one-packet flows
// of each half below grew the heap by 132 MiB.

// limitKeys covers 10.0.0.0/8 with one TCP-AO MKT (KeyID 1 both ways)
// and 10.200.0.0/16 with a TCP-MD5 key too.
func limitKeys(t testing.TB) *pcapverify.Keys {
	t.Helper()
	kf, err := keyfile.Parse([]byte(`{"ao": [{"alg": "hmac(sha1)", "key": "text:k", "sndid": 1, "rcvid": 1, "peer": "10.0.0.0/8"}],
		"md5": [{"peer": "10.200.0.0/16", "key": "text:m"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ks, err := pcapverify.LoadKeys(kf)
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

// Options of a segment built by pkt.
const (
	withAO   = iota // a TCP-AO option, KeyID 1, RNextKeyID 2, a MAC of zeros
	withMD5         // a TCP-MD5 option
	unsigned        // no option
	brokenAO        // a TCP-AO option of length 3
)

// pkt appends to buf an IPv4 packet from src to dst with flags and opt.
func pkt(t testing.TB, buf []byte, src, dst netip.AddrPort, flags segment.Flags, opt int) []byte {
	t.Helper()
	var o []byte
	switch opt {
	case withAO:
		o = ao.AppendOption(nil, 12)
		o[2], o[3] = 1, 2
	case withMD5:
		o = []byte{19, 18, 15: 0, 17: 0, 18: 1, 19: 1} // the option, then two NOPs
	case brokenAO:
		o = []byte{29, 3, 0, 1, 1, 1, 1, 1}
	}
	b, err := segment.AppendPacket(buf[:0], segment.IP{Src: src.Addr(), Dst: dst.Addr()},
		segment.Fields{SrcPort: src.Port(), DstPort: dst.Port(), Seq: 1000, Ack: 2000, Flags: flags, Window: 100, Options: [][]byte{o}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// nth is the n-th address of the /16 that base starts.
func nth(base string, n int) netip.AddrPort {
	b := netip.MustParseAddr(base).As4()
	b[2], b[3] = byte(n>>8), byte(n)
	return netip.AddrPortFrom(netip.AddrFrom4(b), 40000)
}

// heapAfterGC is the live heap.
func heapAfterGC() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// 20,000 one-packet flows with TCP-AO options from addresses no key
// covers grow the heap by less than 256 KiB (no flow is kept: measured
// -40 KiB); 20,000 from covered addresses with MaxFlows 100 by less than
// 1 MiB (100 flows of 0.8 KiB: each new flow evicts the least recently
// seen, none having verified; issue 38).
func TestFlowMemoryBounded(t *testing.T) {
	const n = 20000
	server := netip.MustParseAddrPort("10.0.0.1:179")
	for _, c := range []struct {
		name     string
		base     string
		maxFlows int
		limit    uint64
		want     pcapverify.VerdictCounts
		flows    int
	}{
		{"uncovered", "192.168.0.0", 0, 256 << 10, pcapverify.VerdictCounts{NoKey: n}, 0},
		{"past MaxFlows", "10.1.0.0", 100, 1 << 20, pcapverify.VerdictCounts{UnknownISN: n}, 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, err := pcapverify.NewVerifier(limitKeys(t), &pcapverify.Options{MaxFlows: c.maxFlows}, nil)
			if err != nil {
				t.Fatal(err)
			}
			dst := server
			if c.maxFlows == 0 {
				dst = netip.MustParseAddrPort("172.16.0.1:179")
			}
			var buf []byte
			before := heapAfterGC()
			for i := range n {
				buf = pkt(t, buf, nth(c.base, i), dst, segment.ACK, withAO)
				if err := v.Packet(i+1, buf, false); err != nil {
					t.Fatal(err)
				}
			}
			after := heapAfterGC()
			grew := int64(after) - int64(before)
			t.Logf("%d one-packet flows: heap %+d KiB", n, grew>>10)
			if grew > int64(c.limit) {
				t.Errorf("%d one-packet flows grew the heap by %d KiB, want under %d KiB", n, grew>>10, c.limit>>10)
			}
			tot := v.Totals()
			if got := tot.Verdicts(); got != c.want {
				t.Errorf("verdicts %+v, want %+v", got, c.want)
			}
			if got := len(v.Flows()); got != c.flows {
				t.Errorf("%d flows in the report, want %d", got, c.flows)
			}
			if c.maxFlows > 0 && (tot.EvictedFlows != n-100 || tot.UntrackedFlows != 0 || tot.MaxFlows != 100) {
				t.Errorf("evicted %d, untracked %d flows of MaxFlows %d; want %d evicted of 100, none untracked", tot.EvictedFlows, tot.UntrackedFlows, tot.MaxFlows, n-100)
			}
			runtime.KeepAlive(v)
			v.Close()
		})
	}
}

// A segment with an option that no key covers keeps its verdict, no-key
// with the reason it had, but no flow: it is in no table (Flow 0) and in
// the totals.
func TestUncoveredNoFlow(t *testing.T) {
	src, dst := netip.MustParseAddrPort("192.0.2.7:40000"), netip.MustParseAddrPort("198.51.100.1:179")
	opts := &pcapverify.Options{SNE: map[netip.AddrPort]uint32{src: 3}}
	var got []pcapverify.Result
	v, err := pcapverify.NewVerifier(limitKeys(t), opts, func(r *pcapverify.Result) { got = append(got, *r) })
	if err != nil {
		t.Fatal(err)
	}
	aoReason := "no TCP-AO key in the keys file for 192.0.2.7 (as receiver's peer) or 198.51.100.1 (as sender's)"
	for _, c := range []struct {
		name  string
		flags segment.Flags
		opt   int
		want  pcapverify.Result
	}{
		{"TCP-AO SYN", segment.SYN, withAO, pcapverify.Result{Kind: pcapverify.KindAO, KeyID: 1, RNextKeyID: 2, Verdict: pcapverify.NoKey, Reason: aoReason}},
		{"TCP-AO ACK (SNE from -sne)", segment.ACK, withAO, pcapverify.Result{Kind: pcapverify.KindAO, KeyID: 1, RNextKeyID: 2, SNE: 3, Verdict: pcapverify.NoKey, Reason: aoReason}},
		{"TCP-MD5", segment.ACK, withMD5, pcapverify.Result{Kind: pcapverify.KindMD5, Verdict: pcapverify.NoKey,
			Reason: "no TCP-MD5 key in the keys file for 192.0.2.7 (as receiver's peer) or 198.51.100.1 (as sender's)"}},
		{"broken TCP-AO", segment.ACK, brokenAO, pcapverify.Result{Verdict: pcapverify.Malformed}},
	} {
		got = got[:0]
		if err := v.Packet(1, pkt(t, nil, src, dst, c.flags, c.opt), false); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 {
			t.Fatalf("%s: %d results", c.name, len(got))
		}
		r := got[0]
		w := c.want
		w.Frame, w.Src, w.Dst, w.HasTCP, w.Flags, w.Seq = 1, src, dst, true, c.flags, 1000
		if w.Verdict == pcapverify.Malformed {
			if r.Reason == "" {
				t.Errorf("%s: no reason", c.name)
			}
			w.Reason = r.Reason
		}
		if r != w {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, r, w)
		}
	}
	// An unsigned segment between them concerns no key.
	_ = v.Packet(2, pkt(t, nil, src, dst, segment.ACK, unsigned), false)
	tot := v.Totals()
	if c := tot.Verdicts(); c.NoKey != 3 || c.Malformed != 1 || tot.Skipped != 1 || tot.Packets != 5 || tot.UntrackedFlows != 0 {
		t.Errorf("totals %+v %+v", *tot, c)
	}
	if fs := v.Flows(); len(fs) != 0 {
		t.Errorf("flows %+v, want none", fs)
	}
}

// With MaxFlows 1 and that flow kept (the built-in sample, whose segments
// verify), the flows that keys cover after it are not tracked: whatever
// their segments carry they are untracked (a failing verdict, never good),
// but a broken option stays malformed; each such flow is counted once; the
// first is judged as ever.
func TestOverCapFlows(t *testing.T) {
	demo, keys := loadDemo(t)
	var got []pcapverify.Result
	v, err := pcapverify.NewVerifier(keys, &pcapverify.Options{MaxFlows: 1}, func(r *pcapverify.Result) { got = append(got, *r) })
	if err != nil {
		t.Fatal(err)
	}
	a, server := feed(t, v, demo, 0)
	c, d := netip.MustParseAddrPort("127.0.0.1:50001"), netip.MustParseAddrPort("127.0.0.1:50002")
	const reason = "flow not tracked: a verifier tracks 1 flows that keys cover at once, each of them had a verified segment, and this one came after them"
	for _, s := range []struct {
		src, dst netip.AddrPort
		flags    segment.Flags
		opt      int
		verdict  pcapverify.Verdict
		kind     pcapverify.Kind
		flow     int
	}{
		{c, server, segment.SYN, withAO, pcapverify.Untracked, pcapverify.KindAO, 0},
		{server, c, segment.SYN | segment.ACK, withAO, pcapverify.Untracked, pcapverify.KindAO, 0},
		{c, server, segment.ACK, withMD5, pcapverify.Untracked, pcapverify.KindMD5, 0},
		{c, server, segment.ACK, unsigned, pcapverify.Untracked, pcapverify.KindNone, 0},
		{d, server, segment.ACK, brokenAO, pcapverify.Malformed, pcapverify.KindNone, 0},
		{a, server, segment.ACK, unsigned, pcapverify.Unsigned, pcapverify.KindNone, 1},
	} {
		got = got[:0]
		_ = v.Packet(1, pkt(t, nil, s.src, s.dst, s.flags, s.opt), false)
		if len(got) != 1 {
			t.Fatalf("%v > %v: %d results", s.src, s.dst, len(got))
		}
		r := got[0]
		if r.Verdict != s.verdict || r.Kind != s.kind || r.Flow != s.flow || r.Src != s.src {
			t.Errorf("%v > %v [%v]: %v %v flow %d, want %v %v flow %d (%s)", s.src, s.dst, s.flags, r.Verdict, r.Kind, r.Flow, s.verdict, s.kind, s.flow, r.Reason)
		}
		if s.verdict == pcapverify.Untracked && (r.Reason != reason || (s.kind == pcapverify.KindAO && (r.KeyID != 1 || r.RNextKeyID != 2))) {
			t.Errorf("untracked: %+v", r)
		}
	}
	tot := v.Totals()
	if tot.UntrackedFlows != 2 || tot.UntrackedMore || tot.MaxFlows != 1 || tot.Counts[pcapverify.Untracked] != 4 || !tot.Failing() || tot.EvictedFlows != 0 {
		t.Errorf("totals %+v", *tot)
	}
	if fs := v.Flows(); len(fs) != 1 || fs[0].Flow != 1 {
		t.Errorf("flows %+v, want 1", fs)
	}
	if !pcapverify.Untracked.Failing() || pcapverify.Untracked.String() != "untracked" {
		t.Errorf("Untracked: %q, failing %v", pcapverify.Untracked, pcapverify.Untracked.Failing())
	}

	// A flood past the limit costs nothing per segment.
	flood := pkt(t, nil, c, server, segment.ACK, withAO)
	if allocs := testing.AllocsPerRun(100, func() { _ = v.Packet(9, flood, false) }); allocs != 0 && !raceEnabled {
		t.Errorf("%v allocations per untracked segment, want 0", allocs)
	}

	// Totals.Add sums the counts of two captures.
	var all pcapverify.Totals
	all.Add(tot)
	all.Add(&pcapverify.Totals{UntrackedFlows: 5, UntrackedMore: true, MaxFlows: 2, EvictedFlows: 3})
	if all.UntrackedFlows != 7 || !all.UntrackedMore || all.MaxFlows != 2 || all.EvictedFlows != 3 {
		t.Errorf("Add: %+v", all)
	}
	if !strings.Contains(reason, "1 flows") {
		t.Fatal("reason")
	}
}
