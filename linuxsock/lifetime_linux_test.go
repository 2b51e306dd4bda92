package linuxsock

import (
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/keys"
)

// TestLifetimeRefused: a kernel socket is a road that cannot honour key
// lifetimes (Linux's keys have none), so a key with one is refused before
// any setsockopt, naming it, rather than installed to be used outside its
// lifetime; Install and FileKeys' keys with it too.
func TestLifetimeRefused(t *testing.T) {
	var lc net.ListenConfig
	lc.SetMultipathTCP(false) // MPTCP sockets take no keys
	ln, err := lc.Listen(t.Context(), "tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s := ln.(*net.TCPListener)
	life := keys.Lifetime{Send: keys.Window{End: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)}}
	peer := netip.MustParsePrefix("192.0.2.1/32")
	ao := keys.AO{Peer: peer, SendID: 1, RecvID: 1, Algorithm: "hmac(sha1)", Key: []byte("k"), Lifetime: life}
	md5 := keys.MD5{Peer: peer, Key: []byte("k"), Lifetime: life}
	for name, err := range map[string]error{
		"AddAOKey":  AddAOKey(s, ao, 0),
		"AddMD5Key": AddMD5Key(s, md5),
		"Install":   Install(s, Keys{MD5: []keys.MD5{md5}}),
	} {
		if !errors.Is(err, ErrLifetime) || !errors.Is(err, keyfile.ErrLifetimeUnsupported) {
			t.Errorf("%s of a key with a lifetime: %v, want ErrLifetime", name, err)
		}
	}
	md5.Lifetime = keys.Lifetime{}
	if err := AddMD5Key(s, md5); err != nil {
		t.Errorf("the same key without a lifetime: %v", err)
	}
}
