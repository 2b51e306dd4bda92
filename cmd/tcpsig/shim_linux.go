//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/internal/nfqueue"
	"github.com/tcpsig/tcpsig/internal/nfrules"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/packetauth"
	"github.com/tcpsig/tcpsig/sigpool"
)

// runShim is tcpsig shim.
func runShim(args []string, stdout, stderr io.Writer) int {
	f, code, ok := parseShimFlags(args, stderr)
	if !ok {
		return code
	}
	level := slog.LevelInfo
	if f.verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	s, err := newShim(f, log)
	if err != nil {
		return failf(stderr, "shim: %v", err)
	}
	if err := s.run(); err != nil {
		log.Error("shim stopped", "err", err)
		return 1
	}
	return 0
}

// shim is one running tcpsig shim.
type shim struct {
	f     shimFlags
	log   *slog.Logger
	table string
	q     *nfqueue.Queue
	layer *packetauth.Layer

	mu      sync.Mutex // guards what follows: reload against status and the packet loop's reports
	keys    *shimKeys
	aoRing  *ao.Keyring
	md5Ring *md5sig.Keyring
	aoMKT   []*ao.MKT     // the MKT of each keys.AO entry
	md5Key  []*md5sig.Key // the key of each keys.MD5 entry
	method  nfrules.Method
	unseen  map[[2]netip.AddrPort]*unseenConn // TCP-AO sessions met without their handshake
	seeded  uint64                            // TCP-AO sessions resumed from -state
}

// unseenConn is a session of a covered peer whose handshake the shim did
// not see and could not resume: its packets are dropped.
type unseenConn struct {
	Local, Remote netip.AddrPort
	Kind          string
	Dropped       uint64
	First         time.Time
}

// maxUnseen bounds the sessions reported as unseen.
const maxUnseen = 1024

func newShim(f shimFlags, log *slog.Logger) (*shim, error) {
	keys, err := loadShimKeys(f.keys)
	if err != nil {
		return nil, err
	}
	pool, err := sigpool.New(sigpool.Config{})
	if err != nil {
		return nil, err
	}
	s := &shim{f: f, log: log, table: fmt.Sprintf("tcpsig-shim-%d", f.queue), keys: &shimKeys{},
		aoRing: ao.NewKeyring(pool), md5Ring: md5sig.NewKeyring(pool), unseen: map[[2]netip.AddrPort]*unseenConn{}}
	if err := s.apply(keys); err != nil {
		return nil, err
	}
	cfg := packetauth.Config{}
	if len(keys.AO) > 0 {
		cfg.AO = s.aoRing
	}
	if len(keys.MD5) > 0 {
		cfg.MD5 = s.md5Ring
	}
	// A peer kind the file does not have at start cannot be added by a
	// reload: the layer takes its keyrings once.
	if s.layer, err = packetauth.New(cfg); err != nil {
		return nil, err
	}
	return s, nil
}

// run binds the queue, installs the rules and answers packets until a
// terminating signal; the rules are removed on the way out.
func (s *shim) run() error {
	// The queue first: if another shim holds it, its rules stay.
	q, err := nfqueue.Open(nfqueue.Config{Num: uint16(s.f.queue), MaxLen: 4096})
	if err != nil {
		if errors.Is(err, syscall.EPERM) {
			return fmt.Errorf("%w (is another tcpsig shim using queue %d? are we root?)", err, s.f.queue)
		}
		return err
	}
	s.q = q
	defer q.Close()
	if stale, err := nfrules.Exists(s.table); err == nil && stale {
		s.log.Warn("replacing rules left by an earlier run", "table", s.table)
	}
	if err := s.installRules(); err != nil {
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

	if s.f.status != "" {
		ln, err := s.serveStatus()
		if err != nil {
			return err
		}
		defer ln.Close()
	}
	sigc := make(chan os.Signal, 4)
	signal.Notify(sigc, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigc)

	loopErr := make(chan error, 1)
	go func() { loopErr <- s.loop() }()
	s.log.Info("shim running", "queue", s.f.queue, "rules", s.method, "peers", len(s.keys.Peers),
		"ao_keys", len(s.keys.AO), "md5_keys", len(s.keys.MD5), "overhead", s.layer.Overhead())

	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		select {
		case sig := <-sigc:
			switch sig {
			case syscall.SIGHUP:
				s.reload()
			case syscall.SIGUSR1:
				s.logStatus()
			default:
				s.log.Info("stopping", "signal", sig.String())
				s.saveState()
				return nil
			}
		case now := <-tick.C:
			s.layer.Expire(now)
			s.saveState()
		case err := <-loopErr:
			return err
		}
	}
}

func (s *shim) installRules() error {
	m, err := nfrules.Install(nfrules.Spec{Table: s.table, Queue: uint16(s.f.queue), Peers: s.keys.Peers})
	if err != nil {
		return err
	}
	s.method = m
	return nil
}

// loop answers queued packets until the queue closes.
func (s *shim) loop() error {
	var p nfqueue.Packet
	buf := make([]byte, 0, nfqueue.MaxPayload+64)
	for {
		err := s.q.Read(&p)
		switch {
		case errors.Is(err, nfqueue.ErrClosed):
			return nil
		case errors.Is(err, nfqueue.ErrTruncated):
			_ = s.q.Verdict(p.ID, nfqueue.Drop, nil)
			continue
		case err != nil:
			s.log.Warn("reading the queue", "err", err)
			continue
		}
		out, err := s.transform(buf[:0], &p)
		if err != nil && errors.Is(err, packetauth.ErrNoConn) {
			s.reportUnseen(&p)
		}
		switch {
		case err != nil:
			s.dropped(&p, err)
			err = s.q.Verdict(p.ID, nfqueue.Drop, nil)
		case len(out) == len(p.Payload) && (len(out) == 0 || &out[0] == &p.Payload[0]):
			err = s.q.Verdict(p.ID, nfqueue.Accept, nil) // untouched
		default:
			err = s.q.Verdict(p.ID, nfqueue.Accept, out)
		}
		if err != nil && !errors.Is(err, nfqueue.ErrClosed) {
			s.log.Warn("verdict", "err", err)
		}
	}
}

// transform passes a packet through the layer in its direction.
func (s *shim) transform(dst []byte, p *nfqueue.Packet) ([]byte, error) {
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
func (s *shim) reportUnseen(p *nfqueue.Packet) {
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
		s.unseen[k] = &unseenConn{Local: local, Remote: remote, Kind: "TCP-AO", Dropped: 1, First: time.Now()}
	}
	s.log.Warn("TCP-AO session seen without its handshake and not in the state file: its ISNs are unknown, dropping its packets",
		"local", local, "remote", remote)
}

// dropped logs a refused packet at debug level (the layer counts it).
func (s *shim) dropped(p *nfqueue.Packet, err error) {
	if !s.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	local, remote, _ := tuple(p)
	s.log.Debug("dropped", "hook", p.Hook, "local", local, "remote", remote, "err", err)
}

// reload reads the keys file again and applies the difference to the
// keyrings the sessions use, then to the rules.
func (s *shim) reload() {
	keys, err := loadShimKeys(s.f.keys)
	if err != nil {
		s.log.Error("reload: keeping the current keys", "err", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if (len(keys.AO) > 0 && len(s.keys.AO) == 0 && s.aoMKTCount() == 0 && len(s.keys.MD5) > 0) ||
		(len(keys.MD5) > 0 && len(s.keys.MD5) == 0 && len(s.keys.AO) > 0) {
		s.log.Warn("reload: a key kind absent at start (TCP-AO or TCP-MD5) takes a restart to take effect")
	}
	if err := s.apply(keys); err != nil {
		s.log.Error("reload", "err", err)
	}
	if err := s.installRules(); err != nil {
		s.log.Error("reload: rules", "err", err)
	}
	s.rotate()
	s.log.Info("keys reloaded", "peers", len(s.keys.Peers), "ao_keys", len(s.keys.AO), "md5_keys", len(s.keys.MD5))
}

func (s *shim) aoMKTCount() int { return s.aoRing.Len() }

// apply makes the keyrings hold exactly the keys of k, changing only what
// differs, so that live sessions keep their keys. An MKT a session uses is
// deleted with the peer's remaining newest MKT as its replacement.
func (s *shim) apply(k *shimKeys) error {
	var errs []error
	// TCP-AO: keep the same entries, add new ones, delete gone ones.
	keep := make([]*ao.MKT, len(k.AO))
	var gone []*ao.MKT
	for i, old := range s.keys.AO {
		j := slices.IndexFunc(k.AO, func(c ao.Config) bool { return sameAOConfig(c, old) })
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
		if i := slices.IndexFunc(s.keys.MD5, func(o md5sig.Config) bool { return sameMD5Config(o, c) }); i >= 0 && s.md5Key[i] != nil {
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
		if !slices.ContainsFunc(k.MD5, func(c md5sig.Config) bool { return c.Peer.Masked() == old.Peer.Masked() }) && s.md5Key[i] != nil {
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
func newestFor(cfgs []ao.Config, mkts []*ao.MKT, m *ao.MKT) *ao.MKT {
	for j := len(cfgs) - 1; j >= 0; j-- {
		if mkts[j] != nil && mkts[j] != m && cfgs[j].Peer.Overlaps(m.Peer()) {
			return mkts[j]
		}
	}
	return nil
}

// rotate makes the last TCP-AO entry of each session's peer in the keys
// file its current key and RNext (the key it asks the peer to send with).
func (s *shim) rotate() {
	s.layer.Conns(func(c packetauth.ConnInfo) bool {
		if c.Kind != packetauth.KindAO {
			return true
		}
		for j := len(s.keys.AO) - 1; j >= 0; j-- {
			cfg := s.keys.AO[j]
			if !cfg.Peer.Contains(c.Remote.Addr()) || s.aoMKT[j] == nil {
				continue
			}
			if c.CurrentKeyID == cfg.SendID && c.RNextKeyID == cfg.RecvID {
				break
			}
			conn, ok := s.layer.Conn(c.Local, c.Remote)
			if !ok {
				break
			}
			err := errors.Join(conn.SetCurrent(cfg.SendID), conn.SetRNext(cfg.RecvID))
			s.log.Info("rotated", "local", c.Local, "remote", c.Remote, "sndid", cfg.SendID, "rcvid", cfg.RecvID, "err", err)
			break
		}
		return true
	})
}

func sameAOConfig(a, b ao.Config) bool {
	return a.Peer.Masked() == b.Peer.Masked() && a.SendID == b.SendID && a.RecvID == b.RecvID &&
		a.Algorithm == b.Algorithm && bytes.Equal(a.Key, b.Key) && a.MACLen == b.MACLen &&
		a.ExcludeOptions == b.ExcludeOptions && a.IfIndex == b.IfIndex && a.HasIfIndex == b.HasIfIndex
}

func sameMD5Config(a, b md5sig.Config) bool {
	return a.Peer.Masked() == b.Peer.Masked() && bytes.Equal(a.Key, b.Key) && a.IfIndex == b.IfIndex && a.HasIfIndex == b.HasIfIndex
}

// shimStatus is what the status socket serves and SIGUSR1 logs.
type shimStatus struct {
	Queue    uint                  `json:"queue"`
	Rules    string                `json:"rules"`
	Overhead int                   `json:"overhead"`
	Counters packetauth.Counters   `json:"counters"`
	Conns    []packetauth.ConnInfo `json:"conns"`
	Unseen   []unseenConn          `json:"unseen"`
	Seeded   uint64                `json:"ao_resumed"`
	Keys     map[string]int        `json:"keys"`
}

func (s *shim) status() shimStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := shimStatus{Queue: s.f.queue, Rules: string(s.method), Overhead: s.layer.Overhead(),
		Counters: s.layer.Counters(), Seeded: s.seeded,
		Keys: map[string]int{"ao": len(s.keys.AO), "md5": len(s.keys.MD5)}}
	s.layer.Conns(func(c packetauth.ConnInfo) bool {
		st.Conns = append(st.Conns, c)
		return true
	})
	for _, u := range s.unseen {
		st.Unseen = append(st.Unseen, *u)
	}
	return st
}

func (s *shim) logStatus() {
	st := s.status()
	s.log.Info("status", "rules", st.Rules, "conns", len(st.Conns), "passed", st.Counters.Passed,
		"signed", st.Counters.Signed, "verified", st.Counters.Verified, "dropped", st.Counters.Dropped.Total(),
		"bad_mac", st.Counters.Dropped.BadMAC, "unsigned", st.Counters.Dropped.Unsigned, "no_conn", st.Counters.Dropped.NoConn,
		"unseen", len(st.Unseen), "ao_resumed", st.Seeded)
	for _, c := range st.Conns {
		s.log.Info("conn", "local", c.Local, "remote", c.Remote, "kind", c.Kind.String(), "state", c.State.String(),
			"signed", c.Signed, "verified", c.Verified, "dropped", c.Dropped, "keyid", c.CurrentKeyID, "rnext", c.RNextKeyID)
	}
	for _, u := range st.Unseen {
		s.log.Info("unseen session", "local", u.Local, "remote", u.Remote, "kind", u.Kind, "dropped", u.Dropped)
	}
}

// serveStatus answers each connection to the status socket with the
// status as JSON.
func (s *shim) serveStatus() (net.Listener, error) {
	_ = os.Remove(s.f.status) // a socket file left by a killed shim
	ln, err := net.Listen("unix", s.f.status)
	if err != nil {
		return nil, err
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = json.NewEncoder(c).Encode(s.status())
			c.Close()
		}
	}()
	return ln, nil
}

// shimState is the -state file: the TCP-AO sessions' repair state (ISNs,
// SNEs, key IDs; no key material).
type shimState struct {
	Sessions []stateEntry `json:"sessions"`
}

type stateEntry struct {
	Local, Remote netip.AddrPort
	ao.RepairState
}

// saveState writes the TCP-AO sessions' state to -state, atomically.
func (s *shim) saveState() {
	if s.f.state == "" {
		return
	}
	var st shimState
	s.layer.Conns(func(c packetauth.ConnInfo) bool {
		if c.Kind == packetauth.KindAO && c.State == packetauth.StateEstablished {
			if conn, ok := s.layer.Conn(c.Local, c.Remote); ok {
				st.Sessions = append(st.Sessions, stateEntry{c.Local, c.Remote, conn.Export()})
			}
		}
		return true
	})
	b, err := json.Marshal(st)
	if err == nil {
		tmp := s.f.state + ".tmp"
		if err = os.WriteFile(tmp, b, 0o600); err == nil {
			err = os.Rename(tmp, s.f.state)
		}
	}
	if err != nil {
		s.log.Warn("writing the state file", "err", err)
	}
}

// seedFromState resumes the TCP-AO sessions of the -state file.
func (s *shim) seedFromState() {
	if s.f.state == "" {
		return
	}
	b, err := os.ReadFile(s.f.state)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	var st shimState
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	if err != nil {
		s.log.Warn("reading the state file", "err", err)
		return
	}
	for _, e := range st.Sessions {
		if err := s.layer.Seed(e.Local, e.Remote, e.RepairState); err != nil {
			s.log.Warn("cannot resume a TCP-AO session", "local", e.Local, "remote", e.Remote, "err", err)
			continue
		}
		s.seeded++
		s.log.Info("resumed a TCP-AO session from the state file", "local", e.Local, "remote", e.Remote)
	}
}
