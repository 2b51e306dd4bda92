package pcapverify

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"net/netip"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/segment"
)

// flowKey names a TCP flow by its two endpoints in a fixed order, so both
// directions find the same flow.
type flowKey struct{ a, b netip.AddrPort }

// keyOf returns the key of the flow between src and dst, either way.
func keyOf(src, dst netip.AddrPort) flowKey {
	if less(dst, src) {
		return flowKey{dst, src}
	}
	return flowKey{src, dst}
}

// less orders endpoints by address, then port.
func less(x, y netip.AddrPort) bool {
	if c := x.Addr().Compare(y.Addr()); c != 0 {
		return c < 0
	}
	return x.Port() < y.Port()
}

// isnSource says where an endpoint's ISN came from.
type isnSource uint8

const (
	isnUnknown isnSource = iota
	isnFromSYN
	isnFromSYNACK
	isnFromFlag
)

// String names the source as reports do.
func (s isnSource) String() string {
	return [...]string{"unknown", "SYN", "SYN-ACK", "-isn"}[s]
}

// endState is what the capture tells about one endpoint of a flow: its
// ISN and the SNE of its send direction.
type endState struct {
	addr    netip.AddrPort
	isn     uint32
	isnFrom isnSource
	// The SNE of the endpoint's send direction (RFC 5925 §6.2), tracked
	// as a Conn tracks it; moved forward only by segments that verify,
	// as the receiver's kernel does. sneSet says it has a basis.
	sne    ao.SNE
	sneSet bool
	// The sequence number of the endpoint's last segment: what a Linux
	// listener signs its RST to that segment with.
	last    uint32
	lastSet bool
	// Traffic keys of the endpoint's send direction derived so far (two
	// MKTs across a rotation, SYN and other), reused while they cover its
	// segments; next is the slot the next derivation overwrites. A slot
	// is allocated by its first derivation (some 0.75 KiB each): a flow
	// that derives none is some 0.8 KiB, one that fills them 6.8.
	keys [4]*ao.TrafficKey
	next uint8
}

// trafficKey returns a traffic key of m for seg, which e sent under isns:
// one already derived if it covers seg, else a new one in the oldest slot.
func (e *endState) trafficKey(m *ao.MKT, isns ao.ISNs, seg *segment.Segment) (*ao.TrafficKey, error) {
	for _, k := range e.keys {
		if k != nil && k.Covers(m, isns, seg) {
			return k, nil
		}
	}
	if e.keys[e.next] == nil {
		e.keys[e.next] = new(ao.TrafficKey)
	}
	k := e.keys[e.next]
	e.next = (e.next + 1) % uint8(len(e.keys))
	return k, k.Derive(m, isns, seg)
}

// wipe clears the traffic keys e derived.
func (e *endState) wipe() {
	for _, k := range e.keys {
		if k != nil {
			k.Wipe()
		}
	}
}

// restart makes e s, an endpoint of a new connection: the traffic keys
// of the old one are wiped, their slots kept for the new one's.
func (e *endState) restart(s endState) {
	e.wipe()
	s.keys = e.keys
	*e = s
}

// isnKnown reports whether the capture or -isn gave e's ISN.
func (e *endState) isnKnown() bool { return e.isnFrom != isnUnknown }

// aoJudge is one TCP-AO reading of a direction: a keyring whose MKTs
// verify what the receiver gets, with the ISNs and SNE of the flow's
// endState (the only connection state verify keeps).
type aoJudge struct {
	ring   *ao.Keyring
	sender bool // ring holds the sender's keys, mirrored
}

// dirState is one direction of a flow: the readings it is judged under
// and what was found.
type dirState struct {
	ready    bool // readings below are set
	ao       []*aoJudge
	aoSender bool // ao holds only the sender's keys, mirrored
	// Both ends share an address, so an entry may be either end's: ao
	// holds the receiver's reading, then the sender's.
	twoReadings bool
	used        [2]bool // a TCP-AO segment was judged under the receiver's [0], the sender's [1] reading
	md5         *md5Keys
	md5Sender   bool

	counts [NumVerdicts]uint64
	keyIDs [4]uint64 // TCP-AO KeyIDs seen, a bit each
	kinds  [numKinds]bool
	algs   []string
	sne    uint32 // the last SNE judged with
	sneHi  uint32 // the largest
}

// noteAlg adds alg to the direction's algorithms, once.
func (d *dirState) noteAlg(alg string) {
	for _, a := range d.algs {
		if a == alg {
			return
		}
	}
	d.algs = append(d.algs, alg)
}

// flow is one TCP flow, both directions; ends[i] sends dirs[i].
type flow struct {
	id    int
	ends  [2]endState
	dirs  [2]dirState
	conns int // connections seen (SYNs with a new ISN)

	// When both ends share an address, whose MKTs the entries are is
	// read from the segments: readBoth (each end's own keys are listed:
	// every segment under its receiver's reading), or ownedBy(k) (the
	// entries are ends[k]'s: what it sends is judged with them mirrored,
	// what it receives with them as they are). explained counts the
	// segments each reading verifies; reading is the flow's choice.
	explained [3]uint64
	reading   int

	// kept: a segment verified; a flow not kept is on the table's list
	// of flows it may evict (evict.go), most recently seen first.
	kept       bool
	prev, next *flow
}

// The readings of a flow whose ends share an address.
const readBoth = 0

// ownedBy is the reading that the entries are ends[k]'s.
func ownedBy(k int) int { return 1 + k }

// judged counts a TCP-AO segment sent by ends[i] that the receiver's
// reading (recv) or the sender's (send) verified, and returns the
// flow's reading: the one that explains the most segments, the current
// one on a tie.
func (f *flow) judged(i int, recv, send bool) int {
	if recv {
		f.explained[readBoth]++
		f.explained[ownedBy(1-i)]++
	}
	if send {
		f.explained[ownedBy(i)]++
	}
	for k, n := range f.explained {
		if n > f.explained[f.reading] {
			f.reading = k
		}
	}
	return f.reading
}

// readingName describes the flow's reading.
func (f *flow) readingName() string {
	if f.reading == readBoth {
		return "each end's own (the file lists both ends' keys)"
	}
	return f.ends[f.reading-1].addr.String() + "'s"
}

// DefaultMaxFlows is the number of flows a Verifier tracks when
// Options.MaxFlows is 0. A flow is some 0.8 KiB, plus 0.75 KiB for each
// traffic key it derives (at most 8): 50 MiB for this many, 420 at most.
const DefaultMaxFlows = 1 << 16

// flows is the flow table of one capture: the flows that keys cover,
// up to max of them at once. A flow closed by a FIN or RST is kept too:
// its retransmissions, the last ACK and the segments of TIME-WAIT need
// its ISNs and SNE, and a new connection on its ports is recognised by
// its SYN (learn). A new flow that finds max tracked evicts the least
// recently seen flow that never verified (evict.go); only when every flow
// did is it turned away.
type flows struct {
	byKey map[flowKey]*flow
	ids   int // flows tracked so far: the last one's id
	max   int
	over  overflow // the flows turned away, every place kept
	// overReason is the reason of an Untracked verdict, made once.
	overReason string

	evictable   flowList // the flows not kept, most recently seen first
	evicted     uint64   // flows evicted for room
	lastEvicted bool     // the last add evicted a flow
}

// newFlows returns an empty table of at most max flows.
func newFlows(max int) *flows {
	return &flows{byKey: map[flowKey]*flow{}, max: max, over: newOverflow(maxOverflow),
		overReason: fmt.Sprintf("flow not tracked: a verifier tracks %d flows that keys cover at once, each of them had a verified segment, and this one came after them", max)}
}

// wipe clears every traffic key of every flow.
func (t *flows) wipe() {
	for _, f := range t.byKey {
		f.ends[0].wipe()
		f.ends[1].wipe()
	}
}

// find returns the flow of a segment from src to dst and the sender's
// index; nil when the flow is not tracked.
func (t *flows) find(src, dst netip.AddrPort) (*flow, int) {
	f, ok := t.byKey[keyOf(src, dst)]
	switch {
	case !ok:
		return nil, 0
	case f.ends[0].addr == src:
		return f, 0
	}
	return f, 1
}

// add tracks the flow of a segment from src to dst, which find did not
// know, with the ISNs and SNEs given on the command line; its sender is
// ends[0]. When t holds max flows already, it evicts one not kept, or else
// returns nil and counts the flow in t.over.
func (t *flows) add(src, dst netip.AddrPort, opts *Options) *flow {
	k := keyOf(src, dst)
	t.lastEvicted = false
	if len(t.byKey) >= t.max {
		if !t.evictOne() {
			t.over.note(k)
			return nil
		}
		t.lastEvicted = true
	}
	t.ids++
	f := &flow{id: t.ids}
	f.ends[0].addr, f.ends[1].addr = src, dst
	for j := range f.ends {
		e := &f.ends[j]
		if isn, ok := opts.ISN[e.addr]; ok {
			e.isn, e.isnFrom = isn, isnFromFlag
		}
	}
	t.byKey[k] = f
	t.evictable.pushFront(f)
	return f
}

// maxOverflow bounds the flows an overflow tells apart: under 2 MiB of
// hashes.
const maxOverflow = 1 << 16

// overflow counts the flows a full table turned away, each once, without
// keeping them: a set of their hashes (seeded per capture, so a capture
// cannot choose flows that collide), at most limit of them.
type overflow struct {
	seed  maphash.Seed
	seen  map[uint64]struct{}
	limit int
	more  bool // a flow came when seen was full: len(seen) is a lower bound
}

// newOverflow returns an overflow that tells apart up to limit flows.
func newOverflow(limit int) overflow {
	return overflow{seed: maphash.MakeSeed(), seen: map[uint64]struct{}{}, limit: limit}
}

// note counts flow k, if it is new.
func (o *overflow) note(k flowKey) {
	var b [2*16 + 2*2]byte
	a, z := k.a.Addr().As16(), k.b.Addr().As16()
	copy(b[:16], a[:])
	copy(b[16:32], z[:])
	binary.BigEndian.PutUint16(b[32:], k.a.Port())
	binary.BigEndian.PutUint16(b[34:], k.b.Port())
	h := maphash.Bytes(o.seed, b[:])
	if _, ok := o.seen[h]; ok {
		return
	}
	if len(o.seen) >= o.limit {
		o.more = true
		return
	}
	o.seen[h] = struct{}{}
}

// flows is the number of flows o counted, and whether there were more.
func (o *overflow) flows() (n uint64, more bool) { return uint64(len(o.seen)), o.more }

// learn takes what a segment sent by ends[i] tells about the connection,
// before (and whatever) its verdict: a SYN or SYN-ACK gives the sender's
// ISN and starts its SNE at 0; the first segment of a flow captured
// without its handshake starts the SNE at the -sne value (default 0).
func (f *flow) learn(i int, h segment.TCP, opts *Options) {
	e, o := &f.ends[i], &f.ends[1-i]
	seq := h.Seq()
	switch h.Flags() & (segment.SYN | segment.ACK) {
	case segment.SYN:
		if e.isnFrom == isnFromSYN && e.isn == seq {
			return // a retransmitted SYN
		}
		opts.contradicted(e, seq, "SYN")
		if e.isnFrom == isnFromSYN || e.isnFrom == isnFromSYNACK {
			// A new connection on the same ports: what was learnt
			// about the peer belongs to the old one.
			o.restart(endState{addr: o.addr})
		}
		f.conns++
		e.restart(endState{addr: e.addr, isn: seq, isnFrom: isnFromSYN, sne: ao.NewSNE(0, seq), sneSet: true})
		return
	case segment.SYN | segment.ACK:
		// A simultaneous open keeps the ISN of the endpoint's SYN.
		if e.isnFrom == isnFromSYN || (e.isnFrom == isnFromSYNACK && e.isn == seq) {
			return
		}
		opts.contradicted(e, seq, "SYN-ACK")
		e.restart(endState{addr: e.addr, isn: seq, isnFrom: isnFromSYNACK, sne: ao.NewSNE(0, seq), sneSet: true})
		return
	}
	if !e.sneSet {
		e.sne, e.sneSet = ao.NewSNE(opts.SNE[e.addr], seq), true
	}
}

// contradicted warns when the handshake segment (a SYN or SYN-ACK with
// sequence number isn) of endpoint e overrides what -isn or -sne said.
func (o *Options) contradicted(e *endState, isn uint32, what string) {
	if n, ok := o.ISN[e.addr]; ok && n != isn {
		o.warnf("-isn %v=%d contradicts the capture: %v's %s has ISN %d, which is used", e.addr, n, e.addr, what, isn)
	}
	if n, ok := o.SNE[e.addr]; ok && n != 0 {
		o.warnf("-sne %v=%d ignored: the capture has %v's %s, where its SNE is 0", e.addr, n, e.addr, what)
	}
}
