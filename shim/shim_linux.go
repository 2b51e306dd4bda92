//go:build linux

package shim

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/packetauth"
	"github.com/tcpsig/tcpsig/segment"
	"github.com/tcpsig/tcpsig/shim/nfqueue"
	"github.com/tcpsig/tcpsig/shim/nfrules"
	"github.com/tcpsig/tcpsig/sigpool"
)

// Shim is one running shim.
type Shim struct {
	cfg     Config
	reloads chan chan error
	stopped chan struct{} // closed when Run returns
	log     *slog.Logger
	table   string
	queues  []*nfqueue.Queue // Queue, Queue+1, ...: one reader each; set under mu (Status reads it)
	drops   []nfqueue.Stats  // each queue's counters at the last reportDrops
	layer   *packetauth.Layer

	mu      sync.Mutex // guards what follows: reload against status and the packet loop's reports
	keys    *keySet
	aoRing  *ao.Keyring
	md5Ring *md5sig.Keyring
	aoMKT   []*ao.MKT     // the MKT of each keys.AO entry
	md5Key  []*md5sig.Key // the key of each keys.MD5 entry
	method  nfrules.Method
	unseen  map[[2]netip.AddrPort]*UnseenConn // TCP-AO sessions met without their handshake
	seeded  uint64                            // TCP-AO sessions resumed from -state
}

// maxUnseen bounds the sessions reported as unseen.
const maxUnseen = 1024

// New loads the keys file and prepares the layer; nothing is installed
// until Run.
func New(cfg Config) (*Shim, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	keys, err := loadKeys(cfg.Keys)
	if err != nil {
		return nil, err
	}
	if err := checkStatusPath(cfg.Status); err != nil {
		return nil, err // before any rule is installed
	}
	pool, err := sigpool.New(sigpool.Config{})
	if err != nil {
		return nil, err
	}
	s := &Shim{cfg: cfg, log: cfg.Log, table: fmt.Sprintf("tcpsig-shim-%d", cfg.Queue), keys: &keySet{},
		aoRing: ao.NewKeyring(pool), md5Ring: md5sig.NewKeyring(pool), unseen: map[[2]netip.AddrPort]*UnseenConn{},
		reloads: make(chan chan error), stopped: make(chan struct{})}
	if err := s.apply(keys); err != nil {
		return nil, err
	}
	lc := packetauth.Config{}
	if len(keys.AO) > 0 {
		lc.AO = s.aoRing
	}
	if len(keys.MD5) > 0 {
		lc.MD5 = s.md5Ring
	}
	// A key kind the file does not have at start cannot be added by a
	// reload: the layer takes its keyrings once.
	if s.layer, err = packetauth.New(lc); err != nil {
		return nil, err
	}
	return s, nil
}

// Run binds the queues, installs the rules and answers packets until ctx
// is done; the rules are removed on the way out. It must be called from
// the goroutine (OS thread) whose network namespace is to be covered, and
// only once. Each queue's reader is a goroutine on a locked OS thread that
// sleeps in poll(2) holding its P: a GOMAXPROCS above the CPUs by the
// number of queues (see DefaultQueues) keeps the rest of the process a P.
func (s *Shim) Run(ctx context.Context) error {
	defer close(s.stopped)
	// The queues first: if another shim holds one, its rules stay.
	n := s.cfg.Queues
	if n <= 0 {
		n = DefaultQueues()
	}
	n = min(n, maxQueues, 1<<16-int(s.cfg.Queue))
	var qs []*nfqueue.Queue
	for i := range n {
		num := s.cfg.Queue + uint16(i)
		q, err := nfqueue.Open(nfqueue.Config{Num: num, MaxLen: queueLen})
		if err != nil {
			for _, q := range qs {
				q.Close()
			}
			if errors.Is(err, syscall.EPERM) {
				return fmt.Errorf("%w (is another tcpsig shim using queue %d? are we root?)", err, num)
			}
			return err
		}
		qs = append(qs, q)
	}
	s.setQueues(qs)
	defer func() {
		for _, q := range s.queues {
			q.Close()
		}
	}()
	if stale, err := nfrules.Exists(s.table); err == nil && stale {
		s.log.Warn("replacing rules left by an earlier run", "table", s.table)
	}
	err := s.installRules()
	if err != nil && len(s.queues) > 1 {
		// A kernel without nft_hash cannot spread the connections: one
		// queue answers them all.
		s.log.Warn("one queue: the rules cannot hash connections over several", "err", err)
		for _, q := range s.queues[1:] {
			q.Close()
		}
		s.setQueues(s.queues[:1])
		err = s.installRules()
	}
	if err != nil {
		return err
	}
	defer func() {
		if err := nfrules.Remove(s.table); err != nil {
			s.log.Error("removing rules", "err", err)
		} else {
			s.log.Info("rules removed", "table", s.table)
		}
	}()
	s.seedFromState()

	if s.cfg.Status != "" {
		ln, err := s.serveStatus()
		if err != nil {
			return err
		}
		defer ln.Close()
	}
	loopErr := make(chan error, len(s.queues))
	for _, q := range s.queues {
		go func() { loopErr <- s.loop(q) }()
	}
	s.log.Info("shim running", "queue", s.cfg.Queue, "queues", len(s.queues), "rules", s.method, "peers", len(s.keys.Peers),
		"ao_keys", len(s.keys.AO), "md5_keys", len(s.keys.MD5), "overhead", s.layer.Overhead())

	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			s.log.Info("stopping")
			s.saveState()
			return nil
		case done := <-s.reloads:
			done <- s.reload()
		case now := <-tick.C:
			s.layer.Expire(now)
			s.saveState()
			s.reportDrops()
		case err := <-loopErr:
			return err
		}
	}
}

// Reload reads the keys file again and applies it without dropping
// sessions: new MKTs and keys are added, deleted ones removed (an MKT in
// use is replaced on its sessions by the peer's last remaining one), the
// peer's last TCP-AO entry in the file becomes its sessions' RNext (see
// rotate), and the rules follow the peers. It waits for Run to do it (the
// rules belong to Run's namespace), so it also tells when Run is serving
// packets; on an error the keys stay as they were
// or, for an error of one entry, as far as they got.
func (s *Shim) Reload() error {
	done := make(chan error, 1)
	select {
	case s.reloads <- done:
		return <-done
	case <-s.stopped:
		return ErrStopped
	}
}

// ErrStopped is Reload's error once Run has returned.
var ErrStopped = errors.New("shim: not running")

// DefaultQueues is the number of queues Run binds for Config.Queues 0:
// one per CPU, at most 8.
func DefaultQueues() int { return min(runtime.NumCPU(), maxQueues) }

// setQueues sets the queues Status reports.
func (s *Shim) setQueues(qs []*nfqueue.Queue) {
	s.mu.Lock()
	s.queues = qs
	s.mu.Unlock()
}

func (s *Shim) installRules() error {
	m, err := nfrules.Install(nfrules.Spec{Table: s.table, Queue: s.cfg.Queue, Queues: uint16(len(s.queues)), Peers: s.keys.Peers})
	if err != nil {
		return err
	}
	s.method = m
	return nil
}

// Queue sizes: up to maxQueues queues (one per CPU), each holding up to
// queueLen packets waiting for a verdict (the kernel drops, and counts,
// what finds it full: never accepted unanswered), read batch packets per
// wake-up.
const (
	maxQueues = 8
	queueLen  = 1024
	batch     = 64
)

// loop answers the packets of q until it closes: each wake-up reads all
// that are waiting (up to batch) and sends their verdicts in one message.
func (s *Shim) loop(q *nfqueue.Queue) error {
	// A thread of its own: the reader's work stays on one thread, one
	// per queue, instead of hopping between the runtime's.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var ps [batch]nfqueue.Packet
	buf := make([]byte, 0, nfqueue.MaxPayload+64)
	for {
		n, err := q.ReadBatch(ps[:])
		switch {
		case errors.Is(err, nfqueue.ErrClosed):
			return nil
		case err != nil:
			// The socket failed: stop (Run removes the rules) rather
			// than spin on it.
			return fmt.Errorf("reading the queue: %w", err)
		}
		for i := range ps[:n] {
			if err := s.answer(q, &ps[i], buf); err != nil && !errors.Is(err, nfqueue.ErrClosed) {
				s.log.Warn("verdict", "err", err)
			}
		}
		if err := q.Flush(); err != nil && !errors.Is(err, nfqueue.ErrClosed) {
			s.log.Warn("verdict", "err", err)
		}
	}
}

// answer adds p's verdict to those q sends next: p signed or verified and
// rewritten, passed untouched, or dropped.
func (s *Shim) answer(q *nfqueue.Queue, p *nfqueue.Packet, buf []byte) error {
	switch {
	case errors.Is(p.Err, nfqueue.ErrTruncated):
		return q.AddVerdict(p.ID, nfqueue.Drop, nil)
	case p.Err != nil:
		s.log.Warn("reading the queue", "err", p.Err)
		return nil
	}
	out, err := s.transform(buf[:0], p)
	if err != nil && errors.Is(err, packetauth.ErrNoConn) {
		s.reportUnseen(p)
	}
	switch {
	case err != nil:
		s.dropped(p, err)
		return q.AddVerdict(p.ID, nfqueue.Drop, nil)
	case len(out) == len(p.Payload) && (len(out) == 0 || &out[0] == &p.Payload[0]):
		return q.AddVerdict(p.ID, nfqueue.Accept, nil) // untouched
	default:
		return q.AddVerdict(p.ID, nfqueue.Accept, out)
	}
}

// reportDrops logs the packets the kernel dropped since the last call
// because a queue or its socket was full: the shim fell behind, and TCP
// retransmits them (nothing passes unanswered).
func (s *Shim) reportDrops() {
	if len(s.drops) != len(s.queues) {
		s.drops = make([]nfqueue.Stats, len(s.queues))
	}
	for i, q := range s.queues {
		st, err := q.Stats()
		if err != nil {
			continue
		}
		if d, u := st.Dropped-s.drops[i].Dropped, st.UserDropped-s.drops[i].UserDropped; d+u > 0 {
			s.log.Warn("queue full: packets dropped", "queue", s.cfg.Queue+uint16(i), "queue_full", d, "socket_full", u,
				"total", st.Dropped+st.UserDropped)
		}
		s.drops[i] = st
	}
}

// transform passes a packet through the layer in its direction.
func (s *Shim) transform(dst []byte, p *nfqueue.Packet) ([]byte, error) {
	switch p.Hook {
	case nfqueue.HookOutput, nfqueue.HookPostrouting:
		return s.layer.Outbound(dst, p.Payload)
	case nfqueue.HookInput, nfqueue.HookPrerouting:
		return s.layer.Inbound(dst, p.Payload)
	}
	return p.Payload, nil
}

// tuple returns the packet's local and remote address and port.
func tuple(p *nfqueue.Packet) (local, remote netip.AddrPort, ok bool) {
	b := p.Payload
	if len(b) < 1 {
		return
	}
	var src, dst netip.Addr
	var tcp []byte
	switch b[0] >> 4 {
	case 4:
		ihl := int(b[0]&0x0f) * 4
		if len(b) < ihl+4 || ihl < 20 || b[9] != syscall.IPPROTO_TCP {
			return
		}
		src, dst = netip.AddrFrom4([4]byte(b[12:16])), netip.AddrFrom4([4]byte(b[16:20]))
		tcp = b[ihl:]
	case 6:
		if len(b) < 44 || b[6] != syscall.IPPROTO_TCP {
			return
		}
		src, dst = netip.AddrFrom16([16]byte(b[8:24])), netip.AddrFrom16([16]byte(b[24:40]))
		tcp = b[40:]
	default:
		return
	}
	sp, dp := binary.BigEndian.Uint16(tcp), binary.BigEndian.Uint16(tcp[2:])
	if p.Hook == nfqueue.HookOutput || p.Hook == nfqueue.HookPostrouting {
		return netip.AddrPortFrom(src, sp), netip.AddrPortFrom(dst, dp), true
	}
	return netip.AddrPortFrom(dst, dp), netip.AddrPortFrom(src, sp), true
}

// reportUnseen records a TCP-AO session met without its handshake (a
// TCP-MD5 session needs none: its digest covers no ISN, and the layer signs
// and verifies it without state). Without its ISNs and SNEs (from -state,
// read at start) it cannot be verified: it is reported, and its packets
// dropped.
func (s *Shim) reportUnseen(p *nfqueue.Packet) {
	local, remote, ok := tuple(p)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := [2]netip.AddrPort{local, remote}
	if u := s.unseen[k]; u != nil {
		u.Dropped++
		return
	}
	if len(s.unseen) < maxUnseen {
		s.unseen[k] = &UnseenConn{Local: local, Remote: remote, Kind: "TCP-AO", Dropped: 1, First: time.Now()}
	}
	s.log.Warn("TCP-AO session seen without its handshake and not in the state file: its ISNs are unknown, dropping its packets",
		"local", local, "remote", remote)
}

// dropped logs a refused packet at debug level (the layer counts it).
func (s *Shim) dropped(p *nfqueue.Packet, err error) {
	if !s.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	local, remote, _ := tuple(p)
	var flags, seq string
	if seg, perr := segment.ParsePacket(p.Payload); perr == nil && len(seg.Header) >= 20 {
		flags = fmt.Sprintf("%#02x", seg.Header[13])
		seq = fmt.Sprint(binary.BigEndian.Uint32(seg.Header[4:]))
	}
	s.log.Debug("dropped", "hook", p.Hook, "local", local, "remote", remote, "len", len(p.Payload),
		"flags", flags, "seq", seq, "err", err)
}

func (s *Shim) reload() error {
	keys, err := loadKeys(s.cfg.Keys)
	if err != nil {
		s.log.Error("reload: keeping the current keys", "err", err)
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if (len(keys.AO) > 0 && len(s.keys.AO) == 0 && s.aoRing.Len() == 0 && len(s.keys.MD5) > 0) ||
		(len(keys.MD5) > 0 && len(s.keys.MD5) == 0 && len(s.keys.AO) > 0) {
		s.log.Warn("reload: a key kind absent at start (TCP-AO or TCP-MD5) takes a restart to take effect")
	}
	samePeers := slices.Equal(s.keys.Peers, keys.Peers)
	errs := []error{s.apply(keys)}
	// Replacing the rules drops the packets waiting in the queue (the
	// kernel flushes a hook's queued packets when the hook goes): only
	// when the peers changed.
	if !samePeers {
		if err := s.installRules(); err != nil {
			errs = append(errs, err)
		}
	}
	s.rotate()
	err = errors.Join(errs...)
	if err != nil {
		s.log.Error("reload", "err", err)
	}
	s.log.Info("keys reloaded", "peers", len(s.keys.Peers), "ao_keys", len(s.keys.AO), "md5_keys", len(s.keys.MD5))
	return err
}

// apply makes the keyrings hold exactly the keys of k, changing only what
// differs, so that live sessions keep their keys. An MKT a session uses is
// deleted with the peer's remaining newest MKT as its replacement.
func (s *Shim) apply(k *keySet) error {
	var errs []error
	// TCP-AO: keep the same entries, add new ones, delete gone ones.
	keep := make([]*ao.MKT, len(k.AO))
	var gone []*ao.MKT
	for i, old := range s.keys.AO {
		j := slices.IndexFunc(k.AO, func(c keys.AO) bool { return sameAOConfig(c, old) })
		if j >= 0 && keep[j] == nil {
			keep[j] = s.aoMKT[i]
		} else {
			gone = append(gone, s.aoMKT[i])
		}
	}
	var later []int // entries that clash with a gone MKT (same IDs, new key)
	for j, c := range k.AO {
		if keep[j] != nil {
			continue
		}
		m, err := s.aoRing.Add(c)
		switch {
		case errors.Is(err, ao.ErrKeyExists):
			later = append(later, j)
		case err != nil:
			errs = append(errs, fmt.Errorf("ao[%d]: %w", j, err))
		default:
			keep[j] = m
		}
	}
	for _, m := range gone {
		rep := newestFor(k.AO, keep, m)
		err := s.aoRing.Delete(m, ao.DeleteOptions{Current: rep, RNext: rep})
		if errors.Is(err, ao.ErrKeyBusy) || (err != nil && rep == nil) {
			errs = append(errs, fmt.Errorf("TCP-AO key %v is in use and no other key of its peer replaces it: kept", m))
			continue
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, j := range later {
		m, err := s.aoRing.Add(k.AO[j])
		if err != nil {
			errs = append(errs, fmt.Errorf("ao[%d]: %w", j, err))
			continue
		}
		keep[j] = m
	}
	// TCP-MD5: Add replaces a key of the same peer atomically.
	md5Keys := make([]*md5sig.Key, len(k.MD5))
	for j, c := range k.MD5 {
		if i := slices.IndexFunc(s.keys.MD5, func(o keys.MD5) bool { return sameMD5Config(o, c) }); i >= 0 && s.md5Key[i] != nil {
			md5Keys[j] = s.md5Key[i]
			continue
		}
		key, err := s.md5Ring.Add(c)
		if err != nil {
			errs = append(errs, fmt.Errorf("md5[%d]: %w", j, err))
			continue
		}
		md5Keys[j] = key
	}
	for i, old := range s.keys.MD5 {
		if !slices.ContainsFunc(k.MD5, func(c keys.MD5) bool { return c.Peer.Masked() == old.Peer.Masked() }) && s.md5Key[i] != nil {
			if err := s.md5Ring.Delete(s.md5Key[i], md5sig.DeleteOptions{Async: true}); err != nil {
				errs = append(errs, err)
			}
		}
	}
	s.keys, s.aoMKT, s.md5Key = k, keep, md5Keys
	return errors.Join(errs...)
}

// newestFor returns the MKT of the last entry of cfgs (file order) whose
// peer covers m's peer, other than m; nil if none.
func newestFor(cfgs []keys.AO, mkts []*ao.MKT, m *ao.MKT) *ao.MKT {
	for j := len(cfgs) - 1; j >= 0; j-- {
		if mkts[j] != nil && mkts[j] != m && cfgs[j].Peer.Overlaps(m.Peer()) {
			return mkts[j]
		}
	}
	return nil
}

// rotate makes the last TCP-AO entry of each session's peer in the keys
// file the session's RNext: the key the peer is asked to send with, which
// it switches to once it has it (RFC 5925 §7.5.2). The shim's own send key
// follows the peer's RNextKeyID the same way, so the two ends may add the
// new key in either order without a segment being refused.
func (s *Shim) rotate() {
	s.layer.Conns(func(c packetauth.ConnInfo) bool {
		if c.Kind != packetauth.KindAO {
			return true
		}
		for j := len(s.keys.AO) - 1; j >= 0; j-- {
			cfg := s.keys.AO[j]
			if !cfg.Peer.Contains(c.Remote.Addr()) || s.aoMKT[j] == nil {
				continue
			}
			if c.RNextKeyID == cfg.RecvID {
				break
			}
			conn, ok := s.layer.Conn(c.Local, c.Remote)
			if !ok {
				break
			}
			if err := conn.SetRNext(cfg.RecvID); err != nil {
				s.log.Warn("cannot ask the peer to rotate", "local", c.Local, "remote", c.Remote, "rnext", cfg.RecvID, "err", err)
			} else {
				s.log.Info("asking the peer to rotate", "local", c.Local, "remote", c.Remote, "rnext", cfg.RecvID)
			}
			break
		}
		return true
	})
}

func sameAOConfig(a, b keys.AO) bool {
	return a.Peer.Masked() == b.Peer.Masked() && a.SendID == b.SendID && a.RecvID == b.RecvID &&
		a.Algorithm == b.Algorithm && bytes.Equal(a.Key, b.Key) && a.MACLen == b.MACLen &&
		a.ExcludeOptions == b.ExcludeOptions && a.IfIndex == b.IfIndex && a.HasIfIndex == b.HasIfIndex
}

func sameMD5Config(a, b keys.MD5) bool {
	return a.Peer.Masked() == b.Peer.Masked() && bytes.Equal(a.Key, b.Key) && a.IfIndex == b.IfIndex && a.HasIfIndex == b.HasIfIndex
}
