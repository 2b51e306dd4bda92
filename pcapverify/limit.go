package pcapverify

import (
	"fmt"
	"net/netip"

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
	if f, i := v.flows.find(src, dst); f != nil {
		v.flows.touch(f)
		return f, i
	}
	f := v.flows.add(src, dst, v.opts)
	if f == nil {
		v.noteOverflow()
		return nil, 0
	}
	v.noteEvicted()
	return f, 0 // a new flow's sender is ends[0]
}

// noteEvicted copies the count of the flows evicted into the totals, if
// the last add evicted one.
func (v *Verifier) noteEvicted() {
	if v.flows.lastEvicted {
		v.totals.EvictedFlows = v.flows.evicted
		v.totals.MaxFlows = v.flows.max
	}
}

// noteOverflow copies the count of the flows turned away into the totals.
func (v *Verifier) noteOverflow() {
	v.totals.UntrackedFlows, v.totals.UntrackedMore = v.flows.over.flows()
	v.totals.MaxFlows = v.flows.max
}

// uncovered judges a segment whose addresses no key covers, r holding
// what its header says: with an option it is no-key, as it would be in a
// flow of its own (whose SNE would be the -sne value), and without one it
// is skipped.
func (v *Verifier) uncovered(seg *segment.Segment, r *Result) {
	auth := seg.Auth()
	if auth.AO == 0 && auth.MD5 == 0 {
		v.totals.Skipped++
		if v.ex != nil {
			v.ex.bare(r)
		}
		return
	}
	r.Verdict = NoKey
	readOption(seg, r)
	switch {
	case r.Verdict != NoKey: // a malformed option
	case r.Kind == KindAO:
		if r.Flags&segment.SYN == 0 {
			r.SNE = v.opts.SNE[r.Src]
		}
		r.Reason = noAOKey(r)
	default:
		r.Reason = noMD5Key(r)
	}
	v.record(nil, r)
}

// untracked judges a segment of a flow that the full table turned away,
// r holding what its header says: Untracked, counted in
// Totals.UntrackedFlows.
func (v *Verifier) untracked(seg *segment.Segment, r *Result) {
	v.noteOverflow()
	r.Verdict = Untracked
	readOption(seg, r)
	if r.Verdict == Untracked {
		r.Reason = v.flows.overReason
	}
	v.record(nil, r)
}

// readOption fills in r what the option of a segment judged without a
// flow says; Malformed if a TCP-AO option does not parse.
func readOption(seg *segment.Segment, r *Result) {
	switch auth := seg.Auth(); {
	case auth.AO > 0:
		parseAO(seg, r)
	case auth.MD5 > 0:
		r.Kind = KindMD5
	}
}

// noAOKey is the reason of a TCP-AO segment that no key's peer covers.
func noAOKey(r *Result) string {
	return fmt.Sprintf("no TCP-AO key in the keys file for %v (as receiver's peer) or %v (as sender's)", r.Src.Addr(), r.Dst.Addr())
}

// noMD5Key is the reason of a TCP-MD5 segment that no key's peer covers.
func noMD5Key(r *Result) string {
	return fmt.Sprintf("no TCP-MD5 key in the keys file for %v (as receiver's peer) or %v (as sender's)", r.Src.Addr(), r.Dst.Addr())
}
