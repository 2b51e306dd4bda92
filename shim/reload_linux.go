//go:build linux

package shim

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/packetauth"
)

// Reload reads the keys file again and applies it whole, or refuses it
// whole (a file that does not load, is readable by others, or holds MKTs
// a keyring would refuse: the keys stay as they were). Applied, it never
// weakens: every kind the file names for a peer is enforced from then on;
// a session whose MKT went is moved to the newest MKT of the file that
// covers its own peer, or, without one, revoked (its packets dropped and
// counted, never passed unsigned, its peer still queued until it
// expires); a TCP-MD5 session whose key went is revoked the same way. The
// peer's last TCP-AO entry in the file becomes its sessions' RNext (see
// rotate), and the rules follow the peers. It waits for Run to do it (the
// rules belong to Run's namespace), so it also tells when Run is serving
// packets.
func (s *Shim) Reload() error {
	done := make(chan error, 1)
	select {
	case s.reloads <- done:
		return <-done
	case <-s.stopped:
		return ErrStopped
	}
}

func (s *Shim) reload() error {
	k, err := loadKeys(s.cfg.Keys)
	if err != nil {
		s.log.Error("reload refused: keeping the current keys", "err", err)
		return fmt.Errorf("reload refused, keys unchanged: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	errs := []error{s.update(k)}
	if !slices.Equal(s.rules, s.rulePeers()) {
		// Replacing the rules drops the packets waiting in the queue
		// (the kernel flushes a hook's queued packets when the hook
		// goes): only when the peers changed.
		errs = append(errs, s.installRules())
	}
	s.rotate()
	if err := errors.Join(errs...); err != nil {
		s.log.Error("reload", "err", err)
		return err
	}
	s.log.Info("keys reloaded", "peers", len(s.keys.Peers), "ao_keys", len(s.keys.AO), "md5_keys", len(s.keys.MD5))
	return nil
}

// update applies k and revokes at once the sessions whose key went, so
// that rulePeers keeps queueing their peers (a session whose packets no
// longer reach the layer would never be revoked by one). Under s.mu.
func (s *Shim) update(k *keySet) error {
	err := s.apply(k)
	if n := s.layer.RevokeUncovered(); n > 0 {
		s.log.Warn("sessions whose key the reload removed are revoked: their packets are dropped until they expire", "sessions", n)
	}
	return err
}

// apply makes the keyrings hold exactly the keys of k, changing only what
// differs, so that live sessions keep their keys; a session of an MKT that
// goes moves to another that covers its peer or is revoked first (see
// Reload). It ends by checking that the keyrings hold exactly the file's
// keys (checkKeyrings). k's key bytes are wiped once the keyrings have
// theirs. Under s.mu (or before Run).
func (s *Shim) apply(k *keySet) error {
	defer k.wipe()
	var errs []error
	// TCP-AO: keep the same entries, add new ones, delete gone ones.
	keep := make([]*ao.MKT, len(k.AO))
	var gone []*ao.MKT
	for i := range s.keys.AO {
		j := -1
		for jj := range k.AO {
			if keep[jj] == nil && sameAO(s.keys, i, k, jj) {
				j = jj
				break
			}
		}
		if j >= 0 {
			keep[j] = s.aoMKT[i]
		} else {
			gone = append(gone, s.aoMKT[i])
		}
	}
	// New MKTs that take the IDs of one that goes wait for its delete.
	var later []int
	for j, c := range k.AO {
		if keep[j] != nil {
			continue
		}
		if slices.ContainsFunc(gone, func(m *ao.MKT) bool { return clashes(c, m) }) {
			later = append(later, j)
			continue
		}
		m, err := s.aoRing.Add(c)
		if err != nil {
			errs = append(errs, fmt.Errorf("ao[%d]: %w", j, err))
			continue
		}
		keep[j] = m
	}
	for _, m := range gone {
		if err := s.retire(m, k, keep); err != nil {
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
	md5Keys, err := s.applyMD5(k)
	if err != nil {
		errs = append(errs, err)
	}
	s.keys, s.aoMKT, s.md5Key = k, keep, md5Keys
	if err := s.checkKeyrings(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// applyMD5 is apply's TCP-MD5 half: it returns the key of each entry of k.
// Add replaces a key of the same peer atomically. A tracked session whose
// peer no TCP-MD5 key covers any more (deleted, or a TCP-AO MKT now covers
// it) is revoked by update, so the order of the deletes does not matter.
func (s *Shim) applyMD5(k *keySet) ([]*md5sig.Key, error) {
	var errs []error
	md5Keys := make([]*md5sig.Key, len(k.MD5))
	for j := range k.MD5 {
		for i := range s.keys.MD5 {
			if s.md5Key[i] != nil && sameMD5(s.keys, i, k, j) {
				md5Keys[j] = s.md5Key[i]
				break
			}
		}
		if md5Keys[j] != nil {
			continue
		}
		key, err := s.md5Ring.Add(k.MD5[j])
		if err != nil {
			errs = append(errs, fmt.Errorf("md5[%d]: %w", j, err))
			continue
		}
		md5Keys[j] = key
	}
	for i := range s.keys.MD5 {
		if s.md5Key[i] == nil || slices.Contains(md5Keys, s.md5Key[i]) {
			continue // kept
		}
		// Replaced by an Add of its peer (ErrNoSuchKey), or not: a key
		// of a schedule stays beside its peer's others until deleted.
		if err := s.md5Ring.Delete(s.md5Key[i], md5sig.DeleteOptions{Async: true}); err != nil && !errors.Is(err, md5sig.ErrNoSuchKey) {
			errs = append(errs, err)
		}
	}
	return md5Keys, errors.Join(errs...)
}

// clashes reports whether c would be refused beside m: overlapping peers
// with the same SendID or RecvID.
func clashes(c keys.AO, m *ao.MKT) bool {
	ifi, bound := m.IfIndex()
	return c.Clashes(keys.AO{Peer: m.Peer(), SendID: m.SendID(), RecvID: m.RecvID(), IfIndex: ifi, HasIfIndex: bound})
}

// retire deletes m, an MKT the new file k no longer has. Each session
// that uses it is first moved to the newest MKT of k (keep holds them)
// that covers the session's own peer, and a handshake begun with m is
// revoked (see moveUsers); then the delete, which always wins: from its
// first moment no lookup finds m, and a session that took m up meanwhile
// (a new SYN, a peer's RNextKeyID) is moved by the keyring to the newest
// MKT left for its peer, or revoked. Its error is the delete's, which
// only an MKT the keyring no longer held can meet (ao.ErrNoSuchKey).
func (s *Shim) retire(m *ao.MKT, k *keySet, keep []*ao.MKT) error {
	s.moveUsers(m, k, keep)
	if err := s.aoRing.Delete(m, ao.DeleteOptions{Async: true}); err != nil {
		return fmt.Errorf("TCP-AO key %v: %w", m, err)
	}
	return nil
}

// moveUsers moves every tracked session whose current or RNext key is m
// to the newest MKT of k that covers its peer, and revokes those for
// which there is none (or the move fails).
func (s *Shim) moveUsers(m *ao.MKT, k *keySet, keep []*ao.MKT) {
	revoke := map[[2]netip.AddrPort]bool{}
	s.layer.Conns(func(c packetauth.ConnInfo) bool {
		if c.Kind != packetauth.KindAO || c.Revoked {
			return true
		}
		peer := c.Remote.Addr()
		cur, next := s.aoRing.LookupSend(peer, c.CurrentKeyID, 0), s.aoRing.LookupRecv(peer, c.RNextKeyID, 0)
		if cur != m && next != m && c.State != packetauth.StateSynReceived {
			return true
		}
		rep := newestFor(k, keep, peer, m)
		var err error
		switch {
		case rep == nil:
			err = errors.New("no other key of the file covers its peer")
		case c.State == packetauth.StateSynReceived:
			err = errors.New("its handshake is not complete") // cannot be moved: the layer knows no keys yet
		default:
			if cur == m {
				err = s.layer.SetCurrent(c.Local, c.Remote, rep.SendID())
			}
			if err == nil && next == m {
				err = s.layer.SetRNext(c.Local, c.Remote, rep.RecvID())
			}
		}
		if err != nil {
			revoke[[2]netip.AddrPort{c.Local, c.Remote}] = true
			s.log.Warn("TCP-AO key removed: revoking its session, whose packets are dropped from now on",
				"local", c.Local, "remote", c.Remote, "key", m, "why", err)
		} else {
			s.log.Info("TCP-AO key removed: session moved", "local", c.Local, "remote", c.Remote, "from", m, "to", rep)
		}
		return true
	})
	if len(revoke) > 0 {
		s.layer.Revoke(func(c packetauth.ConnInfo) bool { return revoke[[2]netip.AddrPort{c.Local, c.Remote}] })
	}
}

// newestFor returns the MKT of the last entry of k (file order) that
// covers peer in the default L3 domain, other than m; nil if none.
func newestFor(k *keySet, keep []*ao.MKT, peer netip.Addr, m *ao.MKT) *ao.MKT {
	for j := len(k.AO) - 1; j >= 0; j-- {
		c := k.AO[j]
		if keep[j] != nil && keep[j] != m && c.Peer.Contains(peer.Unmap()) && (!c.HasIfIndex || c.IfIndex == 0) {
			return keep[j]
		}
	}
	return nil
}

// rotate makes the last TCP-AO entry of each session's peer in the keys
// file the session's RNext: the key the peer is asked to send with, which
// it switches to once it has it (RFC 5925 §7.5.2). The shim's own send key
// follows the peer's RNextKeyID the same way, so the two ends may add the
// new key in either order without a segment being refused. Under s.mu.
func (s *Shim) rotate() {
	for c := range s.layer.Conns {
		if c.Kind != packetauth.KindAO || c.Revoked || c.State == packetauth.StateSynReceived {
			continue
		}
		for j := len(s.keys.AO) - 1; j >= 0; j-- {
			cfg := s.keys.AO[j]
			m := s.aoMKT[j]
			if !cfg.Peer.Contains(c.Remote.Addr()) || m == nil || (cfg.HasIfIndex && cfg.IfIndex != 0) ||
				!m.SendActive() || !m.AcceptActive() {
				continue // a key outside its lifetimes: the keyring moves sessions to it when it begins
			}
			if c.RNextKeyID == cfg.RecvID {
				break
			}
			if err := s.layer.SetRNext(c.Local, c.Remote, cfg.RecvID); err != nil {
				s.log.Warn("cannot ask the peer to rotate", "local", c.Local, "remote", c.Remote, "rnext", cfg.RecvID, "err", err)
			} else {
				s.log.Info("asking the peer to rotate", "local", c.Local, "remote", c.Remote, "rnext", cfg.RecvID)
			}
			break
		}
	}
}

// rulePeers is what the rules queue: the keys file's peers, and the peer
// of each revoked session outside them, whose packets the layer drops
// until the session expires (without the rule they would reach the
// kernel unchecked). Under s.mu.
func (s *Shim) rulePeers() []netip.Prefix {
	covered := func(a netip.Addr) bool {
		return slices.ContainsFunc(s.keys.Peers, func(p netip.Prefix) bool { return p.Contains(a) })
	}
	var extra []netip.Prefix
	for c := range s.layer.Conns {
		if a := c.Remote.Addr().Unmap(); c.Revoked && !covered(a) {
			extra = append(extra, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	slices.SortFunc(extra, netip.Prefix.Compare)
	return append(slices.Clone(s.keys.Peers), slices.Compact(extra)...)
}

// followRevoked reinstalls the rules when the revoked sessions outside the
// file's peers changed (one expired): Run's ticker calls it.
func (s *Shim) followRevoked() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if peers := s.rulePeers(); !slices.Equal(peers, s.rules) {
		if err := s.installRules(); err != nil {
			s.log.Error("rules for the revoked sessions' peers", "err", err)
		}
	}
}
