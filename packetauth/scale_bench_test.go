package packetauth_test

// Cost as the work grows, for the packet layer: the heap a tracked TCP-AO
// connection takes. Only the public API is used. BENCHMARKS.md ("Cost as
// the work grows") has the command and the figures.

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/harness/heapgrowth"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/packetauth"
	"github.com/tcpsig/tcpsig/segment"
)

// BenchmarkGrowLayerMemory is the heap a connection tracked by a Layer
// takes: two layers, a client host's (192.0.2.1) and a server host's
// (198.51.100.2), each with one MKT for the other, carry 10,000
// connections (client ports from 10000 up) through their handshake (SYN,
// SYN-ACK) and one pure ACK each way, every packet signed by one layer
// and verified by the other; B/conn is the growth of the live heap over
// the 20,000 tracked connections (10,000 in each layer), the median over
// rounds (heapgrowth.Report, as in ao's scale benchmarks). A round starts
// from the heap after one connection carried and ended by a RST (what the
// first derivation of an MKT makes once is not the connections').
func BenchmarkGrowLayerMemory(b *testing.B) {
	const conns = 10000
	for _, alg := range []string{"hmac(sha1)", "hmac(sha256)", "cmac(aes128)", "kmac256-128"} {
		b.Run(fmt.Sprintf("alg=%s/conns=%d", alg, conns), func(b *testing.B) {
			heapgrowth.Report(b, "B/conn", func() float64 { return growLayerRound(b, alg, conns) })
		})
	}
}

// growLayerRound carries the connections of BenchmarkGrowLayerMemory and
// returns the heap they take per tracked connection.
func growLayerRound(b *testing.B, alg string, conns int) float64 {
	client, server := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("198.51.100.2")
	layer := func(peer netip.Addr, send, recv uint8) *packetauth.Layer {
		ring := ao.NewKeyring(nil)
		if _, err := ring.Add(keys.AO{Peer: netip.PrefixFrom(peer, 32), SendID: send, RecvID: recv,
			Algorithm: alg, Key: []byte("32 bytes of a neighbour's secret")}); err != nil {
			b.Fatal(err)
		}
		l, err := packetauth.New(packetauth.Config{AO: ring, MaxConns: conns + 1})
		if err != nil {
			b.Fatal(err)
		}
		return l
	}
	cl, sl := layer(server, 1, 2), layer(client, 2, 1)
	defer cl.Close()
	defer sl.Close()
	pkt, wire, in := make([]byte, 0, 128), make([]byte, 0, 128), make([]byte, 0, 128)
	// send carries one packet from one layer to the other.
	send := func(from, to *packetauth.Layer, src, dst netip.Addr, f segment.Fields, opts ...[]byte) {
		var err error
		h := f // h, not f, carries the options: f escapes into the messages below
		h.Options = opts
		if pkt, err = segment.AppendPacket(pkt[:0], segment.IP{Src: src, Dst: dst}, h, nil); err != nil {
			b.Fatal(err)
		}
		if wire, err = from.Outbound(wire[:0], pkt); err != nil {
			b.Fatalf("Outbound %v: %v", f, err)
		}
		if in, err = to.Inbound(in[:0], wire); err != nil {
			b.Fatalf("Inbound %v: %v", f, err)
		}
	}
	mss := []byte{2, 4, 0x05, 0xb4}
	connect := func(i int) {
		cp, sp := uint16(10000+i), uint16(179)
		cisn, sisn := 1000+uint32(i)*7919, 5000+uint32(i)*104729
		send(cl, sl, client, server, segment.Fields{SrcPort: cp, DstPort: sp, Seq: cisn, Flags: segment.SYN, Window: 65535}, mss)
		send(sl, cl, server, client, segment.Fields{SrcPort: sp, DstPort: cp, Seq: sisn, Ack: cisn + 1, Flags: segment.SYN | segment.ACK, Window: 65535}, mss)
		send(cl, sl, client, server, segment.Fields{SrcPort: cp, DstPort: sp, Seq: cisn + 1, Ack: sisn + 1, Flags: segment.ACK, Window: 65535})
		send(sl, cl, server, client, segment.Fields{SrcPort: sp, DstPort: cp, Seq: sisn + 1, Ack: cisn + 1, Flags: segment.ACK, Window: 65535})
	}
	reset := func(i int) {
		cp, sp := uint16(10000+i), uint16(179)
		cisn, sisn := 1000+uint32(i)*7919, 5000+uint32(i)*104729
		send(cl, sl, client, server, segment.Fields{SrcPort: cp, DstPort: sp, Seq: cisn + 1, Ack: sisn + 1, Flags: segment.RST | segment.ACK, Window: 65535})
	}
	tracked := func(want uint64) {
		if c, s := cl.Counters().Tracked, sl.Counters().Tracked; c != want || s != want {
			b.Fatalf("tracked %d and %d, want %d", c, s, want)
		}
	}
	connect(conns)
	reset(conns)
	tracked(0)
	base := heapgrowth.Live()
	for i := range conns {
		connect(i)
	}
	tracked(uint64(conns))
	v := (heapgrowth.Live() - base) / float64(2*conns)
	for i := range conns {
		reset(i)
	}
	tracked(0)
	return v
}
