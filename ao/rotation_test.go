package ao

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"testing"

	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/segment"
)

// side is one end of a test connection.
type side struct {
	name      string
	conn      *Conn
	ring      *Keyring
	addr      netip.AddrPort
	isn       uint32
	seq       uint32
	keys      map[uint8][]byte // master key by SendID, for the reference MAC
	alg       string
	sent, got int
}

// send signs a data segment to peer, checks its KeyIDs and its MAC against
// the reference computation, delivers it to the peer and requires it to
// verify.
func (a *side) send(t *testing.T, b *side, wantKeyID, wantRNext uint8) {
	t.Helper()
	payload := []byte(fmt.Sprintf("%s segment %d", a.name, a.sent))
	seg := testSeg(t, a.addr, b.addr, a.seq, b.seq, segment.ACK|segment.PSH, 12, payload)
	if err := a.conn.Sign(seg); err != nil {
		t.Fatalf("%s sign: %v", a.name, err)
	}
	o := aoOpt(t, seg)
	if o.KeyID != wantKeyID || o.RNextKeyID != wantRNext {
		t.Fatalf("%s sent KeyID %d RNextKeyID %d, want %d %d", a.name, o.KeyID, o.RNextKeyID, wantKeyID, wantRNext)
	}
	if want := refMAC(t, a.alg, a.keys[o.KeyID], sendOtherInput(a.addr, b.addr, a.isn, b.isn), seg, 0, 12, false); !bytes.Equal(o.MAC, want) {
		t.Fatalf("%s MAC %x, reference %x", a.name, o.MAC, want)
	}
	if err := b.conn.Verify(seg); err != nil {
		t.Fatalf("%s verify of %s's KeyID %d: %v", b.name, a.name, o.KeyID, err)
	}
	a.seq += uint32(len(payload))
	a.sent++
	b.got++
}

// exchange sends n segments each way, alternating.
func exchange(t *testing.T, a, b *side, n int, aKey, aNext, bKey, bNext uint8) {
	t.Helper()
	for i := 0; i < n; i++ {
		a.send(t, b, aKey, aNext)
		b.send(t, a, bKey, bNext)
	}
}

// TestRotation rotates both directions of a connection from one MKT pair
// to another mid-stream, as Linux does: the
// initiator sets its RNext key to the new key's RecvID; the peer switches
// its current key when a segment carrying that RNextKeyID verifies (and
// not when a forged one arrives); then the peer does the same for the
// other direction. SendID and RecvID differ on every MKT so a swap of the
// two shows up. Every segment verifies throughout, every MAC matches the
// reference computation, the old keys can then be deleted, and the
// per-key counters add up to the connection's.
func TestRotation(t *testing.T) {
	for _, alg := range []string{"hmac(sha1)", "cmac(aes128)"} {
		for _, clientFirst := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/clientFirst=%v", alg, clientFirst), func(t *testing.T) {
				testRotation(t, alg, clientFirst)
			})
		}
	}
}

func testRotation(t *testing.T, alg string, clientFirst bool) {
	oldKey, newKey := testKey(10), testKey(20)
	cring, sring := NewKeyring(nil), NewKeyring(nil)
	// Old pair: client 1→2, server 2→1. New pair: client 3→4, server 4→3.
	cOld := mustAdd(t, cring, keys.AO{Peer: host(srv4.Addr()), SendID: 1, RecvID: 2, Algorithm: alg, Key: oldKey})
	sOld := mustAdd(t, sring, keys.AO{Peer: host(cli4.Addr()), SendID: 2, RecvID: 1, Algorithm: alg, Key: oldKey})
	p := newPair(t, cring, sring, cli4, srv4, 1000, 5000, 0, 1001, 0, 5001, 1, 2, 2, 1)
	c := &side{name: "client", conn: p.c, ring: cring, addr: cli4, isn: 1000, seq: 1001, alg: alg,
		keys: map[uint8][]byte{1: oldKey, 3: newKey}}
	s := &side{name: "server", conn: p.s, ring: sring, addr: srv4, isn: 5000, seq: 5001, alg: alg,
		keys: map[uint8][]byte{2: oldKey, 4: newKey}}
	exchange(t, c, s, 3, 1, 2, 2, 1)

	// The new keys are added mid-stream; nothing changes until asked.
	cNew := mustAdd(t, cring, keys.AO{Peer: host(srv4.Addr()), SendID: 3, RecvID: 4, Algorithm: alg, Key: newKey})
	sNew := mustAdd(t, sring, keys.AO{Peer: host(cli4.Addr()), SendID: 4, RecvID: 3, Algorithm: alg, Key: newKey})
	exchange(t, c, s, 2, 1, 2, 2, 1)

	// a asks b (via RNext) to send with the new key, then b asks a.
	a, b := c, s
	aOldSend, aNewRecv, aNewSend := uint8(1), uint8(4), uint8(3)
	bOldSend, bNewRecv, bNewSend := uint8(2), uint8(3), uint8(4)
	if !clientFirst {
		a, b = s, c
		aOldSend, aNewRecv, aNewSend, bOldSend, bNewRecv, bNewSend = bOldSend, bNewRecv, bNewSend, aOldSend, aNewRecv, aNewSend
	}
	bOldRecv := aOldSend

	if err := a.conn.SetRNext(aNewRecv); err != nil {
		t.Fatal(err)
	}
	if err := a.conn.SetRNext(77); !errors.Is(err, ErrNoSuchKey) {
		t.Fatalf("SetRNext of an unknown RecvID: %v", err)
	}
	if got := a.conn.RNext().RecvID(); got != aNewRecv {
		t.Fatalf("%s RNext RecvID %d, want %d", a.name, got, aNewRecv)
	}
	// A forged segment asking b to switch must not switch it.
	forged := testSeg(t, a.addr, b.addr, a.seq, b.seq, segment.ACK, 12, []byte("forged"))
	forged.Header()[forged.Auth().AO+2], forged.Header()[forged.Auth().AO+3] = aOldSend, aNewRecv
	if err := b.conn.Verify(forged); !errors.Is(err, ErrBadMAC) {
		t.Fatalf("forged: %v", err)
	}
	if got := b.conn.Current().SendID(); got != bOldSend {
		t.Fatalf("a forged RNextKeyID switched %s's current key to %d", b.name, got)
	}
	// b still sends with the old key until a's genuine segment arrives.
	b.send(t, a, bOldSend, bOldRecv)
	a.send(t, b, aOldSend, aNewRecv) // b switches on this one
	if got := b.conn.Current().SendID(); got != bNewSend {
		t.Fatalf("%s current SendID %d after the RNext request, want %d", b.name, got, bNewSend)
	}
	// b's segments now carry the new KeyID, a's still the old one.
	exchange(t, b, a, 3, bNewSend, bOldRecv, aOldSend, aNewRecv)

	// The other direction.
	if err := b.conn.SetRNext(bNewRecv); err != nil {
		t.Fatal(err)
	}
	b.send(t, a, bNewSend, bNewRecv) // a switches on this one
	if got := a.conn.Current().SendID(); got != aNewSend {
		t.Fatalf("%s current SendID %d, want %d", a.name, got, aNewSend)
	}
	exchange(t, a, b, 3, aNewSend, aNewRecv, bNewSend, bNewRecv)

	// An RNextKeyID naming no key is ignored ("If the key is not found we
	// do nothing"): a signed segment asking for SendID 99.
	seg := testSeg(t, a.addr, b.addr, a.seq, b.seq, segment.ACK, 12, []byte("rnext 99"))
	if err := a.conn.Sign(seg); err != nil {
		t.Fatal(err)
	}
	seg.Header()[seg.Auth().AO+3] = 99
	o := aoOpt(t, seg)
	copy(o.MAC, refMAC(t, a.alg, a.keys[o.KeyID], sendOtherInput(a.addr, b.addr, a.isn, b.isn), seg, 0, 12, false))
	if err := b.conn.Verify(seg); err != nil {
		t.Fatal(err)
	}
	a.seq += 8
	b.got++
	if got := b.conn.Current().SendID(); got != bNewSend {
		t.Fatalf("unknown RNextKeyID moved %s's current key to %d", b.name, got)
	}

	// The old keys are neither current nor RNext any more: they go.
	for _, d := range []struct {
		r *Keyring
		m *MKT
	}{{cring, cOld}, {sring, sOld}} {
		if err := d.r.Delete(d.m, DeleteOptions{}); err != nil {
			t.Fatalf("delete old %v: %v", d.m, err)
		}
	}
	exchange(t, c, s, 2, 3, 4, 4, 3)

	// Per-key counters add up to the connection's.
	for _, x := range []struct {
		side     *side
		old, new *MKT
	}{{c, cOld, cNew}, {s, sOld, sNew}} {
		og, ob := x.old.Counters()
		ng, nb := x.new.Counters()
		cc := x.side.conn.Counters()
		if og+ng != cc.Good || ob+nb != cc.Bad || cc.Good != uint64(x.side.got) {
			t.Errorf("%s: keys good %d+%d bad %d+%d, connection %+v, received %d", x.side.name, og, ng, ob, nb, cc, x.side.got)
		}
		if og == 0 || ng == 0 {
			t.Errorf("%s: both keys should have verified segments: %d %d", x.side.name, og, ng)
		}
	}
}

// TestRotationListener checks the keys an accepted connection starts with
// (Linux tcp_ao_copy_all_matching): current = the MKT whose SendID is the
// SYN's RNextKeyID, RNext = the MKT that verified the SYN; and that the
// SYN-ACK carries them.
func TestRotationListener(t *testing.T) {
	cring, sring := NewKeyring(nil), NewKeyring(nil)
	for _, k := range []struct{ cs, cr uint8 }{{1, 2}, {3, 4}, {5, 6}} {
		mustAdd(t, cring, keys.AO{Peer: host(srv4.Addr()), SendID: k.cs, RecvID: k.cr, Algorithm: "hmac(sha1)", Key: testKey(int(k.cs))})
		mustAdd(t, sring, keys.AO{Peer: host(cli4.Addr()), SendID: k.cr, RecvID: k.cs, Algorithm: "hmac(sha1)", Key: testKey(int(k.cs))})
	}
	var c, s Conn
	defer c.Close()
	defer s.Close()
	if err := c.Init(cring, Endpoint{Local: cli4, Remote: srv4, LocalISN: 100}, Policy{}); err != nil {
		t.Fatal(err)
	}
	if err := c.SetCurrent(3); err != nil {
		t.Fatal(err)
	}
	if err := c.SetRNext(6); err != nil {
		t.Fatal(err)
	}
	syn := testSeg(t, cli4, srv4, 100, 0, segment.SYN, 12, nil)
	if err := c.Sign(syn); err != nil {
		t.Fatal(err)
	}
	if o := aoOpt(t, syn); o.KeyID != 3 || o.RNextKeyID != 6 {
		t.Fatalf("SYN KeyID %d RNext %d", o.KeyID, o.RNextKeyID)
	}
	l := NewListener(sring, Policy{}, 0)
	if ok, err := l.Accept(syn, &s); !ok || err != nil {
		t.Fatalf("Accept: %v %v", ok, err)
	}
	if s.Current().SendID() != 6 || s.RNext().RecvID() != 3 {
		t.Fatalf("accepted: current %v RNext %v", s.Current(), s.RNext())
	}
	synack := testSeg(t, srv4, cli4, 900, 101, segment.SYN|segment.ACK, 12, []byte("greeting"))
	if err := s.Sign(synack); err != nil {
		t.Fatal(err)
	}
	if o := aoOpt(t, synack); o.KeyID != 6 || o.RNextKeyID != 3 {
		t.Fatalf("SYN-ACK KeyID %d RNext %d", o.KeyID, o.RNextKeyID)
	}
	if err := c.Verify(synack); err != nil {
		t.Fatal(err)
	}
	data := testSeg(t, cli4, srv4, 101, 909, segment.ACK, 12, []byte("data"))
	if err := c.Sign(data); err != nil {
		t.Fatal(err)
	}
	if err := s.Verify(data); err != nil {
		t.Fatal(err)
	}

	// A SYN whose RNextKeyID names none of the listener's SendIDs: the
	// accepted connection's current key falls back to the newest MKT for
	// the peer, as Linux's tcp_ao_copy_all_matching falls back to the head
	// of its newest-first list; RNext is still the MKT that verified it.
	mustAdd(t, cring, keys.AO{Peer: host(srv4.Addr()), SendID: 7, RecvID: 8, Algorithm: "hmac(sha1)", Key: testKey(7)})
	var c2, s2 Conn
	defer c2.Close()
	defer s2.Close()
	if err := c2.Init(cring, Endpoint{Local: cli4, Remote: srv4, LocalISN: 200}, Policy{}); err != nil {
		t.Fatal(err)
	}
	if err := c2.SetCurrent(1); err != nil {
		t.Fatal(err)
	}
	if err := c2.SetRNext(8); err != nil {
		t.Fatal(err)
	}
	syn = testSeg(t, cli4, srv4, 200, 0, segment.SYN, 12, nil)
	if err := c2.Sign(syn); err != nil {
		t.Fatal(err)
	}
	if ok, err := l.Accept(syn, &s2); !ok || err != nil {
		t.Fatalf("Accept with an unknown RNextKeyID: %v %v", ok, err)
	}
	if s2.Current().SendID() != 6 || s2.RNext().RecvID() != 1 {
		t.Errorf("accepted with an unknown RNextKeyID: current %v RNext %v, want SendID 6 (newest), RecvID 1", s2.Current(), s2.RNext())
	}
}
