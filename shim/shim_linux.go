//go:build linux

package shim

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/packetauth"
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
	l3      *l3Map // interfaces' L3 domains; set by Run before the packet loops

	mu      sync.Mutex // guards what follows: reload against status and the packet loop's reports
	keys    *keySet
	aoRing  *ao.Keyring
	md5Ring *md5sig.Keyring
	aoMKT   []*ao.MKT     // the MKT of each keys.AO entry
	md5Key  []*md5sig.Key // the key of each keys.MD5 entry
	method  nfrules.Method
	rules   []netip.Prefix // the peers the installed rules queue
	seeded  uint64         // TCP-AO sessions resumed from -state

	unseen unseenTable // TCP-AO sessions met without their handshake: a lock of its own (unseen_linux.go)

	malformed atomic.Uint64 // queued packets dropped because their message or verdict failed

	obs observer // metrics and the drop log (metrics_linux.go)
}

// New loads the keys file and prepares the layer; nothing is installed
// until Run. A keys file that group or others may read is refused
// (keyfile.ErrMode), as OpenSSH refuses such a private key, and so is
// one owned by a user other than root and the shim's (keyfile.ErrOwner).
func New(cfg Config) (*Shim, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	keys, err := loadKeys(cfg.Keys)
	if err != nil {
		return nil, err
	}
	if err := checkStatusPath(cfg.Status); err != nil {
		keys.wipe()
		return nil, err // before any rule is installed
	}
	pool, err := sigpool.New(sigpool.Config{})
	if err != nil {
		keys.wipe()
		return nil, err
	}
	s := &Shim{cfg: cfg, log: cfg.Log, table: TableName(cfg.Queue), keys: &keySet{},
		aoRing: ao.NewKeyring(pool), md5Ring: md5sig.NewKeyring(pool),
		reloads: make(chan chan error), stopped: make(chan struct{})}
	// Both keyrings, whatever the file holds now: a reload may add the
	// kind it lacks, and the layer must enforce it from then on.
	if s.layer, err = packetauth.New(packetauth.Config{AO: s.aoRing, MD5: s.md5Ring}); err != nil {
		keys.wipe()
		return nil, err
	}
	if err := s.apply(keys); err != nil {
		return nil, err
	}
	s.initObserver()
	s.initExplainer()
	return s, nil
}

// TableName is the name of the nftables tables (ip and ip6) of the shim
// whose first queue is queue.
func TableName(queue uint16) string { return fmt.Sprintf("tcpsig-shim-%d", queue) }

// Uninstall removes the rules of the shim whose first queue is queue, in
// the network namespace of the calling thread: afterwards the covered
// peers' packets reach the kernel unchecked. It is the only way the rules
// go: every exit of Run leaves them, dropping the covered peers' packets
// until a shim takes over. It reports whether there were rules.
func Uninstall(queue uint16) (bool, error) {
	table := TableName(queue)
	present, err := nfrules.Exists(table)
	if err != nil || !present {
		return false, err
	}
	return true, nfrules.Remove(table)
}

// Run binds the queues, installs the rules (taking over those an earlier
// run left, in one batch) and answers packets until ctx is done. It must
// be called from the goroutine (OS thread) whose network namespace is to
// be covered, and only once. On every way out — ctx done, a queue that
// failed, an error — the rules stay: with no reader bound, the kernel
// drops the covered peers' packets (the rules queue without bypass) until
// a shim takes over, so nobody can inject into a covered session while
// none runs. [Uninstall] removes them. Each queue's reader is a goroutine
// on a locked OS thread that sleeps in poll(2) holding its P: a GOMAXPROCS
// above the CPUs by the number of queues (see DefaultQueues) keeps the
// rest of the process a P.
func (s *Shim) Run(ctx context.Context) error {
	defer close(s.stopped)
	// The queues first: if another shim holds one, its rules stay.
	qs, err := s.openQueues()
	if err != nil {
		return err
	}
	s.setQueues(qs)
	defer func() {
		for _, q := range s.queues {
			q.Close()
		}
	}()
	// The interfaces' L3 domains, in Run's namespace, and the keys'
	// VRFs checked there (New may have run in another).
	if err := s.openL3(); err != nil {
		return err
	}
	defer s.l3.Close()
	// Resumed sessions first: the rules then queue revoked ones' peers
	// from the start.
	s.seedFromState()
	if stale, err := nfrules.Exists(s.table); err == nil && stale {
		s.log.Info("taking over the rules an earlier run left", "table", s.table)
	}
	err = s.installRules()
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
	defer s.log.Warn("rules left in place: the covered peers' packets are dropped until a shim takes over (tcpsig shim -uninstall removes them)",
		"table", s.table, "peers", len(s.rules))

	stopServing, err := s.serve()
	if err != nil {
		return err
	}
	defer stopServing()
	// Stopped when Run returns, whatever ends it.
	sctx, stopAll := context.WithCancel(ctx)
	defer stopAll()
	loopErr := s.start(sctx)
	s.log.Info("shim running", "queue", s.cfg.Queue, "queues", len(s.queues), "rules", s.method, "peers", len(s.rules),
		"ao_keys", len(s.keys.AO), "md5_keys", len(s.keys.MD5), "overhead", s.layer.Overhead())
	s.notify("READY=1\nSTATUS=" + s.statusLine())
	defer s.notify("STOPPING=1")

	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			s.log.Info("stopping")
			s.saveState()
			return nil
		case done := <-s.reloads:
			done <- s.reloadObserved()
		case now := <-tick.C:
			s.layer.Expire(now)
			s.unseen.expire(now)
			s.saveState()
			s.reportDrops()
			s.followRevoked()
			s.watchSessions()
		case err := <-loopErr:
			return err
		}
	}
}

// serve opens the status socket and the metrics listener the
// configuration asks for; stop closes them. On an error none is open.
func (s *Shim) serve() (stop func(), err error) {
	var open []io.Closer
	stop = func() {
		for _, c := range open {
			c.Close()
		}
	}
	if s.cfg.Status != "" {
		ln, err := s.serveStatus()
		if err != nil {
			return nil, err
		}
		open = append(open, ln)
	}
	if s.cfg.Metrics != "" {
		ln, err := s.serveMetrics()
		if err != nil {
			stop()
			return nil, err
		}
		open = append(open, ln)
	}
	return stop, nil
}

// start starts what Run runs beside its own loop, until ctx is done: the
// keyrings, which apply the keys' lifetimes (RFC 8177) on their own clock
// at each boundary, with no reload; the worker that explains drops; and
// a reader per queue, whose error comes on the channel it returns.
func (s *Shim) start(ctx context.Context) chan error {
	for _, run := range []func(context.Context) error{s.aoRing.Run, s.md5Ring.Run} {
		go func() { _ = run(ctx) }()
	}
	go s.explainLoop(ctx) // the drops' diagnoses, off the packet path
	loopErr := make(chan error, len(s.queues))
	for _, q := range s.queues {
		go func() { loopErr <- s.loop(q) }()
	}
	return loopErr
}

// openQueues binds the queues Run reads: Config.Queues of them (one per
// CPU for 0), from Config.Queue on. On an error none stays bound.
func (s *Shim) openQueues() ([]*nfqueue.Queue, error) {
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
				return nil, fmt.Errorf("%w (is another tcpsig shim using queue %d? are we root?)", err, num)
			}
			return nil, err
		}
		qs = append(qs, q)
	}
	return qs, nil
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

// installRules installs the rules for the peers rulePeers names; under
// s.mu, or before the packet loops start.
func (s *Shim) installRules() error {
	peers := s.rulePeers()
	m, err := nfrules.Install(nfrules.Spec{Table: s.table, Queue: s.cfg.Queue, Queues: uint16(len(s.queues)), Peers: peers})
	if err != nil {
		return err
	}
	s.method, s.rules = m, peers
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
		// A message that did not parse: drop what it names (the
		// kernel's packet ids start at 1), so no queue slot leaks.
		s.malformed.Add(1)
		s.log.Warn("reading the queue", "err", p.Err)
		if p.ID == 0 {
			return nil
		}
		return q.AddVerdict(p.ID, nfqueue.Drop, nil)
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
	}
	if err := q.AddVerdict(p.ID, nfqueue.Accept, out); err != nil {
		// The rewritten packet cannot be given back: drop it rather
		// than leave it waiting.
		s.malformed.Add(1)
		if derr := q.AddVerdict(p.ID, nfqueue.Drop, nil); derr != nil {
			return errors.Join(err, derr)
		}
		return err
	}
	return nil
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
		return s.outbound(dst, p) // in its interface's L3 domain (vrf_linux.go)
	case nfqueue.HookInput, nfqueue.HookPrerouting:
		return s.inbound(dst, p)
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

// dropped counts a refused packet by peer and logs it (noteDrop; the
// layer counts it too).
func (s *Shim) dropped(p *nfqueue.Packet, err error) { s.noteDrop(p, err) }
