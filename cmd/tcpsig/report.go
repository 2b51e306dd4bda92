package main

import (
	"fmt"
	"slices"
	"time"
)

// reporter prints what verify finds: as text (a line per segment that is
// not good, a table per flow, a summary) or as JSON lines (an object per
// judged segment, then one summary object).
type reporter interface {
	begin(file, title string)
	segment(file string, r *result)
	end(file string, t *totals, fs []flowSummary, err error)
	// table shows the flows so far of a live capture.
	table(file string, t *totals, fs []flowSummary, now time.Time)
	// summary ends the report: files captures of which failed stopped at
	// an error; why explains exitNothing.
	summary(t *totals, files, failed int, exit int, why string)
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
	Flow        int       `json:"flow"`
	Endpoints   [2]string `json:"endpoints"`
	Connections int       `json:"connections"`
	// Reading says, when both ends share an address, whose MKTs the
	// keys file's entries were read as.
	Reading    string       `json:"reading,omitempty"`
	Directions []dirSummary `json:"directions"`
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
			switch {
			case d.used[0] && d.used[1]:
				ds.Reading = "receiver+sender"
			case d.used[1] || (d.kinds[kindMD5] && d.md5Sender):
				ds.Reading = "sender"
			case d.kinds[kindAO] || d.kinds[kindMD5]:
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
