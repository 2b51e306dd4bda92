package onpath

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"

	"github.com/tcpsig/tcpsig/segment"
)

var (
	peer   = netip.MustParseAddrPort("192.0.2.1:40000")
	target = netip.MustParseAddrPort("198.51.100.2:179")
	flow   = Flow{Peer: peer, Target: target}
)

// pkt builds one segment from src to dst for the tracker.
func pkt(t *testing.T, src, dst netip.AddrPort, f segment.Fields, payload []byte, opts ...[]byte) []byte {
	t.Helper()
	f.SrcPort, f.DstPort, f.Options = src.Port(), dst.Port(), opts
	if f.Window == 0 {
		f.Window = 1000
	}
	b, err := segment.AppendPacket(nil, segment.IP{Src: src.Addr(), Dst: dst.Addr()}, f, payload)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ts(val, ecr uint32) []byte {
	b := []byte{optTimestamps, 10, 0, 0, 0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[2:], val)
	binary.BigEndian.PutUint32(b[6:], ecr)
	return b
}

var md5Option = append([]byte{segment.OptionKindMD5, segment.MD5OptionLen}, make([]byte, 16)...)

// handshake feeds tr a handshake and some data of flow, the peer's ISN
// near the top of the sequence space so that its data wraps.
func handshake(t *testing.T, tr *Tracker) {
	t.Helper()
	isnP, isnT := uint32(0xffff_fff0), uint32(5000)
	for _, p := range [][]byte{
		pkt(t, peer, target, segment.Fields{Seq: isnP, Flags: segment.SYN, Window: 64240}, nil, md5Option, []byte{optWindowScale, 3, 7}, ts(100, 0)),
		pkt(t, target, peer, segment.Fields{Seq: isnT, Ack: isnP + 1, Flags: segment.SYN | segment.ACK, Window: 65160}, nil, md5Option, []byte{optWindowScale, 3, 5}, ts(900, 100)),
		pkt(t, peer, target, segment.Fields{Seq: isnP + 1, Ack: isnT + 1, Flags: segment.ACK, Window: 502}, nil, md5Option, ts(101, 900)),
		// 100 bytes across the wrap, then a retransmission of the first
		// 50 (it moves nothing back).
		pkt(t, peer, target, segment.Fields{Seq: isnP + 1, Ack: isnT + 1, Flags: segment.ACK | segment.PSH, Window: 502}, make([]byte, 100), md5Option, ts(102, 900)),
		pkt(t, peer, target, segment.Fields{Seq: isnP + 1, Ack: isnT + 1, Flags: segment.ACK | segment.PSH, Window: 502}, make([]byte, 50), md5Option, ts(103, 900)),
		// The target acknowledges 60 of them, unsigned.
		pkt(t, target, peer, segment.Fields{Seq: isnT + 1, Ack: isnP + 61, Flags: segment.ACK, Window: 2000}, nil, ts(901, 102)),
	} {
		if !tr.Observe(p) {
			t.Fatalf("not observed: % x", p)
		}
	}
}

func TestTrackerLearnsBothWays(t *testing.T) {
	tr := NewTracker()
	handshake(t, tr)
	v := tr.View(flow)
	p, g := v.FromPeer, v.FromTarget
	if !p.Seen || p.Next != 85 || p.Ack != 5001 || p.Window != 502 || p.Scale != 7 {
		t.Errorf("from peer: %+v", p)
	}
	if p.TSval != 103 || p.TSecr != 900 || !p.HasTS {
		t.Errorf("from peer: timestamps %d/%d %v, want the last, 103/900", p.TSval, p.TSecr, p.HasTS)
	}
	if p.Packets != 4 || p.Data != 2 || p.SYN != 1 || p.Unsigned != 0 {
		t.Errorf("from peer: counts %v", p)
	}
	if g.Packets != 2 || g.Unsigned != 1 || g.Next != 5001 || g.Ack != 0xffff_fff0+61-1<<32 || g.Scale != 5 || g.Window != 2000 {
		t.Errorf("from target: %v, scale %d", g, g.Scale)
	}
	if v.RcvNxt() != 0xffff_fff0+61-1<<32 {
		t.Errorf("RcvNxt %d, want the target's last ACK", v.RcvNxt())
	}
	if v.RcvWindow() != 2000<<5 {
		t.Errorf("RcvWindow %d, want 2000<<5", v.RcvWindow())
	}
	if fs := tr.Flows(); len(fs) != 2 || fs[0] != flow && fs[1] != flow {
		t.Errorf("Flows %v", fs)
	}
	// The reverse view is the same halves swapped.
	if r := tr.View(Flow{Peer: target, Target: peer}); r.FromPeer != g || r.FromTarget != p {
		t.Errorf("reverse view %+v", r)
	}
	if tr.Observe([]byte{0x45, 0, 0, 20}) {
		t.Error("a truncated packet observed")
	}
}

// A flow the tracker never saw gets the fallback numbers, unscaled.
func TestViewUnseen(t *testing.T) {
	v := NewTracker().View(flow)
	if v.RcvNxt() != fallbackSeq || v.RcvWindow() != 0 || v.FromPeer.Seen || v.FromTarget.Scale != -1 {
		t.Errorf("unseen view %+v: RcvNxt %d RcvWindow %d", v, v.RcvNxt(), v.RcvWindow())
	}
	// Only one SYN with a window scale: the window stays unscaled.
	v.FromTarget = Half{Seen: true, Window: 10, Scale: 4}
	if v.RcvWindow() != 10 {
		t.Errorf("RcvWindow %d with the peer's scale unknown, want 10", v.RcvWindow())
	}
}

func TestBuild(t *testing.T) {
	tr := NewTracker()
	handshake(t, tr)
	v := tr.View(flow)
	rcv := uint32(0xffff_fff0 + 61 - 1<<32)
	for _, c := range []struct {
		k     Kind
		flags segment.Flags
		seq   uint32
		ack   uint32
		data  string
	}{
		{Data, segment.PSH | segment.ACK, rcv, 5001, Marker},
		{RST, segment.RST | segment.ACK, rcv, 5001, ""},
		{RSTInWindow, segment.RST | segment.ACK, rcv + 2000<<5/2, 5001, ""},
		{SYN, segment.SYN, rcv + 2000<<5/2, 0, ""},
	} {
		b, err := Build(nil, c.k, v)
		if err != nil {
			t.Fatal(err)
		}
		s, err := segment.ParsePacket(b)
		if err != nil {
			t.Fatalf("%v: %v", c.k, err)
		}
		h := s.Header()
		if s.Src() != peer.Addr() || s.Dst() != target.Addr() || h.SrcPort() != peer.Port() || h.DstPort() != target.Port() {
			t.Errorf("%v: %v:%d > %v:%d", c.k, s.Src(), h.SrcPort(), s.Dst(), h.DstPort())
		}
		if h.Flags() != c.flags || h.Seq() != c.seq || h.Ack() != c.ack || string(s.Payload()) != c.data || h.Window() != 502 {
			t.Errorf("%v: flags %v seq %d ack %d window %d payload %q; want %v %d %d 502 %q", c.k, h.Flags(), h.Seq(), h.Ack(), h.Window(), s.Payload(), c.flags, c.seq, c.ack, c.data)
		}
		if a := s.Auth(); a.HasMD5() || a.HasAO() {
			t.Errorf("%v: carries an authentication option", c.k)
		}
		if _, val, ecr, ok := options(h.Options()); !ok || val != 103 || ecr != 900 {
			t.Errorf("%v: timestamps %d/%d %v, want the peer's last, 103/900", c.k, val, ecr, ok)
		}
		if c.k == SYN && !bytes.Contains(h.Options(), []byte{optMSS, 4}) {
			t.Errorf("SYN without MSS: % x", h.Options())
		}
		if sum := segment.TCPChecksum(s.Src(), s.Dst(), b[segment.IPv4HeaderLen:]); sum != h.Checksum() {
			t.Errorf("%v: checksum %#x, want %#x", c.k, h.Checksum(), sum)
		}
		// What the attacker sends, the tracker reads back as sent.
		back := NewTracker()
		back.Observe(b)
		if got := back.View(flow).FromPeer; got.Packets != 1 || got.Unsigned != 1 {
			t.Errorf("%v: tracked as %v", c.k, got)
		}
	}
	if _, err := Build(nil, Data|RST, v); !errors.Is(err, ErrKind) {
		t.Errorf("Build of two kinds: %v, want ErrKind", err)
	}
	if s := (Data | SYN).String(); s != "data+syn" {
		t.Errorf("Kind string %q", s)
	}
}

func TestCounts(t *testing.T) {
	var c Counts
	for _, k := range kinds {
		c.add(k)
	}
	c.add(Data)
	if c.Total() != 5 || c.Data != 2 {
		t.Errorf("counts %+v", c)
	}
	if d := c.Sub(Counts{Data: 1}); d.Total() != 4 {
		t.Errorf("Sub: %+v", d)
	}
}
