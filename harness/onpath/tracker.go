package onpath

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"sync"

	"github.com/tcpsig/tcpsig/segment"
)

// Flow is one TCP connection as the attacker sees it: Peer is the end it
// impersonates, Target the end its forged segments go to.
type Flow struct {
	Peer, Target netip.AddrPort
}

func (f Flow) String() string { return f.Peer.String() + " > " + f.Target.String() }

// reverse is the flow the other way round.
func (f Flow) reverse() Flow { return Flow{Peer: f.Target, Target: f.Peer} }

// Half is what the tracker saw of one direction of a flow: the sender's
// sequence space as far as the segments on the wire tell it.
type Half struct {
	Seen   bool
	Next   uint32 // highest sequence number sent, plus one: the sender's snd_nxt
	Ack    uint32 // highest acknowledgement number sent: the sender's rcv_nxt then
	HasAck bool
	Window uint16 // the last segment's window field, unscaled
	Scale  int    // the window scale of its SYN; -1 when it sent none or was not seen
	TSval  uint32 // the last timestamps option (RFC 7323), if HasTS
	TSecr  uint32
	HasTS  bool

	Packets  uint64 // segments seen
	Unsigned uint64 // of which with neither a TCP-MD5 nor a TCP-AO option
	Data     uint64 // of which with payload
	SYN      uint64
	FIN      uint64
	RST      uint64
}

// View is both directions of a flow.
type View struct {
	Flow       Flow
	FromPeer   Half // what Peer sent to Target
	FromTarget Half // what Target sent to Peer
}

// fallbackSeq is the sequence number forged segments take on a flow the
// tracker has not seen at all (a SYN to a listener, say).
const fallbackSeq = 0x0100_0000

// RcvNxt is the target's rcv_nxt as the wire tells it: the last
// acknowledgement it sent, or, before it sent one, the peer's snd_nxt.
// When the target has received data it has not yet acknowledged (a
// delayed ACK pending), the real value is higher; on an idle session it
// is exact.
func (v View) RcvNxt() uint32 {
	switch {
	case v.FromTarget.HasAck:
		return v.FromTarget.Ack
	case v.FromPeer.Seen:
		return v.FromPeer.Next
	}
	return fallbackSeq
}

// RcvWindow is the target's receive window in bytes: its last window
// field, scaled when both SYNs were seen with a window scale option (else
// unscaled, which is never more than the real window).
func (v View) RcvWindow() uint32 {
	w := uint32(v.FromTarget.Window)
	if v.FromTarget.Scale >= 0 && v.FromPeer.Scale >= 0 {
		w <<= uint(v.FromTarget.Scale)
	}
	return w
}

// Tracker follows the TCP flows of the packets it is shown. Its methods
// are safe for concurrent use.
type Tracker struct {
	mu     sync.Mutex
	halves map[Flow]*Half // keyed by (sender, receiver)
}

// maxHalves bounds the tracker's memory: directions beyond it are not
// followed.
const maxHalves = 4096

// NewTracker returns an empty tracker.
func NewTracker() *Tracker { return &Tracker{halves: make(map[Flow]*Half)} }

// after reports whether sequence number a is after b (RFC 9293 §3.4,
// modulo 2³²).
func after(a, b uint32) bool { return int32(a-b) > 0 }

// Observe records one IPv4 or IPv6 packet; it returns false for a packet
// that is not a well-formed TCP segment.
func (t *Tracker) Observe(pkt []byte) bool {
	s, err := segment.ParsePacket(pkt)
	if err != nil {
		return false
	}
	h := s.Header()
	key := Flow{Peer: netip.AddrPortFrom(s.Src(), h.SrcPort()), Target: netip.AddrPortFrom(s.Dst(), h.DstPort())}
	flags := h.Flags()
	seq := h.Seq()
	end := seq + uint32(len(s.Payload()))
	if flags.Has(segment.SYN) {
		end++
	}
	if flags.Has(segment.FIN) {
		end++
	}
	scale, tsval, tsecr, hasTS := options(h.Options())

	t.mu.Lock()
	defer t.mu.Unlock()
	x := t.halves[key]
	if x == nil {
		if len(t.halves) >= maxHalves {
			return true
		}
		x = &Half{Scale: -1}
		t.halves[key] = x
	}
	if !x.Seen || after(end, x.Next) {
		x.Next = end
	}
	if flags.Has(segment.ACK) && (!x.HasAck || after(h.Ack(), x.Ack)) {
		x.Ack, x.HasAck = h.Ack(), true
	}
	x.Seen = true
	x.Window = h.Window()
	if flags.Has(segment.SYN) {
		x.Scale = scale
	}
	if hasTS {
		x.TSval, x.TSecr, x.HasTS = tsval, tsecr, true
	}
	x.Packets++
	if a := s.Auth(); !a.HasMD5() && !a.HasAO() {
		x.Unsigned++
	}
	if len(s.Payload()) > 0 {
		x.Data++
	}
	if flags.Has(segment.SYN) {
		x.SYN++
	}
	if flags.Has(segment.FIN) {
		x.FIN++
	}
	if flags.Has(segment.RST) {
		x.RST++
	}
	return true
}

// options returns the window scale (-1: none) and timestamps of a TCP
// header's options, walked as RFC 9293 §3.1 lays them out.
func options(o []byte) (scale int, tsval, tsecr uint32, hasTS bool) {
	scale = -1
	for len(o) > 0 {
		switch o[0] {
		case segment.OptionKindEOL:
			return
		case segment.OptionKindNOP:
			o = o[1:]
			continue
		}
		if len(o) < 2 || int(o[1]) < 2 || int(o[1]) > len(o) {
			return
		}
		switch {
		case o[0] == optWindowScale && o[1] == 3:
			scale = int(min(o[2], 14))
		case o[0] == optTimestamps && o[1] == 10:
			tsval, tsecr, hasTS = binary.BigEndian.Uint32(o[2:]), binary.BigEndian.Uint32(o[6:]), true
		}
		o = o[o[1]:]
	}
	return
}

// TCP option kinds (RFC 9293 §3.2, RFC 7323).
const (
	optMSS         = 2
	optWindowScale = 3
	optTimestamps  = 8
)

// View returns what the tracker saw of f, both ways.
func (t *Tracker) View(f Flow) View {
	t.mu.Lock()
	defer t.mu.Unlock()
	v := View{Flow: f, FromPeer: Half{Scale: -1}, FromTarget: Half{Scale: -1}}
	if x := t.halves[f]; x != nil {
		v.FromPeer = *x
	}
	if x := t.halves[f.reverse()]; x != nil {
		v.FromTarget = *x
	}
	return v
}

// Flows returns the directions seen, each as the flow from its sender
// to its receiver, in a stable order.
func (t *Tracker) Flows() []Flow {
	t.mu.Lock()
	fs := make([]Flow, 0, len(t.halves))
	for f := range t.halves {
		fs = append(fs, f)
	}
	t.mu.Unlock()
	sort.Slice(fs, func(i, j int) bool { return fs[i].String() < fs[j].String() })
	return fs
}

// String formats a half as one line of counts and numbers.
func (h Half) String() string {
	if !h.Seen {
		return "not seen"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d segments (%d unsigned, %d data, %d SYN, %d FIN, %d RST) next %d", h.Packets, h.Unsigned, h.Data, h.SYN, h.FIN, h.RST, h.Next)
	if h.HasAck {
		fmt.Fprintf(&b, " ack %d", h.Ack)
	}
	fmt.Fprintf(&b, " win %d", h.Window)
	return b.String()
}
