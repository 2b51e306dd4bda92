package md5sig

import (
	"errors"
	"net/netip"

	"github.com/tcpsig/tcpsig/internal/lifetime"
	"github.com/tcpsig/tcpsig/internal/reclaim"
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
// KeyNotFound) if no key covers the destination, or none of the peer's
// is inside its send lifetime.
func (r *Keyring) Sign(seg *segment.Segment, l3index int) error {
	_, err := r.SignWith(seg, l3index, nil)
	return err
}

// SignWith is Sign for a connection whose peer was last seen signing with
// peerKey (what VerifyWith returned; nil: not yet): it signs with
// peerKey while that is still one of the peer's keys inside its accept
// lifetime, else with the peer's key whose send lifetime began last. A
// peer that has one key at a time (a router's password) thus gets the
// key it uses, whichever end changed first. It returns the key it signed
// with.
func (r *Keyring) SignWith(seg *segment.Segment, l3index int, peerKey *Key) (*Key, error) {
	if r == nil {
		return nil, ErrNotInitialized
	}
	if err := seg.Check(); err != nil {
		return nil, err
	}
	auth := seg.Auth()
	if auth.MD5 == 0 {
		return nil, ErrNoOption
	}
	if !optionHolds(seg) {
		return nil, segment.ErrUnparsed
	}
	k, pin := r.signer(seg.Dst(), l3index, peerKey)
	if k == nil {
		r.keyNotFound.Add(1)
		return nil, ErrNoKey
	}
	var sum [DigestSize]byte
	err := k.digest(seg, &sum)
	if err == nil {
		copy(seg.Header()[auth.MD5+2:auth.MD5+OptionLen], sum[:])
	}
	k.guard.Release(pin)
	if err != nil {
		return nil, err
	}
	return k, nil
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
// A peer with a schedule of keys: the segment verifies with any of them
// inside its accept lifetime, and with none outside it. A segment that
// does not pass [segment.Segment.Check] is refused first with its error;
// malformed options never get that far, since the parse refused them.
func (r *Keyring) Verify(seg *segment.Segment, l3index int) error {
	_, err := r.VerifyWith(seg, l3index, nil)
	return err
}

// VerifyWith is Verify trying peerKey first (the key the peer signed
// with last), and returns the key that verified seg: nil for a segment
// that may be processed unsigned.
func (r *Keyring) VerifyWith(seg *segment.Segment, l3index int, peerKey *Key) (*Key, error) {
	if r == nil {
		return nil, ErrNotInitialized
	}
	if err := seg.Check(); err != nil {
		return nil, err
	}
	auth := seg.Auth()
	if auth.AO > 0 {
		return nil, ErrAOOption
	}
	g := r.group(seg.Src(), l3index)
	switch {
	case auth.MD5 == 0 && g.n == 0:
		return nil, nil
	case auth.MD5 == 0:
		r.missing.Add(1)
		return nil, ErrMissing
	case g.n == 0:
		r.unexpected.Add(1)
		return nil, ErrUnexpected
	case !optionHolds(seg):
		return nil, segment.ErrUnparsed
	}
	got := seg.Header()[auth.MD5+2 : auth.MD5+2+DigestSize]
	for {
		g.first(peerKey)
		k, tried, err := g.verify(seg, got)
		if err != nil || k != nil {
			return k, err
		}
		if tried != nil {
			r.bad.Add(1)
			tried.bad.Add(1)
			return nil, ErrBadMAC
		}
		// Every key the lookup found was deleted as the segment arrived,
		// or none is inside its accept lifetime: a deleted key has left
		// the index, so looking up again finds what replaced it.
		switch g = r.group(seg.Src(), l3index); {
		case g.n == 0:
			r.unexpected.Add(1)
			return nil, ErrUnexpected
		case g.accepting() == 0:
			r.bad.Add(1)
			return nil, ErrBadMAC
		}
	}
}

// verify tries the keys of g inside their accept lifetimes in order and
// returns the one that verifies seg (got is its digest), else the first
// it tried (nil: it could pin none).
func (g *group) verify(seg *segment.Segment, got []byte) (k, tried *Key, err error) {
	for _, k := range g.keys[:g.n] {
		if k.off.Load()&(lifetime.OffAccept|gone) != 0 {
			continue
		}
		pin, ok := k.guard.Acquire()
		if !ok {
			continue // deleted as the segment arrived
		}
		var sum [DigestSize]byte
		err := k.digest(seg, &sum)
		good := err == nil && mac.Equal(sum[:], got)
		k.guard.Release(pin)
		switch {
		case err != nil:
			return nil, nil, err
		case good:
			k.ring.good.Add(1)
			k.good.Add(1)
			return k, nil, nil
		case tried == nil:
			tried = k
		}
	}
	return nil, tried, nil
}

// accepting counts g's keys inside their accept lifetimes and not
// deleted.
func (g *group) accepting() int {
	n := 0
	for _, k := range g.keys[:g.n] {
		if k.off.Load()&(lifetime.OffAccept|gone) == 0 {
			n++
		}
	}
	return n
}

// maxSchedule bounds the keys of one peer and binding that a segment
// tries: a schedule's old, current and next key, and one more.
const maxSchedule = 4

// group is the keys of the peer and binding Linux's tcp_md5_do_lookup
// picks for an address: one key, or a schedule's keys, newest first.
type group struct {
	keys [maxSchedule]*Key
	n    int
}

// group returns the keys that apply to addr in l3: of the keys whose
// prefix contains addr and that apply in the domain, those bound to a
// non-zero L3 index win over the others, then the longest prefix.
func (r *Keyring) group(addr netip.Addr, l3 int) group {
	var g group
	collect := func(p netip.Prefix, k *Key) bool {
		if g.n == 0 {
			if k.matchesL3(l3) {
				g.keys[0], g.n = k, 1
			}
			return true
		}
		f := g.keys[0]
		if p.Bits() != f.peer.Bits() {
			return false // a shorter prefix: the group is complete
		}
		if g.n < maxSchedule && k.same(f.peer, f.ifindex, f.bound) {
			g.keys[g.n] = k
			g.n++
		}
		return true
	}
	if l3 > 0 {
		r.keys.Lookup(addr, tag(l3), collect)
		if g.n > 0 {
			return g
		}
	}
	r.keys.Lookup(addr, 0, collect)
	return g
}

// first moves k to the front of g if it is one of g's keys.
func (g *group) first(k *Key) {
	for i := 1; k != nil && i < g.n; i++ {
		if g.keys[i] == k {
			copy(g.keys[1:i+1], g.keys[:i])
			g.keys[0] = k
			return
		}
	}
}

// signer returns the key a Sign to addr uses, pinned (see SignWith), or
// nil. A key deleted between the lookup and the pin has left the index,
// so looking up again finds what replaced it, if anything.
func (r *Keyring) signer(addr netip.Addr, l3 int, peerKey *Key) (*Key, reclaim.Pin) {
	for {
		g := r.group(addr, l3)
		k, pin, retry := g.signer(peerKey)
		if !retry {
			return k, pin
		}
	}
}

// signer returns the key of g a Sign uses, pinned, or nil; retry if that
// key was deleted as it was picked.
func (g *group) signer(peerKey *Key) (k *Key, pin reclaim.Pin, retry bool) {
	for _, k := range g.keys[:g.n] {
		if k == peerKey && k.off.Load()&(lifetime.OffAccept|gone) == 0 {
			if pin, ok := k.guard.Acquire(); ok {
				return k, pin, false
			}
		}
	}
	var best *Key
	for _, k := range g.keys[:g.n] {
		if k.off.Load()&(lifetime.OffSend|gone) == 0 && (best == nil || k.sched.SendFrom > best.sched.SendFrom) {
			best = k
		}
	}
	if best == nil {
		return nil, reclaim.Pin{}, false
	}
	pin, ok := best.guard.Acquire()
	if !ok {
		return nil, reclaim.Pin{}, true
	}
	return best, pin, false
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
