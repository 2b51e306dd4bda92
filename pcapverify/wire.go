package pcapverify

import (
	"net/netip"

	"github.com/tcpsig/tcpsig/diagnose"
	"github.com/tcpsig/tcpsig/segment"
)

// Explaining without keys: a Verifier whose keys file has no entry
// judges every segment with an option no-key and leaves the others
// aside, so with Options.Explain its explainer counts, per flow
// direction, the segments that carry TCP-AO, TCP-MD5 or neither, and
// diagnoses what the wire shows alone (diagnose.FromWire): unsigned,
// isn and auth-kind.

// wireDir is what one direction showed, in diagnose.Wire's terms.
type wireDir struct {
	ao, md5, bare uint64
	isnMissing    bool
}

// Keyless reports whether the verifier explains without keys: its keys
// file has no entry, so only the causes the wire shows can be told.
func (v *Verifier) Keyless() bool {
	return v != nil && v.keys != nil && v.keys.file != nil && len(v.keys.file.AO)+len(v.keys.file.MD5) == 0
}

// wireOf returns the state of direction k, made on first sight while
// there is room (twice maxExplained: a bare direction whose reverse was
// not seen yet takes room too).
func (ex *explainer) wireOf(k [2]netip.AddrPort) *wireDir {
	w := ex.wire[k]
	if w == nil && len(ex.wire) < 2*maxExplained {
		w = &wireDir{}
		ex.wire[k] = w
		ex.wireOrder = append(ex.wireOrder, k)
	}
	return w
}

// noteWire counts a segment with an option, judged no-key for want of
// keys, and whether its traffic keys lack an ISN.
func (ex *explainer) noteWire(r *Result) {
	if r.Flags&segment.SYN != 0 && len(ex.isn) < maxExplained {
		ex.isn[r.Src] = r.Seq
	}
	w := ex.wireOf([2]netip.AddrPort{r.Src, r.Dst})
	if w == nil {
		return
	}
	switch r.Kind {
	case KindAO:
		w.ao++
		if !w.isnMissing {
			_, sok := ex.isnOf(r.Src)
			_, dok := ex.isnOf(r.Dst)
			w.isnMissing = !sok || !dok && r.Flags&(segment.SYN|segment.ACK) != segment.SYN
		}
	case KindMD5:
		w.md5++
	}
}

// bare counts, explaining without keys, a segment that carries no
// option (r holds its addresses, flags and sequence number).
func (ex *explainer) bare(r *Result) {
	if !ex.keyless {
		return
	}
	if r.Flags&segment.SYN != 0 && len(ex.isn) < maxExplained {
		ex.isn[r.Src] = r.Seq
	}
	if w := ex.wireOf([2]netip.AddrPort{r.Src, r.Dst}); w != nil {
		w.bare++
	}
}

// wireDiagnoses are the diagnoses the wire shows, in the order the
// directions were first seen; an empty slice when there is none.
func (ex *explainer) wireDiagnoses() []Diagnosis {
	out := []Diagnosis{}
	for _, k := range ex.wireOrder {
		rk := [2]netip.AddrPort{k[1], k[0]}
		d, ok := diagnose.FromWire(ex.wire[k].of(k), ex.wire[rk].of(rk))
		if ok {
			out = append(out, Diagnosis{From: k[0].String(), To: k[1].String(), Cause: d.Cause, Message: d.Fix, Entry: d.Entry})
		}
	}
	return out
}

// of is w as a diagnose.Wire of direction k; zero for nil w.
func (w *wireDir) of(k [2]netip.AddrPort) diagnose.Wire {
	if w == nil {
		return diagnose.Wire{From: k[0], To: k[1]}
	}
	return diagnose.Wire{From: k[0], To: k[1], AO: w.ao, MD5: w.md5, Bare: w.bare, ISNMissing: w.isnMissing}
}
