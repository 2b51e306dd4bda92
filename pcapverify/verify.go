package pcapverify

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/segment"
)

// Verdict is the judgement of one segment.
type Verdict uint8

// The verdicts, in the order reports count them.
const (
	Good        Verdict = iota // the MAC verifies
	Bad                        // the MAC does not verify
	NoKey                      // no key with the segment's KeyID (TCP-AO) or for its peer
	Unsigned                   // no option, though a key covers the peer
	Malformed                  // the segment cannot be parsed as the kernel would
	UnknownISN                 // TCP-AO, but an ISN the MAC depends on is unknown
	Untracked                  // not judged: its flow came after the Options.MaxFlows the verifier tracks
	NumVerdicts                // the number of verdicts
)

var verdictNames = [NumVerdicts]string{"good", "bad", "no-key", "unsigned", "malformed", "unknown-isn", "untracked"}

// String is the verdict's name in reports: "good", "no-key", ...
func (v Verdict) String() string {
	if v >= NumVerdicts {
		return fmt.Sprintf("Verdict(%d)", uint8(v))
	}
	return verdictNames[v]
}

// Failing reports whether the verdict is a failure: every verdict but
// Good and UnknownISN (a segment that could not be checked). Untracked
// fails: a capture cannot pass by holding more flows than are tracked.
func (v Verdict) Failing() bool { return v != Good && v != UnknownISN }

// Kind is the authentication option a segment carries.
type Kind uint8

// The kinds of option.
const (
	KindNone Kind = iota
	KindAO
	KindMD5
	numKinds
)

// String is "none", "ao" or "md5".
func (k Kind) String() string {
	if k >= numKinds {
		return fmt.Sprintf("Kind(%d)", uint8(k))
	}
	return [...]string{"none", "ao", "md5"}[k]
}

// Result is the judgement of one segment.
type Result struct {
	Frame             int            // the frame's number in the capture, from 1
	Src, Dst          netip.AddrPort // invalid when the packet is too broken to tell
	HasTCP            bool           // Flags and Seq are known
	Flags             segment.Flags
	Seq               uint32
	Kind              Kind
	KeyID, RNextKeyID uint8  // TCP-AO only
	SNE               uint32 // TCP-AO only
	Verdict           Verdict
	Key               string // the keys-file entry that judged it
	Alg               string // its algorithm
	Sender            bool   // judged with the sender's keys, mirrored
	Reason            string // why the verdict is not Good
	Flow              int    // the segment's flow in the report; 0 for none
}

// Totals counts a capture's packets and verdicts.
type Totals struct {
	Packets uint64
	Skipped uint64 // not TCP over IP, or TCP that no key concerns
	Counts  [NumVerdicts]uint64
	NeedISN []netip.AddrPort // endpoints whose unknown ISN made segments unknown-isn (the first few)

	// UntrackedFlows counts the flows that keys cover but came after
	// MaxFlows others (their segments are Untracked), each once up to
	// 65536 of them; past that UntrackedMore says there were more.
	UntrackedFlows uint64
	UntrackedMore  bool
	MaxFlows       int // the flows a verifier tracked at most, when UntrackedFlows or EvictedFlows > 0

	// EvictedFlows counts the flows let go to make room for a new one,
	// MaxFlows being tracked: each the least recently seen of those with
	// no verified segment (spoofed segments look so).
	// Their segments were judged and counted, but they have no table.
	EvictedFlows uint64
}

// maxNeedISN bounds Totals.NeedISN.
const maxNeedISN = 4

// Add adds o's counts to t; a nil o adds nothing, and a nil t has nowhere
// to add them.
func (t *Totals) Add(o *Totals) {
	if t == nil || o == nil {
		return
	}
	t.Packets += o.Packets
	t.Skipped += o.Skipped
	for i := range t.Counts {
		t.Counts[i] += o.Counts[i]
	}
	for _, ap := range o.NeedISN {
		t.noteNeedISN(ap)
	}
	t.UntrackedFlows += o.UntrackedFlows
	t.UntrackedMore = t.UntrackedMore || o.UntrackedMore
	t.MaxFlows = max(t.MaxFlows, o.MaxFlows)
	t.EvictedFlows += o.EvictedFlows
}

// noteNeedISN adds ap to t.NeedISN, once, while there is room.
func (t *Totals) noteNeedISN(ap netip.AddrPort) {
	if len(t.NeedISN) < maxNeedISN && !slices.Contains(t.NeedISN, ap) {
		t.NeedISN = append(t.NeedISN, ap)
	}
}

// Checked is the number of segments judged (none for nil Totals).
func (t *Totals) Checked() (n uint64) {
	if t == nil {
		return 0
	}
	for _, c := range t.Counts {
		n += c
	}
	return n
}

// Failing reports whether a segment had a failing verdict (false for nil
// Totals).
func (t *Totals) Failing() bool {
	if t == nil {
		return false
	}
	for v := range NumVerdicts {
		if v.Failing() && t.Counts[v] > 0 {
			return true
		}
	}
	return false
}

// A Verifier judges the packets of one capture, in order, and hands every
// judged segment to emit, which must not keep the result. Its memory
// grows with the number of flows that keys cover, up to Options.MaxFlows
// of them, not with the number of packets: a segment no key covers
// leaves nothing behind.
type Verifier struct {
	keys   *Keys
	opts   *Options
	flows  *flows
	totals Totals
	emit   func(*Result)
	r      Result     // the result being made, reused
	ex     *explainer // with Options.Explain
}

// ErrNotSetUp is the error of a nil or zero Keys, Capture or Verifier,
// or a nil argument where one is needed: it was not made by LoadKeys,
// Open or NewVerifier.
var ErrNotSetUp = errors.New("pcapverify: not set up (use LoadKeys, Open and NewVerifier)")

// NewVerifier returns a Verifier of one capture. opts may be nil; emit
// may be nil when only the totals and flows are wanted.
func NewVerifier(keys *Keys, opts *Options, emit func(*Result)) (*Verifier, error) {
	if keys == nil || keys.file == nil {
		return nil, ErrNotSetUp
	}
	if opts == nil {
		opts = &Options{}
	}
	if emit == nil {
		emit = func(*Result) {}
	}
	v := &Verifier{keys: keys, opts: opts, flows: newFlows(opts.maxFlows()), emit: emit}
	if opts.Explain {
		v.explainInit()
	}
	return v, nil
}

// Close wipes the traffic keys the verifier derived.
func (v *Verifier) Close() {
	if v != nil && v.flows != nil {
		v.flows.wipe()
	}
}

// Totals are the counts so far.
func (v *Verifier) Totals() *Totals {
	if v == nil {
		return &Totals{}
	}
	return &v.totals
}

// Flows summarizes the flows that had judged segments so far.
func (v *Verifier) Flows() []FlowSummary {
	if v == nil || v.flows == nil {
		return nil
	}
	return summarize(v.flows)
}

// Packet judges one IP packet (nil if the frame carries none). truncated
// says the capture kept only part of the frame. Its only error is
// ErrNotSetUp: what is wrong with a packet is its Result's verdict.
func (v *Verifier) Packet(frame int, ip []byte, truncated bool) error {
	if v == nil || v.flows == nil {
		return ErrNotSetUp
	}
	if v.ex != nil {
		v.ex.ip = ip
	}
	v.judge(frame, ip, truncated)
	return nil
}

// judge is Packet on a set-up Verifier.
func (v *Verifier) judge(frame int, ip []byte, truncated bool) {
	v.totals.Packets++
	if ip == nil {
		v.totals.Skipped++
		return
	}
	seg, err := segment.ParsePacket(ip)
	if err != nil {
		v.broken(frame, ip, truncated, err)
		return
	}
	h := seg.Header()
	src := netip.AddrPortFrom(seg.Src().Unmap(), h.SrcPort())
	dst := netip.AddrPortFrom(seg.Dst().Unmap(), h.DstPort())
	if len(v.opts.ISN)+len(v.opts.SNE) > 0 {
		v.opts.note(src)
		v.opts.note(dst)
	}
	r := &v.r
	*r = Result{Frame: frame, Src: src, Dst: dst, HasTCP: true, Flags: h.Flags(), Seq: h.Seq()}
	f, i := v.flows.find(src, dst)
	if f == nil { // a new flow, tracked only if a key covers it (i is 0: its sender is ends[0])
		if !v.keys.relevant(src.Addr(), dst.Addr()) {
			v.uncovered(&seg, r)
			return
		}
		if f = v.flows.add(src, dst, v.opts); f == nil {
			v.untracked(&seg, r)
			return
		}
		v.noteEvicted()
	} else {
		v.flows.touch(f)
	}
	f.learn(i, h, v.opts)
	f.ends[i].last, f.ends[i].lastSet = h.Seq(), true
	d := v.direction(f, i)
	r.Flow = f.id
	switch {
	case seg.Auth().AO > 0:
		v.judgeAO(&aoSegment{f: f, i: i, d: d, seg: &seg}, r)
	case seg.Auth().MD5 > 0:
		v.judgeMD5(d, &seg, r)
	default:
		r.Verdict = Unsigned
		r.Reason = "no TCP-AO or TCP-MD5 option, but " + v.coverage(d, src.Addr(), dst.Addr())
	}
	if r.Verdict == Good {
		v.flows.keep(f)
	}
	v.record(d, r)
}

// broken reports a packet that does not parse, if it concerns a key.
func (v *Verifier) broken(frame int, ip []byte, truncated bool, err error) {
	if errors.Is(err, segment.ErrNotTCP) || errors.Is(err, segment.ErrFragment) {
		v.totals.Skipped++
		return
	}
	r := &v.r
	*r = Result{Frame: frame, Verdict: Malformed, Reason: strings.TrimPrefix(err.Error(), "segment: ")}
	if truncated && errors.Is(err, segment.ErrShortPacket) {
		r.Reason = "the capture kept only part of the packet (snap length): cannot check it"
	}
	var d *dirState
	src, dst, tcp, ok := peekTCP(ip)
	if ok {
		r.Src, r.Dst = src, dst
	}
	if len(tcp) >= segment.TCPChecksumOffset {
		h := segment.TCP(tcp)
		r.HasTCP, r.Flags, r.Seq = true, h.Flags(), h.Seq()
	}
	switch {
	case ok && v.keys.relevant(src.Addr(), dst.Addr()):
		if f, i := v.track(src, dst); f != nil {
			d, r.Flow = v.direction(f, i), f.id
		}
	case errors.Is(err, segment.ErrAuthOption), errors.Is(err, segment.ErrDuplicateAuth), errors.Is(err, segment.ErrBothAuth):
		// A broken signature option is reported whoever it is for.
	default:
		v.totals.Skipped++
		return
	}
	v.record(d, r)
}

// record counts a result and hands it on.
func (v *Verifier) record(d *dirState, r *Result) {
	v.totals.Counts[r.Verdict]++
	if d != nil {
		d.counts[r.Verdict]++
		d.kinds[r.Kind] = true
		if r.Kind == KindAO {
			if r.Key != "" {
				d.used[b2i(r.Sender)] = true
			}
			d.keyIDs[r.KeyID/64] |= 1 << (r.KeyID % 64)
			d.sne = r.SNE
			d.sneHi = max(d.sneHi, r.SNE)
		}
		if r.Alg != "" {
			d.noteAlg(r.Alg)
		}
	}
	v.emit(r)
}

// direction returns the state of the direction ends[i] sends, with its
// readings set up on first use.
func (v *Verifier) direction(f *flow, i int) *dirState {
	d := &f.dirs[i]
	if !d.ready {
		src, dst := f.ends[i].addr.Addr(), f.ends[1-i].addr.Addr()
		rings, sender := v.keys.aoReadings(src, dst)
		for _, r := range rings {
			d.ao = append(d.ao, &aoJudge{ring: r, sender: sender})
		}
		d.aoSender = sender
		if src == dst && !sender {
			// The addresses cannot tell the ends apart: every entry may
			// be the receiver's MKT or the sender's. The receiver's
			// reading is tried first.
			for _, r := range v.keys.mirrorOf(dst).aoRings {
				d.ao = append(d.ao, &aoJudge{ring: r, sender: true})
			}
			d.twoReadings = true
		}
		d.md5, d.md5Sender = v.keys.md5Readings(src, dst)
		d.ready = true
	}
	return d
}

// b2i is 1 for true, 0 for false: an index from a bool.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// judgeMD5 judges a segment with a TCP-MD5 option.
func (v *Verifier) judgeMD5(d *dirState, seg *segment.Segment, r *Result) {
	r.Kind, r.Sender = KindMD5, d.md5Sender
	var err error
	r.Verdict, r.Key, err = d.md5.verify(seg)
	switch r.Verdict {
	case Good:
	case NoKey:
		r.Reason = noMD5Key(r)
		if len(d.ao) > 0 {
			r.Reason += "; the keys for this peer are TCP-AO"
		}
	case Bad:
		r.Reason, r.Alg = "MD5 signature does not match", "md5"
	default:
		r.Reason = err.Error()
	}
	if r.Verdict == Good {
		r.Alg = "md5"
	}
}

// coverage names the keys that make an unsigned segment an offence.
func (v *Verifier) coverage(d *dirState, src, dst netip.Addr) string {
	var names []string
	if len(d.ao) > 0 {
		rings := make([]*ao.Keyring, len(d.ao))
		for k, j := range d.ao {
			rings[k] = j.ring
		}
		names, _ = v.keys.aoCovering(rings, src)
	}
	if d.md5.covers(src) {
		names = append(names, d.md5.names(src)...)
	}
	if d.aoSender || d.md5Sender {
		return fmt.Sprintf("the sender has keys for %v (%s)", dst, strings.Join(names, ", "))
	}
	return fmt.Sprintf("the receiver has keys for %v (%s)", src, strings.Join(names, ", "))
}

// joinInts is xs as "1, 2, 3".
func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}
