package ao

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/tcpsig/tcpsig/internal/cacheline"
	"github.com/tcpsig/tcpsig/kdf"
	"github.com/tcpsig/tcpsig/mac"
	"github.com/tcpsig/tcpsig/segment"
	"github.com/tcpsig/tcpsig/sigpool"
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
}

// Counters are Linux's per-connection TCP-AO counters (TCP_AO_INFO).
type Counters struct {
	Good, Bad, KeyNotFound, AORequired, DroppedICMP uint64
}

type counters struct {
	good, bad, keyNotFound, aoRequired, droppedICMP atomic.Uint64 // a Conn counts good in its receive lane
}

func (c *counters) snapshot() Counters {
	return Counters{c.good.Load(), c.bad.Load(), c.keyNotFound.Load(), c.aoRequired.Load(), c.droppedICMP.Load()}
}

// A connection signs and verifies in two lanes, one per direction. Each
// lane holds a working MAC context leased from its MKT's pool for as long
// as it uses keys of that algorithm, scratch, and the traffic keys of its
// direction, per MKT: nothing on the per-segment path is shared with
// another connection, so connections on different cores never meet.
type lane struct {
	// mu serialises the calls of one direction (a Sign waits for another
	// Sign on the same Conn, never for a Verify) and guards every field
	// below: while a call holds it, the lane's context, scratch, keys and
	// SNE are that call's alone. Under it a call may pin an MKT
	// (reclaim), lease from the pool, or take the keyring's lock to list
	// or unlist an entry; no one holding the keyring's lock takes a lane's
	// (Sign's retry and Verify's rotation run after the lane is released).
	mu      sync.Mutex
	ctx     *mac.Context         // leased from pool (entry pid) for alg, the algorithm of the last key used; nil: none
	keys    []*laneKey           // traffic keys per MKT; entries of deleted MKTs are wiped and reused
	tmp     *mac.Key             // a handshake key for an ISN not committed yet, made on first use
	sne     SNE                  // the direction's SNE and its basis
	good    uint64               // receive lane: segments verified
	scratch [scratchSize]byte    // MAC input prefix and the MAC
	alg     *mac.Algorithm       // ctx's algorithm
	pool    *sigpool.Pool        // where ctx came from and goes back to
	pid     sigpool.ID           // ctx's pool entry
	_       [cacheline.Size]byte // the next lane's lock on another line
}

// laneKey is one MKT's two traffic keys of a lane's direction: the key
// of every segment but a SYN, and the SYN key (RFC 5925 §5.2), each
// derived on first use. The SYN key, needed by a client's send lane and a
// server's receive lane only, is made on first use.
type laneKey struct {
	mkt          *MKT
	ready, synOK bool
	key          mac.Key
	syn          *mac.Key
	// good counts the segments this entry verified for mkt: mkt's share
	// of its good counter, so that a verified segment writes no line
	// shared with other connections. Its lane adds to it under the lane's
	// lock (one writer); MKT.Counters reads it, and unlist folds it into
	// mkt's own, under the keyring's lock.
	good atomic.Uint64
	idx  int // the entry's place in mkt.lanes, under the keyring's lock
}

func (k *laneKey) wipe() {
	k.key.Wipe()
	k.syn.Wipe()
	k.ready, k.synOK = false, false
	if k.mkt != nil {
		k.mkt.unlist(k)
	}
	k.mkt = nil
}

// context returns the lane's working context for m's algorithm. The
// lane keeps the context it leased from m's pool while its keys are of
// that algorithm; a rotation to an MKT of another algorithm (or pool)
// returns it and leases one for the new algorithm.
func (l *lane) context(m *MKT) (*mac.Context, error) {
	if l.ctx != nil && l.alg == m.alg && l.pool == m.pool { // a pool has one entry per algorithm
		return l.ctx, nil
	}
	l.giveBack()
	c, err := m.pool.Lease(m.poolID)
	if err != nil {
		return nil, err
	}
	l.ctx, l.alg, l.pool, l.pid = c, m.alg, m.pool, m.poolID
	return c, nil
}

// giveBack returns the lane's context, wiped, to its pool.
func (l *lane) giveBack() {
	if l.ctx != nil {
		_ = l.pool.Return(l.pid, l.ctx) // the lease holds the entry
		l.ctx, l.alg, l.pool = nil, nil, nil
	}
}

// find returns the lane's keys of m, nil if it has none yet.
func (l *lane) find(m *MKT) *laneKey {
	for _, k := range l.keys {
		if k.mkt == m {
			return k
		}
	}
	return nil
}

// add returns a fresh entry for m: a wiped one whose MKT was deleted, or a
// new one. Entries of deleted MKTs are wiped here, so a long-lived
// connection that rotates keys neither grows nor keeps their bytes beyond
// its next new key.
func (l *lane) add(m *MKT) *laneKey {
	var free *laneKey
	for _, k := range l.keys {
		if k.mkt != nil && k.mkt.guard.Retired() {
			k.wipe()
		}
		if k.mkt == nil && free == nil {
			free = k
		}
	}
	if free == nil {
		free = new(laneKey)
		l.keys = append(l.keys, free)
	}
	free.mkt = m
	m.list(free)
	return free
}

// wipe clears every key of the lane.
func (l *lane) wipe() {
	for _, k := range l.keys {
		k.wipe()
	}
	l.tmp.Wipe() // nil-safe
	l.giveBack()
}

// Conn is one connection's TCP-AO state. Sign and Verify may be called
// concurrently from many goroutines (calls of one direction wait for each
// other); Init and Close may not run concurrently with anything else on
// the same Conn. A Conn can be reused after Close: its key storage is
// recycled, so setting up a new connection allocates nothing in steady
// state.
type Conn struct {
	ring          *Keyring
	local, remote netip.AddrPort
	l3            int
	policy        Policy
	// lisn and risn are written once each, before lisnKnown or
	// risnKnown is set, and read only after it is: a server learns lisn
	// from the SYN-ACK it signs (under the send lane's lock), a client
	// risn from the SYN-ACK it verifies (under the receive lane's).
	lisn, risn           uint32
	lisnKnown, risnKnown atomic.Bool

	// current and rnext are written under the keyring's lock (role
	// changes), read without it: a signer loads current once per
	// segment. link chains the Conn into its two MKTs' user lists, under
	// the keyring's lock.
	current, rnext atomic.Pointer[MKT]
	link           [2]struct{ prev, next *Conn }

	send, recv lane
	closed     atomic.Bool // by Close: Sign and Verify refuse, never pass a segment unchecked
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
func (c *Conn) Format(f fmt.State, _ rune) {
	if f != nil {
		fmt.Fprint(f, c.String())
	}
}

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
// first), until SetCurrent or SetRNext pick others; the peer's ISN is
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
		ring.mu.Lock()
		defer ring.mu.Unlock()
		m := ring.newest(peer, ep.L3Index)
		if m == nil {
			return fmt.Errorf("%w for peer %v", ErrNoCurrentKey, ep.Remote.Addr())
		}
		ring.setRole(c, roleCurrent, m)
		ring.setRole(c, roleRNext, m)
		return nil
	}
	c.setRISN(ep.RemoteISN)
	if ep.SendSNE != 0 || ep.SendSeq != 0 {
		c.send.sne = NewSNE(ep.SendSNE, ep.SendSeq)
	}
	if ep.RecvSNE != 0 || ep.RecvSeq != 0 {
		c.recv.sne = NewSNE(ep.RecvSNE, ep.RecvSeq)
	}
	cur := ring.LookupSend(peer, ep.CurrentSendID, ep.L3Index)
	nxt := ring.LookupRecv(peer, ep.RNextRecvID, ep.L3Index)
	ring.mu.Lock()
	defer ring.mu.Unlock()
	if !ring.has(cur) || !ring.has(nxt) {
		return fmt.Errorf("%w: current SendID %d / RNext RecvID %d", ErrNoSuchKey, ep.CurrentSendID, ep.RNextRecvID)
	}
	ring.setRole(c, roleCurrent, cur)
	ring.setRole(c, roleRNext, nxt)
	return nil
}

// reset starts c over for a connection described by ep, both ISNs
// unknown.
func (c *Conn) reset(ring *Keyring, ep Endpoint, p Policy) {
	c.ring, c.policy, c.l3 = ring, p, ep.L3Index
	c.closed.Store(false)
	c.local = netip.AddrPortFrom(ep.Local.Addr().Unmap(), ep.Local.Port())
	c.remote = netip.AddrPortFrom(ep.Remote.Addr().Unmap(), ep.Remote.Port())
	c.lisn, c.risn = 0, 0
	c.lisnKnown.Store(false)
	c.risnKnown.Store(false)
	c.send.sne = NewSNE(0, 0)
	c.recv.sne = NewSNE(0, 0)
	c.recv.good = 0
	c.counters = counters{}
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
	c.closed.Store(true)
	if r := c.ring; r != nil {
		r.mu.Lock()
		r.setRole(c, roleCurrent, nil)
		r.setRole(c, roleRNext, nil)
		r.mu.Unlock()
	}
	for _, l := range []*lane{&c.send, &c.recv} {
		l.mu.Lock()
		l.wipe()
		l.mu.Unlock()
	}
}

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
	return c.ring.switchTo(c, roleCurrent, c.ring.LookupSend(c.remote.Addr(), sendID, c.l3))
}

// SetRNext makes the MKT with this RecvID the RNext key: the connection
// then asks the peer to send with it (Linux set_rnext).
func (c *Conn) SetRNext(recvID uint8) error {
	if c == nil || c.ring == nil {
		return ErrNotInitialized
	}
	return c.ring.switchTo(c, roleRNext, c.ring.LookupRecv(c.remote.Addr(), recvID, c.l3))
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

// keyEntry returns the lane's traffic key of m (SYN or not), deriving it
// on first use, and the lane's entry for m; the lane's lock is held. For
// the SYN key of the send lane the peer's ISN is not read: a SYN
// retransmitted while the SYN-ACK that sets it is verified would race.
func (c *Conn) keyEntry(l *lane, m *MKT, send, syn bool) (*mac.Key, *laneKey, error) {
	k := l.find(m)
	if k != nil && !syn && k.ready {
		return &k.key, k, nil
	}
	if k != nil && syn && k.synOK {
		return k.syn, k, nil
	}
	if k == nil {
		k = l.add(m)
	}
	var peerISN uint32
	if !(send && syn) {
		peerISN = c.risn
	}
	in := c.input(send, syn, peerISN)
	dst := &k.key
	if syn {
		if k.syn == nil {
			k.syn = new(mac.Key)
		}
		dst = k.syn
	}
	if err := c.derive(l, m, &in, dst); err != nil {
		return nil, nil, err
	}
	if syn {
		k.synOK = true
	} else {
		k.ready = true
	}
	return dst, k, nil
}

// derive computes a traffic key of m into key with the lane's context,
// m's master key pinned.
func (c *Conn) derive(l *lane, m *MKT, in *kdf.Input, key *mac.Key) error {
	p, ok := m.acquire()
	if !ok {
		return ErrKeyNotFound
	}
	defer m.release(p)
	w, err := l.context(m)
	if err != nil {
		return err
	}
	var raw [mac.MaxSize]byte
	tk, err := m.master.Derive(w, l.scratch[:], in, raw[:0])
	if err == nil {
		err = key.Init(m.alg, tk)
	}
	clear(raw[:])
	return err
}

// Sign computes the MAC of an outgoing segment and writes it, with the
// connection's KeyID (current key's SendID) and RNextKeyID (RNext key's
// RecvID), into the segment's TCP-AO option, which the stack laid out with
// [AppendOption] for the current key's MAC length (a longer option is
// shortened; a shorter one is [ErrNoRoom]). A SYN is signed with the
// Send_SYN traffic key, everything else (the SYN-ACK, with or without
// payload, included) with Send_other. A server's first SYN-ACK gives the
// connection its local ISN; before it, nothing else can be signed
// ([ErrNoISN]). A RST is signed like any other segment.
func (c *Conn) Sign(seg *segment.Segment) error {
	if c == nil || c.ring == nil {
		return ErrNotInitialized
	}
	if c.closed.Load() {
		return ErrConnClosed
	}
	if err := seg.Check(); err != nil {
		return err
	}
	m := c.current.Load()
	if m == nil {
		return ErrNoCurrentKey
	}
	// The option is labelled before the lock is taken, which makes these
	// byte stores land before the header is read back as whole words.
	off, err := labelOption(m, seg, c.rnextID(m))
	if err != nil {
		return err
	}
	l := &c.send
	l.mu.Lock()
	err = c.signLocked(l, m, seg, off)
	l.mu.Unlock()
	if err != nil && errors.Is(err, ErrKeyNotFound) {
		return c.signAgain(m, seg, err)
	}
	return err
}

// signAgain signs seg after m, the current key Sign loaded, was deleted
// between the load and the derivation (err). A delete moves the
// connection to its replacement before it retires the key, so each load
// sees another MKT, until one derives or none is left.
func (c *Conn) signAgain(m *MKT, seg *segment.Segment, err error) error {
	l := &c.send
	for errors.Is(err, ErrKeyNotFound) {
		n := c.current.Load()
		if n == m {
			return err
		}
		if m = n; m == nil {
			return ErrNoCurrentKey
		}
		off, lerr := labelOption(m, seg, c.rnextID(m))
		if lerr != nil {
			return lerr
		}
		l.mu.Lock()
		err = c.signLocked(l, m, seg, off)
		l.mu.Unlock()
	}
	return err
}

// rnextID is the RNextKeyID to send with current key m: the RNext key's
// RecvID, or m's own without one.
func (c *Conn) rnextID(m *MKT) uint8 {
	if n := c.rnext.Load(); n != nil {
		return n.recvID
	}
	return m.recvID
}

// signLocked is Sign's part under the send lane's lock, for the current
// key m whose option at off is labelled.
func (c *Conn) signLocked(l *lane, m *MKT, seg *segment.Segment, off int) error {
	h := seg.Header
	flags := h.Flags()
	syn := isSYN(flags)
	if !c.lisnKnown.Load() {
		// A server's connection: its ISN is its SYN-ACK's.
		if flags&(segment.SYN|segment.ACK) != segment.SYN|segment.ACK {
			return ErrNoISN
		}
		c.setLISN(h.Seq())
	}
	if flags&segment.SYN != 0 && h.Seq() != c.lisn {
		// Its traffic keys would be derived from an ISN the peer never
		// sees: every MAC of the connection would be wrong.
		return fmt.Errorf("%w: %v with sequence number %d, ISN %d", ErrISN, flags, h.Seq(), c.lisn)
	}
	if !syn && !c.risnKnown.Load() {
		return ErrNoISN
	}
	k, _, err := c.keyEntry(l, m, true, syn)
	if err != nil {
		return err
	}
	w, err := l.context(m)
	if err != nil {
		return err
	}
	seq := h.Seq()
	j := job{m: m, key: k, w: w, sc: l.scratch[:], off: off, sne: l.sne.Of(seq)}
	if err := j.sign(seg); err != nil {
		return err
	}
	l.sne.Advance(seq)
	return nil
}

// Verify checks an incoming segment (RFC 5925 §7.6 as Linux's
// tcp_inbound_ao_hash does it) and, only once its MAC verifies, advances
// the receive SNE and follows the peer's RNextKeyID: if it names another
// of our SendIDs, that MKT becomes the current key. A nil error means
// the segment may be processed.
func (c *Conn) Verify(seg *segment.Segment) error {
	if c == nil || c.ring == nil {
		return ErrNotInitialized
	}
	if c.closed.Load() {
		return ErrConnClosed
	}
	if err := seg.Check(); err != nil {
		return err
	}
	if seg.Auth().MD5 > 0 {
		return ErrUnexpected
	}
	off, opt, err := findOption(seg)
	if err != nil {
		if c.policy.AORequired || c.current.Load() != nil {
			c.aoRequired.Add(1)
			return ErrAORequired
		}
		return nil
	}
	m := c.rnext.Load()
	if m == nil || m.recvID != opt.KeyID { // setRole keeps only an RNext key that covers the peer
		m = c.ring.LookupRecv(c.remote.Addr(), opt.KeyID, c.l3)
	}
	if m == nil {
		c.keyNotFound.Add(1)
		if c.policy.AcceptUnknownKeyID {
			return nil
		}
		return ErrKeyNotFound
	}
	if len(opt.MAC) != int(m.maclen) {
		c.bad.Add(1)
		m.bad.Add(1)
		return ErrMACLength
	}
	l := &c.recv
	j := job{m: m, off: off}
	l.mu.Lock()
	err = c.verifyLocked(l, &j, seg, opt.MAC)
	l.mu.Unlock()
	if err == nil {
		c.rotate(opt) // takes the keyring's lock: never under a lane's
	}
	return err
}

// verifyLocked is Verify's part under the receive lane's lock, for j's
// MKT and option offset; got is the option's MAC.
func (c *Conn) verifyLocked(l *lane, j *job, seg *segment.Segment, got []byte) (err error) {
	h := seg.Header
	flags, seq := h.Flags(), h.Seq()
	var e *laneKey
	switch {
	case isSYN(flags):
		// A (retransmitted) SYN: Receive_SYN key with the SYN's own ISN.
		if !c.risnKnown.Load() || seq != c.risn {
			return c.verifyHandshake(l, j, seg, got)
		}
		j.key, e, err = c.keyEntry(l, j.m, false, true)
	case !c.risnKnown.Load():
		if flags&segment.SYN == 0 {
			return ErrNoISN
		}
		// The SYN-ACK teaches the peer's ISN, but only once it verifies.
		return c.verifyHandshake(l, j, seg, got)
	case !c.lisnKnown.Load():
		return ErrNoISN // a server's connection before its SYN-ACK
	default:
		j.key, e, err = c.keyEntry(l, j.m, false, false)
		j.sne = l.sne.Of(seq)
	}
	if err != nil {
		if errors.Is(err, ErrKeyNotFound) {
			c.keyNotFound.Add(1)
		}
		return err
	}
	if err := c.check(l, j, seg, got); err != nil {
		return err
	}
	e.good.Store(e.good.Load() + 1) // one writer: no locked add
	if flags&segment.SYN == 0 {
		l.sne.Advance(seq)
	}
	return nil
}

// check verifies seg under j with the lane's context and scratch, and
// counts a bad segment, or a good one in the lane; the caller counts a
// good one for the MKT too.
func (c *Conn) check(l *lane, j *job, seg *segment.Segment, got []byte) error {
	w, err := l.context(j.m)
	if err == nil {
		j.w, j.sc = w, l.scratch[:]
		err = j.verify(seg, got)
	}
	if err != nil {
		c.bad.Add(1)
		j.m.bad.Add(1)
		return err
	}
	l.good++
	return nil
}

// verifyHandshake verifies a SYN or SYN-ACK whose traffic key depends on
// an ISN the connection has not committed to (the segment's own): the key
// is derived into the lane's spare key, and a SYN-ACK's ISN is learnt only
// once it verifies. The lane's lock is held.
func (c *Conn) verifyHandshake(l *lane, j *job, seg *segment.Segment, got []byte) error {
	h := seg.Header
	syn, seq := isSYN(h.Flags()), h.Seq()
	in := c.input(false, syn, seq)
	if l.tmp == nil {
		l.tmp = new(mac.Key)
	}
	err := c.derive(l, j.m, &in, l.tmp)
	if err == nil {
		j.key, j.sne = l.tmp, 0
		err = c.check(l, j, seg, got)
	}
	l.tmp.Wipe()
	if err != nil {
		return err
	}
	j.m.good.Add(1) // a spare key has no lane entry to count in
	if !syn && !c.risnKnown.Load() {
		c.setRISN(seq)
	}
	return nil
}

// rotate follows a verified segment's RNextKeyID: if it names another of
// our SendIDs, that MKT becomes the current key (Linux
// tcp_inbound_ao_hash: "If the key is not found we do nothing").
func (c *Conn) rotate(opt Option) {
	if cur := c.current.Load(); cur == nil || opt.RNextKeyID != cur.sendID {
		if n := c.ring.LookupSend(c.remote.Addr(), opt.RNextKeyID, c.l3); n != nil {
			_ = c.ring.switchTo(c, roleCurrent, n)
		}
	}
}

// Counters returns the connection's counters.
func (c *Conn) Counters() Counters {
	if c == nil {
		return Counters{}
	}
	s := c.counters.snapshot()
	c.recv.mu.Lock()
	s.Good = c.recv.good
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
	hard := (!v6 && typ == 3 && code >= 2 && code <= 4) || (v6 && typ == 1 && (code == 1 || code == 4))
	if hard {
		c.droppedICMP.Add(1)
		return false
	}
	return true
}
