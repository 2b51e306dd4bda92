package packetauth

import (
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/segment"
)

// steady returns an established pair and A's data segment and B's
// wire copy of it, for the steady-state path.
func steady(tb testing.TB, md5 bool, n int) (p *pair, out, in []byte) {
	if md5 {
		p = newPair(tb, false, Config{MD5: md5Ring(tb, addrB4, "m")}, Config{MD5: md5Ring(tb, addrA4, "m")})
	} else {
		p = aoPair(tb, false, "k", "k")
	}
	p.handshake()
	out = p.build(p.a, p.b, segment.ACK|segment.PSH, make([]byte, n), tsOpt)
	in, _ = p.send(p.a, p.b, segment.ACK|segment.PSH, make([]byte, n), tsOpt)
	return p, out, in
}

// TestZeroAllocs: once a connection is established, Outbound and Inbound
// allocate nothing when dst has room (TCP-AO and MD5).
func TestZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, md5 := range []bool{false, true} {
		p, out, in := steady(t, md5, 1448)
		dst := make([]byte, 0, 2048)
		if n := testing.AllocsPerRun(200, func() {
			if _, err := p.a.l.Outbound(dst, out); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("md5=%v: Outbound %v allocs", md5, n)
		}
		if n := testing.AllocsPerRun(200, func() {
			if _, err := p.b.l.Inbound(dst, in); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("md5=%v: Inbound %v allocs", md5, n)
		}
	}
}

// TestConcurrent runs, under -race, Outbound and Inbound of several
// connections from separate goroutines at once (each layer's Outbound in
// one goroutine, its Inbound in another, as a netstack wrapper or a
// netfilter queue calls them), with Conns, Counters, Expire and key
// rotation through Conn alongside; every segment must verify.
func TestConcurrent(t *testing.T) {
	p := newPair(t, false, Config{AO: aoRing(t, addrB4, 12, mkt{1, 2, "k"}, mkt{11, 12, "k2"})},
		Config{AO: aoRing(t, addrA4, 12, mkt{2, 1, "k"}, mkt{12, 11, "k2"})})
	const conns, rounds = 4, 200
	ends := make([][2]*end, conns)
	for i := range ends {
		a := &end{l: p.a.l, ap: netip.AddrPortFrom(addrA4, uint16(41000+i)), seq: uint32(i) << 28}
		b := &end{l: p.b.l, ap: netip.AddrPortFrom(addrB4, 179), seq: uint32(i)<<28 + 1<<27}
		q := &pair{t: t, a: a, b: b}
		q.handshake()
		ends[i] = [2]*end{a, b}
	}
	// The toy stacks' segments, built ahead: round r of connection i.
	build := func(from, to *end, r int) []byte {
		pkt, err := segment.AppendPacket(nil, segment.IP{Src: from.ap.Addr(), Dst: to.ap.Addr()},
			segment.Fields{SrcPort: from.ap.Port(), DstPort: to.ap.Port(), Seq: from.seq + uint32(r*100), Ack: from.ack,
				Flags: segment.ACK | segment.PSH, Window: 1000, Options: [][]byte{tsOpt}}, make([]byte, 100))
		if err != nil {
			t.Error(err)
		}
		return pkt
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	flow := func(from, to int) { // Outbound at side from, Inbound at side to, in two goroutines
		wire := make(chan []byte, 64)
		wg.Add(2)
		go func() {
			defer wg.Done()
			defer close(wire)
			for r := 0; r < rounds; r++ {
				for i := range ends {
					out, err := ends[i][from].l.Outbound(nil, build(ends[i][from], ends[i][to], r))
					if err != nil {
						t.Errorf("Outbound: %v", err)
						return
					}
					wire <- out
				}
			}
		}()
		go func() {
			defer wg.Done()
			dst := make([]byte, 0, 2048)
			for w := range wire {
				if _, err := ends[0][to].l.Inbound(dst, w); err != nil {
					t.Errorf("Inbound: %v", err)
				}
			}
		}()
	}
	flow(0, 1)
	flow(1, 0)
	var side sync.WaitGroup
	side.Add(1)
	go func() { // the front end's housekeeping and an operator rotating keys
		defer side.Done()
		for n := 0; ; n++ {
			select {
			case <-done:
				return
			default:
			}
			for ci := range p.a.l.Conns {
				_ = ci.RecvSNE
			}
			_ = p.b.l.Counters()
			p.a.l.Expire(time.Now())
			if c, ok := p.a.l.Conn(ends[n%conns][0].ap, ends[n%conns][1].ap); ok {
				_ = c.SetRNext([2]uint8{2, 12}[n%2])
			}
		}
	}()
	wg.Wait()
	close(done)
	side.Wait()
	ca, cb := p.a.l.Counters(), p.b.l.Counters()
	if ca.Dropped.Total() != 0 || cb.Dropped.Total() != 0 || ca.Verified < conns*rounds || cb.Verified < conns*rounds {
		t.Fatalf("A %+v\nB %+v", ca, cb)
	}
}

// BenchmarkLayer measures the steady-state paths on an established IPv4
// connection: Outbound (insert, sign, checksums) and Inbound (verify,
// strip, checksum), TCP-AO hmac(sha1) maclen 12 and MD5, for a pure ACK
// and a full segment.
func BenchmarkLayer(b *testing.B) {
	for _, md5 := range []bool{false, true} {
		kind := "ao-hmac-sha1"
		if md5 {
			kind = "md5"
		}
		for _, n := range []int{0, 1448} {
			p, out, in := steady(b, md5, n)
			dst := make([]byte, 0, 2048)
			b.Run(fmt.Sprintf("%s/%dB/Outbound", kind, n), func(b *testing.B) {
				b.SetBytes(int64(len(out)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := p.a.l.Outbound(dst, out); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("%s/%dB/Inbound", kind, n), func(b *testing.B) {
				b.SetBytes(int64(len(in)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := p.b.l.Inbound(dst, in); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkLayerVsConn measures what the layer adds to the engine on the
// steady-state path, interleaved in one run: rounds alternate Outbound
// (parse, insert the option, sign, IP length and checksums) with
// ao.Conn.Sign of the same segment already laid out, and Inbound (parse,
// verify, strip, checksum) with ao.Conn.Verify. It reports the medians of
// the rounds and their ratios (layer ÷ engine).
func BenchmarkLayerVsConn(b *testing.B) {
	for _, n := range []int{0, 1448} {
		b.Run(fmt.Sprintf("%dB", n), func(b *testing.B) {
			p, out, in := steady(b, false, n)
			ca, _ := p.a.l.Conn(p.a.ap, p.b.ap)
			cb, _ := p.b.l.Conn(p.b.ap, p.a.ap)
			signSeg, _ := segment.ParsePacket(slices.Clone(in))
			verifySeg, _ := segment.ParsePacket(slices.Clone(in))
			dst := make([]byte, 0, 2048)
			const rounds, per = 15, 400
			var lo, so, li, vi []float64
			timeIt := func(f func()) float64 {
				t0 := time.Now()
				for i := 0; i < per; i++ {
					f()
				}
				return float64(time.Since(t0).Nanoseconds()) / per
			}
			for b.Loop() {
				lo, so, li, vi = lo[:0], so[:0], li[:0], vi[:0]
				for r := 0; r < rounds; r++ {
					lo = append(lo, timeIt(func() { _, _ = p.a.l.Outbound(dst, out) }))
					so = append(so, timeIt(func() { _ = ca.Sign(&signSeg) }))
					li = append(li, timeIt(func() { _, _ = p.b.l.Inbound(dst, in) }))
					vi = append(vi, timeIt(func() { _ = cb.Verify(&verifySeg) }))
				}
			}
			m := func(x []float64) float64 { slices.Sort(x); return x[len(x)/2] }
			mlo, mso, mli, mvi := m(lo), m(so), m(li), m(vi)
			b.ReportMetric(mlo, "outbound-ns")
			b.ReportMetric(mso, "sign-ns")
			b.ReportMetric(mlo/mso, "outbound/sign")
			b.ReportMetric(mli, "inbound-ns")
			b.ReportMetric(mvi, "verify-ns")
			b.ReportMetric(mli/mvi, "inbound/verify")
		})
	}
}
