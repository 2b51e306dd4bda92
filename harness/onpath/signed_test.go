package onpath_test

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/harness/onpath"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/segment"
)

// TestBuildSignedSYN: a SYN signed with an MKT the attacker holds is
// accepted by a listener holding the same key (and refused by one whose
// key differs); its IP identification, which the MAC does not cover, can
// be changed and the SYN still verifies.
func TestBuildSignedSYN(t *testing.T) {
	a, b := netip.MustParseAddrPort("192.0.2.9:10001"), netip.MustParseAddrPort("198.51.100.2:179")
	key := func(peer netip.Addr, secret string) keys.AO {
		return keys.AO{Peer: netip.PrefixFrom(peer, 32), SendID: 2, RecvID: 2, Algorithm: "hmac(sha256)", Key: []byte(secret)}
	}
	mine := ao.NewKeyring(nil)
	m, err := mine.Add(key(b.Addr(), "leaked"))
	if err != nil {
		t.Fatal(err)
	}
	var k ao.TrafficKey
	pkt, err := onpath.BuildSignedSYN(nil, &k, m, a, b, 1000, 7)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := onpath.IPv4ID(pkt); err != nil || id != 7 {
		t.Errorf("IP ID %d (%v), want 7", id, err)
	}
	if err := onpath.SetIPv4ID(pkt, 4242); err != nil {
		t.Fatal(err)
	}
	accept := func(secret string) error {
		ring := ao.NewKeyring(nil)
		if _, err := ring.Add(key(a.Addr(), secret)); err != nil {
			t.Fatal(err)
		}
		seg, err := segment.ParsePacket(pkt)
		if err != nil {
			t.Fatal(err)
		}
		var c ao.Conn
		defer c.Close()
		signed, err := ao.NewListener(ring, ao.Policy{}, 0).Accept(&seg, &c)
		if err == nil && !signed {
			err = errors.New("accepted as unsigned")
		}
		return err
	}
	if err := accept("leaked"); err != nil {
		t.Errorf("the listener holding the key: %v", err)
	}
	if err := accept("other"); !errors.Is(err, ao.ErrBadMAC) {
		t.Errorf("a listener with another key: %v, want ao.ErrBadMAC", err)
	}
	if _, err := onpath.BuildSignedSYN(nil, &k, nil, a, b, 1, 1); !errors.Is(err, ao.ErrNotInitialized) {
		t.Errorf("no MKT: %v, want ao.ErrNotInitialized", err)
	}
	if _, err := onpath.IPv4ID([]byte{0x60}); !errors.Is(err, onpath.ErrNotIPv4) {
		t.Errorf("IPv4ID of a non-IPv4 packet: %v", err)
	}
	if err := onpath.SetIPv4ID(nil, 1); !errors.Is(err, onpath.ErrNotIPv4) {
		t.Errorf("SetIPv4ID of nil: %v", err)
	}
}
