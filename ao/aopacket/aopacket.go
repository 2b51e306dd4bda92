// Package aopacket is the TCP-AO layer of a userspace TCP stack that builds
// and parses whole IPv4/IPv6 packets: one [Auth] per connection wraps an
// [ao.Conn], lays the TCP-AO option out in the option bytes the stack
// reserves, signs what the stack sends and verifies what it receives. It is
// the TCP-AO counterpart of md5sig.PacketAuth and shows, in a few lines
// each, how a stack drives the ao package:
//
//   - client: [NewClient] calls [ao.Conn.Init] before the SYN is sent; the
//     stack must send its SYN with the ISN given there, and the peer's ISN
//     is learnt from the SYN-ACK once it verifies;
//   - server: [NewServer] waits for the SYN; the first SYN [Auth.Verify]
//     sees goes through [ao.Listener.Accept], which verifies it and prepares
//     the connection, and the SYN-ACK (it may carry payload: a server-first
//     greeting) is then signed like any other segment;
//   - every segment: the stack reserves [Auth.OptionLen] bytes at the start
//     of the TCP options, filled with NOPs, and calls [Auth.Sign] before it
//     computes the checksums; every received packet goes through
//     [Auth.Verify] before the stack looks at it, and is dropped on error;
//   - rotation: [Auth.Conn] is the connection's [ao.Conn]: SetCurrent and
//     SetRNext change keys mid-connection, Current and RNext say which are
//     in use (the peer's RNextKeyID moves Current on its own), Counters
//     count good and bad segments.
//
// The methods are those of the Auth hook of tcpsig's test endpoint
// (harness/usertcp), which proves the package against the Linux kernel.
package aopacket

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/segment"
)

// Errors of Sign and Verify besides those of the ao package.
var (
	// ErrNotAccepted: a server's Auth cannot sign before Verify has
	// accepted a SYN.
	ErrNotAccepted = errors.New("aopacket: no SYN accepted yet")
	// ErrNoRoom is ao's: the packet has fewer reserved option bytes than
	// the current key's option needs.
	ErrNoRoom = ao.ErrNoRoom
	// ErrISN: a SYN or SYN-ACK carries another ISN than the connection's.
	ErrISN = errors.New("aopacket: SYN sequence number is not the connection's ISN")
	// ErrUnsignedConn: a signed segment arrived on a connection that a
	// listener accepted without TCP-AO.
	ErrUnsignedConn = errors.New("aopacket: authentication option on an unsigned connection")
)

const (
	stateListen   = iota // server: waiting for a SYN
	stateSigned          // the connection signs and verifies every segment
	stateUnsigned        // the listener accepted an unsigned SYN from a peer no MKT covers
)

// Auth signs and verifies the packets of one TCP connection with TCP-AO.
// Sign and Verify are meant to be called by the goroutine that drives the
// connection; Conn may be used from any goroutine once the handshake is
// done.
type Auth struct {
	conn     *ao.Conn
	listener *ao.Listener // server, until the SYN is accepted
	isn      uint32       // the local ISN: of our SYN or SYN-ACK
	space    int          // option bytes reserved in every segment
	state    atomic.Int32
}

// space returns the option bytes to reserve for MACs of up to maclen
// bytes; 0 reserves room for any MKT.
func space(maclen int) int {
	if maclen <= 0 {
		maclen = keys.MaxMACLen
	}
	return ao.OptionSpace(maclen)
}

// NewClient returns the Auth of an outgoing connection: it initialises an
// ao.Conn for ep (the connection's addresses and the ISN the stack will put
// in its SYN) whose current key is the best MKT of ring for the peer; call
// Conn().SetCurrent/SetRNext before the SYN to pick others. maclen is the
// largest MAC length of the MKTs the connection may use (the option space
// it reserves in every segment); 0 reserves room for any.
func NewClient(ring *ao.Keyring, ep ao.Endpoint, p ao.Policy, maclen int) (*Auth, error) {
	if maclen < 0 || maclen > keys.MaxMACLen {
		return nil, fmt.Errorf("%w: maclen %d", keys.ErrMACTooLong, maclen)
	}
	if ring == nil {
		return nil, ao.ErrNoCurrentKey
	}
	a := &Auth{conn: new(ao.Conn), isn: ep.LocalISN, space: space(maclen)}
	if err := a.conn.Init(ring, ep, p); err != nil {
		return nil, err
	}
	a.state.Store(stateSigned)
	return a, nil
}

// NewServer returns the Auth of a connection that l is to accept: the
// first SYN Verify sees goes through l.Accept, with localISN as the ISN
// the stack puts in its SYN-ACK. maclen is as for NewClient. A nil
// listener is ao.ErrKeyNotFound.
func NewServer(l *ao.Listener, localISN uint32, maclen int) (*Auth, error) {
	if l == nil {
		return nil, ao.ErrKeyNotFound
	}
	if maclen < 0 || maclen > keys.MaxMACLen {
		return nil, fmt.Errorf("%w: maclen %d", keys.ErrMACTooLong, maclen)
	}
	a := &Auth{conn: new(ao.Conn), listener: l, isn: localISN, space: space(maclen)}
	a.state.Store(stateListen)
	return a, nil
}

// NewEstablished returns the Auth of a connection whose ao.Conn is already
// set up: restored with [ao.Conn.Init] after a migration, for example.
// maclen is as for NewClient. A nil c is ao.ErrNoCurrentKey.
func NewEstablished(c *ao.Conn, maclen int) (*Auth, error) {
	if c == nil || c.Current() == nil {
		return nil, ao.ErrNoCurrentKey
	}
	if maclen < 0 || maclen > keys.MaxMACLen {
		return nil, fmt.Errorf("%w: maclen %d", keys.ErrMACTooLong, maclen)
	}
	a := &Auth{conn: c, space: space(maclen)}
	a.isn = c.Endpoint().LocalISN
	a.state.Store(stateSigned)
	return a, nil
}

// Conn returns the connection's TCP-AO state, for key rotation and
// counters. On a server it is prepared by the accepted SYN.
func (a *Auth) Conn() *ao.Conn {
	if a == nil {
		return nil
	}
	return a.conn
}

// Signed reports whether the connection uses TCP-AO: always for a client;
// for a server once it accepted a signed SYN.
func (a *Auth) Signed() bool { return a != nil && a.state.Load() == stateSigned }

// Close releases the connection's keys (see [ao.Conn.Close]).
func (a *Auth) Close() {
	if a != nil && a.conn != nil {
		a.conn.Close()
	}
}

// OptionLen returns the option space to reserve in every segment, SYN or
// not: the TCP-AO option for the largest MAC, padded with NOPs to a
// multiple of 4.
func (a *Auth) OptionLen() int {
	if a == nil {
		return 0
	}
	return a.space
}

// Sign signs pkt, a whole IP packet whose first OptionLen bytes of TCP
// options are NOPs and whose TCP checksum is not computed yet: it writes the
// TCP-AO option of the current key there (KeyID = its SendID, RNextKeyID =
// the RNext key's RecvID, MAC zero, NOPs after it) and fills in the MAC.
// On a connection accepted without TCP-AO it leaves the NOPs.
func (a *Auth) Sign(pkt []byte) error {
	if a == nil || a.conn == nil {
		return ao.ErrNoCurrentKey
	}
	switch a.state.Load() {
	case stateListen:
		return ErrNotAccepted
	case stateUnsigned:
		return nil
	}
	seg, err := segment.ParsePacket(pkt)
	if err != nil {
		return err
	}
	h := seg.Header
	if f := h.Flags(); f&segment.SYN != 0 && h.Seq() != a.isn {
		return fmt.Errorf("%w: %d, want %d", ErrISN, h.Seq(), a.isn)
	}
	cur := a.conn.Current()
	if cur == nil {
		return ao.ErrNoCurrentKey
	}
	opts := h.Options()
	if len(opts) < a.space || ao.OptionSpace(cur.MACLen()) > a.space {
		return fmt.Errorf("%w: %d bytes reserved, %d needed", ErrNoRoom, min(len(opts), a.space), ao.OptionSpace(cur.MACLen()))
	}
	ao.AppendOption(opts[:0], cur.MACLen())
	if seg, err = segment.ParsePacket(pkt); err != nil { // the header has an option now
		return err
	}
	return a.conn.Sign(&seg)
}

// Verify checks a received packet; a non-nil error means the stack must
// drop it. On a server that has not accepted a SYN yet, the packet must be
// a SYN that the listener accepts.
func (a *Auth) Verify(pkt []byte) error {
	if a == nil || a.conn == nil {
		return ao.ErrKeyNotFound
	}
	seg, err := segment.ParsePacket(pkt)
	if err != nil {
		return err
	}
	switch a.state.Load() {
	case stateListen:
		signed, err := a.listener.Accept(&seg, a.conn)
		if err != nil {
			return err
		}
		if signed {
			a.state.Store(stateSigned)
		} else {
			a.state.Store(stateUnsigned)
		}
		return nil
	case stateUnsigned:
		if seg.Auth().AO > 0 || seg.Auth().MD5 > 0 {
			return ErrUnsignedConn
		}
		return nil
	}
	return a.conn.Verify(&seg)
}
