package main

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/segment"
)

// verdict is the judgement of one segment.
type verdict uint8

const (
	good       verdict = iota // the MAC verifies
	bad                       // the MAC does not verify
	noKey                     // no key with the segment's KeyID (TCP-AO) or for its peer
	unsigned                  // no option, though a key covers the peer
	malformed                 // the segment cannot be parsed as the kernel would
	unknownISN                // TCP-AO, but an ISN the MAC depends on is unknown
	numVerdicts
)

var verdictNames = [numVerdicts]string{"good", "bad", "no-key", "unsigned", "malformed", "unknown-isn"}

func (v verdict) String() string { return verdictNames[v] }

// failing reports whether the verdict makes the exit status 1.
func (v verdict) failing() bool { return v != good && v != unknownISN }

// kind is the authentication option a segment carries.
type kind uint8

const (
	kindNone kind = iota
	kindAO
	kindMD5
	numKinds
)

func (k kind) String() string { return [...]string{"none", "ao", "md5"}[k] }

// result is the judgement of one segment, as reported.
type result struct {
	frame        int
	src, dst     netip.AddrPort // invalid when the packet is too broken to tell
	hasTCP       bool           // flags and seq are known
	flags        segment.Flags
	seq          uint32
	kind         kind
	keyID, rnext uint8  // TCP-AO only
	sne          uint32 // TCP-AO only
	verdict      verdict
	key          string // the keys-file entry that judged it
	alg          string
	sender       bool // judged with the sender's keys, mirrored
	reason       string
	flow         int // 0 when it belongs to no flow
}

// verifyOptions are the command line's settings that shape verification,
// and what the captures said about them.
type verifyOptions struct {
	isn map[netip.AddrPort]uint32 // -isn
	sne map[netip.AddrPort]uint32 // -sne

	warn   func(string)            // prints a warning line; nil: none
	seen   map[netip.AddrPort]bool // -isn/-sne endpoints some segment was from or to
	warned map[string]bool         // warnings already given
}

// note records that a segment was from or to ap.
func (o *verifyOptions) note(ap netip.AddrPort) {
	_, a := o.isn[ap]
	_, b := o.sne[ap]
	if (a || b) && !o.seen[ap] {
		if o.seen == nil {
			o.seen = map[netip.AddrPort]bool{}
		}
		o.seen[ap] = true
	}
}

// warnf prints a warning once.
func (o *verifyOptions) warnf(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	if o.warn == nil || o.warned[msg] {
		return
	}
	if o.warned == nil {
		o.warned = map[string]bool{}
	}
	o.warned[msg] = true
	o.warn(msg)
}

// unseen warns about the -isn and -sne endpoints that no segment was from
// or to: they changed nothing.
func (o *verifyOptions) unseen() {
	for _, f := range []struct {
		name string
		m    map[netip.AddrPort]uint32
	}{{"-isn", o.isn}, {"-sne", o.sne}} {
		for _, ap := range slices.SortedFunc(maps.Keys(f.m), func(a, b netip.AddrPort) int { return a.Compare(b) }) {
			if !o.seen[ap] {
				o.warnf("%s %v=%d: no segment of the capture is from or to %v: ignored (check the address and port)", f.name, ap, f.m[ap], ap)
			}
		}
	}
}

// totals counts a capture's packets and verdicts.
type totals struct {
	packets uint64
	skipped uint64 // not TCP over IP, or TCP that no key concerns
	counts  [numVerdicts]uint64
	needISN []netip.AddrPort // endpoints whose unknown ISN made segments unknown-isn (the first few)
}

// maxNeedISN bounds totals.needISN.
const maxNeedISN = 4

func (t *totals) add(o *totals) {
	t.packets += o.packets
	t.skipped += o.skipped
	for i := range t.counts {
		t.counts[i] += o.counts[i]
	}
	for _, ap := range o.needISN {
		t.noteNeedISN(ap)
	}
}

func (t *totals) noteNeedISN(ap netip.AddrPort) {
	if len(t.needISN) < maxNeedISN && !slices.Contains(t.needISN, ap) {
		t.needISN = append(t.needISN, ap)
	}
}

func (t *totals) checked() (n uint64) {
	for _, c := range t.counts {
		n += c
	}
	return n
}

// verifier judges the packets of one capture, in order, and hands every
// judged segment to emit, which must not keep the result. Its memory
// grows with the number of flows that keys concern, not with the number
// of packets.
type verifier struct {
	keys   *keySet
	opts   *verifyOptions
	flows  *flows
	totals totals
	emit   func(*result)
	r      result // the result being made, reused
}

func newVerifier(ks *keySet, opts *verifyOptions, emit func(*result)) *verifier {
	return &verifier{keys: ks, opts: opts, flows: newFlows(), emit: emit}
}

// packet judges one IP packet (nil if the frame carries none). truncated
// says the capture kept only part of the frame.
// close wipes the traffic keys the verifier derived.
func (v *verifier) close() { v.flows.wipe() }

func (v *verifier) packet(frame int, ip []byte, truncated bool) {
	v.totals.packets++
	if ip == nil {
		v.totals.skipped++
		return
	}
	seg, err := segment.ParsePacket(ip)
	if err != nil {
		v.broken(frame, ip, truncated, err)
		return
	}
	h := seg.Header
	src := netip.AddrPortFrom(seg.Src.Unmap(), h.SrcPort())
	dst := netip.AddrPortFrom(seg.Dst.Unmap(), h.DstPort())
	if len(v.opts.isn)+len(v.opts.sne) > 0 {
		v.opts.note(src)
		v.opts.note(dst)
	}
	signed := seg.Auth.AO > 0 || seg.Auth.MD5 > 0
	if !signed && !v.keys.relevant(src.Addr(), dst.Addr()) {
		v.totals.skipped++
		return
	}
	f, i := v.flows.get(src, dst, v.opts)
	f.learn(i, h, v.opts)
	f.ends[i].last, f.ends[i].lastSet = h.Seq(), true
	d := v.direction(f, i)
	r := &v.r
	*r = result{frame: frame, src: src, dst: dst, hasTCP: true, flags: h.Flags(), seq: h.Seq(), flow: f.id}
	switch {
	case seg.Auth.AO > 0:
		v.judgeAO(f, i, d, &seg, r)
	case seg.Auth.MD5 > 0:
		v.judgeMD5(d, &seg, r)
	default:
		r.verdict = unsigned
		r.reason = "no TCP-AO or TCP-MD5 option, but " + v.coverage(d, src.Addr(), dst.Addr())
	}
	v.record(d, r)
}

// broken reports a packet that does not parse, if it concerns a key.
func (v *verifier) broken(frame int, ip []byte, truncated bool, err error) {
	if errors.Is(err, segment.ErrNotTCP) || errors.Is(err, segment.ErrFragment) {
		v.totals.skipped++
		return
	}
	r := &v.r
	*r = result{frame: frame, verdict: malformed, reason: strings.TrimPrefix(err.Error(), "segment: ")}
	if truncated && errors.Is(err, segment.ErrShortPacket) {
		r.reason = "the capture kept only part of the packet (snap length): cannot check it"
	}
	var d *dirState
	src, dst, tcp, ok := peekTCP(ip)
	if ok {
		r.src, r.dst = src, dst
	}
	if len(tcp) >= segment.TCPChecksumOffset {
		h := segment.TCP(tcp)
		r.hasTCP, r.flags, r.seq = true, h.Flags(), h.Seq()
	}
	switch {
	case ok && v.keys.relevant(src.Addr(), dst.Addr()):
		f, i := v.flows.get(src, dst, v.opts)
		d, r.flow = v.direction(f, i), f.id
	case errors.Is(err, segment.ErrAuthOption), errors.Is(err, segment.ErrDuplicateAuth), errors.Is(err, segment.ErrBothAuth):
		// A broken signature option is reported whoever it is for.
	default:
		v.totals.skipped++
		return
	}
	v.record(d, r)
}

// record counts a result and hands it on.
func (v *verifier) record(d *dirState, r *result) {
	v.totals.counts[r.verdict]++
	if d != nil {
		d.counts[r.verdict]++
		d.kinds[r.kind] = true
		if r.kind == kindAO {
			if r.key != "" {
				d.used[b2i(r.sender)] = true
			}
			d.keyIDs[r.keyID/64] |= 1 << (r.keyID % 64)
			d.sne = r.sne
			d.sneHi = max(d.sneHi, r.sne)
		}
		if r.alg != "" {
			d.noteAlg(r.alg)
		}
	}
	v.emit(r)
}

// direction returns the state of the direction ends[i] sends, with its
// readings set up on first use.
func (v *verifier) direction(f *flow, i int) *dirState {
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
			for _, r := range v.keys.mirrorOf(src, dst).aoRings {
				d.ao = append(d.ao, &aoJudge{ring: r, sender: true})
			}
			d.twoReadings = true
		}
		d.md5, d.md5Sender = v.keys.md5Readings(src, dst)
		d.ready = true
	}
	return d
}

// judgeAO judges a segment with a TCP-AO option, sent by ends[i].
func (v *verifier) judgeAO(f *flow, i int, d *dirState, seg *segment.Segment, r *result) {
	h := seg.Header
	opt, err := ao.ParseOption(h[seg.Auth.AO:])
	if err != nil { // segment.ParsePacket checked it already
		r.verdict, r.reason = malformed, err.Error()
		return
	}
	r.kind, r.keyID, r.rnext = kindAO, opt.KeyID, opt.RNextKeyID
	if flags := h.Flags(); flags&segment.SYN == 0 {
		r.sne = f.ends[i].sneOf(h.Seq())
	}
	if !d.twoReadings {
		v.judgeAOWith(f, i, d, seg, &opt, r, allJudges)
		return
	}
	// Both ends share an address: judge under both readings, and report
	// the verdict of the flow's reading, the one that has explained most
	// segments so far.
	rr, rs := *r, *r
	v.judgeAOWith(f, i, d, seg, &opt, &rr, receiverJudges)
	v.judgeAOWith(f, i, d, seg, &opt, &rs, senderJudges)
	*r = rr
	if f.judged(i, rr.verdict == good, rs.verdict == good) == ownedBy(i) {
		*r = rs
	}
	if r.verdict != good && (rr.verdict == good || rs.verdict == good) {
		r.reason = fmt.Sprintf("KeyID %d verifies only if the entries were %v's MKTs, but the flow's segments read them as %s: one end's configuration differs from the file",
			r.keyID, map[bool]netip.AddrPort{true: f.ends[i].addr, false: f.ends[1-i].addr}[rs.verdict == good], f.readingName())
	}
}

// Which of a direction's readings judgeAOWith uses.
const (
	allJudges = iota
	receiverJudges
	senderJudges
)

// judgeAOWith judges a TCP-AO segment sent by ends[i] with the keyrings of
// d that which selects.
func (v *verifier) judgeAOWith(f *flow, i int, d *dirState, seg *segment.Segment, opt *ao.Option, r *result, which int) {
	h := seg.Header
	e, o := &f.ends[i], &f.ends[1-i]
	flags, seq := h.Flags(), h.Seq()
	type candidate struct {
		j *aoJudge
		m *ao.MKT
	}
	var buf [4]candidate
	cands := buf[:0]
	for _, j := range d.ao {
		if (which == receiverJudges && j.sender) || (which == senderJudges && !j.sender) {
			continue
		}
		if m := j.ring.LookupRecv(r.src.Addr(), opt.KeyID, 0); m != nil {
			cands = append(cands, candidate{j, m})
		}
	}
	if len(cands) == 0 {
		r.verdict, r.reason = noKey, v.aoNoKey(d, r)
		return
	}
	r.key, r.alg, r.sender = v.keys.aoName(cands[0].m), cands[0].m.Algorithm().Name(), cands[0].j.sender
	if missing := missingISNs(flags, e, o); missing != "" {
		r.verdict, r.reason = unknownISN, missing
		if !e.isnKnown() && flags&segment.SYN == 0 {
			v.totals.noteNeedISN(e.addr)
		}
		if !o.isnKnown() && flags&(segment.SYN|segment.ACK) != segment.SYN {
			v.totals.noteNeedISN(o.addr)
		}
		for _, c := range cands {
			if v.listenReset(seg, o, c.m, r) {
				break
			}
		}
		return
	}
	r.verdict = noKey
	// The flow's one tracker gives the ISNs (the sender's first) and the
	// SNE; the segment is checked against each candidate MKT directly.
	isns := ao.ISNs{Src: e.isn, Dst: o.isn}
	for _, c := range cands {
		k, err := e.trafficKey(c.m, isns, seg)
		if err == nil {
			err = k.Verify(seg, r.sne)
		}
		switch {
		case err == nil:
			r.verdict, r.reason = good, ""
			r.key, r.alg, r.sender = v.keys.aoName(c.m), c.m.Algorithm().Name(), c.j.sender
			if flags&segment.SYN == 0 {
				e.advance(seq)
			}
			return
		case errors.Is(err, ao.ErrMACLength):
			if r.verdict != bad {
				r.verdict, r.reason = bad, fmt.Sprintf("MAC is %d bytes, %s has maclen %d", len(opt.MAC), v.keys.aoName(c.m), c.m.MACLen())
			}
		case errors.Is(err, ao.ErrBadMAC):
			if r.verdict != bad {
				r.verdict, r.reason = bad, "MAC does not match"
				r.key, r.alg, r.sender = v.keys.aoName(c.m), c.m.Algorithm().Name(), c.j.sender
			}
		case r.verdict == noKey:
			r.verdict, r.reason = malformed, strings.TrimPrefix(err.Error(), "ao: ")
		}
	}
	if r.verdict == bad {
		for _, c := range cands {
			if v.listenReset(seg, o, c.m, r) {
				break
			}
		}
	}
}

// listenReset recognises a RST that a Linux listening socket signed for a
// segment it had no connection for (the traffic key of the peer's last
// segment's direction, ISNs (its seq, 0)). No peer accepts
// such a RST, so the verdict is bad; the reason says what it is: the
// listener did not know the connection. It needs no ISNs.
func (v *verifier) listenReset(seg *segment.Segment, o *endState, m *ao.MKT, r *result) bool {
	if r.flags&(segment.RST|segment.SYN) != segment.RST || !o.lastSet {
		return false
	}
	tcp := segment.AppendTCP(nil, segment.Fields{SrcPort: r.dst.Port(), DstPort: r.src.Port(), Seq: o.last, Flags: segment.ACK})
	in, err := segment.FromTCP(r.dst.Addr(), r.src.Addr(), tcp)
	var k ao.TrafficKey
	defer k.Wipe()
	if err != nil || k.Derive(m, ao.ISNs{Src: o.last}, &in) != nil || k.Verify(seg, 0) != nil {
		return false
	}
	r.verdict, r.key, r.alg = bad, v.keys.aoName(m), m.Algorithm().Name()
	r.reason = fmt.Sprintf("a Linux listener's RST for a connection it does not know (signed with the key of %v's direction and ISNs (%d, 0), which no peer accepts)", r.dst, o.last)
	return true
}

// missingISNs says which ISNs a segment's traffic key needs and the
// capture has not given: a SYN needs its own only (its sequence number),
// anything else both.
func missingISNs(flags segment.Flags, e, o *endState) string {
	var miss []string
	if !e.isnKnown() && flags&segment.SYN == 0 {
		miss = append(miss, e.addr.String())
	}
	if !o.isnKnown() && flags&(segment.SYN|segment.ACK) != segment.SYN {
		miss = append(miss, o.addr.String())
	}
	if len(miss) == 0 {
		return ""
	}
	flag := make([]string, len(miss))
	for k, a := range miss {
		flag[k] = "-isn " + a + "=ISN"
	}
	return fmt.Sprintf("ISN of %s unknown (handshake not in the capture): give %s", strings.Join(miss, " and "), strings.Join(flag, " "))
}

// aoNoKey explains a no-key verdict for a TCP-AO segment.
func (v *verifier) aoNoKey(d *dirState, r *result) string {
	if len(d.ao) == 0 {
		return fmt.Sprintf("no TCP-AO key in the keys file for %v (as receiver's peer) or %v (as sender's)", r.src.Addr(), r.dst.Addr())
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
		names, ids := v.keys.aoCovering(recv, r.src.Addr())
		_, sendIDs := v.keys.aoCovering(send, r.src.Addr()) // mirrored: RecvID is the entry's sndid
		return fmt.Sprintf("no MKT with KeyID %d for peer %v under either reading (both ends on one address): the entries for it (%s) have rcvid %s and sndid %s",
			r.keyID, r.src.Addr(), strings.Join(names, ", "), joinInts(ids), joinInts(sendIDs))
	}
	names, ids := v.keys.aoCovering(rings, r.src.Addr())
	whose := "receiver"
	if d.aoSender {
		whose = "sender (mirrored)"
	}
	return fmt.Sprintf("no MKT with RecvID %d for peer %v; the %s's MKTs for it (%s) have RecvID %s",
		r.keyID, r.src.Addr(), whose, strings.Join(names, ", "), joinInts(ids))
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// judgeMD5 judges a segment with a TCP-MD5 option.
func (v *verifier) judgeMD5(d *dirState, seg *segment.Segment, r *result) {
	r.kind, r.sender = kindMD5, d.md5Sender
	var err error
	r.verdict, r.key, err = d.md5.verify(seg)
	switch r.verdict {
	case good:
	case noKey:
		r.reason = fmt.Sprintf("no TCP-MD5 key in the keys file for %v (as receiver's peer) or %v (as sender's)", r.src.Addr(), r.dst.Addr())
		if len(d.ao) > 0 {
			r.reason += "; the keys for this peer are TCP-AO"
		}
	case bad:
		r.reason, r.alg = "MD5 signature does not match", "md5"
	default:
		r.reason = err.Error()
	}
	if r.verdict == good {
		r.alg = "md5"
	}
}

// coverage names the keys that make an unsigned segment an offence.
func (v *verifier) coverage(d *dirState, src, dst netip.Addr) string {
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

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}
