package ao

import (
	"github.com/tcpsig/tcpsig/segment"
)

// Helpers over the exported calls, for tests that sign or verify one
// segment at a time, restore connections, or answer without one.

// restore sets c up as an established connection at ep's addresses with
// st's ISNs, SNEs and keys.
func restore(c *Conn, r *Keyring, ep Endpoint, p Policy, st Endpoint) error {
	st.Local, st.Remote, st.L3Index, st.Established = ep.Local, ep.Remote, ep.L3Index, true
	return c.Init(r, st, p)
}

// signSegment signs seg with a traffic key of m derived for it.
func signSegment(m *MKT, isns ISNs, sne uint32, rnext uint8, seg *segment.Segment) error {
	var k TrafficKey
	defer k.Wipe()
	if err := k.Derive(m, isns, seg); err != nil {
		return err
	}
	return k.Sign(seg, sne, rnext)
}

// verifySegment verifies seg with a traffic key of m derived for it.
func verifySegment(m *MKT, isns ISNs, sne uint32, seg *segment.Segment) error {
	var k TrafficKey
	defer k.Wipe()
	if err := k.Derive(m, isns, seg); err != nil {
		return err
	}
	return k.Verify(seg, sne)
}

// listenerKey is the traffic key a Linux listening socket signs its RST
// to in with (tcp_ao_prepare_reset, TCP_LISTEN): the MKT whose RecvID is
// in's RNextKeyID, the key of in's own direction with ISNs (in's sequence
// number, 0); SNE 0, KeyID the MKT's SendID, RNextKeyID its RecvID.
func listenerKey(k *TrafficKey, ring *Keyring, in *segment.Segment) (*MKT, error) {
	_, opt, err := findOption(in)
	if err != nil {
		return nil, err
	}
	m := ring.LookupRecv(in.Src().Unmap(), opt.RNextKeyID, 0)
	if m == nil {
		return nil, ErrKeyNotFound
	}
	return m, k.Derive(m, ISNs{Src: in.Header().Seq()}, in)
}

// listenerReset signs rst as a Linux listener answers in.
func listenerReset(ring *Keyring, in, rst *segment.Segment) error {
	var k TrafficKey
	defer k.Wipe()
	m, err := listenerKey(&k, ring, in)
	if err != nil {
		return err
	}
	return k.Sign(rst, 0, m.RecvID())
}

// verifyListenerReset verifies rst as a Linux listener's answer to in,
// signed with m.
func verifyListenerReset(m *MKT, in, rst *segment.Segment) error {
	var k TrafficKey
	defer k.Wipe()
	if err := k.Derive(m, ISNs{Src: in.Header().Seq()}, in); err != nil {
		return err
	}
	return k.Verify(rst, 0)
}

// replyReset signs rst, a stack's answer to in when it knows the ISNs
// but keeps no Conn (a TIME-WAIT record, a syncookie), as Linux does:
// KeyID the peer's RNextKeyID (else the MKT of in's KeyID), RNextKeyID
// that MKT's RecvID, the traffic key of rst's direction.
func replyReset(ring *Keyring, in, rst *segment.Segment, lisn, risn uint32) error {
	src := in.Src().Unmap()
	var m *MKT
	if _, opt, err := findOption(in); err == nil {
		if m = ring.LookupSend(src, opt.RNextKeyID, 0); m == nil {
			m = ring.LookupRecv(src, opt.KeyID, 0)
		}
	} else if ring != nil {
		m = ring.first(src, 0)
	}
	if m == nil {
		return ErrKeyNotFound
	}
	var k TrafficKey
	defer k.Wipe()
	if err := k.Derive(m, ISNs{Src: lisn, Dst: risn}, rst); err != nil {
		return err
	}
	return k.Sign(rst, ComputeSNE(0, lisn, rst.Header().Seq()), m.RecvID())
}
