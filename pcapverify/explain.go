package pcapverify

import (
	"net/netip"
	"slices"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/diagnose"
	"github.com/tcpsig/tcpsig/segment"
)

// Diagnosis names why one flow direction did not verify (package
// diagnose): the sender and receiver, the cause, a one-line fix and the
// keys-file entry to change ("" when there is none).
type Diagnosis struct {
	From    string         `json:"from"`
	To      string         `json:"to"`
	Cause   diagnose.Cause `json:"cause"`
	Message string         `json:"message"`
	Entry   string         `json:"entry"`
}

// maxExplained bounds the directions a verifier keeps failing segments
// of for a diagnosis: each holds at most diagnose.MaxSegments packets.
const maxExplained = 1 << 12

// explainer keeps, with Options.Explain, the first few failing segments
// of each flow direction, copied, and diagnoses the directions when
// asked. It sees only what the verifier emits: a good segment costs it
// one call.
type explainer struct {
	v     *Verifier
	ip    []byte // the packet being judged
	dirs  map[[2]netip.AddrPort]*explained
	order [][2]netip.AddrPort
	isn   map[netip.AddrPort]uint32 // ISNs of endpoints no key covers, from their SYN or SYN-ACK
	// keyless: the keys file has no entry; the directions are judged by
	// what the wire shows (wire.go).
	keyless   bool
	wire      map[[2]netip.AddrPort]*wireDir
	wireOrder [][2]netip.AddrPort
}

// explained is one failing direction: its first failing segments, its
// failures, and the last diagnosis with the number of segments it saw.
type explained struct {
	segs   []diagnose.Segment
	failed uint64
	last   diagnose.Diagnosis
	lastN  int
}

// explainInit sets v up to explain: its results pass the explainer on
// their way to emit.
func (v *Verifier) explainInit() {
	ex := &explainer{v: v, dirs: map[[2]netip.AddrPort]*explained{}, isn: map[netip.AddrPort]uint32{}}
	if ex.keyless = v.Keyless(); ex.keyless {
		ex.wire = map[[2]netip.AddrPort]*wireDir{}
	}
	emit := v.emit
	v.emit = func(r *Result) {
		ex.note(r)
		emit(r)
	}
	v.ex = ex
}

// note keeps r's packet if r is one of the first failing segments of its
// direction.
func (ex *explainer) note(r *Result) {
	switch r.Verdict {
	case Bad, NoKey, Unsigned, UnknownISN:
	default:
		return
	}
	if !r.Src.IsValid() || !r.HasTCP {
		return
	}
	if ex.keyless {
		ex.noteWire(r)
		return
	}
	k := [2]netip.AddrPort{r.Src, r.Dst}
	d := ex.dirs[k]
	if d == nil {
		if len(ex.dirs) >= maxExplained {
			return
		}
		d = &explained{}
		ex.dirs[k] = d
		ex.order = append(ex.order, k)
	}
	d.failed++
	if r.Flow == 0 && r.Flags&segment.SYN != 0 && len(ex.isn) < maxExplained {
		ex.isn[r.Src] = r.Seq
	}
	if len(d.segs) < diagnose.MaxSegments {
		d.segs = append(d.segs, ex.segment(r))
	}
}

// segment copies the packet of r with what the flow knows of its ISNs.
func (ex *explainer) segment(r *Result) diagnose.Segment {
	s := diagnose.Segment{Packet: slices.Clone(ex.ip), SNE: r.SNE}
	if f, i := ex.v.flows.find(r.Src, r.Dst); f != nil {
		e, o := &f.ends[i], &f.ends[1-i]
		s.ISNs = ao.ISNs{Src: e.isn, Dst: o.isn}
		s.ISNKnown = r.Verdict != UnknownISN && len(missingISNs(r.Flags, e, o)) == 0
		return s
	}
	src, sok := ex.isnOf(r.Src)
	dst, dok := ex.isnOf(r.Dst)
	s.ISNs = ao.ISNs{Src: src, Dst: dst}
	s.ISNKnown = sok && (dok || r.Flags&(segment.SYN|segment.ACK) == segment.SYN)
	return s
}

// isnOf is the ISN of an endpoint no key covers: -isn's, else its SYN's.
func (ex *explainer) isnOf(ap netip.AddrPort) (uint32, bool) {
	if n, ok := ex.v.opts.ISN[ap]; ok {
		return n, true
	}
	n, ok := ex.isn[ap]
	return n, ok
}

// Diagnoses names the cause of each flow direction whose segments did
// not all verify so far, in the order their first failure came; nil
// unless Options.Explain. A direction is searched again only when it has
// new segments to search. Without keys (Keyless) only the causes the
// wire shows are told (diagnose.FromWire), and a direction that signs
// with nothing wrong to see has none.
func (v *Verifier) Diagnoses() []Diagnosis {
	if v == nil || v.ex == nil {
		return nil
	}
	ex := v.ex
	if ex.keyless {
		return ex.wireDiagnoses()
	}
	out := make([]Diagnosis, len(ex.order))
	var search []diagnose.Direction
	var at []int // the index in out of each direction searched
	for n, k := range ex.order {
		d := ex.dirs[k]
		var good uint64
		if f, i := v.flows.find(k[0], k[1]); f != nil {
			good = f.dirs[i].counts[Good]
		}
		out[n] = Diagnosis{From: k[0].String(), To: k[1].String()}
		switch {
		case good > d.failed:
			search, at = append(search, diagnose.Direction{Verified: good, Failed: d.failed}), append(at, n)
		case d.lastN == len(d.segs) && d.lastN > 0:
			out[n].Cause, out[n].Message, out[n].Entry = d.last.Cause, d.last.Fix, d.last.Entry
		default:
			search, at = append(search, diagnose.Direction{Segments: d.segs, Verified: good, Failed: d.failed}), append(at, n)
		}
	}
	for j, dg := range diagnose.ExplainAll(v.keys.file, search) {
		n := at[j]
		out[n].Cause, out[n].Message, out[n].Entry = dg.Cause, dg.Fix, dg.Entry
		if d := ex.dirs[ex.order[n]]; dg.Cause != diagnose.Tampered {
			d.last, d.lastN = dg, len(d.segs)
		}
	}
	return out
}
