package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

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

// textReporter writes for people.
type textReporter struct {
	w       io.Writer
	verbose bool // a line for good segments too
	multi   bool // more than one file: name it on each line
	said    map[string]bool
}

func (p *textReporter) begin(file, title string) {
	fmt.Fprintf(p.w, "%s\n", title)
}

func (p *textReporter) segment(file string, r *result) {
	if r.verdict == good && !p.verbose {
		return
	}
	var b strings.Builder
	if p.multi {
		b.WriteString(file + ": ")
	}
	fmt.Fprintf(&b, "  frame %d: ", r.frame)
	if r.src.IsValid() {
		fmt.Fprintf(&b, "%v > %v ", r.src, r.dst)
		if r.hasTCP {
			fmt.Fprintf(&b, "[%v] seq %d ", r.flags, r.seq)
		}
	}
	switch r.kind {
	case kindAO:
		fmt.Fprintf(&b, "ao keyid %d rnext %d sne %d ", r.keyID, r.rnext, r.sne)
	case kindMD5:
		b.WriteString("md5 ")
	}
	b.WriteString(strings.ToUpper(r.verdict.String()))
	if r.key != "" {
		fmt.Fprintf(&b, " (%s", r.key)
		if r.alg != "" && r.alg != "md5" {
			fmt.Fprintf(&b, ", %s", r.alg)
		}
		if r.sender {
			b.WriteString(", sender's key")
		}
		b.WriteString(")")
	}
	if r.reason != "" {
		// A reason is given once per file and direction: the ISN hint of
		// a capture without its handshake would fill the screen.
		k := fmt.Sprint(r.src, r.dst, r.reason)
		if !p.said[k] {
			if p.said == nil {
				p.said = map[string]bool{}
			}
			if len(p.said) < 10000 {
				p.said[k] = true
			}
			b.WriteString(": " + r.reason)
		}
	}
	fmt.Fprintln(p.w, b.String())
}

func (p *textReporter) end(file string, t *totals, fs []flowSummary, err error) {
	clear(p.said)
	for _, f := range fs {
		conn := ""
		if f.Connections > 1 {
			conn = fmt.Sprintf(", %d connections", f.Connections)
		}
		fmt.Fprintf(p.w, "\nflow %d: %s <-> %s%s\n", f.Flow, f.Endpoints[0], f.Endpoints[1], conn)
		tw := tabwriter.NewWriter(p.w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  FROM\tISN\tAUTH\tKEYIDS\tSNE\tGOOD\tBAD\tNO-KEY\tUNSIGNED\tMALFORMED\tUNKNOWN-ISN")
		for _, d := range f.Directions {
			auth := strings.Join(d.Auth, "+")
			if len(d.Algs) > 0 && !(len(d.Algs) == 1 && d.Algs[0] == "md5") {
				auth += " " + strings.Join(d.Algs, ",")
			}
			if d.Reading == "sender" {
				auth += " (sender's keys)"
			}
			ids := "-"
			if len(d.KeyIDs) > 0 {
				ids = joinInts(d.KeyIDs)
				ids = strings.ReplaceAll(ids, " ", "")
			}
			sne := "-"
			if slices.Contains(d.Auth, "ao") {
				sne = strconv.FormatUint(uint64(d.SNE), 10)
			}
			v := d.Verdicts
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\n", d.From, d.ISNFrom, auth, ids, sne,
				v.Good, v.Bad, v.NoKey, v.Unsigned, v.Malformed, v.UnknownISN)
		}
		tw.Flush()
	}
	fmt.Fprintf(p.w, "\n%s: %s\n", file, describe(t))
	if err != nil {
		fmt.Fprintf(p.w, "%s: stopped at an error: %v\n", file, err)
	}
}

func (p *textReporter) summary(t *totals, files int, exit int) {
	if files > 1 {
		fmt.Fprintf(p.w, "all %d captures: %s\n", files, describe(t))
	}
	switch {
	case exit == 0 && t.counts[unknownISN] > 0:
		fmt.Fprintln(p.w, "result: nothing failed, but some segments could not be checked (unknown-isn)")
	case exit == 0 && t.checked() == 0:
		fmt.Fprintln(p.w, "result: no segment was judged: none carries TCP-AO or TCP-MD5 or is covered by a key")
	case exit == 0:
		fmt.Fprintln(p.w, "result: every checked segment is good")
	case exit == 1:
		fmt.Fprintln(p.w, "result: FAILED (see the segments above)")
	}
}

// describe is a one-line account of totals.
func describe(t *totals) string {
	var parts []string
	for v := range numVerdicts {
		if c := t.counts[v]; c > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c, v))
		}
	}
	s := fmt.Sprintf("%d packets, %d segments judged", t.packets, t.checked())
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, ", ")
	}
	if t.skipped > 0 {
		s += fmt.Sprintf("; %d packets not concerned by any key", t.skipped)
	}
	return s
}

// jsonReporter writes one JSON object per line.
type jsonReporter struct {
	enc   *json.Encoder
	multi bool
	files []fileSummary
}

type segmentJSON struct {
	File       string  `json:"file,omitempty"`
	Frame      int     `json:"frame"`
	Src        string  `json:"src"`
	Dst        string  `json:"dst"`
	Flags      string  `json:"flags,omitempty"`
	Seq        *uint32 `json:"seq,omitempty"`
	Kind       string  `json:"kind"`
	KeyID      *uint8  `json:"keyid"`
	RNextKeyID *uint8  `json:"rnextkeyid"`
	SNE        *uint32 `json:"sne"`
	Verdict    string  `json:"verdict"`
	Key        string  `json:"key,omitempty"`
	Alg        string  `json:"alg,omitempty"`
	Reading    string  `json:"reading,omitempty"`
	Reason     string  `json:"reason,omitempty"`
	Flow       int     `json:"flow,omitempty"`
}

type fileSummary struct {
	File     string        `json:"file"`
	Packets  uint64        `json:"packets"`
	Checked  uint64        `json:"segments"`
	Skipped  uint64        `json:"skipped"`
	Verdicts verdictCounts `json:"verdicts"`
	Flows    []flowSummary `json:"flows"`
	Error    string        `json:"error,omitempty"`
}

type summaryJSON struct {
	Summary struct {
		Packets  uint64        `json:"packets"`
		Checked  uint64        `json:"segments"`
		Skipped  uint64        `json:"skipped"`
		Verdicts verdictCounts `json:"verdicts"`
		Files    []fileSummary `json:"files"`
		Exit     int           `json:"exit"`
	} `json:"summary"`
}

func newJSONReporter(w io.Writer, multi bool) *jsonReporter {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &jsonReporter{enc: enc, multi: multi}
}

func (p *jsonReporter) begin(file, title string) {}

func (p *jsonReporter) segment(file string, r *result) {
	j := segmentJSON{Frame: r.frame, Kind: r.kind.String(), Verdict: r.verdict.String(), Key: r.key, Alg: r.alg, Reason: r.reason, Flow: r.flow}
	if p.multi {
		j.File = file
	}
	if r.src.IsValid() {
		j.Src, j.Dst = r.src.String(), r.dst.String()
	}
	if r.hasTCP {
		seq := r.seq
		j.Flags, j.Seq = r.flags.String(), &seq
	}
	if r.kind == kindAO {
		k, n, s := r.keyID, r.rnext, r.sne
		j.KeyID, j.RNextKeyID, j.SNE = &k, &n, &s
	}
	if r.key != "" {
		j.Reading = "receiver"
		if r.sender {
			j.Reading = "sender"
		}
	}
	_ = p.enc.Encode(&j)
}

func (p *jsonReporter) end(file string, t *totals, fs []flowSummary, err error) {
	s := fileSummary{File: file, Packets: t.packets, Checked: t.checked(), Skipped: t.skipped, Verdicts: countsOf(&t.counts), Flows: fs}
	if s.Flows == nil {
		s.Flows = []flowSummary{}
	}
	if err != nil {
		s.Error = err.Error()
	}
	p.files = append(p.files, s)
}

func (p *jsonReporter) summary(t *totals, files int, exit int) {
	var s summaryJSON
	s.Summary.Packets, s.Summary.Checked, s.Summary.Skipped = t.packets, t.checked(), t.skipped
	s.Summary.Verdicts, s.Summary.Files, s.Summary.Exit = countsOf(&t.counts), p.files, exit
	_ = p.enc.Encode(&s)
}
