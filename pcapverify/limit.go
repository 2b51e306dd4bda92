package pcapverify

import (
	"fmt"
	"net/netip"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/segment"
)

// The segments judged without a flow: those no key covers, and those of
// the flows that came once the table was full. Neither leaves state
// behind, so no capture makes a Verifier's memory grow past MaxFlows
// flows.

// maxFlows is the limit of o.MaxFlows.
func (o *Options) maxFlows() int {
	if o.MaxFlows <= 0 {
		return DefaultMaxFlows
	}
	return o.MaxFlows
}

// track returns the flow of a segment from src to dst and the sender's
// index, tracking it if it is new; nil when the table is full.
func (v *Verifier) track(src, dst netip.AddrPort) (*flow, int) {
	f, i := v.flows.find(src, dst)
	if f == nil {
		if f = v.flows.add(src, dst, v.opts); f == nil {
			v.noteOverflow()
		}
	}
	return f, i
}

// noteOverflow copies the count of the flows turned away into the totals.
func (v *Verifier) noteOverflow() {
	v.totals.UntrackedFlows, v.totals.UntrackedMore = v.flows.over.flows()
	v.totals.MaxFlows = v.flows.max
}

// uncovered judges a segment from src to dst, addresses no key covers:
// with an option it is no-key, as it would be in a flow of its own (whose
// SNE would be the -sne value), and without one it is skipped.
func (v *Verifier) uncovered(frame int, seg *segment.Segment, src, dst netip.AddrPort) {
	auth := seg.Auth()
	if auth.AO == 0 && auth.MD5 == 0 {
		v.totals.Skipped++
		return
	}
	r := v.flowless(frame, seg, src, dst, NoKey)
	switch {
	case r.Verdict != NoKey: // a malformed option
	case r.Kind == KindAO:
		if r.Flags&segment.SYN == 0 {
			r.SNE = v.opts.SNE[src]
		}
		r.Reason = noAOKey(r)
	default:
		r.Reason = noMD5Key(r)
	}
	v.record(nil, r)
}

// untracked judges a segment of a flow that the full table turned away:
// Untracked, counted in Totals.UntrackedFlows.
func (v *Verifier) untracked(frame int, seg *segment.Segment, src, dst netip.AddrPort) {
	v.noteOverflow()
	r := v.flowless(frame, seg, src, dst, Untracked)
	if r.Verdict == Untracked {
		r.Reason = v.flows.overReason
	}
	v.record(nil, r)
}

// flowless starts the result of a segment judged without a flow: verdict,
// and what its option says; Malformed if the option does not parse.
func (v *Verifier) flowless(frame int, seg *segment.Segment, src, dst netip.AddrPort, verdict Verdict) *Result {
	h, auth := seg.Header, seg.Auth()
	r := &v.r
	*r = Result{Frame: frame, Src: src, Dst: dst, HasTCP: true, Flags: h.Flags(), Seq: h.Seq(), Verdict: verdict}
	switch {
	case auth.AO > 0:
		opt, err := ao.ParseOption(h[auth.AO:])
		if err != nil { // segment.ParsePacket checked it already
			r.Verdict, r.Reason = Malformed, err.Error()
			return r
		}
		r.Kind, r.KeyID, r.RNextKeyID = KindAO, opt.KeyID, opt.RNextKeyID
	case auth.MD5 > 0:
		r.Kind = KindMD5
	}
	return r
}

// noAOKey is the reason of a TCP-AO segment that no key's peer covers.
func noAOKey(r *Result) string {
	return fmt.Sprintf("no TCP-AO key in the keys file for %v (as receiver's peer) or %v (as sender's)", r.Src.Addr(), r.Dst.Addr())
}

// noMD5Key is the reason of a TCP-MD5 segment that no key's peer covers.
func noMD5Key(r *Result) string {
	return fmt.Sprintf("no TCP-MD5 key in the keys file for %v (as receiver's peer) or %v (as sender's)", r.Src.Addr(), r.Dst.Addr())
}
