package onpath

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/tcpsig/tcpsig/segment"
)

// Kind is a set of forged segment kinds.
type Kind uint8

// The kinds of forged segments, each sent from the flow's peer to its
// target at the sequence numbers of a [View] (see [Build]).
const (
	// Data is an unsigned segment carrying [Marker] at the target's
	// rcv_nxt, acknowledging the target's snd_nxt: delivered, it lands in
	// the target application's byte stream.
	Data Kind = 1 << iota
	// RST is a reset at exactly the target's rcv_nxt: accepted, it aborts
	// the connection (ECONNRESET).
	RST
	// RSTInWindow is a reset inside the target's receive window but not
	// at rcv_nxt: accepted by an RFC 5961 stack, it draws a challenge ACK
	// (TcpExtTCPChallengeACK); an older stack aborts.
	RSTInWindow
	// SYN is a SYN inside the window: on a synchronized connection it
	// draws a challenge ACK (TcpExtTCPSYNChallenge); to a listener it
	// opens a connection.
	SYN

	// AllKinds is every kind above.
	AllKinds = Data | RST | RSTInWindow | SYN
)

// kinds lists the single kinds in the order Build's callers send them.
var kinds = [...]Kind{Data, RST, RSTInWindow, SYN}

func (k Kind) String() string {
	var names []string
	for _, x := range kinds {
		if k&x != 0 {
			names = append(names, [...]string{"data", "rst", "rst-in-window", "syn"}[index(x)])
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, "+")
}

// index is the position of the single kind k in kinds.
func index(k Kind) int {
	for i, x := range kinds {
		if x == k {
			return i
		}
	}
	return -1
}

// Marker is the payload of forged data segments; tests look for it in
// what their applications read.
const Marker = "<onpath: forged by M>"

// ErrKind is Build's error for a kind that is not exactly one of the
// kinds above.
var ErrKind = errors.New("onpath: not a single segment kind")

// Build appends to dst the forged IP packet of the single kind k from
// v.Flow.Peer to v.Flow.Target, with sequence numbers after v, and returns
// the extended slice. It carries no TCP-MD5 or TCP-AO option; its
// checksums are right.
//
// The segment acknowledges the target's snd_nxt (the ACK flag only when
// the target was seen), advertises the peer's last window, and carries
// the peer's last timestamps (TSval, TSecr), so that it passes PAWS
// (RFC 7323 §5) as the peer's next segment would. An in-window offset is
// half the target's receive window (at least 1 byte, at most 32 KiB).
func Build(dst []byte, k Kind, v View) ([]byte, error) {
	if index(k) < 0 {
		return nil, ErrKind
	}
	rcv := v.RcvNxt()
	off := min(max(v.RcvWindow()/2, 1), 32<<10)
	f := segment.Fields{
		SrcPort: v.Flow.Peer.Port(),
		DstPort: v.Flow.Target.Port(),
		Seq:     rcv,
		Window:  0xffff,
	}
	if v.FromPeer.Seen {
		f.Window = v.FromPeer.Window
	}
	if v.FromPeer.HasTS {
		ts := []byte{optTimestamps, 10, 0, 0, 0, 0, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(ts[2:], v.FromPeer.TSval)
		binary.BigEndian.PutUint32(ts[6:], v.FromPeer.TSecr)
		f.Options = append(f.Options, ts)
	}
	var payload []byte
	switch k {
	case Data:
		f.Flags = segment.PSH | segment.ACK
		f.Ack = v.FromTarget.Next
		payload = []byte(Marker)
	case RST:
		f.Flags = segment.RST
	case RSTInWindow:
		f.Flags = segment.RST
		f.Seq = rcv + off
	case SYN:
		f.Flags = segment.SYN
		f.Seq = rcv + off
		f.Options = append([][]byte{{optMSS, 4, 0x05, 0xb4}}, f.Options...) // MSS 1460
	}
	if v.FromTarget.Seen && k != Data && k != SYN {
		// An RST acknowledging what the target sent, as a reset of the
		// peer's own would (RST alone is enough for Linux; some stacks
		// check the ACK too).
		f.Flags |= segment.ACK
		f.Ack = v.FromTarget.Next
	}
	return segment.AppendPacket(dst, segment.IP{Src: v.Flow.Peer.Addr(), Dst: v.Flow.Target.Addr()}, f, payload)
}

// Counts are forged segments sent, by kind; Errors are sends the kernel
// refused (ENOBUFS, say), not counted in the others.
type Counts struct {
	Data, RST, RSTInWindow, SYN uint64
	Errors                      uint64
}

// Total is the number of segments sent.
func (c Counts) Total() uint64 { return c.Data + c.RST + c.RSTInWindow + c.SYN }

// Sub is c minus an earlier reading.
func (c Counts) Sub(before Counts) Counts {
	return Counts{c.Data - before.Data, c.RST - before.RST, c.RSTInWindow - before.RSTInWindow, c.SYN - before.SYN, c.Errors - before.Errors}
}

func (c Counts) String() string {
	return fmt.Sprintf("%d forged (%d data, %d RST at rcv_nxt, %d RST in window, %d SYN)", c.Total(), c.Data, c.RST, c.RSTInWindow, c.SYN)
}

func (c *Counts) add(k Kind) {
	switch k {
	case Data:
		c.Data++
	case RST:
		c.RST++
	case RSTInWindow:
		c.RSTInWindow++
	case SYN:
		c.SYN++
	}
}
