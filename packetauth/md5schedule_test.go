package packetauth

import (
	"errors"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/segment"
)

// TestMD5ScheduleHitless: B (a shim's layer) holds A's old and new TCP-MD5
// passwords as a schedule (old sends until t0 and is accepted until
// t0+1m, new is accepted from t0-1m and sends from t0); A is a router
// with one password at a time. Whether A changes its password before
// B's send start or after it, every segment both ways is accepted: B
// signs with the password A uses. After the old key's accept end, A's
// segments signed with it are dropped.
func TestMD5ScheduleHitless(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for _, order := range []string{"router first", "schedule first"} {
		t.Run(order, func(t *testing.T) {
			var mu sync.Mutex
			now := t0.Add(-30 * time.Second)
			clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			at := func(ring *md5sig.Keyring, tm time.Time) { mu.Lock(); now = tm; mu.Unlock(); ring.Advance() }

			ringB := md5sig.NewKeyring(nil)
			ringB.SetClock(clock)
			peerA := netip.PrefixFrom(addrA4, 32)
			if _, err := ringB.AddAll([]keys.MD5{
				{Peer: peerA, Key: []byte("old"), Lifetime: keys.Lifetime{Send: keys.Window{End: t0}, Accept: keys.Window{End: t0.Add(time.Minute)}}},
				{Peer: peerA, Key: []byte("new"), Lifetime: keys.Lifetime{Send: keys.Window{Start: t0}, Accept: keys.Window{Start: t0.Add(-time.Minute)}}},
			}, nil); err != nil {
				t.Fatal(err)
			}
			ringA := md5Ring(t, addrB4, "old")
			p := newPair(t, false, Config{MD5: ringA}, Config{MD5: ringB})
			p.handshake()
			exchange := func(what string) {
				t.Helper()
				for _, d := range [][2]*end{{p.a, p.b}, {p.b, p.a}} {
					if _, _, err := p.carry(d[0], d[1], p.build(d[0], d[1], segment.ACK|segment.PSH, []byte(what))); err != nil {
						t.Fatalf("%s: %v -> %v: %v", what, d[0].ap, d[1].ap, err)
					}
				}
			}
			setPassword := func(pw string) {
				if _, err := ringA.Add(keys.MD5{Peer: netip.PrefixFrom(addrB4, 32), Key: []byte(pw)}); err != nil {
					t.Fatal(err)
				}
			}
			exchange("before any change")
			if order == "router first" {
				setPassword("new")
				exchange("the router on the new password, before the send start")
				at(ringB, t0)
				exchange("after the send start")
			} else {
				at(ringB, t0)
				exchange("after the send start, the router still on the old password")
				setPassword("new")
				exchange("the router on the new password")
			}
			at(ringB, t0.Add(time.Minute))
			exchange("after the old key's accept end")
			setPassword("old")
			if _, _, err := p.carry(p.a, p.b, p.build(p.a, p.b, segment.ACK|segment.PSH, []byte("stale"))); !errors.Is(err, md5sig.ErrBadMAC) {
				t.Fatalf("the old password after its accept end: %v, want ErrBadMAC", err)
			}
			if d := p.b.l.Counters().Dropped.Total(); d != 1 {
				t.Errorf("B dropped %d segments, want only the stale one", d)
			}
		})
	}
}
