package pcapverify

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/segment"
)

// aoSegment is a TCP-AO segment of a flow being judged, with what every
// step of its judgement needs.
type aoSegment struct {
	f   *flow
	i   int // f.ends[i] sent it
	d   *dirState
	seg *segment.Segment
	opt ao.Option
}

// ends returns the segment's sender and its receiver.
func (s *aoSegment) ends() (e, o *endState) { return &s.f.ends[s.i], &s.f.ends[1-s.i] }

// aoCandidate is an MKT that may verify a TCP-AO segment, and the reading
// it belongs to.
type aoCandidate struct {
	j *aoJudge
	m *ao.MKT
}

// parseAO reads a segment's TCP-AO option into r (its kind and KeyIDs);
// if the option does not parse, r is Malformed and ok is false.
func parseAO(seg *segment.Segment, r *Result) (opt ao.Option, ok bool) {
	opt, err := ao.ParseOption(seg.Header()[seg.Auth().AO:])
	if err != nil { // segment.ParsePacket checked it already
		r.Verdict, r.Reason = Malformed, err.Error()
		return opt, false
	}
	r.Kind, r.KeyID, r.RNextKeyID = KindAO, opt.KeyID, opt.RNextKeyID
	return opt, true
}

// judgeAO judges s, a segment with a TCP-AO option (s.opt is filled here).
func (v *Verifier) judgeAO(s *aoSegment, r *Result) {
	opt, ok := parseAO(s.seg, r)
	if !ok {
		return
	}
	s.opt = opt
	f, i, h := s.f, s.i, s.seg.Header()
	if flags := h.Flags(); flags&segment.SYN == 0 {
		r.SNE = f.ends[i].sne.Of(h.Seq())
	}
	if !s.d.twoReadings {
		v.judgeAOWith(s, r, allJudges)
		return
	}
	// Both ends share an address: judge under both readings, and report
	// the verdict of the flow's reading, the one that has explained most
	// segments so far.
	rr, rs := *r, *r
	v.judgeAOWith(s, &rr, receiverJudges)
	v.judgeAOWith(s, &rs, senderJudges)
	*r = rr
	if f.judged(i, rr.Verdict == Good, rs.Verdict == Good) == ownedBy(i) {
		*r = rs
	}
	if r.Verdict != Good && (rr.Verdict == Good || rs.Verdict == Good) {
		r.Reason = fmt.Sprintf("KeyID %d verifies only if the entries were %v's MKTs, but the flow's segments read them as %s: one end's configuration differs from the file",
			r.KeyID, map[bool]netip.AddrPort{true: f.ends[i].addr, false: f.ends[1-i].addr}[rs.Verdict == Good], f.readingName())
	}
}

// Which of a direction's readings judgeAOWith uses.
const (
	allJudges = iota
	receiverJudges
	senderJudges
)

// judgeAOWith judges s with the keyrings of its direction that which
// selects.
func (v *Verifier) judgeAOWith(s *aoSegment, r *Result, which int) {
	var buf [4]aoCandidate
	cands := s.candidates(buf[:0], which, r.Src.Addr())
	if len(cands) == 0 {
		r.Verdict, r.Reason = NoKey, v.aoNoKey(s.d, r)
		return
	}
	v.judgedBy(r, cands[0])
	e, o := s.ends()
	if missing := missingISNs(s.seg.Header().Flags(), e, o); len(missing) > 0 {
		r.Verdict, r.Reason = UnknownISN, unknownISNReason(missing)
		for _, a := range missing {
			v.totals.noteNeedISN(a)
		}
		v.listenResets(s, cands, r)
		return
	}
	v.verifyAO(s, cands, r)
}

// candidates appends to cands the MKTs, under the readings which selects,
// that a receiver would verify s from src with: those of its KeyID.
func (s *aoSegment) candidates(cands []aoCandidate, which int, src netip.Addr) []aoCandidate {
	for _, j := range s.d.ao {
		if (which == receiverJudges && j.sender) || (which == senderJudges && !j.sender) {
			continue
		}
		if m := j.ring.LookupRecv(src, s.opt.KeyID, 0); m != nil {
			cands = append(cands, aoCandidate{j, m})
		}
	}
	return cands
}

// judgedBy names c in r as the key that judged it.
func (v *Verifier) judgedBy(r *Result, c aoCandidate) {
	r.Key, r.Alg, r.Sender = v.keys.aoName(c.m), c.m.Algorithm().Name(), c.j.sender
}

// verifyAO checks s against each candidate MKT directly, the flow's one
// tracker giving the ISNs (the sender's first) and the SNE: good under the
// first that verifies it, which moves the sender's SNE forward.
func (v *Verifier) verifyAO(s *aoSegment, cands []aoCandidate, r *Result) {
	e, o := s.ends()
	flags, seq := s.seg.Header().Flags(), s.seg.Header().Seq()
	r.Verdict = NoKey
	isns := ao.ISNs{Src: e.isn, Dst: o.isn}
	for _, c := range cands {
		k, err := e.trafficKey(c.m, isns, s.seg)
		if err == nil {
			err = k.Verify(s.seg, r.SNE)
		}
		switch {
		case err == nil:
			r.Verdict, r.Reason = Good, ""
			v.judgedBy(r, c)
			if flags&segment.SYN == 0 {
				e.sne.Advance(seq)
			}
			return
		case errors.Is(err, ao.ErrMACLength):
			if r.Verdict != Bad {
				r.Verdict, r.Reason = Bad, fmt.Sprintf("MAC is %d bytes, %s has maclen %d", len(s.opt.MAC), v.keys.aoName(c.m), c.m.MACLen())
			}
		case errors.Is(err, ao.ErrBadMAC):
			if r.Verdict != Bad {
				r.Verdict, r.Reason = Bad, "MAC does not match"
				v.judgedBy(r, c)
			}
		case r.Verdict == NoKey:
			r.Verdict, r.Reason = Malformed, strings.TrimPrefix(err.Error(), "ao: ")
		}
	}
	if r.Verdict == Bad {
		v.listenResets(s, cands, r)
	}
}

// listenResets tries listenReset with each candidate MKT until one
// recognises s as a listener's RST.
func (v *Verifier) listenResets(s *aoSegment, cands []aoCandidate, r *Result) {
	_, o := s.ends()
	for _, c := range cands {
		if v.listenReset(s.seg, o, c.m, r) {
			return
		}
	}
}

// listenReset recognises a RST that a Linux listening socket signed for a
// segment it had no connection for (the traffic key of the peer's last
// segment's direction, ISNs (its seq, 0)). No peer accepts
// such a RST, so the verdict is bad; the reason says what it is: the
// listener did not know the connection. It needs no ISNs.
func (v *Verifier) listenReset(seg *segment.Segment, o *endState, m *ao.MKT, r *Result) bool {
	if r.Flags&(segment.RST|segment.SYN) != segment.RST || !o.lastSet {
		return false
	}
	tcp := segment.AppendTCP(nil, segment.Fields{SrcPort: r.Dst.Port(), DstPort: r.Src.Port(), Seq: o.last, Flags: segment.ACK})
	in, err := segment.FromTCP(r.Dst.Addr(), r.Src.Addr(), tcp)
	var k ao.TrafficKey
	defer k.Wipe()
	if err != nil || k.Derive(m, ao.ISNs{Src: o.last}, &in) != nil || k.Verify(seg, 0) != nil {
		return false
	}
	r.Verdict, r.Key, r.Alg = Bad, v.keys.aoName(m), m.Algorithm().Name()
	r.Reason = fmt.Sprintf("a Linux listener's RST for a connection it does not know (signed with the key of %v's direction and ISNs (%d, 0), which no peer accepts)", r.Dst, o.last)
	return true
}

// missingISNs returns the ends whose ISN a segment's traffic key needs
// and the capture has not given, the sender e first: a SYN needs its own
// only (its sequence number), anything else both.
func missingISNs(flags segment.Flags, e, o *endState) []netip.AddrPort {
	var miss []netip.AddrPort
	if !e.isnKnown() && flags&segment.SYN == 0 {
		miss = append(miss, e.addr)
	}
	if !o.isnKnown() && flags&(segment.SYN|segment.ACK) != segment.SYN {
		miss = append(miss, o.addr)
	}
	return miss
}

// unknownISNReason says which ISNs are missing and the -isn flags that
// would give them.
func unknownISNReason(miss []netip.AddrPort) string {
	names := make([]string, len(miss))
	flag := make([]string, len(miss))
	for k, a := range miss {
		names[k], flag[k] = a.String(), "-isn "+a.String()+"=ISN"
	}
	return fmt.Sprintf("ISN of %s unknown (handshake not in the capture): give %s", strings.Join(names, " and "), strings.Join(flag, " "))
}

// aoNoKey explains a no-key verdict for a TCP-AO segment.
func (v *Verifier) aoNoKey(d *dirState, r *Result) string {
	if len(d.ao) == 0 {
		return noAOKey(r)
	}
	rings := make([]*ao.Keyring, len(d.ao))
	for k, j := range d.ao {
		rings[k] = j.ring
	}
	if d.twoReadings {
		var recv, send []*ao.Keyring
		for _, j := range d.ao {
			if j.sender {
				send = append(send, j.ring)
			} else {
				recv = append(recv, j.ring)
			}
		}
		names, ids := v.keys.aoCovering(recv, r.Src.Addr())
		_, sendIDs := v.keys.aoCovering(send, r.Src.Addr()) // mirrored: RecvID is the entry's sndid
		return fmt.Sprintf("no MKT with KeyID %d for peer %v under either reading (both ends on one address): the entries for it (%s) have rcvid %s and sndid %s",
			r.KeyID, r.Src.Addr(), strings.Join(names, ", "), joinInts(ids), joinInts(sendIDs))
	}
	names, ids := v.keys.aoCovering(rings, r.Src.Addr())
	whose := "receiver"
	if d.aoSender {
		whose = "sender (mirrored)"
	}
	return fmt.Sprintf("no MKT with RecvID %d for peer %v; the %s's MKTs for it (%s) have RecvID %s",
		r.KeyID, r.Src.Addr(), whose, strings.Join(names, ", "), joinInts(ids))
}
