package ao

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync/atomic"

	"github.com/tcpsig/tcpsig/internal/redact"
	"github.com/tcpsig/tcpsig/kdf"
	"github.com/tcpsig/tcpsig/segment"
)

// Errors of the per-segment calls. Every forged or damaged MAC yields
// ErrBadMAC (or ErrMACLength, which wraps it); details go to counters only.
var (
	ErrBadMAC       = errors.New("ao: MAC mismatch")
	ErrMACLength    = fmt.Errorf("%w: MAC length differs from the MKT's", ErrBadMAC)
	ErrKeyNotFound  = errors.New("ao: no MKT for the segment's KeyID")             // Linux TCP_AOKEYNOTFOUND
	ErrAORequired   = errors.New("ao: segment is unsigned but TCP-AO is required") // TCP_AONOTFOUND
	ErrUnexpected   = errors.New("ao: TCP-MD5 option on a TCP-AO connection")      // TCP_MD5UNEXPECTED
	ErrNoOption     = errors.New("ao: segment has no TCP-AO option")
	ErrNoRoom       = errors.New("ao: TCP-AO option too short for the key's MAC")
	ErrNoCurrentKey = errors.New("ao: connection has no current key")
	ErrNoISN        = errors.New("ao: the peer's ISN is not known yet")
	ErrNotSYN       = errors.New("ao: not a SYN")
	ErrISN          = errors.New("ao: a SYN's sequence number is not the connection's ISN")
	// ErrNotInitialized is a call on a nil or zero Conn, Listener or
	// TrafficKey, or on a nil Keyring: one that was never set up.
	ErrNotInitialized = errors.New("ao: not set up (nil, or a zero value never initialized)")
	// ErrConnClosed: the connection was closed; Init starts it over.
	ErrConnClosed = errors.New("ao: connection closed")
	// ErrRevoked: every MKT the connection could use for its peer was
	// deleted; it signs and accepts nothing more (Init starts it over).
	ErrRevoked = errors.New("ao: connection revoked: its keys were deleted")
)

// Policy is what a connection or listener does with segments that are not
// plainly signed.
type Policy struct {
	// AORequired refuses unsigned segments even from peers no MKT covers
	// (Linux TCP_AO_INFO ao_required). Unsigned segments from a covered
	// peer are always refused.
	AORequired bool
	// AcceptUnknownKeyID accepts (and counts) segments whose KeyID matches
	// no MKT, as RFC 5925 §7.3 and some vendors' "accept mismatch" do.
	// Linux, and the default, drop them.
	AcceptUnknownKeyID bool
	// AcceptICMP lets ICMP hard errors act on a connection (RFC 5925
	// §7.8; Linux accept_icmps). By default they are ignored and counted.
	AcceptICMP bool
	// Contexts says where the connection's segments find their working
	// MAC context and scratch; the zero value is [ContextsAdaptive].
	Contexts Contexts
}

// Contexts is where a connection's segments find their working MAC
// context (BENCHMARKS.md has what each costs).
type Contexts uint8

const (
	// ContextsAdaptive, the default: a direction takes a pool shard's
	// context per segment until it has carried busySegments segments,
	// then keeps one leased from the pool while fewer than
	// adaptiveLeases are out on lease: an idle connection costs the least
	// memory, a busy one a lock less per segment.
	ContextsAdaptive Contexts = iota
	// ContextsPerSegment: every segment takes a pool shard's context; the
	// least memory, a shard's lock per segment.
	ContextsPerSegment
	// ContextsLeased: each direction keeps a leased context from its
	// first segment on, whatever is out on lease.
	ContextsLeased
)

// busySegments and adaptiveLeases are ContextsAdaptive's bounds: the
// segments a direction carries before it asks for a lease (and again
// after a refusal), and the contexts a pool may have out on lease for it.
const (
	busySegments   = 64
	adaptiveLeases = 1024
)

// Counters are Linux's per-connection TCP-AO counters (TCP_AO_INFO).
type Counters struct {
	Good, Bad, KeyNotFound, AORequired, DroppedICMP uint64
}

type counters struct {
	good, bad, keyNotFound, aoRequired, droppedICMP atomic.Uint64
	// laneGood counts the good segments a Conn's receive lane verified
	// with its traffic keys, written and read under that lane's lock: a
	// plain add, where every verified segment would otherwise pay an
	// atomic one.
	laneGood uint64
}

// A Conn's states.
const (
	stateOpen uint32 = iota
	stateClosed
	stateRevoked
)

func (c *counters) snapshot() Counters {
	return Counters{c.good.Load(), c.bad.Load(), c.keyNotFound.Load(), c.aoRequired.Load(), c.droppedICMP.Load()}
}

// Conn is one connection's TCP-AO state. Sign and Verify may be called
// concurrently from many goroutines (calls of one direction wait for each
// other); Init and Close may not run concurrently with anything else on
// the same Conn. A Conn can be reused after Close: its key storage is
// recycled, so setting up a new connection allocates nothing in steady
// state.
type Conn struct {
	// What a Sign reads, first and together: the fewer lines a
	// connection's segment touches, the less a connection among many
	// waits for memory.
	ring *Keyring
	// state is open, closed (by Close) or revoked (by a delete that left
	// no key for the peer): Sign and Verify refuse, never pass a segment
	// unchecked, unless it is open.
	state atomic.Uint32
	// lisn and risn are written once each, before lisnKnown or
	// risnKnown is set, and read only after it is: a server learns lisn
	// from the SYN-ACK it signs (under the send lane's lock), a client
	// risn from the SYN-ACK it verifies (under the receive lane's).
	lisnKnown, risnKnown atomic.Bool
	lisn, risn           uint32
	// hint names the pool shard the connection's segments try first.
	hint   uint32
	policy Policy
	// current and rnext are written under the lock of the MKT they
	// leave and the one they take (setRole), read without: a signer
	// loads current once per segment.
	current, rnext atomic.Pointer[MKT]

	send, recv lane

	local, remote netip.AddrPort
	l3            int
	// link chains the Conn into its two MKTs' user lists, under their
	// locks.
	link [2]struct{ prev, next *Conn }
	counters
}

// String describes the connection without key material.
func (c *Conn) String() string {
	if c == nil {
		return "ao.Conn(nil)"
	}
	return fmt.Sprintf("ao.Conn{%v -> %v, current %v, RNext %v, keys [redacted]}", c.local, c.remote, c.current.Load(), c.rnext.Load())
}

// GoString is String, so %#v does not print key material.
func (c *Conn) GoString() string { return c.String() }

// Format prints the redacted form for every verb: a Conn holds traffic
// keys.
func (c *Conn) Format(f fmt.State, _ rune) { redact.Format(f, c.String()) }

// Endpoint is what a connection's TCP-AO state starts from: its addresses
// and L3 domain, and what the stack knows of its sequence numbers. A
// client knows its own ISN and learns the peer's from the SYN-ACK; a
// connection past its handshake (made by another stack, restored after a
// restart, migrated as Linux's TCP_AO_REPAIR moves one) knows both ISNs,
// where each direction's SNE stands and which keys it uses.
// [Conn.Endpoint] returns it for a live connection, for [Conn.Init] to
// take back.
type Endpoint struct {
	Local, Remote netip.AddrPort
	L3Index       int
	LocalISN      uint32

	// Established says the handshake is over and the fields below are
	// known; without it they are ignored.
	Established bool
	RemoteISN   uint32
	// SendSNE and RecvSNE are the SNEs (RFC 5925 §6.2) of the sequence
	// numbers SendSeq and RecvSeq (Linux: snd_sne at snd_una, rcv_sne at
	// rcv_nxt). Both zero stand for SNE 0 at the ISN, as for a
	// connection within 2 GB of its start.
	SendSNE, SendSeq uint32
	RecvSNE, RecvSeq uint32
	// CurrentSendID and RNextRecvID name the current key (by its SendID)
	// and the RNext key (by its RecvID).
	CurrentSendID, RNextRecvID uint8
}

// Init prepares c for a connection on ring. For a client (ep not
// Established) the stack will send a SYN with ISN ep.LocalISN; the
// current and RNext key are the most recently added MKT that matches the
// peer, whatever its prefix length, as in Linux (whose key list is newest
// first) — among those inside their send (current) and accept (RNext)
// lifetimes when there are any — until SetCurrent or SetRNext pick others; the peer's ISN is
// learnt from a verified SYN-ACK. An Established connection signs and
// verifies from the first segment, with the keys ep names. A server's
// connection starts with [Listener.Accept] instead.
func (c *Conn) Init(ring *Keyring, ep Endpoint, p Policy) error {
	if c == nil || ring == nil {
		return ErrNotInitialized
	}
	c.Close() // drop a previous connection's roles and traffic keys
	c.reset(ring, ep, p)
	c.setLISN(ep.LocalISN)
	peer := c.remote.Addr()
	if !ep.Established {
		for {
			cur, nxt := ring.pick(peer, ep.L3Index, roleNeeds[roleCurrent]), ring.pick(peer, ep.L3Index, roleNeeds[roleRNext])
			if cur == nil || nxt == nil {
				return fmt.Errorf("%w for peer %v", ErrNoCurrentKey, ep.Remote.Addr())
			}
			if c.setRole(roleCurrent, cur) && c.setRole(roleRNext, nxt) {
				return nil
			}
			// A key was deleted as it was picked: take the next newest.
		}
	}
	c.setRISN(ep.RemoteISN)
	if ep.SendSNE != 0 || ep.SendSeq != 0 {
		c.send.sne = NewSNE(ep.SendSNE, ep.SendSeq)
	}
	if ep.RecvSNE != 0 || ep.RecvSeq != 0 {
		c.recv.sne = NewSNE(ep.RecvSNE, ep.RecvSeq)
	}
	// The keys the connection used, whatever their lifetimes now: a Sign
	// outside the current key's send lifetime moves to another key.
	cur := ring.lookup(peer, ep.L3Index, func(e entry) bool { return e.sendID == ep.CurrentSendID })
	nxt := ring.lookup(peer, ep.L3Index, func(e entry) bool { return e.recvID == ep.RNextRecvID })
	if cur == nil || nxt == nil || !c.setRole(roleCurrent, cur) || !c.setRole(roleRNext, nxt) {
		c.Close()
		return fmt.Errorf("%w: current SendID %d / RNext RecvID %d", ErrNoSuchKey, ep.CurrentSendID, ep.RNextRecvID)
	}
	return nil
}

// reset starts c over for a connection described by ep, both ISNs
// unknown.
func (c *Conn) reset(ring *Keyring, ep Endpoint, p Policy) {
	c.ring, c.policy, c.l3 = ring, p, ep.L3Index
	c.state.Store(stateOpen)
	c.local = netip.AddrPortFrom(ep.Local.Addr().Unmap(), ep.Local.Port())
	c.remote = netip.AddrPortFrom(ep.Remote.Addr().Unmap(), ep.Remote.Port())
	c.lisn, c.risn = 0, 0
	c.lisnKnown.Store(false)
	c.risnKnown.Store(false)
	c.send.sne = NewSNE(0, 0)
	c.recv.sne = NewSNE(0, 0)
	c.recv.acked = false
	c.counters = counters{}
	c.hint = rand.Uint32()
}

// setLISN commits the local ISN: at Init, or for a server under the send
// lane's lock from the SYN-ACK it signs.
func (c *Conn) setLISN(lisn uint32) {
	c.lisn = lisn
	c.send.sne = NewSNE(0, lisn)
	c.lisnKnown.Store(true)
}

func (c *Conn) setRISN(risn uint32) {
	c.risn = risn
	c.recv.sne = NewSNE(0, risn)
	c.recv.acked = false
	c.risnKnown.Store(true)
}

// Endpoint returns what [Conn.Init] needs to set the connection up again
// as it stands (elsewhere, or after a restart): its addresses, ISNs, SNEs
// and key IDs. It is Established once both ISNs are known; before, it
// holds the ISN known so far.
func (c *Conn) Endpoint() Endpoint {
	if c == nil {
		return Endpoint{}
	}
	ep := Endpoint{Local: c.local, Remote: c.remote, L3Index: c.l3}
	if c.lisnKnown.Load() {
		ep.LocalISN = c.lisn
	}
	if c.risnKnown.Load() {
		ep.RemoteISN = c.risn
	}
	if !c.lisnKnown.Load() || !c.risnKnown.Load() {
		return ep
	}
	ep.Established = true
	c.send.mu.Lock()
	ep.SendSNE, ep.SendSeq = c.send.sne.Basis()
	c.send.mu.Unlock()
	c.recv.mu.Lock()
	ep.RecvSNE, ep.RecvSeq = c.recv.sne.Basis()
	c.recv.mu.Unlock()
	if m := c.Current(); m != nil {
		ep.CurrentSendID = m.sendID
	}
	if m := c.RNext(); m != nil {
		ep.RNextRecvID = m.recvID
	}
	return ep
}

// Close gives up the connection's current and RNext key and wipes its
// traffic keys.
func (c *Conn) Close() {
	if c == nil {
		return
	}
	c.state.Store(stateClosed)
	c.setRole(roleCurrent, nil)
	c.setRole(roleRNext, nil)
	for _, l := range []*lane{&c.send, &c.recv} {
		l.mu.Lock()
		l.wipe()
		l.mu.Unlock()
	}
}

// Revoked reports whether every MKT the connection could use for its
// peer was deleted: it then signs and accepts nothing ([ErrRevoked]).
func (c *Conn) Revoked() bool { return c != nil && c.state.Load() == stateRevoked }

// Current returns the connection's current MKT (the one it signs with).
func (c *Conn) Current() *MKT {
	if c == nil {
		return nil
	}
	return c.current.Load()
}

// RNext returns the MKT whose RecvID the connection asks the peer to use.
func (c *Conn) RNext() *MKT {
	if c == nil {
		return nil
	}
	return c.rnext.Load()
}

// SetCurrent makes the MKT with this SendID the current key (Linux
// TCP_AO_INFO set_current).
func (c *Conn) SetCurrent(sendID uint8) error {
	if c == nil || c.ring == nil {
		return ErrNotInitialized
	}
	return c.switchTo(roleCurrent, c.ring.LookupSend(c.remote.Addr(), sendID, c.l3))
}

// SetRNext makes the MKT with this RecvID the RNext key: the connection
// then asks the peer to send with it (Linux set_rnext).
func (c *Conn) SetRNext(recvID uint8) error {
	if c == nil || c.ring == nil {
		return ErrNotInitialized
	}
	return c.switchTo(roleRNext, c.ring.LookupRecv(c.remote.Addr(), recvID, c.l3))
}

// input returns the KDF context of the traffic key of direction send (or
// receive), SYN or not (RFC 5925 §5.2).
func (c *Conn) input(send, syn bool, peerISN uint32) kdf.Input {
	l, r := c.local, c.remote
	var dstISN uint32
	if !syn {
		dstISN = peerISN
	}
	if send {
		return kdf.Input{Src: l.Addr(), Dst: r.Addr(), SrcPort: l.Port(), DstPort: r.Port(), SrcISN: c.lisn, DstISN: dstISN}
	}
	if !syn {
		dstISN = c.lisn
	}
	return kdf.Input{Src: r.Addr(), Dst: l.Addr(), SrcPort: r.Port(), DstPort: l.Port(), SrcISN: peerISN, DstISN: dstISN}
}

// Counters returns the connection's counters.
func (c *Conn) Counters() Counters {
	if c == nil {
		return Counters{}
	}
	s := c.counters.snapshot()
	c.recv.mu.Lock()
	s.Good += c.laneGood
	c.recv.mu.Unlock()
	return s
}

// ICMP reports whether an ICMP error for an established connection should
// act on it (RFC 5925 §7.8, Linux tcp_ao_ignore_icmp): unless the policy
// accepts ICMP, ICMPv4 destination unreachable codes 2–4 and ICMPv6
// destination unreachable codes 1 and 4 are ignored and counted.
func (c *Conn) ICMP(v6 bool, typ, code uint8) bool {
	if c == nil {
		return false
	}
	if c.policy.AcceptICMP {
		return true
	}
	if (segment.ICMP{V6: v6, Type: typ, Code: code}).HardError() {
		c.droppedICMP.Add(1)
		return false
	}
	return true
}
