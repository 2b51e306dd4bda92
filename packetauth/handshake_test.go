package packetauth

import (
	"errors"
	"testing"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/segment"
)

// TestHandshakeFollowsConn: a TCP-AO connection's state and ISNs, as
// Conns, Conn and Export show them, are its ao.Conn's at every step of
// the handshake: the server is established once its SYN-ACK is signed,
// the client once that SYN-ACK verified; before its SYN-ACK the server
// neither verifies a segment of the connection (ao.ErrNoISN) nor signs
// one (ErrNoConn), and afterwards it does both.
func TestHandshakeFollowsConn(t *testing.T) {
	p := aoPair(t, false, "k", "k")
	want := func(e *end, st State, lisn, risn uint32) {
		t.Helper()
		ci, ok := info(e)
		if !ok || ci.State != st || ci.LocalISN != lisn || ci.RemoteISN != risn {
			t.Fatalf("%v: %+v, %v; want %v, ISNs %d/%d", e.ap, ci, ok, st, lisn, risn)
		}
		_, exported := e.l.Export(e.ap, ci.Remote)
		if exported != (st == StateEstablished) {
			t.Fatalf("%v in %v: exported %v", e.ap, st, exported)
		}
	}
	isnA, isnB := p.a.seq, p.b.seq
	p.send(p.a, p.b, segment.SYN, nil, mssOpt)
	want(p.a, StateSynSent, isnA, 0)
	want(p.b, StateSynReceived, 0, isnA)
	if _, ok := p.b.l.Conn(p.b.ap, p.a.ap); ok {
		t.Fatal("Conn of a server connection before its SYN-ACK")
	}

	// A's stack acknowledging early: A cannot sign it (B's ISN unknown);
	// signed by hand with the ISN B will choose, it reaches B before B's
	// SYN-ACK, and B refuses it.
	ack := p.build(p.a, p.b, segment.ACK, payload)
	if _, err := p.a.l.Outbound(nil, ack); !errors.Is(err, ao.ErrNoISN) {
		t.Fatalf("client's ACK before the SYN-ACK: %v", err)
	}
	var forger ao.Conn
	if err := forger.Init(p.a.l.cfg.AO, ao.Endpoint{Local: p.a.ap, Remote: p.b.ap, LocalISN: isnA, Established: true,
		RemoteISN: isnB, CurrentSendID: 1, RNextRecvID: 2}, ao.Policy{}); err != nil {
		t.Fatal(err)
	}
	defer forger.Close()
	var opt [20]byte
	early, err := segment.AppendPacket(nil, segment.IP{Src: p.a.ap.Addr(), Dst: p.b.ap.Addr()},
		segment.Fields{SrcPort: p.a.ap.Port(), DstPort: p.b.ap.Port(), Seq: isnA + 1, Ack: isnB + 1, Flags: segment.ACK, Window: 65535,
			Options: [][]byte{ao.AppendOption(opt[:0], 12)}},
		payload)
	if err != nil {
		t.Fatal(err)
	}
	s, err := segment.ParsePacket(early)
	if err == nil {
		err = forger.Sign(&s)
	}
	if err != nil {
		t.Fatalf("signing by hand: %v", err)
	}
	if _, err := p.b.l.Inbound(nil, early); !errors.Is(err, ao.ErrNoISN) {
		t.Fatalf("server got an ACK before its SYN-ACK: %v", err)
	}
	if _, err := p.b.l.Outbound(nil, p.build(p.b, p.a, segment.ACK, payload)); !errors.Is(err, ErrNoConn) {
		t.Fatalf("server's data before its SYN-ACK: %v", err)
	}
	ts := []byte{8, 10, 0, 0, 0, 1, 0, 0, 0, 0}
	full := p.build(p.b, p.a, segment.ACK, nil, ts, ts, ts, ts) // 40 option bytes: no room for TCP-AO
	if _, err := p.b.l.Outbound(nil, full); !errors.Is(err, ErrNoConn) {
		t.Fatalf("server's full-options ACK before its SYN-ACK: %v", err)
	}
	want(p.b, StateSynReceived, 0, isnA)

	wire, err := p.b.l.Outbound(nil, p.build(p.b, p.a, segment.SYN|segment.ACK, nil, mssOpt))
	if err != nil {
		t.Fatal(err)
	}
	want(p.b, StateEstablished, isnB, isnA)
	if _, err := p.b.l.Inbound(nil, early); err != nil {
		t.Fatalf("the same ACK after the SYN-ACK: %v", err)
	}
	want(p.a, StateSynSent, isnA, 0)
	if _, err := p.a.l.Inbound(nil, wire); err != nil {
		t.Fatal(err)
	}
	want(p.a, StateEstablished, isnA, isnB)
	p.b.seq++
	p.a.ack = p.b.seq
	p.send(p.a, p.b, segment.ACK, payload)
	p.send(p.b, p.a, segment.ACK, payload)
	if _, ok := p.b.l.Conn(p.b.ap, p.a.ap); !ok {
		t.Fatal("no Conn for an established server connection")
	}

	// FIN both ways: closing, the ISNs still the ao.Conn's.
	p.send(p.a, p.b, segment.ACK|segment.FIN, nil)
	p.send(p.b, p.a, segment.ACK|segment.FIN, nil)
	if ci, _ := info(p.a); ci.State != StateClosing || ci.LocalISN != isnA || ci.RemoteISN != isnB {
		t.Fatalf("A after FINs: %+v", ci)
	}
	if ci, _ := info(p.b); ci.State != StateClosing || ci.LocalISN != isnB || ci.RemoteISN != isnA {
		t.Fatalf("B after FINs: %+v", ci)
	}
}

// TestHandshakeFINNotClosing: FIN both ways before the handshake
// completed (a TCP-MD5 client that never saw the SYN-ACK) does not make
// the connection closing: it goes as a handshake that never completed.
// A TCP-AO server's FIN before its SYN-ACK cannot be signed at all.
func TestHandshakeFINNotClosing(t *testing.T) {
	p := newPair(t, false, Config{MD5: md5Ring(t, addrB4, "m")}, Config{MD5: md5Ring(t, addrA4, "m")})
	p.send(p.a, p.b, segment.SYN, nil)
	p.send(p.a, p.b, segment.ACK|segment.FIN, nil)
	p.send(p.b, p.a, segment.ACK|segment.FIN, nil)
	if ci, _ := info(p.a); ci.State != StateSynSent {
		t.Fatalf("A: %+v", ci)
	}
	if ci, _ := info(p.b); ci.State != StateClosing {
		t.Fatalf("B: %+v", ci)
	}

	q := aoPair(t, false, "k", "k")
	q.send(q.a, q.b, segment.SYN, nil)
	if _, err := q.b.l.Outbound(nil, q.build(q.b, q.a, segment.ACK|segment.FIN, nil)); !errors.Is(err, ErrNoConn) {
		t.Fatalf("FIN before the SYN-ACK: %v", err)
	}
	if ci, _ := info(q.b); ci.State != StateSynReceived {
		t.Fatalf("B: %+v", ci)
	}
}
