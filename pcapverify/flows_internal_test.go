package pcapverify

import (
	"net/netip"
	"testing"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/segment"
)

// MaxFlows 0 or less is DefaultMaxFlows.
func TestMaxFlowsDefault(t *testing.T) {
	for _, n := range []int{0, -1} {
		if got := (&Options{MaxFlows: n}).maxFlows(); got != DefaultMaxFlows {
			t.Errorf("MaxFlows %d: %d flows, want %d", n, got, DefaultMaxFlows)
		}
	}
	if got := (&Options{MaxFlows: 7}).maxFlows(); got != 7 {
		t.Errorf("MaxFlows 7: %d", got)
	}
}

// An overflow counts each flow once, up to its limit; past it, it says
// there were more.
func TestOverflowLowerBound(t *testing.T) {
	o := newOverflow(3)
	key := func(n int) flowKey {
		return keyOf(netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(n)}), 1), netip.MustParseAddrPort("10.0.0.200:179"))
	}
	for _, n := range []int{1, 2, 1, 2, 3} {
		o.note(key(n))
	}
	if n, more := o.flows(); n != 3 || more {
		t.Errorf("3 flows: %d, more %v", n, more)
	}
	o.note(key(1))
	if _, more := o.flows(); more {
		t.Error("a flow already counted made it more")
	}
	o.note(key(4))
	if n, more := o.flows(); n != 3 || !more {
		t.Errorf("4 flows, limit 3: %d, more %v", n, more)
	}
	// The two directions of a flow are one flow.
	p := newOverflow(3)
	a, b := netip.MustParseAddrPort("10.0.0.1:1"), netip.MustParseAddrPort("10.0.0.2:2")
	p.note(keyOf(a, b))
	p.note(keyOf(b, a))
	if n, _ := p.flows(); n != 1 {
		t.Errorf("both directions: %d flows", n)
	}
}

// A new connection on a flow's ports wipes the traffic keys of the old
// one and reuses their slots.
func TestRestartReusesKeySlots(t *testing.T) {
	kf, err := keyfile.Parse([]byte(`{"ao": [{"alg": "hmac(sha1)", "key": "text:k", "sndid": 1, "rcvid": 1, "peer": "10.0.0.0/8"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ks, err := LoadKeys(kf)
	if err != nil {
		t.Fatal(err)
	}
	src, dst := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	m := ks.aoRings[0].LookupRecv(src, 1, 0)
	if m == nil {
		t.Fatal("no MKT")
	}
	tcp := segment.AppendTCP(nil, segment.Fields{SrcPort: 1, DstPort: 2, Seq: 5, Flags: segment.SYN, Options: [][]byte{ao.AppendOption(nil, 12)}})
	seg, err := segment.FromTCP(src, dst, tcp)
	if err != nil {
		t.Fatal(err)
	}
	var e endState
	isns := ao.ISNs{Src: 5}
	k, err := e.trafficKey(m, isns, &seg)
	if err != nil || k == nil || e.keys[0] != k || !k.Covers(m, isns, &seg) {
		t.Fatalf("trafficKey: %v, slot %p of %p", err, e.keys[0], k)
	}
	if again, _ := e.trafficKey(m, isns, &seg); again != k {
		t.Error("a key already derived was derived again")
	}
	e.restart(endState{isn: 9, isnFrom: isnFromSYN})
	if e.keys[0] != k || k.Covers(m, isns, &seg) || e.isn != 9 || e.next != 0 {
		t.Errorf("after restart: slot %p (was %p), still covers %v, isn %d", e.keys[0], k, k.Covers(m, isns, &seg), e.isn)
	}
}

// The sender's keys mirrored for a receiver are built once per set of
// entries that cover it, not per address: 1000 receivers in one entry's
// prefix, and as many senders, make one mirror (before: one per address
// pair, a keyring and MKT of some 3 KiB each).
func TestMirrorsPerEntrySet(t *testing.T) {
	kf, err := keyfile.Parse([]byte(`{"ao": [{"alg": "hmac(sha1)", "key": "text:k", "sndid": 1, "rcvid": 2, "peer": "10.0.0.0/8"},
		{"alg": "hmac(sha1)", "key": "text:l", "sndid": 3, "rcvid": 4, "peer": "10.9.0.0/16"}],
		"md5": [{"peer": "10.0.0.0/8", "key": "text:m"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ks, err := LoadKeys(kf)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		src := netip.AddrFrom4([4]byte{192, 168, byte(i >> 8), byte(i)})
		for _, dst := range []netip.Addr{netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)}), netip.AddrFrom4([4]byte{10, 9, byte(i >> 8), byte(i)})} {
			rings, sender := ks.aoReadings(src, dst)
			md5, md5Sender := ks.md5Readings(src, dst)
			if len(rings) == 0 || !sender || !md5Sender || len(md5.names(src)) != 1 {
				t.Fatalf("%v > %v: %d rings (sender %v), md5 sender %v", src, dst, len(rings), sender, md5Sender)
			}
			// The sender's ao[0] signs with its sndid, 1: mirrored, the RecvID.
			if m := rings[0].LookupRecv(src, 1, 0); m == nil || ks.aoName(m) != "ao[0]" {
				t.Fatalf("%v > %v: the mirrored ao[0] does not take KeyID 1 from %v", src, dst, src)
			}
		}
	}
	if n := len(ks.mirrors); n != 2 {
		t.Errorf("%d mirrors for 2 sets of entries", n)
	}
}

// A capture whose every SYN contradicts -isn gives maxWarnings warnings
// and one saying the rest are not shown; Options remembers no more.
func TestWarningsBounded(t *testing.T) {
	var n int
	var last string
	o := &Options{Warn: func(s string) { n, last = n+1, s }}
	for i := range 3 * maxWarnings {
		o.warnf("warning %d", i)
	}
	o.warnf("warning 0")
	if n != maxWarnings+1 || len(o.warned) != maxWarnings+1 || last != "more than 1000 warnings: the rest are not shown" {
		t.Errorf("%d warnings, %d remembered, the last %q", n, len(o.warned), last)
	}
}
