package ao

import (
	"math/rand/v2"

	"github.com/tcpsig/tcpsig/kdf"
	"github.com/tcpsig/tcpsig/mac"
	"github.com/tcpsig/tcpsig/segment"
)

// TrafficKey is one traffic key of an MKT (RFC 5925 §5.2): the key of one
// direction and segment type of one connection, derived once by Derive and
// reused for every segment it covers. It is the way in for a caller
// without a [Conn], that keeps its own ISN and SNE state (a capture
// verifier, a middlebox, a stack answering a segment it has no connection
// for with a RST). Sign and Verify allocate nothing. Its zero value holds
// no key; Wipe clears it.
type TrafficKey struct {
	m   *MKT
	in  kdf.Input
	key mac.Key
}

// Derive makes k m's traffic key for seg: Send_SYN of seg's direction for
// a SYN without ACK, Send_other for every other segment, of a connection
// whose ISNs are isns (Src: seg's sender's). Errors: segment.ErrUnparsed
// (seg not made by package segment), [ErrKeyNotFound] (m nil or deleted).
func (k *TrafficKey) Derive(m *MKT, isns ISNs, seg *segment.Segment) error {
	if k == nil {
		return ErrNotInitialized
	}
	in, err := segmentInput(seg, isns)
	if err != nil {
		return err
	}
	return k.set(m, &in)
}

// set makes k m's traffic key for the KDF input in.
func (k *TrafficKey) set(m *MKT, in *kdf.Input) error {
	k.Wipe()
	if err := m.derive(in, &k.key, rand.Uint32()); err != nil {
		return err
	}
	k.m, k.in = m, *in
	return nil
}

// Covers reports whether k is m's traffic key for seg under isns, as
// Derive(m, isns, seg) would make it.
func (k *TrafficKey) Covers(m *MKT, isns ISNs, seg *segment.Segment) bool {
	if k == nil || k.m == nil || k.m != m {
		return false
	}
	in, err := segmentInput(seg, isns)
	return err == nil && in == k.in
}

// Sign writes KeyID k's MKT's SendID, rnextKeyID and the MAC of seg under
// k into seg's TCP-AO option, sne being the SNE of seg's sequence number
// (RFC 5925 §6.2; 0 in the first 2^32 bytes). The option must have room
// for the MKT's MAC (a longer one is shortened, NOPs filling the rest;
// a shorter one is [ErrNoRoom]). k need not be derived for seg itself: a
// Linux listener signs its RSTs with the key of the segment they answer.
func (k *TrafficKey) Sign(seg *segment.Segment, sne uint32, rnextKeyID uint8) error {
	if k == nil || k.m == nil {
		return ErrNotInitialized
	}
	if err := seg.Check(); err != nil {
		return err
	}
	off, err := labelOption(k.m, seg, rnextKeyID)
	if err != nil {
		return err
	}
	return k.run(seg, off, nil, sne)
}

// Verify checks seg's MAC under k in constant time, sne as for Sign. It
// does not look at the option's KeyID: the caller picks the MKT, usually
// by it. Errors: [ErrNoOption], [ErrMACLength], [ErrBadMAC] (a key that
// does not cover seg gives it too), [ErrNotInitialized] for a k without a key.
func (k *TrafficKey) Verify(seg *segment.Segment, sne uint32) error {
	if k == nil || k.m == nil {
		return ErrNotInitialized
	}
	off, opt, err := checkedOption(k.m, seg)
	if err != nil {
		return err
	}
	return k.run(seg, off, opt.MAC, sne)
}

// run signs seg (got nil) or verifies it against got with k, its option
// at off, on a request of the MKT's pool.
func (k *TrafficKey) run(seg *segment.Segment, off int, got []byte, sne uint32) error {
	req, err := k.m.request(rand.Uint32())
	if err != nil {
		return err
	}
	defer req.End()
	j := job{m: k.m, key: &k.key, w: req.MAC, sc: req.Scratch, off: off, sne: sne}
	if got == nil {
		return j.sign(seg)
	}
	return j.verify(seg, got)
}

// Wipe clears k's key bytes; k then holds no key.
func (k *TrafficKey) Wipe() {
	if k == nil {
		return
	}
	k.key.Wipe()
	*k = TrafficKey{}
}
