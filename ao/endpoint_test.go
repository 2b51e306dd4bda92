package ao

import (
	"errors"
	"testing"

	"github.com/tcpsig/tcpsig/segment"
)

// twoRings returns a client and a server keyring holding one MKT for each
// other (client SendID 1, RecvID 2) and a second one (3/4).
func twoRings(t *testing.T) (cring, sring *Keyring) {
	cring, sring = NewKeyring(nil), NewKeyring(nil)
	for _, ids := range [][2]uint8{{1, 2}, {3, 4}} {
		c, s := cfg4("192.0.2.2/32", ids[0], ids[1]), cfg4("192.0.2.1/32", ids[1], ids[0])
		c.Key, s.Key = testKey(int(ids[0])), testKey(int(ids[0]))
		mustAdd(t, cring, c)
		mustAdd(t, sring, s)
	}
	return cring, sring
}

// acceptSYN sets c up as the client (ISN 1000) on cring and s as the
// server whose Listener on sring accepted c's signed SYN.
func acceptSYN(t *testing.T, cring, sring *Keyring, c, s *Conn) {
	t.Helper()
	if err := c.Init(cring, Endpoint{Local: cli4, Remote: srv4, LocalISN: 1000}, Policy{}); err != nil {
		t.Fatal(err)
	}
	syn := testSeg(t, cli4, srv4, 1000, 0, segment.SYN, 12, nil)
	if err := c.Sign(syn); err != nil {
		t.Fatal(err)
	}
	if ok, err := NewListener(sring, Policy{}, 0).Accept(syn, s); !ok || err != nil {
		t.Fatalf("Accept: %v %v", ok, err)
	}
}

// TestAcceptBeforeISN: Accept needs no local ISN; the server's first
// SYN-ACK gives it, and before it nothing else is signed or verified.
func TestAcceptBeforeISN(t *testing.T) {
	cring, sring := twoRings(t)
	var c, s Conn
	defer c.Close()
	defer s.Close()
	acceptSYN(t, cring, sring, &c, &s)
	if ep := s.Endpoint(); ep.Established || ep.RemoteISN != 1000 {
		t.Fatalf("after Accept: %+v, want the peer's ISN only", ep)
	}
	if err := s.Sign(testSeg(t, srv4, cli4, 7777, 1001, segment.ACK, 12, nil)); !errors.Is(err, ErrNoISN) {
		t.Errorf("Sign of an ACK before the SYN-ACK: %v, want ErrNoISN", err)
	}
	if err := s.Sign(testSeg(t, srv4, cli4, 7777, 1001, segment.RST, 12, nil)); !errors.Is(err, ErrNoISN) {
		t.Errorf("Sign of a RST before the SYN-ACK: %v, want ErrNoISN", err)
	}
	// A forged ACK (signed with the client's keys for a server ISN the
	// server has not chosen) before the SYN-ACK.
	var f Conn
	if err := f.Init(cring, Endpoint{Local: cli4, Remote: srv4, LocalISN: 1000, Established: true, RemoteISN: 7777,
		CurrentSendID: 1, RNextRecvID: 2}, Policy{}); err != nil {
		t.Fatal(err)
	}
	early := testSeg(t, cli4, srv4, 1001, 7778, segment.ACK, 12, []byte("early"))
	if err := f.Sign(early); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := s.Verify(early); !errors.Is(err, ErrNoISN) {
		t.Errorf("Verify of an ACK before the SYN-ACK: %v, want ErrNoISN", err)
	}

	synack := testSeg(t, srv4, cli4, 7777, 1001, segment.SYN|segment.ACK, 12, []byte("220 ready"))
	if err := s.Sign(synack); err != nil {
		t.Fatal(err)
	}
	if ep := s.Endpoint(); !ep.Established || ep.LocalISN != 7777 || ep.SendSeq != 7777 {
		t.Fatalf("after the SYN-ACK: %+v, want local ISN 7777", ep)
	}
	if err := c.Verify(synack); err != nil {
		t.Fatalf("client Verify of the SYN-ACK: %v", err)
	}
	// The SYN-ACK again (a retransmission) keeps the ISN; one with
	// another sequence number is refused (ErrISN) and changes nothing.
	if err := s.Sign(testSeg(t, srv4, cli4, 7777, 1001, segment.SYN|segment.ACK, 12, nil)); err != nil || s.Endpoint().LocalISN != 7777 {
		t.Fatalf("second SYN-ACK: %v, ISN %d", err, s.Endpoint().LocalISN)
	}
	if err := s.Sign(testSeg(t, srv4, cli4, 9999, 1001, segment.SYN|segment.ACK, 12, nil)); !errors.Is(err, ErrISN) || s.Endpoint().LocalISN != 7777 {
		t.Fatalf("a SYN-ACK at another ISN: %v, ISN %d; want ErrISN and 7777", err, s.Endpoint().LocalISN)
	}
	data := testSeg(t, cli4, srv4, 1001, 7778, segment.ACK, 12, []byte("OPEN"))
	if err := c.Sign(data); err != nil {
		t.Fatal(err)
	}
	if err := s.Verify(data); err != nil {
		t.Fatalf("server Verify of data: %v", err)
	}
	if err := s.Verify(early); err != nil {
		t.Fatalf("the early ACK, now that the ISN is known: %v", err)
	}
}

// TestEndpointRoundTrip: an established connection set up from known
// ISNs, moved over an SNE wrap and a key rotation, is set up again from
// its Endpoint on a fresh Conn, which goes on where it stood.
func TestEndpointRoundTrip(t *testing.T) {
	cring, sring := twoRings(t)
	var c, s Conn
	defer c.Close()
	defer s.Close()
	const cisn, sisn = 0xffff0000, 5000
	if err := c.Init(cring, Endpoint{Local: cli4, Remote: srv4, LocalISN: cisn, Established: true, RemoteISN: sisn,
		CurrentSendID: 1, RNextRecvID: 2}, Policy{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Init(sring, Endpoint{Local: srv4, Remote: cli4, LocalISN: sisn, Established: true, RemoteISN: cisn,
		CurrentSendID: 2, RNextRecvID: 1}, Policy{}); err != nil {
		t.Fatal(err)
	}
	send := func(from, to *Conn, seq uint32) {
		t.Helper()
		seg := testSeg(t, cli4, srv4, seq, sisn+1, segment.ACK, 12, []byte("x"))
		if from == &s {
			seg = testSeg(t, srv4, cli4, seq, cisn+1, segment.ACK, 12, []byte("x"))
		}
		if err := from.Sign(seg); err != nil {
			t.Fatalf("Sign seq %#x: %v", seq, err)
		}
		if err := to.Verify(seg); err != nil {
			t.Fatalf("Verify seq %#x: %v", seq, err)
		}
	}
	base := uint32(cisn)
	for _, seq := range []uint32{base + 1, base + 0x8000, 0x10} { // the last one past the wrap
		send(&c, &s, seq)
	}
	if err := s.SetRNext(3); err != nil { // ask the client for key 3/4
		t.Fatal(err)
	}
	send(&s, &c, sisn+1)
	ep := s.Endpoint()
	if !ep.Established || ep.RecvSNE != 1 || ep.RecvSeq != 0x10 || ep.RNextRecvID != 3 || ep.CurrentSendID != 2 {
		t.Fatalf("server Endpoint %+v, want receive SNE 1 at 0x10, keys 2/3", ep)
	}
	var s2 Conn
	defer s2.Close()
	if err := s2.Init(sring, ep, Policy{}); err != nil {
		t.Fatal(err)
	}
	if got := s2.Endpoint(); got != ep {
		t.Fatalf("restored Endpoint %+v, want %+v", got, ep)
	}
	send(&c, &s2, 0x20) // SNE 1, current key 3 (the client followed RNext)
	if k := c.Current(); k == nil || k.SendID() != 3 {
		t.Fatalf("client current key %v, want SendID 3", k)
	}
}

// TestInitEstablishedKeys: an Established Init names its keys; IDs that
// name no MKT are refused, not replaced by another key.
func TestInitEstablishedKeys(t *testing.T) {
	cring, _ := twoRings(t)
	var c Conn
	defer c.Close()
	for _, ids := range [][2]uint8{{9, 2}, {1, 9}, {2, 1}} {
		err := c.Init(cring, Endpoint{Local: cli4, Remote: srv4, Established: true, CurrentSendID: ids[0], RNextRecvID: ids[1]}, Policy{})
		if !errors.Is(err, ErrNoSuchKey) {
			t.Errorf("Init with current SendID %d, RNext RecvID %d: %v, want ErrNoSuchKey", ids[0], ids[1], err)
		}
		if c.Current() != nil {
			t.Errorf("a refused Init left current key %v", c.Current())
		}
	}
}

// TestServerISNRace: the SYN-ACK that gives a server's Conn its ISN is
// signed while another goroutine verifies the client's segments; under
// -race neither may read the ISN half-written, and every segment signed
// for the ISN verifies once the SYN-ACK is out.
func TestServerISNRace(t *testing.T) {
	cring, sring := twoRings(t)
	for round := 0; round < 50; round++ {
		var c, s, f Conn
		acceptSYN(t, cring, sring, &c, &s)
		if err := f.Init(cring, Endpoint{Local: cli4, Remote: srv4, LocalISN: 1000, Established: true, RemoteISN: 7777,
			CurrentSendID: 1, RNextRecvID: 2}, Policy{}); err != nil {
			t.Fatal(err)
		}
		ack := testSeg(t, cli4, srv4, 1001, 7778, segment.ACK, 12, nil)
		if err := f.Sign(ack); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			var last error
			for i := 0; i < 20; i++ {
				last = s.Verify(ack) // ErrNoISN until the SYN-ACK, then nil
				if last != nil && !errors.Is(last, ErrNoISN) {
					break
				}
				_ = s.Endpoint()
			}
			done <- last
		}()
		if err := s.Sign(testSeg(t, srv4, cli4, 7777, 1001, segment.SYN|segment.ACK, 12, nil)); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil && !errors.Is(err, ErrNoISN) {
			t.Fatalf("round %d: Verify during the SYN-ACK: %v", round, err)
		}
		if err := s.Verify(ack); err != nil {
			t.Fatalf("round %d: Verify after the SYN-ACK: %v", round, err)
		}
		c.Close()
		s.Close()
		f.Close()
	}
}

// TestSYNNotAtISN: a SYN whose sequence number is not the connection's
// ISN is refused with ErrISN, not signed with traffic keys of an ISN the
// peer never sees (TestAcceptBeforeISN: the same for a SYN-ACK).
func TestSYNNotAtISN(t *testing.T) {
	cring, sring := twoRings(t)
	var c, s Conn
	defer c.Close()
	defer s.Close()
	if err := c.Init(cring, Endpoint{Local: cli4, Remote: srv4, LocalISN: 1000}, Policy{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Sign(testSeg(t, cli4, srv4, 999, 0, segment.SYN, 12, nil)); !errors.Is(err, ErrISN) {
		t.Fatalf("Sign of a SYN at 999 for ISN 1000: %v, want ErrISN", err)
	}
	acceptSYN(t, cring, sring, &c, &s) // the SYN at the ISN still signs, and is accepted
	// An established connection's SYN, too (its ISN is the Endpoint's).
	var e Conn
	defer e.Close()
	if err := e.Init(cring, Endpoint{Local: cli4, Remote: srv4, LocalISN: 1000, Established: true, RemoteISN: 7777,
		CurrentSendID: 1, RNextRecvID: 2}, Policy{}); err != nil {
		t.Fatal(err)
	}
	if err := e.Sign(testSeg(t, cli4, srv4, 5, 0, segment.SYN, 12, nil)); !errors.Is(err, ErrISN) {
		t.Fatalf("Sign of a SYN at 5 on an established connection of ISN 1000: %v, want ErrISN", err)
	}
}
