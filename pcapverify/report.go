package pcapverify

import (
	"fmt"
	"io"
	"slices"
)

// Report is what one capture was found to hold.
type Report struct {
	Totals    Totals
	Flows     []FlowSummary
	Diagnoses []Diagnosis // with Options.Explain: why each failing direction failed
}

// Verify reads a whole capture and judges its segments with keys, handing
// each to emit (nil: none) as Verifier does. When the capture cannot be
// read to its end, the error names the frame, and the report holds what
// came before it.
func Verify(r io.Reader, keys *Keys, opts *Options, emit func(*Result)) (*Report, error) {
	v, err := NewVerifier(keys, opts, emit)
	if err != nil {
		return &Report{}, err
	}
	defer v.Close()
	c, err := Open(r)
	if err != nil {
		return &Report{}, err
	}
	for frame := 1; ; frame++ {
		ip, truncated, err := c.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			err = fmt.Errorf("frame %d: %w", frame, err)
			return &Report{Totals: v.totals, Flows: v.Flows()}, err
		}
		_ = v.Packet(frame, ip, truncated)
	}
	return &Report{Totals: v.totals, Flows: v.Flows(), Diagnoses: v.Diagnoses()}, nil
}

// VerdictCounts are the counts per verdict, by name.
type VerdictCounts struct {
	Good       uint64 `json:"good"`
	Bad        uint64 `json:"bad"`
	NoKey      uint64 `json:"no-key"`
	Unsigned   uint64 `json:"unsigned"`
	Malformed  uint64 `json:"malformed"`
	UnknownISN uint64 `json:"unknown-isn"`
	Untracked  uint64 `json:"untracked"`
}

// Verdicts are t's counts by name (all zero for nil Totals).
func (t *Totals) Verdicts() VerdictCounts {
	if t == nil {
		return VerdictCounts{}
	}
	return countsOf(&t.Counts)
}

// countsOf names the counts of c by verdict.
func countsOf(c *[NumVerdicts]uint64) VerdictCounts {
	return VerdictCounts{c[Good], c[Bad], c[NoKey], c[Unsigned], c[Malformed], c[UnknownISN], c[Untracked]}
}

// A FlowSummary is a flow's table: its endpoints, and what each direction
// carried.
type FlowSummary struct {
	Flow        int       `json:"flow"`
	Endpoints   [2]string `json:"endpoints"`
	Connections int       `json:"connections"`
	// Reading says, when both ends share an address, whose MKTs the
	// keys file's entries were read as.
	Reading    string       `json:"reading,omitempty"`
	Directions []DirSummary `json:"directions"`
}

// A DirSummary is one direction of a flow: where its ISN came from, the
// options, algorithms and KeyIDs it carried, its largest SNE and its
// verdicts.
type DirSummary struct {
	From     string        `json:"from"`
	To       string        `json:"to"`
	ISN      *uint32       `json:"isn"`
	ISNFrom  string        `json:"isn_from"`
	Auth     []string      `json:"auth"`
	Algs     []string      `json:"algorithms"`
	KeyIDs   []int         `json:"keyids"`
	Reading  string        `json:"reading,omitempty"`
	SNE      uint32        `json:"sne"`
	Verdicts VerdictCounts `json:"verdicts"`
}

// summarize makes the tables of the flows that had judged segments.
func summarize(t *flows) []FlowSummary {
	var out []FlowSummary
	for _, f := range t.inOrder() {
		// The client first: the end that sent a SYN, else the first seen.
		order := [2]int{0, 1}
		if f.ends[1].isnFrom == isnFromSYN && f.ends[0].isnFrom != isnFromSYN {
			order = [2]int{1, 0}
		}
		fs := FlowSummary{Flow: f.id, Endpoints: [2]string{f.ends[order[0]].addr.String(), f.ends[order[1]].addr.String()}, Connections: f.conns}
		for _, i := range order {
			d, e := &f.dirs[i], &f.ends[i]
			var n uint64
			for _, c := range d.counts {
				n += c
			}
			if n == 0 {
				continue
			}
			ds := DirSummary{From: e.addr.String(), To: f.ends[1-i].addr.String(), ISNFrom: e.isnFrom.String(),
				Algs: slices.Clone(d.algs), SNE: d.sneHi, Verdicts: countsOf(&d.counts), Auth: []string{}, KeyIDs: []int{}}
			if e.isnKnown() {
				isn := e.isn
				ds.ISN = &isn
			}
			// "none" only when no segment carried an option.
			for k := KindAO; k < numKinds; k++ {
				if d.kinds[k] {
					ds.Auth = append(ds.Auth, k.String())
				}
			}
			if len(ds.Auth) == 0 {
				ds.Auth = append(ds.Auth, KindNone.String())
			}
			for id := range 256 {
				if d.keyIDs[id/64]&(1<<(id%64)) != 0 {
					ds.KeyIDs = append(ds.KeyIDs, id)
				}
			}
			switch {
			case d.used[0] && d.used[1]:
				ds.Reading = "receiver+sender"
			case d.used[1] || (d.kinds[KindMD5] && d.md5Sender):
				ds.Reading = "sender"
			case d.kinds[KindAO] || d.kinds[KindMD5]:
				ds.Reading = "receiver"
			}
			if ds.Algs == nil {
				ds.Algs = []string{}
			}
			fs.Directions = append(fs.Directions, ds)
		}
		fs.Reading = flowReading(f)
		if len(fs.Directions) > 0 {
			out = append(out, fs)
		}
	}
	return out
}

// flowReading says, for a flow whose ends share an address, whose MKTs
// the entries were read as; "" for other flows.
func flowReading(f *flow) string {
	if !f.dirs[0].twoReadings && !f.dirs[1].twoReadings || f.explained == [3]uint64{} {
		return ""
	}
	if f.reading == readBoth {
		return fmt.Sprintf("both ends on %v: each end's segments verified with the other end's entries as its receiver's MKTs (the file lists both ends' keys)", f.ends[0].addr.Addr())
	}
	owner := f.ends[f.reading-1].addr
	return fmt.Sprintf("both ends on %v: the entries read as %v's MKTs (the file lists one end's keys)", owner.Addr(), owner)
}
