package packetauth

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/md5sig"
)

// Defaults for the zero values of Config.
const (
	DefaultIdle     = 2 * time.Hour    // Linux's tcp_keepalive_time: a live idle connection probes before this
	DefaultTimeWait = 60 * time.Second // Linux's TCP_TIMEWAIT_LEN
	DefaultMaxConns = 16384            // at 4.3–5.3 KB each (one MKT), about 90 MB at most
	// HandshakeIdle is how long a connection whose handshake never
	// completed is kept (if Idle is not shorter): more than the 127 s a
	// Linux connect() retries its SYN.
	HandshakeIdle = 3 * time.Minute
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
	ErrConfig   = errors.New("packetauth: invalid configuration") // a negative Config field, no keyring, or a Layer not made by New
	// ErrNotSetUp: a method of a nil *Layer or of a zero Layer (one New
	// did not make). It covers nobody, so it passes nothing: every packet
	// is refused. It wraps ErrConfig.
	ErrNotSetUp = fmt.Errorf("%w: nil or zero Layer (make one with New)", ErrConfig)
	// ErrNoKeyring: a Config with neither keyring would cover nobody and
	// pass every packet unsigned; give an empty keyring to cover peers
	// added later.
	ErrNoKeyring = fmt.Errorf("%w: no keyring (AO or MD5)", ErrConfig)
	// ErrRevoked: a tracked connection whose key was removed, or whose
	// peer is now covered by the other kind: its packets are dropped,
	// never passed unsigned, until it ends or expires.
	ErrRevoked = errors.New("packetauth: the connection's key was removed")
	// ErrICMP: an ICMP hard error for a TCP-AO connection, ignored as
	// RFC 5925 §7.8 and Linux do unless Policy.AcceptICMP.
	ErrICMP = errors.New("packetauth: ICMP error for a TCP-AO connection ignored")
	// ErrNotCovered: Seed for a peer no key covers.
	ErrNotCovered = errors.New("packetauth: no key covers the peer")
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

	// StackChecksums says the local stack fills in the whole TCP checksum
	// of every segment it sends (no TX checksum offload). Outbound then
	// updates that checksum for the bytes it inserts and changes
	// (RFC 1624) instead of summing the whole segment again, and a
	// segment the stack sent with a wrong checksum leaves with a wrong
	// one. Leave it false if the stack may leave a checksum partial or
	// unset: Outbound then computes every checksum of what it signs.
	StackChecksums bool
}

// Layer signs what the local stack sends and verifies what it receives,
// on whole IPv4/IPv6 packets (no link header). Safe for concurrent use:
// Outbound and Inbound may run at the same time from different goroutines.
// Make one with New: a nil *Layer or a zero Layer refuses every packet
// and every call that returns an error (ErrNotSetUp), and does nothing
// otherwise.
type Layer struct {
	cfg      Config
	listener *ao.Listener // verifies SYNs of TCP-AO peers, as a listening socket
	shards   [nShards]shard
	count    atomic.Int64 // tracked connections
	started  atomic.Uint64
	closedN  atomic.Uint64
	expired  atomic.Uint64
	closed   atomic.Bool
}

// New returns a layer for cfg.
func New(cfg Config) (*Layer, error) {
	if cfg.AO == nil && cfg.MD5 == nil {
		return nil, ErrNoKeyring
	}
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
	l := &Layer{cfg: cfg}
	if cfg.AO != nil {
		l.listener = ao.NewListener(cfg.AO, cfg.Policy, cfg.L3Index)
	}
	for i := range l.shards {
		l.shards[i].conns = make(map[tuple]*conn)
	}
	return l, nil
}

// setUp reports whether New made l: a nil *Layer or a zero Layer covers
// nobody and would pass every packet unsigned, so its methods refuse
// (ErrNotSetUp) or do nothing.
func (l *Layer) setUp() bool {
	return l != nil && (l.cfg.AO != nil || l.cfg.MD5 != nil)
}

// Overhead is the most option bytes Outbound adds to a packet: 20 when any
// key is configured (a TCP-AO option with the longest MAC an MKT may have,
// ao.OptionSpace(keys.MaxMACLen), or NOP NOP + the 18-byte MD5 option), 0
// otherwise. It is a bound rather than the largest MKT's option because
// MKTs may be added while connections run and a stack's MTU cannot grow
// back. A front end reports MTU − Overhead to its stack.
func (l *Layer) Overhead() int {
	if !l.setUp() {
		return 0
	}
	return ao.OptionSpace(keys.MaxMACLen)
}
