package ao

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/segment"
)

// A removal always wins: a keyring's delete never waits for or fails on
// the connections that use the key; they move to another key of their
// peer or are revoked, and nothing signed with the key is accepted once
// the delete began.

// mirror4 is the server's side of the client's cfg4(peer, recv, send):
// the same master key.
func mirror4(peer string, send, recv uint8) keys.AO {
	c := cfg4(peer, send, recv)
	c.Key = testKey(int(recv))
	return c
}

// TestDeleteMovesUsersToNewest: deleting a connection's current key, then
// its RNext key, without replacements moves it to the newest MKT left
// for its peer, as a new connection would pick it; it keeps signing.
func TestDeleteMovesUsersToNewest(t *testing.T) {
	r := NewKeyring(nil)
	k1 := mustAdd(t, r, cfg4("192.0.2.2/32", 1, 2))
	k3 := mustAdd(t, r, cfg4("192.0.2.2/32", 3, 4))
	mustAdd(t, r, cfg4("192.0.2.0/24", 9, 10)) // another prefix, covers the peer too
	k5 := mustAdd(t, r, cfg4("192.0.2.2/32", 5, 6))
	mustAdd(t, r, cfg4("198.51.100.0/24", 7, 8)) // newer, but another peer's
	c := conn4(t, r, 1, 4)                       // current k1, RNext k3
	if err := r.Delete(k1, DeleteOptions{}); err != nil {
		t.Fatalf("delete of the current key: %v", err)
	}
	if c.Current() != k5 || c.RNext() != k3 {
		t.Fatalf("after deleting k1: current %v RNext %v, want k5 and k3", c.Current(), c.RNext())
	}
	if err := r.Delete(k3, DeleteOptions{Async: true}); err != nil {
		t.Fatalf("delete of the RNext key: %v", err)
	}
	if o, err := signData(t, c, 11); err != nil || o.KeyID != 5 || o.RNextKeyID != 6 {
		t.Fatalf("sign after both deletes: %+v %v, want KeyID 5 RNextKeyID 6", o, err)
	}
	if r.LookupSend(srv4.Addr(), 1, 0) != nil || r.LookupRecv(srv4.Addr(), 4, 0) != nil || r.Len() != 3 {
		t.Fatal("a deleted key is still found")
	}
}

// TestDeleteLastKeyRevokes: deleting the last key of a connection's peer
// revokes it: it signs nothing and accepts nothing, signed or unsigned,
// even after a new key for the peer is added; Init starts it over.
func TestDeleteLastKeyRevokes(t *testing.T) {
	cring, sring := NewKeyring(nil), NewKeyring(nil)
	mustAdd(t, cring, cfg4("192.0.2.2/32", 1, 2))
	sk := mustAdd(t, sring, mirror4("192.0.2.1/32", 2, 1))
	p := newPair(t, cring, sring, cli4, srv4, 10, 20, 0, 11, 0, 21, 1, 2, 2, 1)
	seg := testSeg(t, cli4, srv4, 11, 21, segment.ACK, 12, []byte("data"))
	if err := p.c.Sign(seg); err != nil {
		t.Fatal(err)
	}
	if err := sring.Delete(sk, DeleteOptions{}); err != nil {
		t.Fatalf("delete of the server's only key: %v", err)
	}
	if err := p.s.Verify(cloneSeg(seg)); !errors.Is(err, ErrRevoked) {
		t.Errorf("verify of a signed segment on the revoked connection: %v, want ErrRevoked", err)
	}
	if err := p.s.Verify(testSeg(t, cli4, srv4, 15, 21, segment.ACK, 0, []byte("x"))); !errors.Is(err, ErrRevoked) {
		t.Errorf("verify of an unsigned segment on the revoked connection: %v, want ErrRevoked", err)
	}
	if err := p.s.Sign(testSeg(t, srv4, cli4, 21, 15, segment.ACK, 12, nil)); !errors.Is(err, ErrRevoked) {
		t.Errorf("sign on the revoked connection: %v, want ErrRevoked", err)
	}
	mustAdd(t, sring, mirror4("192.0.2.1/32", 2, 1)) // the same key again: a revocation is final
	if err := p.s.Verify(cloneSeg(seg)); !errors.Is(err, ErrRevoked) {
		t.Errorf("verify after a new key was added: %v, want ErrRevoked", err)
	}
	if err := restore(p.s, sring, Endpoint{Local: srv4, Remote: cli4}, Policy{}, Endpoint{LocalISN: 20, RemoteISN: 10, SendSeq: 21, RecvSeq: 11, CurrentSendID: 2, RNextRecvID: 1}); err != nil {
		t.Fatalf("Init after revocation: %v", err)
	}
	if err := p.s.Verify(cloneSeg(seg)); err != nil {
		t.Errorf("verify after Init: %v", err)
	}
}

// TestDeleteWinsOverConcurrentVerify: while verifiers take a peer's
// segments signed with an MKT, the MKT is deleted; no verify that starts
// after the delete returned accepts a segment, whatever it had loaded.
func TestDeleteWinsOverConcurrentVerify(t *testing.T) {
	for round := range 20 {
		cring, sring := NewKeyring(nil), NewKeyring(nil)
		mustAdd(t, cring, cfg4("192.0.2.2/32", 1, 2))
		mustAdd(t, sring, mirror4("192.0.2.1/32", 12, 11)) // the server keeps a key for the peer
		sk := mustAdd(t, sring, mirror4("192.0.2.1/32", 2, 1))
		p := newPair(t, cring, sring, cli4, srv4, 10, 20, 0, 11, 0, 21, 1, 2, 2, 1)
		segs := make([]*segment.Segment, 64)
		for i := range segs {
			segs[i] = testSeg(t, cli4, srv4, 11+uint32(i)*4, 21, segment.ACK, 12, []byte("data"))
			if err := p.c.Sign(segs[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.s.Verify(cloneSeg(segs[0])); err != nil {
			t.Fatalf("round %d: verify before the delete: %v", round, err)
		}
		var deleted atomic.Bool
		var late atomic.Int64
		var wg sync.WaitGroup
		for w := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < 4*len(segs); i += 2 {
					after := deleted.Load()
					if err := p.s.Verify(cloneSeg(segs[i%len(segs)])); err == nil && after {
						late.Add(1)
					}
				}
			}()
		}
		if err := sring.Delete(sk, DeleteOptions{Async: round%2 == 0}); err != nil {
			t.Fatalf("round %d: delete: %v", round, err)
		}
		deleted.Store(true)
		wg.Wait()
		if n := late.Load(); n != 0 {
			t.Fatalf("round %d: %d segments signed with the deleted key accepted after its delete", round, n)
		}
		if cur := p.s.Current(); cur == nil || cur.SendID() != 12 {
			t.Fatalf("round %d: the server's current key %v, want the one left (SendID 12)", round, cur)
		}
	}
}

// TestReplayDoesNotRollBackCurrent: a connection follows the RNextKeyID
// of a segment only if the segment is not older than the newest it
// accepted: a replayed old segment that verifies, or a replayed pure ACK
// at the same sequence number acknowledging less, does not move the
// current key back (RFC 5925 §7.5.2 asks the sender to switch on the
// peer's request; a replay is not the peer's).
func TestReplayDoesNotRollBackCurrent(t *testing.T) {
	cring, sring := NewKeyring(nil), NewKeyring(nil)
	mustAdd(t, cring, cfg4("192.0.2.2/32", 1, 2))
	mustAdd(t, cring, cfg4("192.0.2.2/32", 11, 12))
	mustAdd(t, sring, mirror4("192.0.2.1/32", 2, 1))
	mustAdd(t, sring, mirror4("192.0.2.1/32", 12, 11))
	p := newPair(t, cring, sring, cli4, srv4, 10, 20, 0, 11, 0, 21, 1, 2, 2, 1)
	server := func(seq, ack uint32, payload []byte) *segment.Segment {
		seg := testSeg(t, srv4, cli4, seq, ack, segment.ACK, 12, payload)
		if err := p.s.Sign(seg); err != nil {
			t.Fatal(err)
		}
		return seg
	}
	deliver := func(what string, seg *segment.Segment, wantCurrent uint8) {
		t.Helper()
		if err := p.c.Verify(cloneSeg(seg)); err != nil {
			t.Fatalf("%s: verify: %v", what, err)
		}
		if got := p.c.Current().SendID(); got != wantCurrent {
			t.Fatalf("%s: the client's current key has SendID %d, want %d", what, got, wantCurrent)
		}
	}
	old := server(21, 11, []byte("data")) // RNextKeyID 1
	deliver("the server's first segment", old, 1)
	if err := p.s.SetRNext(11); err != nil {
		t.Fatal(err)
	}
	deliver("the server asks for key 11", server(25, 11, []byte("more")), 11)
	deliver("the first segment replayed", old, 11)

	// Pure ACKs at one sequence number: only the acknowledgment moves.
	if err := p.s.SetRNext(1); err != nil {
		t.Fatal(err)
	}
	ack1 := server(29, 15, nil) // RNextKeyID 1
	deliver("a pure ACK asking for key 1", ack1, 1)
	if err := p.s.SetRNext(11); err != nil {
		t.Fatal(err)
	}
	deliver("a later pure ACK asking for key 11", server(29, 19, nil), 11)
	deliver("the earlier pure ACK replayed", ack1, 11)
}

// TestVerifyLoadedBeforeDeleteRefused is the race above made certain: a
// verify that loaded the MKT before its delete (the connection's traffic
// key still cached) and checks the MAC after it refuses the segment.
func TestVerifyLoadedBeforeDeleteRefused(t *testing.T) {
	cring, sring := NewKeyring(nil), NewKeyring(nil)
	mustAdd(t, cring, cfg4("192.0.2.2/32", 1, 2))
	sk := mustAdd(t, sring, mirror4("192.0.2.1/32", 2, 1))
	p := newPair(t, cring, sring, cli4, srv4, 10, 20, 0, 11, 0, 21, 1, 2, 2, 1)
	var segs [2]*segment.Segment
	for i := range segs {
		segs[i] = testSeg(t, cli4, srv4, 11+uint32(i)*4, 21, segment.ACK, 12, []byte("data"))
		if err := p.c.Sign(segs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.s.Verify(segs[0]); err != nil { // derives and caches the traffic key
		t.Fatal(err)
	}
	off, opt, err := findOption(segs[1])
	if err != nil {
		t.Fatal(err)
	}
	if err := sring.Delete(sk, DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	l := &p.s.recv
	j := job{m: sk, off: off}
	l.mu.Lock()
	_, err = p.s.verifyLocked(l, &j, segs[1], &Option{KeyID: opt.KeyID, RNextKeyID: 2, MAC: opt.MAC})
	l.mu.Unlock()
	if !errors.Is(err, ErrKeyNotFound) {
		t.Fatalf("a verify under the deleted MKT finishing after its delete: %v, want ErrKeyNotFound", err)
	}
}
