package md5sig

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/segment"
)

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (f *fakeClock) Now() time.Time  { f.mu.Lock(); defer f.mu.Unlock(); return f.now }
func (f *fakeClock) Set(t time.Time) { f.mu.Lock(); f.now = t; f.mu.Unlock() }

var t0 = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)

// schedule is a keyring on a fake clock with the peer 192.0.2.2's two
// keys: "old" sends until t0 and is accepted until t0+1m, "new" is
// accepted from t0-1m and sends from t0.
func schedule(t *testing.T) (r *Keyring, clk *fakeClock, old, new *Key) {
	t.Helper()
	r, clk = NewKeyring(nil), &fakeClock{now: t0.Add(-time.Hour)}
	r.SetClock(clk.Now)
	ks, err := r.AddAll([]keys.MD5{
		{Peer: pfx("192.0.2.2/32"), Key: []byte("old password"), Lifetime: keys.Lifetime{Send: keys.Window{End: t0}, Accept: keys.Window{End: t0.Add(time.Minute)}}},
		{Peer: pfx("192.0.2.2/32"), Key: []byte("new password"), Lifetime: keys.Lifetime{Send: keys.Window{Start: t0}, Accept: keys.Window{Start: t0.Add(-time.Minute)}}},
	}, nil)
	if err != nil {
		t.Fatalf("AddAll of a schedule: %v", err)
	}
	return r, clk, ks[0], ks[1]
}

// fromPeer is a segment from the peer signed with password (by the
// reference digest, as a router with that password would).
func fromPeer(t *testing.T, password string) *segment.Segment {
	t.Helper()
	tcp := tcpHeader(179, 40000, 100, 200, segment.ACK, true)
	d := refDigest(addr("192.0.2.2"), addr("192.0.2.1"), tcp, []byte(password))
	a, _ := segment.TCP(tcp).AuthOptions()
	copy(tcp[a.MD5+2:], d[:])
	s := mustSeg(t, addr("192.0.2.2"), addr("192.0.2.1"), tcp)
	return &s
}

// toPeer signs a segment to the peer with SignWith and returns the key
// it used, checked against the reference digest of that key's password.
func toPeer(t *testing.T, r *Keyring, peerKey *Key, passwords map[*Key]string) (*Key, error) {
	t.Helper()
	tcp := tcpHeader(40000, 179, 200, 100, segment.ACK, true)
	s := mustSeg(t, addr("192.0.2.1"), addr("192.0.2.2"), tcp)
	k, err := r.SignWith(&s, 0, peerKey)
	if err != nil {
		return nil, err
	}
	want := refDigest(addr("192.0.2.1"), addr("192.0.2.2"), tcp, []byte(passwords[k]))
	if got := digestOf(t, &s); string(got) != string(want[:]) {
		t.Fatalf("signed with %v, but the digest is not that password's", k)
	}
	return k, nil
}

// TestScheduleHitless: inside the accept overlap a segment verifies with
// either key; a connection signs with the key its peer uses, whichever
// end changed first, and with the newer key once its send lifetime began
// when the peer has not been heard yet; outside its accept lifetime a key
// verifies nothing, to the nanosecond.
func TestScheduleHitless(t *testing.T) {
	r, clk, old, new := schedule(t)
	pw := map[*Key]string{old: "old password", new: "new password"}
	at := func(tm time.Time) { clk.Set(tm); r.Advance() }

	at(t0.Add(-time.Minute - time.Nanosecond))
	if _, err := r.VerifyWith(fromPeer(t, "new password"), 0, nil); !errors.Is(err, ErrBadMAC) {
		t.Errorf("the new key a nanosecond before its accept start: %v, want ErrBadMAC", err)
	}
	at(t0.Add(-30 * time.Second))
	for _, c := range []struct {
		password string
		want     *Key
	}{{"old password", old}, {"new password", new}} {
		if k, err := r.VerifyWith(fromPeer(t, c.password), 0, nil); err != nil || k != c.want {
			t.Errorf("inside the overlap, a segment signed with the %s: %v %v", c.password, k, err)
		}
	}
	if k, err := toPeer(t, r, nil, pw); err != nil || k != old {
		t.Errorf("before the send start, a peer not heard yet: signed with %v (%v), want the old key", k, err)
	}
	// The peer changed first: it signs with the new key, and gets it.
	if k, err := toPeer(t, r, new, pw); err != nil || k != new {
		t.Errorf("before the send start, a peer on the new key: signed with %v (%v), want the new key", k, err)
	}
	at(t0)
	if k, err := toPeer(t, r, nil, pw); err != nil || k != new {
		t.Errorf("after the send start, a peer not heard yet: signed with %v (%v), want the new key", k, err)
	}
	// This end changed first: the peer still signs with the old key.
	if k, err := toPeer(t, r, old, pw); err != nil || k != old {
		t.Errorf("after the send start, a peer still on the old key: signed with %v (%v), want the old key", k, err)
	}
	at(t0.Add(time.Minute - time.Nanosecond))
	if k, err := r.VerifyWith(fromPeer(t, "old password"), 0, new); err != nil || k != old {
		t.Errorf("the old key a nanosecond before its accept end: %v %v", k, err)
	}
	at(t0.Add(time.Minute))
	if _, err := r.VerifyWith(fromPeer(t, "old password"), 0, old); !errors.Is(err, ErrBadMAC) {
		t.Errorf("the old key at its accept end: %v, want ErrBadMAC", err)
	}
	if k, err := toPeer(t, r, old, pw); err != nil || k != new {
		t.Errorf("after the old key's accept end: signed with %v (%v), want the new key", k, err)
	}
	if old.AcceptActive() || old.SendActive() || !new.SendActive() || !new.AcceptActive() {
		t.Errorf("states after the overlap: old %v/%v new %v/%v", old.SendActive(), old.AcceptActive(), new.SendActive(), new.AcceptActive())
	}
}

// TestScheduleAddRules: keys of one peer that all have lifetimes stay
// side by side; one without replaces them all, as a key of the same
// peer always did; a list with a timed and an untimed key of one peer is
// refused.
func TestScheduleAddRules(t *testing.T) {
	r, _, old, new := schedule(t)
	if r.Len() != 2 || !old.SendActive() || new.SendActive() {
		t.Fatalf("a schedule: %d keys, old sending %v, new sending %v", r.Len(), old.SendActive(), new.SendActive())
	}
	plain := mustAdd(t, r, keys.MD5{Peer: pfx("192.0.2.2/32"), Key: []byte("plain")})
	if r.Len() != 1 || r.Lookup(addr("192.0.2.2"), 0) != plain || old.AcceptActive() || new.AcceptActive() {
		t.Fatalf("a key without a lifetime did not replace the schedule: %d keys", r.Len())
	}
	_, err := NewKeyring(nil).AddAll([]keys.MD5{
		{Peer: pfx("192.0.2.2/32"), Key: []byte("a"), Lifetime: keys.Lifetime{Send: keys.Window{End: t0}}},
		{Peer: pfx("192.0.2.2/32"), Key: []byte("b")},
	}, nil)
	if !errors.Is(err, ErrDuplicate) {
		t.Fatalf("a timed and an untimed key of one peer: %v, want ErrDuplicate", err)
	}
}
