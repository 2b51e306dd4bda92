package main

import (
	"encoding/json"
	"io"
	"time"

	"github.com/tcpsig/tcpsig/pcapverify"
)

// jsonReporter writes one JSON object per line.
type jsonReporter struct {
	enc   *json.Encoder
	multi bool
	files []fileSummary
	diags *[]pcapverify.Diagnosis // with -explain: every file's, for the summary
	// The file whose diagnoses were given last, and where they start.
	diagFile string
	diagFrom int
}

// explaining makes the summary carry "diagnoses" (on: -explain).
func (p *jsonReporter) explaining(on bool) *jsonReporter {
	if on {
		p.diags = &[]pcapverify.Diagnosis{}
	}
	return p
}

// explain keeps a file's diagnoses for the summary; live, the last
// ones given replace those of the same file.
func (p *jsonReporter) explain(file string, ds []pcapverify.Diagnosis) {
	if p.diags == nil {
		return
	}
	if p.diagFile == file {
		*p.diags = (*p.diags)[:p.diagFrom]
	}
	p.diagFile, p.diagFrom = file, len(*p.diags)
	*p.diags = append(*p.diags, ds...)
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
	File     string                   `json:"file"`
	Packets  uint64                   `json:"packets"`
	Checked  uint64                   `json:"segments"`
	Skipped  uint64                   `json:"skipped"`
	Verdicts pcapverify.VerdictCounts `json:"verdicts"`
	untrackedJSON
	Flows []pcapverify.FlowSummary `json:"flows"`
	Error string                   `json:"error,omitempty"`
}

// untrackedJSON counts the flows past the verifier's limit (their
// segments are "untracked"): more_untracked_flows says there were more
// than untracked_flows, max_flows is the limit; evicted_flows counts the
// flows that never verified let go for room (their segments were judged).
type untrackedJSON struct {
	UntrackedFlows     uint64 `json:"untracked_flows"`
	MoreUntrackedFlows bool   `json:"more_untracked_flows,omitempty"`
	MaxFlows           int    `json:"max_flows,omitempty"`
	EvictedFlows       uint64 `json:"evicted_flows"`
}

func untrackedOf(t *pcapverify.Totals) untrackedJSON {
	return untrackedJSON{t.UntrackedFlows, t.UntrackedMore, t.MaxFlows, t.EvictedFlows}
}

type summaryJSON struct {
	Summary struct {
		Packets  uint64                   `json:"packets"`
		Checked  uint64                   `json:"segments"`
		Skipped  uint64                   `json:"skipped"`
		Verdicts pcapverify.VerdictCounts `json:"verdicts"`
		untrackedJSON
		Files  []fileSummary `json:"files"`
		Errors int           `json:"errors"` // captures that stopped at an error
		Exit   int           `json:"exit"`
		Why    string        `json:"why,omitempty"` // for exit 3: why nothing was verified
		// Diagnoses, with -explain only: an empty array when nothing failed.
		Diagnoses *[]pcapverify.Diagnosis `json:"diagnoses,omitempty"`
	} `json:"summary"`
}

func newJSONReporter(w io.Writer, multi bool) *jsonReporter {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &jsonReporter{enc: enc, multi: multi}
}

func (p *jsonReporter) begin(file, title string) {}

func (p *jsonReporter) segment(file string, r *pcapverify.Result) {
	j := segmentJSON{Frame: r.Frame, Kind: r.Kind.String(), Verdict: r.Verdict.String(), Key: r.Key, Alg: r.Alg, Reason: r.Reason, Flow: r.Flow}
	if p.multi {
		j.File = file
	}
	if r.Src.IsValid() {
		j.Src, j.Dst = r.Src.String(), r.Dst.String()
	}
	if r.HasTCP {
		seq := r.Seq
		j.Flags, j.Seq = r.Flags.String(), &seq
	}
	if r.Kind == pcapverify.KindAO {
		k, n, s := r.KeyID, r.RNextKeyID, r.SNE
		j.KeyID, j.RNextKeyID, j.SNE = &k, &n, &s
	}
	if r.Key != "" {
		j.Reading = "receiver"
		if r.Sender {
			j.Reading = "sender"
		}
	}
	_ = p.enc.Encode(&j)
}

// table writes {"table": {...}}: the file summary of a live capture so
// far, with the time.
func (p *jsonReporter) table(file string, t *pcapverify.Totals, fs []pcapverify.FlowSummary, now time.Time) {
	var j struct {
		Table struct {
			Time time.Time `json:"time"`
			fileSummary
		} `json:"table"`
	}
	j.Table.Time = now
	j.Table.fileSummary = newFileSummary(file, t, fs)
	_ = p.enc.Encode(&j)
}

// newFileSummary is the summary of one capture.
func newFileSummary(file string, t *pcapverify.Totals, fs []pcapverify.FlowSummary) fileSummary {
	s := fileSummary{File: file, Packets: t.Packets, Checked: t.Checked(), Skipped: t.Skipped, Verdicts: t.Verdicts(), untrackedJSON: untrackedOf(t), Flows: fs}
	if s.Flows == nil {
		s.Flows = []pcapverify.FlowSummary{}
	}
	return s
}

func (p *jsonReporter) end(file string, t *pcapverify.Totals, fs []pcapverify.FlowSummary, err error) {
	s := newFileSummary(file, t, fs)
	if err != nil {
		s.Error = err.Error()
	}
	p.files = append(p.files, s)
}

func (p *jsonReporter) summary(t *pcapverify.Totals, o outcome) {
	var s summaryJSON
	s.Summary.Packets, s.Summary.Checked, s.Summary.Skipped = t.Packets, t.Checked(), t.Skipped
	s.Summary.Verdicts, s.Summary.Files, s.Summary.Exit = t.Verdicts(), p.files, o.exit
	s.Summary.untrackedJSON = untrackedOf(t)
	s.Summary.Errors, s.Summary.Why = o.failed, o.why
	s.Summary.Diagnoses = p.diags
	_ = p.enc.Encode(&s)
}
