package md5sig

import (
	"errors"

	"github.com/tcpsig/tcpsig/mac"
	"github.com/tcpsig/tcpsig/segment"
)

// Errors of the per-segment calls. Every forged or damaged signature is
// ErrBadMAC; details go to the counters only. A segment whose options are
// malformed gets the error of package segment instead (segment.ErrBothAuth,
// segment.ErrDuplicateAuth, segment.ErrAuthOption, segment.ErrOptionLength:
// Linux's SKB_DROP_REASON_TCP_AUTH_HDR).
var (
	ErrBadMAC     = errors.New("md5sig: signature mismatch")                          // TCPMD5Failure
	ErrMissing    = errors.New("md5sig: unsigned segment from a peer that has a key") // TCPMD5NotFound
	ErrUnexpected = errors.New("md5sig: signed segment from a peer that has no key")  // TCPMD5Unexpected
	ErrAOOption   = errors.New("md5sig: segment carries TCP-AO, not TCP-MD5")         // TCP_AOUNEXPECTED
	ErrNoOption   = errors.New("md5sig: segment has no MD5 option to sign")           // the stack did not reserve it
	ErrNoKey      = errors.New("md5sig: no key for the peer")                         // nothing to sign with
	ErrNoRoom     = errors.New("md5sig: option space too short for the MD5 option")   // the stack reserved too little
	// ErrNotInitialized is a call on a nil Keyring (the zero Keyring is
	// ready to use).
	ErrNotInitialized = errors.New("md5sig: not set up (nil Keyring)")
)

// Sign computes the signature of an outgoing segment with the key for its
// destination in L3 domain l3index (0 outside any VRF) and writes it into
// the MD5 option the stack reserved (see [AppendOption]). It returns
// [ErrNoOption] if the header has none and [ErrNoKey] (counted as
// KeyNotFound) if no key covers the destination.
func (r *Keyring) Sign(seg *segment.Segment, l3index int) error {
	if r == nil {
		return ErrNotInitialized
	}
	if err := seg.Check(); err != nil {
		return err
	}
	auth := seg.Auth()
	if auth.MD5 == 0 {
		return ErrNoOption
	}
	if !optionHolds(seg) {
		return segment.ErrUnparsed
	}
	k, pin := r.acquire(seg.Dst(), l3index)
	if k == nil {
		r.keyNotFound.Add(1)
		return ErrNoKey
	}
	var sum [DigestSize]byte
	err := k.digest(seg, &sum)
	if err == nil {
		copy(seg.Header()[auth.MD5+2:auth.MD5+OptionLen], sum[:])
	}
	k.guard.Release(pin)
	return err
}

// Verify checks a received segment with the key for its source in L3
// domain l3index (0 outside any VRF), deciding as Linux's tcp_inbound_hash
// and tcp_inbound_md5_hash do:
//
//	no key, no option   nil: the segment may be processed
//	key, no option      ErrMissing     (TCPMD5NotFound)
//	option, no key      ErrUnexpected  (TCPMD5Unexpected)
//	wrong signature     ErrBadMAC      (TCPMD5Failure)
//	TCP-AO option       ErrAOOption
//
// A segment that does not pass [segment.Segment.Check] is refused first
// with its error; malformed options never get that far, since the parse
// refused them.
func (r *Keyring) Verify(seg *segment.Segment, l3index int) error {
	if r == nil {
		return ErrNotInitialized
	}
	if err := seg.Check(); err != nil {
		return err
	}
	auth := seg.Auth()
	if auth.AO > 0 {
		return ErrAOOption
	}
	k, pin := r.acquire(seg.Src(), l3index)
	if auth.MD5 == 0 {
		if k == nil {
			return nil
		}
		k.guard.Release(pin)
		r.missing.Add(1)
		return ErrMissing
	}
	if k == nil {
		r.unexpected.Add(1)
		return ErrUnexpected
	}
	if !optionHolds(seg) {
		k.guard.Release(pin)
		return segment.ErrUnparsed
	}
	var sum [DigestSize]byte
	err := k.digest(seg, &sum)
	off := auth.MD5 + 2
	good := err == nil && mac.Equal(sum[:], seg.Header()[off:off+DigestSize])
	k.guard.Release(pin)
	if err != nil {
		return err
	}
	if !good {
		r.bad.Add(1)
		k.bad.Add(1)
		return ErrBadMAC
	}
	r.good.Add(1)
	k.good.Add(1)
	return nil
}

// digest computes the RFC 2385 signature of seg as Linux's
// tcp_v4_md5_hash_skb / tcp_v6_md5_hash_skb do: MD5 over the pseudo-header
// with the segment's real length, the 20-byte TCP header with the checksum
// zeroed (data offset unchanged, options not covered), the payload, then
// the key (mac.TCPMD5 appends it in Sum). k must be pinned.
func (k *Key) digest(seg *segment.Segment, sum *[DigestSize]byte) error {
	req, err := k.pool.Start(k.poolID)
	if err != nil {
		return err
	}
	defer req.End()
	if err := req.Key(k.secret); err != nil {
		return err
	}
	sc := req.Scratch
	b := segment.AppendPseudoHeader(sc[:0], seg.Src(), seg.Dst(), seg.Len())
	n := len(b)
	b = append(b, seg.Header()[:segment.TCPMinimumSize]...)
	b[n+segment.TCPChecksumOffset], b[n+segment.TCPChecksumOffset+1] = 0, 0
	req.MAC.Write(b)
	req.MAC.Write(seg.Payload())
	for _, f := range seg.Frags() {
		req.MAC.Write(f)
	}
	copy(sum[:], req.MAC.Finish(sc[sumOff:sumOff]))
	return nil
}

// optionHolds reports whether seg's bytes still hold, where the parse
// found it, the MD5 option: a caller that wrote over it since gets the
// segment refused, never judged without it.
func optionHolds(seg *segment.Segment) bool {
	h, off := seg.Header(), seg.Auth().MD5
	return h[off] == segment.OptionKindMD5 && h[off+1] == segment.MD5OptionLen
}
