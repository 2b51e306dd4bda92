package packetauth

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/segment"
)

// md5Established is a TCP-MD5 pair whose B layer also holds an (empty)
// TCP-AO keyring, as the shim's does, past its handshake and one data
// segment each way.
func md5Established(t *testing.T) (*pair, *md5sig.Keyring, *ao.Keyring) {
	t.Helper()
	ringB, aoB := md5Ring(t, addrA4, "md5 secret"), ao.NewKeyring(nil)
	p := newPair(t, false, Config{MD5: md5Ring(t, addrB4, "md5 secret")}, Config{AO: aoB, MD5: ringB})
	p.handshake()
	p.send(p.a, p.b, segment.ACK|segment.PSH, []byte("hello"))
	p.send(p.b, p.a, segment.ACK|segment.PSH, []byte("hi"))
	return p, ringB, aoB
}

// injectUnsigned is what an on-path host sends B as A: an unsigned
// segment of the session at A's next sequence number (in window).
func injectUnsigned(p *pair, f segment.Flags, payload []byte) error {
	_, err := p.b.l.Inbound(nil, p.build(p.a, p.b, f, payload))
	return err
}

// TestRevokedMD5 (the reload that takes a tracked TCP-MD5 session's key
// away): once B's key for A is deleted, or replaced by a TCP-AO MKT for
// A, the session's unsigned segments (data, RST) are dropped with
// ErrRevoked and counted, never delivered; B's own segments are not sent
// unsigned either.
func TestRevokedMD5(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(t *testing.T, md5 *md5sig.Keyring, aoRing *ao.Keyring)
	}{
		{"key deleted", func(t *testing.T, md5 *md5sig.Keyring, _ *ao.Keyring) {
			if err := md5.Delete(md5.Lookup(addrA4, 0), md5sig.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}},
		{"TCP-AO in its place", func(t *testing.T, md5 *md5sig.Keyring, aoRing *ao.Keyring) {
			if err := md5.Delete(md5.Lookup(addrA4, 0), md5sig.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := aoRing.Add(keys.AO{Peer: netip.PrefixFrom(addrA4, 32), SendID: 1, RecvID: 1, Algorithm: "hmac(sha1)", Key: []byte("ao")}); err != nil {
				t.Fatal(err)
			}
		}},
		{"TCP-AO beside it", func(t *testing.T, _ *md5sig.Keyring, aoRing *ao.Keyring) {
			if _, err := aoRing.Add(keys.AO{Peer: netip.PrefixFrom(addrA4, 32), SendID: 1, RecvID: 1, Algorithm: "hmac(sha1)", Key: []byte("ao")}); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, md5, aoRing := md5Established(t)
			c.change(t, md5, aoRing)
			before := p.b.l.Counters()
			for _, f := range []segment.Flags{segment.ACK | segment.PSH, segment.RST, segment.RST | segment.ACK} {
				if err := injectUnsigned(p, f, []byte("injected")); !errors.Is(err, ErrRevoked) {
					t.Errorf("unsigned %v after the change: %v, want ErrRevoked", f, err)
				}
			}
			if _, err := p.b.l.Outbound(nil, p.build(p.b, p.a, segment.ACK, []byte("out"))); !errors.Is(err, ErrRevoked) {
				t.Errorf("B's own segment after the change: %v, want ErrRevoked (never sent unsigned)", err)
			}
			after := p.b.l.Counters()
			if d := after.Dropped.KeyNotFound - before.Dropped.KeyNotFound; d != 4 {
				t.Errorf("%d drops counted as key-not-found, want 4", d)
			}
			ci, ok := info(p.b)
			if !ok || !ci.Revoked || ci.Dropped < 4 {
				t.Errorf("B's connection: %+v (found %v); want it tracked, revoked, its drops counted", ci, ok)
			}
		})
	}
}

// TestRevokeAO: Layer.Revoke drops a TCP-AO session's packets both ways,
// signed or not; its MKT is then deleted; a new connection on the same addresses to a peer no longer covered then
// starts afresh.
func TestRevokeAO(t *testing.T) {
	p := aoPair(t, false, "k", "k")
	p.handshake()
	p.send(p.a, p.b, segment.ACK|segment.PSH, []byte("hello"))
	ringB := p.b.l.cfg.AO
	m := ringB.LookupSend(addrA4, 2, 0)
	if n := p.b.l.Revoke(func(ci ConnInfo) bool { return ci.Remote.Addr() == addrA4 }); n != 1 {
		t.Fatalf("Revoke revoked %d connections, want 1", n)
	}
	// A's properly signed segment, and an injected unsigned one.
	if _, _, err := p.carry(p.a, p.b, p.build(p.a, p.b, segment.ACK|segment.PSH, []byte("signed"))); !errors.Is(err, ErrRevoked) {
		t.Errorf("a signed segment on the revoked session: %v, want ErrRevoked", err)
	}
	if err := injectUnsigned(p, segment.RST, nil); !errors.Is(err, ErrRevoked) {
		t.Errorf("an unsigned RST on the revoked session: %v, want ErrRevoked", err)
	}
	if _, err := p.b.l.Outbound(nil, p.build(p.b, p.a, segment.ACK, nil)); !errors.Is(err, ErrRevoked) {
		t.Errorf("B's own segment: %v, want ErrRevoked", err)
	}
	if err := ringB.Delete(m, ao.DeleteOptions{}); err != nil {
		t.Fatalf("delete after Revoke: %v", err)
	}
	if ep, ok := p.b.l.Export(p.b.ap, p.a.ap); ok {
		t.Errorf("a revoked session exported for resumption: %+v", ep)
	}
	// B now covers nobody: a new connection from B (a new ISN) passes.
	p.b.seq += 100000
	pkt := p.build(p.b, p.a, segment.SYN, nil)
	if out, err := p.b.l.Outbound(nil, pkt); err != nil || &out[0] != &pkt[0] {
		t.Errorf("a new SYN to the no longer covered peer: %v; want it passed untouched", err)
	}
	if _, ok := info(p.b); ok {
		t.Error("the revoked connection is still tracked after a new connection replaced it")
	}
}

// TestDeleteRevokesAO: deleting the only key of a tracked TCP-AO
// session's peer revokes the session at once, without Layer.Revoke: the
// peer's signed and unsigned segments and the stack's own are dropped
// with ErrRevoked, and the session is listed as revoked.
func TestDeleteRevokesAO(t *testing.T) {
	p := aoPair(t, false, "k", "k")
	p.handshake()
	p.send(p.a, p.b, segment.ACK|segment.PSH, []byte("hello"))
	ringB := p.b.l.cfg.AO
	if err := ringB.Delete(ringB.LookupSend(addrA4, 2, 0), ao.DeleteOptions{}); err != nil {
		t.Fatalf("delete of the session's key: %v", err)
	}
	if _, _, err := p.carry(p.a, p.b, p.build(p.a, p.b, segment.ACK|segment.PSH, []byte("signed"))); !errors.Is(err, ErrRevoked) {
		t.Errorf("a signed segment after the delete: %v, want ErrRevoked", err)
	}
	if err := injectUnsigned(p, segment.ACK|segment.PSH, []byte("unsigned")); !errors.Is(err, ErrRevoked) {
		t.Errorf("an unsigned segment after the delete: %v, want ErrRevoked", err)
	}
	if _, err := p.b.l.Outbound(nil, p.build(p.b, p.a, segment.ACK, nil)); !errors.Is(err, ErrRevoked) {
		t.Errorf("B's own segment: %v, want ErrRevoked", err)
	}
	if ci, ok := info(p.b); !ok || !ci.Revoked {
		t.Errorf("B's connection: %+v (found %v); want it listed as revoked", ci, ok)
	}
}

// TestSeedRevoked: a revoked connection resumed after a restart drops
// its packets both ways though nothing covers its peer.
func TestSeedRevoked(t *testing.T) {
	l, err := New(Config{AO: ao.NewKeyring(nil)})
	if err != nil {
		t.Fatal(err)
	}
	local, remote := netip.AddrPortFrom(addrB4, 179), netip.AddrPortFrom(addrA4, 40000)
	if err := l.SeedRevoked(local, remote, KindMD5); err != nil {
		t.Fatal(err)
	}
	if err := l.SeedRevoked(local, remote, 0); !errors.Is(err, ErrConfig) {
		t.Errorf("SeedRevoked of kind 0: %v, want ErrConfig", err)
	}
	in, _ := segment.AppendPacket(nil, segment.IP{Src: addrA4, Dst: addrB4}, segment.Fields{SrcPort: 40000, DstPort: 179, Flags: segment.RST}, nil)
	if _, err := l.Inbound(nil, in); !errors.Is(err, ErrRevoked) {
		t.Errorf("inbound RST: %v, want ErrRevoked", err)
	}
	out, _ := segment.AppendPacket(nil, segment.IP{Src: addrB4, Dst: addrA4}, segment.Fields{SrcPort: 179, DstPort: 40000, Flags: segment.ACK}, []byte("x"))
	if _, err := l.Outbound(nil, out); !errors.Is(err, ErrRevoked) {
		t.Errorf("outbound data: %v, want ErrRevoked", err)
	}
	if ci, ok := info(&end{l: l, ap: local}); !ok || !ci.Revoked {
		t.Errorf("ConnInfo %+v, %v: want a revoked connection", ci, ok)
	}
}

// TestConnsNilYield: Conns with a nil yield on a layer that tracks
// connections returns, it does not call nil.
func TestConnsNilYield(t *testing.T) {
	p := aoPair(t, false, "k", "k")
	p.handshake()
	p.a.l.Conns(nil)
}

// TestAdoptAndRevokeUncovered: a TCP-MD5 session met past its handshake
// is tracked from its first verified segment, and once its key is
// deleted RevokeUncovered revokes it at once, before any other packet.
func TestAdoptAndRevokeUncovered(t *testing.T) {
	ringB := md5Ring(t, addrA4, "md5 secret")
	p := newPair(t, false, Config{MD5: md5Ring(t, addrB4, "md5 secret")}, Config{MD5: ringB})
	p.a.ack = 0x20000001 // as if past a handshake B's layer never saw
	p.send(p.a, p.b, segment.ACK|segment.PSH, []byte("mid-stream"))
	ci, ok := info(p.b)
	if !ok || ci.Kind != KindMD5 || ci.State != StateEstablished {
		t.Fatalf("B's layer after a verified segment of an unseen session: %+v, tracked %v", ci, ok)
	}
	if n := p.b.l.RevokeUncovered(); n != 0 {
		t.Fatalf("RevokeUncovered with every key in place revoked %d", n)
	}
	if err := ringB.Delete(ringB.Lookup(addrA4, 0), md5sig.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := p.b.l.RevokeUncovered(); n != 1 {
		t.Fatalf("RevokeUncovered after the key's delete revoked %d, want 1", n)
	}
	if ci, _ := info(p.b); !ci.Revoked {
		t.Errorf("the session is not revoked: %+v", ci)
	}
	if err := injectUnsigned(p, segment.ACK, []byte("injected")); !errors.Is(err, ErrRevoked) {
		t.Errorf("unsigned segment after the revocation: %v, want ErrRevoked", err)
	}
}
