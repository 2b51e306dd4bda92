package packetauth

import (
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/segment"
)

// Counters are a layer's totals since New.
type Counters struct {
	Passed   uint64 // packets of peers no key covers, returned untouched (both directions)
	Signed   uint64 // outbound packets signed
	Verified uint64 // inbound packets whose MAC verified
	Dropped  Drops  // packets refused, by reason (both directions)

	Tracked uint64 // connections tracked now
	Started uint64 // connections learnt from a handshake or Seed
	Closed  uint64 // connections freed on RST, or after FIN both ways
	Expired uint64 // connections freed for being idle
}

// Drops counts refused packets by reason; every drop is one error of
// Outbound or Inbound.
type Drops struct {
	BadMAC      uint64 // MAC or MD5 digest mismatch (ao.ErrBadMAC, md5sig.ErrBadMAC)
	Unsigned    uint64 // no TCP-AO/MD5 option from a covered peer (ErrUnsigned)
	KeyNotFound uint64 // KeyID or key unknown (ao.ErrKeyNotFound, md5sig.ErrNoKey, md5sig.ErrUnexpected)
	NoConn      uint64 // a covered peer's segment with no tracked connection (ErrNoConn)
	Fragment    uint64 // an IP fragment to or from a covered peer (ErrFragment)
	NoRoom      uint64 // option space exhausted even without SACK blocks (ErrNoRoom)
	Malformed   uint64 // a covered peer's packet that does not parse (segment errors, ErrOptions)
	Full        uint64 // a new connection over MaxConns (ErrFull)
	ICMP        uint64 // an ICMP hard error for a TCP-AO connection, ignored (ErrICMP)
	Other       uint64 // anything else (a key deleted mid-segment, say)
}

// Total returns the number of dropped packets.
func (d Drops) Total() uint64 {
	return d.BadMAC + d.Unsigned + d.KeyNotFound + d.NoConn + d.Fragment + d.NoRoom + d.Malformed + d.Full + d.ICMP + d.Other
}

type drops struct {
	badMAC, unsigned, keyNotFound, noConn, fragment, noRoom, malformed, full, icmp, other atomic.Uint64
}

func (d *drops) snapshot() Drops {
	return Drops{d.badMAC.Load(), d.unsigned.Load(), d.keyNotFound.Load(), d.noConn.Load(), d.fragment.Load(),
		d.noRoom.Load(), d.malformed.Load(), d.full.Load(), d.icmp.Load(), d.other.Load()}
}

// Kind is how a connection is signed.
type Kind uint8

// The kinds of connection.
const (
	KindAO  Kind = iota + 1 // TCP-AO (RFC 5925)
	KindMD5                 // TCP-MD5 (RFC 2385)
)

// String returns "TCP-AO" or "TCP-MD5".
func (k Kind) String() string {
	switch k {
	case KindAO:
		return "TCP-AO"
	case KindMD5:
		return "TCP-MD5"
	}
	return "none"
}

// State is where a tracked connection is in its life.
type State uint8

// The states of a tracked connection.
const (
	StateSynSent     State = iota + 1 // client: SYN sent, the peer's ISN not known yet
	StateSynReceived                  // server: a SYN verified, our SYN-ACK not seen yet
	StateEstablished                  // both ISNs known
	StateClosing                      // FIN seen both ways; kept for TimeWait
)

// String names the state.
func (s State) String() string {
	switch s {
	case StateSynSent:
		return "syn-sent"
	case StateSynReceived:
		return "syn-received"
	case StateEstablished:
		return "established"
	case StateClosing:
		return "closing"
	}
	return "unknown"
}

// ConnInfo is a snapshot of one tracked connection. Key IDs and SNEs are
// those of TCP-AO; an MD5 connection has only addresses, state and counts.
type ConnInfo struct {
	Local, Remote       netip.AddrPort
	L3Index             int // the connection's L3 domain (the VRF's ifindex, 0 for the default)
	Kind                Kind
	State               State
	LocalISN, RemoteISN uint32
	SendSNE, RecvSNE    uint32    // SNE of the highest sequence number signed / verified
	CurrentKeyID        uint8     // the current MKT's SendID: the KeyID we send
	RNextKeyID          uint8     // the RNext MKT's RecvID: the RNextKeyID we send
	Settled             bool      // TCP-AO: on the newest keys of its peer's schedule (ao.Conn.Settled)
	Signed, Verified    uint64    // this connection's packets
	Dropped             uint64    // this connection's refused packets, both ways
	LastSeen            time.Time // when created, or the last Expire that found packets since the one before
	Revoked             bool      // its key went away: its packets are dropped (see Layer.Revoke)
}

// String is one line, local <-> remote first, then kind, state, TCP-AO's
// KeyIDs, ISNs (local/remote) and SNEs (send/receive), and the counts; it
// holds no key and leaves LastSeen out.
func (c ConnInfo) String() string {
	s := fmt.Sprintf("%v <-> %v %v %v", c.Local, c.Remote, c.Kind, c.State)
	if c.Kind == KindAO {
		s += fmt.Sprintf(" KeyID %d RNextKeyID %d ISN %d/%d SNE %d/%d", c.CurrentKeyID, c.RNextKeyID, c.LocalISN, c.RemoteISN, c.SendSNE, c.RecvSNE)
	}
	s += fmt.Sprintf(" signed %d verified %d dropped %d", c.Signed, c.Verified, c.Dropped)
	if c.Revoked {
		s += " revoked"
	}
	return s
}

// drop counts a refused packet by reason (in sh's totals and, given, on
// c) and returns err.
func (l *Layer) drop(sh *shard, c *conn, err error) error {
	if c != nil {
		c.dropped.Add(1)
	}
	d := &sh.drops
	switch {
	case errors.Is(err, ao.ErrBadMAC), errors.Is(err, md5sig.ErrBadMAC):
		d.badMAC.Add(1)
	case errors.Is(err, ErrUnsigned), errors.Is(err, ao.ErrAORequired), errors.Is(err, md5sig.ErrMissing):
		d.unsigned.Add(1)
	case errors.Is(err, ao.ErrKeyNotFound), errors.Is(err, ao.ErrNoCurrentKey), errors.Is(err, md5sig.ErrNoKey),
		errors.Is(err, md5sig.ErrUnexpected), errors.Is(err, ErrRevoked):
		d.keyNotFound.Add(1)
	case errors.Is(err, ErrNoConn), errors.Is(err, ao.ErrNoISN):
		d.noConn.Add(1)
	case errors.Is(err, ErrFragment):
		d.fragment.Add(1)
	case errors.Is(err, ErrNoRoom):
		d.noRoom.Add(1)
	case errors.Is(err, ErrFull):
		d.full.Add(1)
	case errors.Is(err, ErrICMP):
		d.icmp.Add(1)
	case errors.Is(err, ErrOptions), errors.Is(err, ao.ErrUnexpected), errors.Is(err, md5sig.ErrAOOption),
		isSegmentError(err):
		d.malformed.Add(1)
	default:
		d.other.Add(1)
	}
	return err
}

var segmentErrors = []error{segment.ErrShortPacket, segment.ErrIPHeaderLength, segment.ErrExtHeaderChain,
	segment.ErrShortTCP, segment.ErrDataOffset, segment.ErrOptionLength, segment.ErrAuthOption,
	segment.ErrDuplicateAuth, segment.ErrBothAuth, segment.ErrSegmentTooLong, segment.ErrPacketTooLong}

func isSegmentError(err error) bool {
	for _, e := range segmentErrors {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Counters returns the layer's totals.
func (l *Layer) Counters() Counters {
	var c Counters
	if !l.setUp() {
		return c
	}
	for i := range l.shards {
		sh := &l.shards[i]
		c.Passed += sh.passed.Load()
		c.Signed += sh.signed.Load()
		c.Verified += sh.verified.Load()
		d := sh.drops.snapshot()
		c.Dropped.BadMAC += d.BadMAC
		c.Dropped.Unsigned += d.Unsigned
		c.Dropped.KeyNotFound += d.KeyNotFound
		c.Dropped.NoConn += d.NoConn
		c.Dropped.Fragment += d.Fragment
		c.Dropped.NoRoom += d.NoRoom
		c.Dropped.Malformed += d.Malformed
		c.Dropped.Full += d.Full
		c.Dropped.ICMP += d.ICMP
		c.Dropped.Other += d.Other
	}
	c.Tracked = uint64(max(l.count.Load(), 0))
	c.Started, c.Closed, c.Expired = l.started.Load(), l.closedN.Load(), l.expired.Load()
	return c
}
