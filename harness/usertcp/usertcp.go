// Package usertcp is a small userspace TCP endpoint that speaks raw IPv4 and
// IPv6 packets over a [Link] (a TUN device, or an in-memory [Pipe]). It
// exists to prove tcpsig against the Linux kernel in the engine → kernel
// direction: the endpoint's segments are signed by a pluggable [Auth] and the
// kernel, an ordinary socket on the other side of the TUN device, must accept
// them; the kernel's segments must pass the Auth's verification. It doubles
// as the example of how a TCP stack uses a signing layer.
//
// What it does: active open (SYN, SYN-ACK, ACK) and passive open (answer one
// SYN with a SYN-ACK that may carry payload, the server-first greeting of
// SMTP-like protocols), in-order data both ways cut to the peer's MSS within
// the peer's window, immediate ACKs, close with FIN (waiting for the peer's
// FIN) or RST, and retransmission of whatever is unacknowledged on a timeout
// that doubles, a bounded number of times. What it leaves out, on purpose:
// out-of-order reassembly (a segment that is not next is dropped and
// re-ACKed; the peer retransmits), SACK, timestamps, window scaling,
// congestion control, TIME-WAIT, simultaneous open, urgent data. One
// [Conn] per Link; packets of other flows are ignored.
//
// # The Auth hook
//
// usertcp knows nothing of the algorithm. Its hook has the method set of
// packetauth.Layer, the one way tcpsig signs whole packets: each outgoing
// packet is built unsigned with its checksums and handed to Auth.Outbound,
// which returns the packet to send (the option inserted, signed, lengths
// and checksums fixed); every incoming packet that belongs to the
// connection goes through Auth.Inbound before anything else looks at it,
// and what it returns (the option replaced by NOPs, a SYN's MSS reduced by
// the option's room) is what the state machine sees. A non-nil error drops
// the packet, as the kernel drops a segment that fails its check.
// Retransmissions are signed again.
package usertcp

import (
	"errors"
	"net/netip"
	"time"
)

// Auth signs outgoing and verifies incoming packets: the method set of
// packetauth.Layer. Its methods are called from the goroutine that drives
// the [Conn].
type Auth interface {
	// Outbound takes an outgoing packet (the whole IP packet, checksums
	// computed) and returns the packet to send, appended to dst (which
	// does not overlap pkt) or pkt itself; a non-nil error drops it.
	Outbound(dst, pkt []byte) ([]byte, error)
	// Inbound takes an incoming packet and returns what the endpoint is
	// to process, appended to dst (here pkt[:0]) or pkt itself; a
	// non-nil error drops it.
	Inbound(dst, pkt []byte) ([]byte, error)
}

// Link carries whole IP packets between the endpoint and its peer.
type Link interface {
	// ReadPacket reads one IP packet into b and returns its length. If
	// no packet arrives before deadline (the zero time means no
	// deadline), it returns an error for which
	// errors.Is(err, os.ErrDeadlineExceeded) is true.
	ReadPacket(b []byte, deadline time.Time) (int, error)
	// WritePacket sends one IP packet; pkt may be reused once it
	// returns.
	WritePacket(pkt []byte) error
}

// Errors returned by the endpoint. A deadline set with
// [Conn.SetDeadline] that passes gives an error wrapping
// os.ErrDeadlineExceeded.
var (
	// ErrTimeout means a segment was retransmitted the maximum number of
	// times without being acknowledged (or, in Close, the peer's FIN did
	// not come).
	ErrTimeout = errors.New("usertcp: retransmission limit reached")
	// ErrRefused means the peer answered the SYN with a RST.
	ErrRefused = errors.New("usertcp: connection refused")
	// ErrReset means the peer reset the connection.
	ErrReset = errors.New("usertcp: connection reset by peer")
	// ErrClosed means the connection was closed by this side.
	ErrClosed = errors.New("usertcp: use of closed connection")
)

// Config describes one endpoint.
type Config struct {
	// Local is this endpoint's address and port. For Accept it is the
	// address and port SYNs must be sent to.
	Local netip.AddrPort
	// Remote is the peer's address and port. Dial needs it; for Accept it
	// is optional and, if set, restricts which SYN is answered.
	Remote netip.AddrPort
	// Auth signs and verifies segments; nil sends unsigned segments and
	// accepts any.
	Auth Auth
	// MSS is the maximum segment size advertised in the SYN; 0 means
	// 1460 for IPv4 and 1440 for IPv6 (a 1500-byte MTU).
	MSS int
	// ISS is the initial send sequence number; 0 picks a random one.
	ISS uint32
	// Greeting is payload that Accept sends in its SYN-ACK (server-first
	// protocols). A peer that discards data on a SYN-ACK, as Linux does
	// without TCP Fast Open, acknowledges only the SYN; the greeting is
	// then sent again at once as ordinary data.
	Greeting []byte
	// RTO is the first retransmission timeout, doubled on each retry;
	// 0 means 250ms.
	RTO time.Duration
	// MaxRetries is how many times a segment is retransmitted before
	// the operation fails with ErrTimeout; 0 means 6.
	MaxRetries int
}

func (c Config) withDefaults() Config {
	if c.MSS == 0 {
		c.MSS = 1460
		if c.Local.Addr().Is6() && !c.Local.Addr().Is4In6() {
			c.MSS = 1440
		}
	}
	if c.RTO == 0 {
		c.RTO = 250 * time.Millisecond
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = 6
	}
	return c
}

// Stats counts what a Conn did.
type Stats struct {
	// Sent is the number of packets written to the Link, Retransmits of
	// which were retransmissions.
	Sent, Retransmits int
	// Received is the number of packets of this connection that passed
	// Auth.Inbound and were processed.
	Received int
	// AuthDropped is the number of packets of this connection dropped
	// because Auth.Inbound failed.
	AuthDropped int
	// Ignored is the number of packets dropped as malformed, with a bad
	// checksum, or not of this connection.
	Ignored int
}
