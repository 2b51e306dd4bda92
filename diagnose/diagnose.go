package diagnose

import (
	"fmt"
	"net/netip"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/segment"
)

// Cause is why a direction's segments do not verify: one of the words
// below, which reports print as they are.
type Cause string

// The causes.
const (
	Algorithm   Cause = "algorithm"    // they verify with a configured secret under another algorithm
	Options     Cause = "options"      // they verify with exclude_options the other way
	KeyID       Cause = "key-id"       // the KeyID on the wire is not the entry's
	MACLength   Cause = "mac-length"   // the option's MAC length is not the entry's maclen
	KeyEncoding Cause = "key-encoding" // the peer reads the secret as written another way
	Secret      Cause = "secret"       // no configured secret under any variation verifies
	AuthKind    Cause = "auth-kind"    // TCP-MD5 where the keys configure TCP-AO, or the reverse
	PeerAddress Cause = "peer-address" // no entry covers the sender; one for another address verifies
	Tampered    Cause = "tampered"     // most of the direction verifies: isolated segments were altered
	Unsigned    Cause = "unsigned"     // a covered peer sends no option
	ISN         Cause = "isn"          // TCP-AO without the handshake, and no ISNs given
)

// MaxSegments is how many of a direction's segments Explain searches.
const MaxSegments = 3

// Segment is a failing segment and what was known of its flow when it
// was judged.
type Segment struct {
	Packet   []byte  // the whole IP packet; Explain neither keeps nor changes it
	ISNs     ao.ISNs // the sender's ISN (Src) and the receiver's (Dst)
	ISNKnown bool    // the ISNs the segment's traffic key needs are known
	SNE      uint32  // the SNE of its sequence number
}

// Direction is one direction of a flow: a few of its failing segments,
// and how many of its segments verified and failed in all.
type Direction struct {
	Segments         []Segment
	Verified, Failed uint64
}

// Diagnosis is the cause of a direction's failures, the keys-file entry
// to change ("" when there is none: a name, else ao[i] or md5[i]) and a
// one-line fix that names it and the field.
type Diagnosis struct {
	Cause Cause
	Entry string
	Fix   string
}

// String is "cause: fix".
func (d Diagnosis) String() string { return string(d.Cause) + ": " + d.Fix }

// Explain names the cause of d's failures under the keys of kf. A
// direction in which most segments verify is Tampered. Otherwise up to
// MaxSegments of d.Segments are searched, and the first cause other than
// Secret that one of them shows is the diagnosis. A nil kf is a keys file
// without entries (Unsigned cannot be told then). Explain never fails:
// with no segment to search it says so as Secret.
func Explain(kf *keyfile.File, d Direction) Diagnosis {
	return ExplainAll(kf, []Direction{d})[0]
}

// ExplainAll is Explain of each of ds, in order. The directions share
// the candidate keys they build: a peer that retries a session that will
// not come up makes a flow per attempt, each tried with the same ones.
func ExplainAll(kf *keyfile.File, ds []Direction) []Diagnosis {
	if kf == nil {
		kf = &keyfile.File{}
	}
	var c mkts
	defer c.close()
	out := make([]Diagnosis, len(ds))
	for i, d := range ds {
		out[i] = explain(kf, d, &c)
	}
	return out
}

// explain is Explain with the candidate keys of c.
func explain(kf *keyfile.File, d Direction, c *mkts) Diagnosis {
	if d.Verified > d.Failed && d.Verified > 0 {
		return Diagnosis{Cause: Tampered, Fix: fmt.Sprintf("%d of %d segments fail and the others verify: they were altered in transit or forged (no configuration to change)",
			d.Failed, d.Failed+d.Verified)}
	}
	var first *Diagnosis
	for i, s := range d.Segments {
		if i == MaxSegments {
			break
		}
		dg, ok := explainOne(kf, s, c)
		if !ok {
			continue
		}
		if dg.Cause != Secret {
			return dg
		}
		if first == nil {
			first = &dg
		}
	}
	if first != nil {
		return *first
	}
	return Diagnosis{Cause: Secret, Fix: "no segment to search: the secrets differ or the segments are damaged"}
}

// seg is a parsed failing segment.
type seg struct {
	s        *Segment
	src, dst netip.AddrPort
	flags    segment.Flags
}

// parse reads s; false when it is not a TCP segment.
func parse(s *Segment) (segment.Segment, seg, bool) {
	p, err := segment.ParsePacket(s.Packet)
	if err != nil {
		return p, seg{}, false
	}
	h := p.Header()
	return p, seg{s: s, src: netip.AddrPortFrom(p.Src().Unmap(), h.SrcPort()), dst: netip.AddrPortFrom(p.Dst().Unmap(), h.DstPort()), flags: h.Flags()}, true
}

// explainOne diagnoses one segment; false when it does not parse.
func explainOne(kf *keyfile.File, s Segment, c *mkts) (Diagnosis, bool) {
	p, sg, ok := parse(&s)
	if !ok {
		return Diagnosis{}, false
	}
	src, dst := sg.src.Addr(), sg.dst.Addr()
	aoE, aoMirror := aoEntries(kf, src, dst)
	md5E := md5Entries(kf, src, dst)
	auth := p.Auth()
	switch {
	case auth.AO == 0 && auth.MD5 == 0:
		return unsigned(kf, sg, aoE, md5E), true
	case auth.AO > 0 && len(aoE) == 0 && len(md5E) > 0:
		i := md5E[0]
		return Diagnosis{Cause: AuthKind, Entry: entry("md5", i, kf.MD5[i].Name),
			Fix: label("md5", i, kf.MD5[i].Name) + fmt.Sprintf(`: %v signs with TCP-AO: make it an "ao" entry (or configure TCP-MD5 on the peer)`, src)}, true
	case auth.MD5 > 0 && len(md5E) == 0 && len(aoE) > 0:
		i := aoE[0]
		return Diagnosis{Cause: AuthKind, Entry: entry("ao", i, kf.AO[i].Name),
			Fix: label("ao", i, kf.AO[i].Name) + fmt.Sprintf(`: %v signs with TCP-MD5: make it an "md5" entry (or configure TCP-AO on the peer)`, src)}, true
	case auth.MD5 > 0:
		return explainMD5(kf, &p, sg, md5E), true
	}
	opt, err := ao.ParseOption(p.Header()[auth.AO:])
	if err != nil {
		return Diagnosis{}, false
	}
	if !s.ISNKnown {
		return Diagnosis{Cause: ISN, Fix: fmt.Sprintf("the handshake of %v <-> %v is not in the capture: give -isn %v=ISN -isn %v=ISN (and -sne if it wrapped)",
			sg.src, sg.dst, sg.src, sg.dst)}, true
	}
	a := &aoSearch{kf: kf, p: &p, sg: sg, opt: opt, mkts: c}
	if len(aoE) == 0 {
		return a.otherAddress(), true
	}
	return a.search(aoE, aoMirror), true
}

// unsigned diagnoses a segment without an option from a covered peer.
func unsigned(kf *keyfile.File, sg seg, aoE, md5E []int) Diagnosis {
	d := Diagnosis{Cause: Unsigned}
	switch {
	case len(aoE) > 0:
		d.Entry = entry("ao", aoE[0], kf.AO[aoE[0]].Name)
		d.Fix = label("ao", aoE[0], kf.AO[aoE[0]].Name)
	case len(md5E) > 0:
		d.Entry = entry("md5", md5E[0], kf.MD5[md5E[0]].Name)
		d.Fix = label("md5", md5E[0], kf.MD5[md5E[0]].Name)
	default:
		d.Fix = "no entry"
	}
	d.Fix += fmt.Sprintf(" covers %v, which sends no TCP-AO or TCP-MD5 option: configure the key on %v (or remove the entry)", sg.src.Addr(), sg.src.Addr())
	return d
}

// aoEntries returns the indexes of the "ao" entries that judge segments
// from src to dst, as pcapverify reads a keys file: the receiver's (whose
// peer contains src), else the sender's (whose peer contains dst), which
// mirrored says.
func aoEntries(kf *keyfile.File, src, dst netip.Addr) (idx []int, mirrored bool) {
	for i, e := range kf.AO {
		if e.Config.Peer.Contains(src) {
			idx = append(idx, i)
		}
	}
	if len(idx) > 0 {
		return idx, false
	}
	for i, e := range kf.AO {
		if e.Config.Peer.Contains(dst) {
			idx = append(idx, i)
		}
	}
	return idx, len(idx) > 0
}

// md5Entries is aoEntries for the "md5" entries (a TCP-MD5 key is the
// same on both ends).
func md5Entries(kf *keyfile.File, src, dst netip.Addr) []int {
	var idx []int
	for _, a := range []netip.Addr{src, dst} {
		for i, e := range kf.MD5 {
			if e.Config.Peer.Contains(a) {
				idx = append(idx, i)
			}
		}
		if len(idx) > 0 {
			break
		}
	}
	return idx
}

// entry is how a Diagnosis names entry i of kind: its name, else kind[i].
func entry(kind string, i int, name string) string {
	if name != "" {
		return name
	}
	return keyfile.Label(kind, i, "")
}

// label is how a fix names entry i of kind: ao[2], or ao[2] ("name").
func label(kind string, i int, name string) string { return keyfile.Label(kind, i, name) }

// host is the prefix of a alone.
func host(a netip.Addr) netip.Prefix { return netip.PrefixFrom(a, a.BitLen()) }
