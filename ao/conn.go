package ao

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/tcpsig/tcpsig/kdf"
	"github.com/tcpsig/tcpsig/mac"
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
	good, bad, keyNotFound, aoRequired, droppedICMP atomic.Uint64
}

func (c *counters) snapshot() Counters {
	return Counters{c.good.Load(), c.bad.Load(), c.keyNotFound.Load(), c.aoRequired.Load(), c.droppedICMP.Load()}
}

// The four traffic keys of RFC 5925 §5.2, as indexes into connKey.keys.
const (
	sendSYN = iota
	recvSYN
	sendOther
	recvOther
)

// connKey holds the traffic keys one connection derived from one MKT,
// each derived on first use. It is linked into the MKT so that deleting
// the MKT wipes them.
type connKey struct {
	mkt        *MKT
	mu         sync.Mutex
	ready      [4]atomic.Bool
	keys       [4]mac.Key
	prev, next *connKey // the MKT's list, under mkt.mu
}

func (k *connKey) wipe() {
	for i := range k.keys {
		k.ready[i].Store(false)
		k.keys[i].Wipe()
	}
}

// Conn is one connection's TCP-AO state. Sign and Verify may be called
// concurrently from many goroutines; Init, Close and Import may not run
// concurrently with anything else on the same Conn. A Conn can be reused
// after Close: its derived-key storage is recycled, so setting up a new
// connection allocates nothing in steady state.
type Conn struct {
	ring          *Keyring
	local, remote netip.AddrPort
	l3            int
	policy        Policy
	lisn, risn    uint32
	risnKnown     atomic.Bool

	current, rnext atomic.Pointer[MKT]
	snd, rcv       sneState

	mu        sync.Mutex                 // slow paths: deriving, adding connKeys, handshakes
	handshake mac.Key                    // a key for an ISN not yet committed, under mu
	hint      uint32                     // the connection's shard hint for MKT pins and the pool
	slots     [4]atomic.Pointer[connKey] // derived keys, per MKT; more in extra
	extra     atomic.Pointer[[]*connKey]
	spare     []*connKey
	counters
}

// Endpoint names a connection: its local and remote address and port, its
// L3 domain, and its own ISN.
type Endpoint struct {
	Local, Remote netip.AddrPort
	L3Index       int
	LocalISN      uint32
}

// Init prepares c for an outgoing connection (the stack will send a SYN
// with ISN ep.LocalISN). Its current and RNext key are the most recently
// added MKT that matches the peer, whatever its prefix length, as in Linux
// (whose key list is newest first), unless SetCurrent/SetRNext pick
// others; the peer's ISN is learnt from a verified SYN-ACK.
func (c *Conn) Init(ring *Keyring, ep Endpoint, p Policy) error {
	if c == nil {
		return ErrNoCurrentKey
	}
	m := ring.newest(ep.Remote.Addr().Unmap(), ep.L3Index)
	if m == nil {
		return fmt.Errorf("%w for peer %v", ErrNoCurrentKey, ep.Remote.Addr())
	}
	c.Close() // drop a previous connection's pins and traffic keys
	c.reset(ring, ep, p)
	if !c.setCurrent(m) || !c.setRNext(m) { // m is being deleted
		c.Close()
		return fmt.Errorf("%w for peer %v", ErrNoCurrentKey, ep.Remote.Addr())
	}
	return nil
}

func (c *Conn) reset(ring *Keyring, ep Endpoint, p Policy) {
	c.ring, c.policy, c.l3 = ring, p, ep.L3Index
	c.hint = rand.Uint32()
	c.local = netip.AddrPortFrom(ep.Local.Addr().Unmap(), ep.Local.Port())
	c.remote = netip.AddrPortFrom(ep.Remote.Addr().Unmap(), ep.Remote.Port())
	c.lisn, c.risn = ep.LocalISN, 0
	c.risnKnown.Store(false)
	c.snd.store(0, ep.LocalISN)
	c.rcv.store(0, 0)
	c.counters = counters{}
}

func (c *Conn) setRISN(risn uint32) {
	c.risn = risn
	c.rcv.store(0, risn)
	c.risnKnown.Store(true)
}

// Close releases the connection's MKT pins and wipes its traffic keys.
func (c *Conn) Close() {
	if c == nil {
		return
	}
	if m := c.current.Swap(nil); m != nil {
		m.pinsCur.Add(-1)
	}
	if m := c.rnext.Swap(nil); m != nil {
		m.pinsNext.Add(-1)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	release := func(k *connKey) {
		k.mkt.unregister(k)
		k.wipe()
		k.mkt = nil
		c.spare = append(c.spare, k)
	}
	for i := range c.slots {
		if k := c.slots[i].Swap(nil); k != nil {
			release(k)
		}
	}
	if ks := c.extra.Swap(nil); ks != nil {
		for _, k := range *ks {
			release(k)
		}
	}
}

// Current returns the connection's current MKT (the one it signs with).
func (c *Conn) Current() *MKT {
	if c == nil {
		return nil
	}
	return resolve(c.current.Load(), nextCur)
}

// RNext returns the MKT whose RecvID the connection asks the peer to use.
func (c *Conn) RNext() *MKT {
	if c == nil {
		return nil
	}
	return resolve(c.rnext.Load(), nextRNext)
}

// SetCurrent makes the MKT with this SendID the current key (Linux
// TCP_AO_INFO set_current).
func (c *Conn) SetCurrent(sendID uint8) error {
	if c == nil {
		return ErrNoSuchKey
	}
	m := c.ring.LookupSend(c.remote.Addr(), sendID, c.l3)
	if m == nil || !c.setCurrent(m) {
		return ErrNoSuchKey
	}
	return nil
}

// SetRNext makes the MKT with this RecvID the RNext key: the connection
// then asks the peer to send with it (Linux set_rnext).
func (c *Conn) SetRNext(recvID uint8) error {
	if c == nil {
		return ErrNoSuchKey
	}
	m := c.ring.LookupRecv(c.remote.Addr(), recvID, c.l3)
	if m == nil || !c.setRNext(m) {
		return ErrNoSuchKey
	}
	return nil
}

// pin counts a connection's use of m in one role; it fails if m is being
// deleted (Dekker with Keyring.Delete: pin, then read deleting).
func pin(m *MKT, pins *atomic.Int64) bool {
	pins.Add(1)
	if m.deleting.Load() {
		pins.Add(-1)
		return false
	}
	return true
}

func (c *Conn) setCurrent(m *MKT) bool {
	if !pin(m, &m.pinsCur) {
		return false
	}
	if old := c.current.Swap(m); old != nil {
		old.pinsCur.Add(-1)
	}
	return true
}

func (c *Conn) setRNext(m *MKT) bool {
	if !pin(m, &m.pinsNext) {
		return false
	}
	if old := c.rnext.Swap(m); old != nil {
		old.pinsNext.Add(-1)
	}
	return true
}

// sendKey returns the current MKT pinned for use, following the
// replacement a forced delete named.
func (c *Conn) sendKey() (*MKT, pinned, error) {
	for i := 0; i < 8; i++ {
		m := c.current.Load()
		if m == nil {
			return nil, pinned{}, ErrNoCurrentKey
		}
		if p, ok := m.acquireHint(c.hint); ok {
			return m, pinned{p}, nil
		}
		next := m.nextCur.Load()
		if next == nil {
			return nil, pinned{}, ErrNoCurrentKey
		}
		if !pin(next, &next.pinsCur) {
			// A delete of next is deciding, under the keyring's lock: it
			// backs off (next is busy, being m's replacement) or forwards
			// m to next's replacement. Wait for it and look again.
			c.ring.settle()
			continue
		}
		if c.current.CompareAndSwap(m, next) {
			m.pinsCur.Add(-1)
		} else {
			next.pinsCur.Add(-1)
		}
	}
	return nil, pinned{}, ErrNoCurrentKey
}

// rnextID returns the RecvID to advertise as RNextKeyID.
func (c *Conn) rnextID(cur *MKT) uint8 {
	m := c.rnext.Load()
	for i := 0; i < 8 && m != nil && m.guard.Retired(); i++ {
		n := m.nextRNext.Load()
		if n == nil {
			break
		}
		if !pin(n, &n.pinsNext) { // see sendKey
			c.ring.settle()
		} else if c.rnext.CompareAndSwap(m, n) {
			m.pinsNext.Add(-1)
		} else {
			n.pinsNext.Add(-1)
		}
		m = c.rnext.Load()
	}
	if m == nil {
		return cur.recvID
	}
	return m.recvID
}

// resolve follows the replacements that forced deletes named for a
// connection's key it has not switched away from yet.
func resolve(m *MKT, next func(*MKT) *MKT) *MKT {
	for i := 0; i < 8 && m != nil && m.guard.Retired(); i++ {
		n := next(m)
		if n == nil {
			break
		}
		m = n
	}
	return m
}

func nextCur(m *MKT) *MKT   { return m.nextCur.Load() }
func nextRNext(m *MKT) *MKT { return m.nextRNext.Load() }

// keysFor returns the connection's derived-key holder for m, creating it.
func (c *Conn) keysFor(m *MKT) (*connKey, error) {
	for i := range c.slots {
		if k := c.slots[i].Load(); k != nil && k.mkt == m {
			return k, nil
		}
	}
	if ks := c.extra.Load(); ks != nil {
		for _, k := range *ks {
			if k.mkt == m {
				return k, nil
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.slots { // again, under the lock
		if k := c.slots[i].Load(); k != nil && k.mkt == m {
			return k, nil
		}
	}
	var k *connKey
	if n := len(c.spare); n > 0 {
		k, c.spare = c.spare[n-1], c.spare[:n-1]
	} else {
		k = new(connKey)
	}
	k.mkt = m
	if !m.register(k) {
		k.mkt = nil
		c.spare = append(c.spare, k)
		return nil, ErrKeyNotFound
	}
	// A slot whose MKT was deleted is taken over; the holder it had is
	// dropped, not recycled, since a reader may still be looking at it.
	// So a long-lived connection that rotates keys does not grow.
	for i := range c.slots {
		if old := c.slots[i].Load(); old == nil || old.mkt.guard.Retired() {
			c.slots[i].Store(k)
			return k, nil
		}
	}
	var ks []*connKey
	if old := c.extra.Load(); old != nil {
		for _, o := range *old {
			if !o.mkt.guard.Retired() {
				ks = append(ks, o)
			}
		}
	}
	ks = append(ks, k)
	c.extra.Store(&ks)
	return k, nil
}

// input returns the KDF context of traffic key `which` (RFC 5925 §5.2).
func (c *Conn) input(which int, peerISN uint32) kdf.Input {
	l, r := c.local, c.remote
	switch which {
	case sendSYN:
		return kdf.Input{Src: l.Addr(), Dst: r.Addr(), SrcPort: l.Port(), DstPort: r.Port(), SrcISN: c.lisn}
	case recvSYN:
		return kdf.Input{Src: r.Addr(), Dst: l.Addr(), SrcPort: r.Port(), DstPort: l.Port(), SrcISN: peerISN}
	case sendOther:
		return kdf.Input{Src: l.Addr(), Dst: r.Addr(), SrcPort: l.Port(), DstPort: r.Port(), SrcISN: c.lisn, DstISN: peerISN}
	default:
		return kdf.Input{Src: r.Addr(), Dst: l.Addr(), SrcPort: r.Port(), DstPort: l.Port(), SrcISN: peerISN, DstISN: c.lisn}
	}
}

// trafficKey returns the cached traffic key `which` of m for this
// connection, deriving it on first use.
func (c *Conn) trafficKey(m *MKT, which int) (*mac.Key, error) {
	k, err := c.keysFor(m)
	if err != nil {
		return nil, err
	}
	if k.ready[which].Load() {
		return &k.keys[which], nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.ready[which].Load() {
		// Only Send_SYN does without the peer's ISN; for it c.risn must
		// not even be read: a SYN retransmitted while the SYN-ACK that
		// sets it is verified would race.
		var peerISN uint32
		if which != sendSYN {
			peerISN = c.risn // risnKnown was seen true: Sign, Verify
		}
		in := c.input(which, peerISN)
		if err := derive(m, &in, &k.keys[which]); err != nil {
			return nil, err
		}
		k.ready[which].Store(true)
	}
	return &k.keys[which], nil
}

// pinned is a reader's hold on an MKT.
type pinned struct{ p pinToken }

// Sign computes the MAC of an outgoing segment and writes it, with the
// connection's KeyID (current key's SendID) and RNextKeyID (RNext key's
// RecvID), into the segment's TCP-AO option, which the stack laid out with
// [AppendOption] for the current key's MAC length (a longer option is
// shortened; a shorter one is [ErrNoRoom]). A SYN is signed with the
// Send_SYN traffic key, everything else (the SYN-ACK, with or without
// payload, included) with Send_other.
func (c *Conn) Sign(seg *segment.Segment) error {
	if c == nil {
		return ErrNoCurrentKey
	}
	if err := checkSegment(seg); err != nil {
		return err
	}
	m, hold, err := c.sendKey()
	if err != nil {
		return err
	}
	defer m.release(hold.p)
	h := seg.Header
	which := sendOther
	if isSYN(h.Flags()) {
		which = sendSYN
	} else if !c.risnKnown.Load() {
		return ErrNoISN
	}
	tk, err := c.trafficKey(m, which)
	if err != nil {
		return err
	}
	seq := h.Seq()
	if err := sign(m, tk, seg, c.snd.of(seq), c.rnextID(m), c.hint); err != nil {
		return err
	}
	c.snd.advance(seq)
	return nil
}

// Verify checks an incoming segment (RFC 5925 §7.6 as Linux's
// tcp_inbound_ao_hash does it) and, only once its MAC verifies, advances
// the receive SNE and follows the peer's RNextKeyID: if it names another
// of our SendIDs, that MKT becomes the current key. A nil error means
// the segment may be processed.
func (c *Conn) Verify(seg *segment.Segment) error {
	if c == nil {
		return ErrKeyNotFound
	}
	if err := checkSegment(seg); err != nil {
		return err
	}
	if seg.Auth.MD5 > 0 {
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
	if c.ring == nil {
		return ErrKeyNotFound
	}
	m := c.rnext.Load()
	if m == nil || m.recvID != opt.KeyID || m.deleting.Load() {
		m = c.ring.LookupRecv(c.remote.Addr(), opt.KeyID, c.l3)
	}
	if m == nil {
		c.keyNotFound.Add(1)
		if c.policy.AcceptUnknownKeyID {
			return nil
		}
		return ErrKeyNotFound
	}
	p, ok := m.acquireHint(c.hint)
	if !ok {
		c.keyNotFound.Add(1)
		return ErrKeyNotFound
	}
	defer m.release(p)
	if len(opt.MAC) != int(m.maclen) {
		c.bad.Add(1)
		m.bad.Add(1)
		return ErrMACLength
	}
	h := seg.Header
	flags, seq := h.Flags(), h.Seq()
	var (
		tk  *mac.Key
		sne uint32
	)
	switch {
	case isSYN(flags):
		// A (retransmitted) SYN: Receive_SYN key with the SYN's own ISN.
		if !c.risnKnown.Load() || seq != c.risn {
			return c.verifyHandshake(m, seg, opt, off, recvSYN, seq)
		}
		tk, err = c.trafficKey(m, recvSYN)
	case !c.risnKnown.Load():
		if flags&segment.SYN == 0 {
			return ErrNoISN
		}
		// The SYN-ACK teaches the peer's ISN, but only once it verifies.
		return c.verifyHandshake(m, seg, opt, off, recvOther, seq)
	default:
		tk, err = c.trafficKey(m, recvOther)
		sne = c.rcv.of(seq)
	}
	if err != nil {
		return err
	}
	if err := c.check(m, tk, seg, opt, off, sne); err != nil {
		return err
	}
	if flags&segment.SYN == 0 {
		c.rcv.advance(seq)
	}
	c.rotate(opt)
	return nil
}

// check verifies seg under tk and counts the result.
func (c *Conn) check(m *MKT, tk *mac.Key, seg *segment.Segment, opt Option, off int, sne uint32) error {
	err := verify(m, tk, seg, off, opt.MAC, sne, c.hint)
	if err != nil {
		c.bad.Add(1)
		m.bad.Add(1)
		return err
	}
	c.good.Add(1)
	m.good.Add(1)
	return nil
}

// verifyHandshake verifies a SYN or SYN-ACK whose traffic key depends on
// an ISN the connection has not committed to: the key is derived into the
// connection's spare slot under its lock (handshakes are rare and
// serialised), and a SYN-ACK's ISN is learnt only once it verifies.
func (c *Conn) verifyHandshake(m *MKT, seg *segment.Segment, opt Option, off, which int, seq uint32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	tk := &c.handshake
	in := c.input(which, seq)
	err := derive(m, &in, tk)
	if err == nil {
		err = c.check(m, tk, seg, opt, off, 0)
	}
	tk.Wipe()
	if err != nil {
		return err
	}
	if which == recvOther && !c.risnKnown.Load() {
		c.setRISN(seq)
	}
	c.rotate(opt)
	return nil
}

// rotate follows a verified segment's RNextKeyID: if it names another of
// our SendIDs, that MKT becomes the current key (Linux
// tcp_inbound_ao_hash: "If the key is not found we do nothing").
func (c *Conn) rotate(opt Option) {
	if cur := c.current.Load(); cur == nil || opt.RNextKeyID != cur.sendID {
		if n := c.ring.LookupSend(c.remote.Addr(), opt.RNextKeyID, c.l3); n != nil {
			c.setCurrent(n)
		}
	}
}

// Counters returns the connection's counters.
func (c *Conn) Counters() Counters {
	if c == nil {
		return Counters{}
	}
	return c.counters.snapshot()
}

// Endpoints returns the connection's local and remote address and port.
func (c *Conn) Endpoints() (local, remote netip.AddrPort) {
	if c == nil {
		return
	}
	return c.local, c.remote
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

// trafficKeyFor is trafficKey for a known peer ISN before it is committed
// (the listener's SYN).
func (c *Conn) trafficKeyFor(m *MKT, which int, peerISN uint32) (*mac.Key, error) {
	c.risn = peerISN
	return c.trafficKey(m, which)
}
