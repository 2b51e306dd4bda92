package main

import "slices"

// reporter prints what verify finds: as text (a line per segment that is
// not good, a table per flow, a summary) or as JSON lines (an object per
// judged segment, then one summary object).
type reporter interface {
	begin(file, title string)
	segment(file string, r *result)
	end(file string, t *totals, fs []flowSummary, err error)
	summary(t *totals, files int, exit int)
}

// verdictCounts are the counts per verdict, in the order of the verdicts.
type verdictCounts struct {
	Good       uint64 `json:"good"`
	Bad        uint64 `json:"bad"`
	NoKey      uint64 `json:"no-key"`
	Unsigned   uint64 `json:"unsigned"`
	Malformed  uint64 `json:"malformed"`
	UnknownISN uint64 `json:"unknown-isn"`
}

func countsOf(c *[numVerdicts]uint64) verdictCounts {
	return verdictCounts{c[good], c[bad], c[noKey], c[unsigned], c[malformed], c[unknownISN]}
}

// flowSummary and dirSummary are a flow's table.
type flowSummary struct {
	Flow        int          `json:"flow"`
	Endpoints   [2]string    `json:"endpoints"`
	Connections int          `json:"connections"`
	Directions  []dirSummary `json:"directions"`
}

type dirSummary struct {
	From     string        `json:"from"`
	To       string        `json:"to"`
	ISN      *uint32       `json:"isn"`
	ISNFrom  string        `json:"isn_from"`
	Auth     []string      `json:"auth"`
	Algs     []string      `json:"algorithms"`
	KeyIDs   []int         `json:"keyids"`
	Reading  string        `json:"reading,omitempty"`
	SNE      uint32        `json:"sne"`
	Verdicts verdictCounts `json:"verdicts"`
}

// summarize makes the tables of the flows that had judged segments.
func summarize(t *flows) []flowSummary {
	var out []flowSummary
	for _, f := range t.order {
		// The client first: the end that sent a SYN, else the first seen.
		order := [2]int{0, 1}
		if f.ends[1].isnFrom == isnFromSYN && f.ends[0].isnFrom != isnFromSYN {
			order = [2]int{1, 0}
		}
		fs := flowSummary{Flow: f.id, Endpoints: [2]string{f.ends[order[0]].addr.String(), f.ends[order[1]].addr.String()}, Connections: f.conns}
		for _, i := range order {
			d, e := &f.dirs[i], &f.ends[i]
			var n uint64
			for _, c := range d.counts {
				n += c
			}
			if n == 0 {
				continue
			}
			ds := dirSummary{From: e.addr.String(), To: f.ends[1-i].addr.String(), ISNFrom: e.isnFrom.String(),
				Algs: slices.Clone(d.algs), SNE: d.sneHi, Verdicts: countsOf(&d.counts), Auth: []string{}, KeyIDs: []int{}}
			if e.isnKnown() {
				isn := e.isn
				ds.ISN = &isn
			}
			// "none" only when no segment carried an option.
			for k := kindAO; k < numKinds; k++ {
				if d.kinds[k] {
					ds.Auth = append(ds.Auth, k.String())
				}
			}
			if len(ds.Auth) == 0 {
				ds.Auth = append(ds.Auth, kindNone.String())
			}
			for id := range 256 {
				if d.keyIDs[id/64]&(1<<(id%64)) != 0 {
					ds.KeyIDs = append(ds.KeyIDs, id)
				}
			}
			if (d.kinds[kindAO] && d.aoSender) || (d.kinds[kindMD5] && d.md5Sender) {
				ds.Reading = "sender"
			} else if d.kinds[kindAO] || d.kinds[kindMD5] {
				ds.Reading = "receiver"
			}
			if ds.Algs == nil {
				ds.Algs = []string{}
			}
			fs.Directions = append(fs.Directions, ds)
		}
		if len(fs.Directions) > 0 {
			out = append(out, fs)
		}
	}
	return out
}
