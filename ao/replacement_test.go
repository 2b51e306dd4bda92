package ao

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/tcpsig/tcpsig/segment"
)

// TestDeleteReplacementCoversUsers: a shared /24 MKT used by sessions
// with .5 and .7 cannot be deleted with a replacement configured for .5
// alone (ErrReplacement, nothing moved), and once every user has a
// replacement of its own the delete goes through.
func TestDeleteReplacementCoversUsers(t *testing.T) {
	r := NewKeyring(nil)
	shared := mustAdd(t, r, cfg4("192.0.2.0/24", 1, 1))
	only5 := mustAdd(t, r, cfg4("192.0.2.5/32", 2, 2))
	c5, c7 := sessionWith(t, r, "192.0.2.5"), sessionWith(t, r, "192.0.2.7")
	c5.Close() // the defaults were the newest MKT each: put both on shared
	c5 = restoredOn(t, r, "192.0.2.5", 1, 1)
	c7.Close()
	c7 = restoredOn(t, r, "192.0.2.7", 1, 1)

	err := r.Delete(shared, DeleteOptions{Current: only5, RNext: only5})
	if !errors.Is(err, ErrReplacement) {
		t.Fatalf("delete with a replacement for .5 only: %v, want ErrReplacement", err)
	}
	if c5.Current() != shared || c7.Current() != shared || c7.RNext() != shared || r.Find(shared.Peer(), 1, 1) != shared {
		t.Fatal("the refused delete moved a session or removed the key")
	}
	// A different L3 domain is not a cover either.
	other := cfg4("192.0.2.0/24", 3, 3)
	other.HasIfIndex, other.IfIndex = true, 7
	inVRF := mustAdd(t, r, other)
	if err := r.Delete(shared, DeleteOptions{Current: inVRF, RNext: inVRF}); !errors.Is(err, ErrReplacement) {
		t.Fatalf("delete with a replacement of another L3 domain: %v, want ErrReplacement", err)
	}
	// .7 moves to a key of its own first: then .5's replacement covers
	// the one user left.
	mustAdd(t, r, cfg4("192.0.2.7/32", 4, 4))
	if err := c7.SetCurrent(4); err != nil {
		t.Fatal(err)
	}
	if err := c7.SetRNext(4); err != nil {
		t.Fatal(err)
	}
	if err := r.Delete(shared, DeleteOptions{Current: only5, RNext: only5}); err != nil {
		t.Fatalf("delete once each user is covered: %v", err)
	}
	if c5.Current() != only5 || c7.Current().SendID() != 4 {
		t.Fatalf("after the delete: .5 on %v, .7 on %v", c5.Current(), c7.Current())
	}
}

// TestVerifyRNextChecksPeer: a segment from .7 with the KeyID of an MKT
// configured for .5 alone, MACed with .5's key, is refused on .7's
// session even when that MKT is made the session's RNext key behind the
// keyring's checks (as a delete without them once did): the one writer
// of a connection's roles keeps no key that does not cover its peer, so
// Verify's fast path never meets one.
func TestVerifyRNextChecksPeer(t *testing.T) {
	r := NewKeyring(nil)
	mustAdd(t, r, cfg4("192.0.2.0/24", 1, 1))
	only5 := mustAdd(t, r, cfg4("192.0.2.5/32", 2, 2))
	c7 := restoredOn(t, r, "192.0.2.7", 1, 1)
	c7.setRole(roleRNext, only5)
	if c7.RNext() == only5 {
		t.Fatal("a key of .5 became .7's RNext key")
	}

	// .5 (who holds its own key) forges a segment from .7's address.
	peer7 := netip.AddrPortFrom(netip.MustParseAddr("192.0.2.7"), 179)
	forged := testSeg(t, peer7, cli4, 21, 11, segment.ACK, 12, []byte("injected"))
	if err := signSegment(only5, ISNs{Src: 20, Dst: 10}, 0, 2, forged); err != nil {
		t.Fatal(err)
	}
	if err := c7.Verify(forged); !errors.Is(err, ErrKeyNotFound) {
		t.Fatalf("forged segment from .7 with .5's key: %v, want ErrKeyNotFound", err)
	}
}

// TestClosedConnRefuses: after Close a connection neither signs nor
// verifies anything, an unsigned segment included.
func TestClosedConnRefuses(t *testing.T) {
	r := NewKeyring(nil)
	mustAdd(t, r, cfg4("192.0.2.2/32", 1, 2))
	c := conn4(t, r, 1, 2)
	c.Close()
	if _, err := signData(t, c, 11); !errors.Is(err, ErrConnClosed) {
		t.Errorf("Sign after Close: %v, want ErrConnClosed", err)
	}
	unsigned := testSeg(t, srv4, cli4, 21, 11, segment.ACK, 0, []byte("x"))
	if err := c.Verify(unsigned); !errors.Is(err, ErrConnClosed) {
		t.Errorf("Verify of an unsigned segment after Close: %v, want ErrConnClosed", err)
	}
}

// sessionWith is a new client connection from cli4 to peer:179 on r's
// default keys.
func sessionWith(t *testing.T, r *Keyring, peer string) *Conn {
	t.Helper()
	c := new(Conn)
	if err := c.Init(r, Endpoint{Local: cli4, Remote: netip.AddrPortFrom(netip.MustParseAddr(peer), 179), LocalISN: 10}, Policy{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// restoredOn is an established connection from cli4 to peer:179 with the
// given current SendID and RNext RecvID.
func restoredOn(t *testing.T, r *Keyring, peer string, cur, next uint8) *Conn {
	t.Helper()
	c := new(Conn)
	err := restore(c, r, Endpoint{Local: cli4, Remote: netip.AddrPortFrom(netip.MustParseAddr(peer), 179)}, Policy{},
		Endpoint{LocalISN: 10, RemoteISN: 20, SendSeq: 11, RecvSeq: 21, CurrentSendID: cur, RNextRecvID: next})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}
