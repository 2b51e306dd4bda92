package packetauth

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/internal/cacheline"
	"github.com/tcpsig/tcpsig/md5sig"
)

// tuple names a connection from the local end: addresses in their 16-byte
// form (IPv4 as v4-mapped), so it is a fixed-size map key, and its L3
// domain: the same addresses in two VRFs are two connections.
type tuple struct {
	local, remote [16]byte
	lport, rport  uint16
	l3            uint32
}

func tupleOf(local, remote netip.AddrPort, l3 int) tuple {
	return tuple{local.Addr().As16(), remote.Addr().As16(), local.Port(), remote.Port(), uint32(l3)}
}

const nShards = 32

// shard is one part of the connection table with the totals of the
// packets that hash to it, so that goroutines working on different
// connections rarely share a cache line.
type shard struct {
	mu    sync.RWMutex
	conns map[tuple]*conn
	totals
	_ [cacheline.Size]byte // the next shard's lock on another line
}

type totals struct {
	passed, signed, verified atomic.Uint64
	drops
}

// conn is one tracked connection: what the layer keeps of it beside
// what its ao.Conn keeps. A TCP-AO connection's ISNs and handshake are
// its ao.Conn's alone; the layer keeps a TCP-MD5 session's, which no
// ao.Conn follows, and its own: how it met the connection, FIN, timers,
// revocation, counts. Its memory is the struct itself (the ao.Conn
// within it included) plus the traffic keys ao derives for each MKT the
// connection uses: see docs/packetauth.md for bytes.
type conn struct {
	kind          Kind
	l3            uint32 // its L3 domain, as in its tuple
	local, remote netip.AddrPort
	// phase is a State: how the layer met the connection (StateSynSent
	// from our SYN, StateSynReceived from the peer's, StateEstablished
	// past its handshake), then StateClosing after FIN both ways. Only a
	// TCP-MD5 session moves from StateSynSent to StateEstablished here;
	// a TCP-AO connection is established when its ao.Conn is ([conn.State]).
	phase    atomic.Uint32
	fins     atomic.Uint32 // finOut | finIn
	last     atomic.Int64  // UnixNano: when created, or the last Expire that found it active
	active   atomic.Bool   // a packet since the last Expire
	closedAt atomic.Int64  // UnixNano when FIN was seen both ways
	revoked  atomic.Bool   // its key went away: every packet dropped (ErrRevoked)
	// lisn and risn are a TCP-MD5 session's ISNs, of the SYN that
	// started it (our SYN, the peer's SYN), 0 for the other; set before
	// it is tracked, then only read.
	lisn, risn uint32

	ao ao.Conn // KindAO only
	// md5 is the TCP-MD5 key the peer signed with last (KindMD5 only):
	// the key the connection signs with while its schedule accepts it.
	md5 atomic.Pointer[md5sig.Key]

	signed, verified, dropped atomic.Uint64
}

const (
	finOut = 1 << iota
	finIn
)

// State is where c is in its life: its phase, except that a TCP-AO
// connection met in its handshake is established once its ao.Conn
// knows both ISNs. The per-segment paths do not call it: once both ISNs
// are known, ao.Conn.Endpoint takes the connection's lane locks.
func (c *conn) State() State {
	s := State(c.phase.Load())
	if c.kind == KindAO && opening(s) && c.ao.Endpoint().Established {
		return StateEstablished
	}
	return s
}

// opening reports a state of a handshake not completed.
func opening(s State) bool { return s == StateSynSent || s == StateSynReceived }

// isns returns the ISNs of the connection's SYNs seen so far (0 for one
// not seen): a TCP-AO connection's as its ao.Conn has them.
func (c *conn) isns() (local, remote uint32) {
	if c.kind == KindAO {
		ep := c.ao.Endpoint()
		return ep.LocalISN, ep.RemoteISN
	}
	return c.lisn, c.risn
}

// seen marks c active: a load, and a store only when Expire has cleared
// the mark, so the per-packet path neither reads the clock nor writes a
// cache line both directions share.
func (c *conn) seen() {
	if !c.active.Load() {
		c.active.Store(true)
	}
}

// touch sets c's last-seen time and marks it active.
func (c *conn) touch(now time.Time) {
	c.last.Store(now.UnixNano())
	c.active.Store(true)
}

// close releases the connection's keys; the caller removed it from the
// table under the shard's write lock, so no packet is using it.
func (c *conn) close() {
	if c.kind == KindAO {
		c.ao.Close()
	}
}

// shard picks t's shard from its ports and the addresses' low bytes (the
// maps themselves are seeded per process, so this needs no secret).
func (l *Layer) shard(t *tuple) *shard {
	h := uint32(t.lport)<<16 | uint32(t.rport)
	h ^= binary.BigEndian.Uint32(t.remote[12:]) ^ binary.BigEndian.Uint32(t.local[12:])*0x9e3779b1
	h *= 0x9e3779b1
	return &l.shards[h>>27] // nShards = 32: the top five bits
}

// insert adds c under t, replacing (and closing) what was there. It
// fails with ErrFull when the table is full even after a sweep.
func (l *Layer) insert(t *tuple, c *conn, now time.Time) error {
	sh := l.shard(t)
	if l.closed.Load() {
		return ErrClosed
	}
	sh.mu.Lock()
	old := sh.conns[*t]
	if old == nil && l.count.Load() >= int64(l.cfg.MaxConns) {
		sh.mu.Unlock()
		l.Expire(now)
		sh.mu.Lock()
		old = sh.conns[*t]
		if old == nil && l.count.Load() >= int64(l.cfg.MaxConns) {
			sh.mu.Unlock()
			return ErrFull
		}
	}
	if old == nil {
		l.count.Add(1)
	} else {
		old.close()
	}
	sh.conns[*t] = c
	sh.mu.Unlock()
	l.started.Add(1)
	return nil
}

// remove deletes t's entry if it is still c.
func (l *Layer) remove(t *tuple, c *conn) {
	sh := l.shard(t)
	sh.mu.Lock()
	if sh.conns[*t] == c {
		delete(sh.conns, *t)
		l.count.Add(-1)
		l.closedN.Add(1)
		c.close()
	}
	sh.mu.Unlock()
}

// Expire forgets connections idle since before now−Idle (handshakes that
// never completed since before now−HandshakeIdle), and those closed by FIN
// both ways since before now−TimeWait. Front ends call it from a
// ticker; a new connection that finds the table full calls it too. The
// packet paths do not read the clock: a connection that had a packet since
// the previous Expire counts as seen at now, so idleness is measured in
// Expire periods (tick well below Idle).
func (l *Layer) Expire(now time.Time) {
	if !l.setUp() {
		return
	}
	idle := now.Add(-l.cfg.Idle).UnixNano()
	openingIdle := now.Add(-min(l.cfg.Idle, HandshakeIdle)).UnixNano()
	closed := now.Add(-l.cfg.TimeWait).UnixNano()
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		for t, c := range sh.conns {
			if c.active.Swap(false) {
				c.last.Store(now.UnixNano())
			}
			last := c.last.Load()
			switch {
			case last < idle, last < openingIdle && opening(c.State()):
				l.expired.Add(1)
			case c.phase.Load() == uint32(StateClosing) && c.closedAt.Load() < closed:
				l.closedN.Add(1)
			default:
				continue
			}
			delete(sh.conns, t)
			l.count.Add(-1)
			c.close()
		}
		sh.mu.Unlock()
	}
}

// Close forgets every connection and wipes their traffic keys;
// afterwards covered peers' packets are dropped with ErrClosed and
// uncovered ones still pass.
func (l *Layer) Close() {
	if !l.setUp() {
		return
	}
	l.closed.Store(true)
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		for t, c := range sh.conns {
			delete(sh.conns, t)
			l.count.Add(-1)
			c.close()
		}
		sh.mu.Unlock()
	}
}

// Conns calls yield with a snapshot of each tracked connection until
// yield returns false (a range-over-func iterator). yield runs without
// the table's locks held.
func (l *Layer) Conns(yield func(ConnInfo) bool) {
	if !l.setUp() || yield == nil {
		return
	}
	var batch []ConnInfo
	for i := range l.shards {
		sh := &l.shards[i]
		batch = batch[:0]
		sh.mu.RLock()
		for _, c := range sh.conns {
			batch = append(batch, c.info())
		}
		sh.mu.RUnlock()
		for _, ci := range batch {
			if !yield(ci) {
				return
			}
		}
	}
}

func (c *conn) info() ConnInfo {
	ci := ConnInfo{Local: c.local, Remote: c.remote, L3Index: int(c.l3), Kind: c.kind, State: c.State(),
		Signed: c.signed.Load(), Verified: c.verified.Load(), Dropped: c.dropped.Load(),
		LastSeen: time.Unix(0, c.last.Load()), Revoked: c.revoked.Load() || c.kind == KindAO && c.ao.Revoked()}
	if c.kind == KindAO && !ci.Revoked {
		ep := c.ao.Endpoint()
		ci.LocalISN, ci.RemoteISN = ep.LocalISN, ep.RemoteISN
		ci.SendSNE, ci.RecvSNE = ep.SendSNE, ep.RecvSNE
		ci.CurrentKeyID, ci.RNextKeyID = ep.CurrentSendID, ep.RNextRecvID
		ci.Settled = c.ao.Settled()
	}
	return ci
}

// Revoke drops, from now on, every packet of each tracked connection for
// which match returns true (ErrRevoked, counted as key-not-found), and
// releases a TCP-AO connection's keys so that its MKTs can be deleted.
// A front end calls it before it removes the keys such connections use:
// their packets are then never passed unsigned. A revoked connection is
// forgotten when it expires (Config.Idle); a new SYN on its addresses
// starts a connection afresh. match runs under the table's locks: it must
// not call the layer. Revoke returns the number of connections revoked.
func (l *Layer) Revoke(match func(ConnInfo) bool) int {
	if !l.setUp() || match == nil {
		return 0
	}
	n := 0
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock() // no packet is using a connection of the shard meanwhile
		for _, c := range sh.conns {
			if c.revoked.Load() || !match(c.info()) {
				continue
			}
			c.revoked.Store(true)
			c.close()
			n++
		}
		sh.mu.Unlock()
	}
	return n
}

// RevokeUncovered revokes at once, as their next packet would, the
// tracked connections whose key went away: a TCP-MD5 session whose peer
// no TCP-MD5 key covers now (or a TCP-AO MKT does), a TCP-AO one left
// without keys. A front end calls it after it changed the keyrings, so
// that it knows, before it changes what it sends the layer, which peers
// revoked sessions still need (a session whose packets stop reaching the
// layer is never revoked by a packet). It returns how many it revoked.
func (l *Layer) RevokeUncovered() int {
	if !l.setUp() {
		return 0
	}
	n := 0
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		for _, c := range sh.conns {
			if !c.revoked.Load() && l.revoke(c) {
				c.close()
				n++
			}
		}
		sh.mu.Unlock()
	}
	return n
}

// revoke reports whether c's packets are to be dropped with ErrRevoked:
// Revoke said so, or (marked here) its TCP-MD5 peer is no longer covered
// by a TCP-MD5 key (the key was deleted, or a TCP-AO MKT now covers the
// peer: Linux refuses MD5 there), or its TCP-AO keys are gone.
func (l *Layer) revoke(c *conn) bool {
	if c.revoked.Load() {
		return true
	}
	var gone bool
	switch c.kind {
	case KindMD5:
		gone = l.cover(c.remote.Addr(), int(c.l3)) != KindMD5
	case KindAO:
		gone = c.ao.Revoked() || c.ao.Current() == nil
	}
	if gone {
		c.revoked.Store(true)
	}
	return gone
}

// lookup returns the connection local↔remote with its shard read-locked;
// the caller calls sh.mu.RUnlock when done with it.
func (l *Layer) lookup(t *tuple) (*shard, *conn) {
	sh := l.shard(t)
	sh.mu.RLock()
	return sh, sh.conns[*t]
}

// Conn returns the TCP-AO state of the tracked connection with this local
// and remote address and port, to rotate its keys (SetCurrent, SetRNext)
// or read its counters; false if there is none or it is not TCP-AO. The
// *ao.Conn is the layer's: use it only while the connection is tracked
// (a key pinned through it after the connection was freed stays pinned);
// [Layer.SetCurrent] and [Layer.SetRNext] have no such caveat. Conn,
// Export, Seed, SeedRevoked, SetCurrent and SetRNext name connections of
// the layer's L3 domain (Config.L3Index); [ConnInfo.L3Index] tells a
// connection's.
func (l *Layer) Conn(local, remote netip.AddrPort) (*ao.Conn, bool) {
	if !l.setUp() {
		return nil, false
	}
	t := tupleOf(local, remote, l.cfg.L3Index)
	sh, c := l.lookup(&t)
	defer sh.mu.RUnlock()
	if c == nil || c.kind != KindAO || c.State() == StateSynReceived {
		return nil, false
	}
	return &c.ao, true
}

// Seed starts tracking an established connection whose handshake the
// layer did not see (a front end restarted mid-session): ep holds its
// addresses, ISNs, the SNEs of a sequence number in each direction and
// the key IDs in use, as ao.Conn.Endpoint and [Layer.Export] give them
// (Linux TCP_AO_REPAIR); the layer's L3 index replaces ep's, and ep is
// taken as Established. An MD5 peer needs none of that; Seed registers
// its connection all the same. A tracked connection with the same
// addresses is replaced.
func (l *Layer) Seed(ep ao.Endpoint) error {
	if !l.setUp() {
		return ErrNotSetUp
	}
	return l.seed(ep, l.cfg.L3Index)
}

func (l *Layer) seed(ep ao.Endpoint, l3 int) error {
	local := netip.AddrPortFrom(ep.Local.Addr().Unmap(), ep.Local.Port())
	remote := netip.AddrPortFrom(ep.Remote.Addr().Unmap(), ep.Remote.Port())
	kind := l.cover(remote.Addr(), l3)
	if kind == 0 {
		return ErrNotCovered
	}
	c := &conn{kind: kind, l3: uint32(l3), local: local, remote: remote}
	if kind == KindAO {
		ep.Local, ep.Remote, ep.L3Index, ep.Established = local, remote, l3, true
		if err := c.ao.Init(l.cfg.AO, ep, l.cfg.Policy); err != nil {
			return err
		}
	}
	now := time.Now()
	c.touch(now)
	c.phase.Store(uint32(StateEstablished))
	t := tupleOf(local, remote, l3)
	if err := l.insert(&t, c, now); err != nil {
		c.close()
		return err
	}
	return nil
}

// SeedRevoked tracks the connection local↔remote as revoked (see
// [Layer.Revoke]): its packets are dropped until it expires, whatever
// covers its peer now. A front end that restarts calls it for the
// connections it had revoked, which would otherwise reach the stack
// unchecked. A tracked connection with the same addresses is replaced.
func (l *Layer) SeedRevoked(local, remote netip.AddrPort, kind Kind) error {
	if !l.setUp() {
		return ErrNotSetUp
	}
	return l.seedRevoked(local, remote, kind, l.cfg.L3Index)
}

func (l *Layer) seedRevoked(local, remote netip.AddrPort, kind Kind, l3 int) error {
	if kind != KindAO && kind != KindMD5 {
		return fmt.Errorf("%w: kind %d", ErrConfig, kind)
	}
	c := &conn{kind: kind, l3: uint32(l3), local: netip.AddrPortFrom(local.Addr().Unmap(), local.Port()),
		remote: netip.AddrPortFrom(remote.Addr().Unmap(), remote.Port())}
	c.revoked.Store(true)
	now := time.Now()
	c.touch(now)
	c.phase.Store(uint32(StateEstablished))
	t := tupleOf(c.local, c.remote, int(c.l3))
	return l.insert(&t, c, now)
}

// Export returns the state of the tracked, established, not revoked
// TCP-AO connection local↔remote (addresses, ISNs, SNEs, key IDs: what
// [Layer.Seed] takes back, after a restart of the front end), or false.
func (l *Layer) Export(local, remote netip.AddrPort) (ao.Endpoint, bool) {
	if !l.setUp() {
		return ao.Endpoint{}, false
	}
	return l.export(local, remote, l.cfg.L3Index)
}

func (l *Layer) export(local, remote netip.AddrPort, l3 int) (ao.Endpoint, bool) {
	t := tupleOf(local, remote, l3)
	sh, c := l.lookup(&t)
	defer sh.mu.RUnlock()
	if c == nil || c.kind != KindAO || c.revoked.Load() {
		return ao.Endpoint{}, false
	}
	ep := c.ao.Endpoint()
	if !ep.Established {
		return ao.Endpoint{}, false
	}
	return ep, true
}

// SetCurrent makes the MKT with this SendID the current key of the tracked
// TCP-AO connection local↔remote (Linux TCP_AO_INFO set_current): its
// segments are signed with it from now on. ErrNoConn if there is no such
// connection, ao.ErrNoSuchKey if no MKT for the peer has the SendID.
func (l *Layer) SetCurrent(local, remote netip.AddrPort, sendID uint8) error {
	return l.rotate(local, remote, func(c *ao.Conn) error { return c.SetCurrent(sendID) })
}

// SetRNext makes the MKT with this RecvID the RNext key of the tracked
// TCP-AO connection local↔remote (Linux set_rnext): its segments then ask
// the peer, by their RNextKeyID, to send with that MKT.
func (l *Layer) SetRNext(local, remote netip.AddrPort, recvID uint8) error {
	return l.rotate(local, remote, func(c *ao.Conn) error { return c.SetRNext(recvID) })
}

// rotate applies set to the connection's ao.Conn while it is tracked (the
// shard read-locked, so it cannot be freed meanwhile).
func (l *Layer) rotate(local, remote netip.AddrPort, set func(*ao.Conn) error) error {
	if !l.setUp() {
		return ErrNotSetUp
	}
	t := tupleOf(local, remote, l.cfg.L3Index)
	sh, c := l.lookup(&t)
	defer sh.mu.RUnlock()
	if c == nil || c.kind != KindAO {
		return ErrNoConn
	}
	return set(&c.ao)
}
