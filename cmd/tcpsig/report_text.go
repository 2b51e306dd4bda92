package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tcpsig/tcpsig/pcapverify"
)

// textReporter writes for people. A capture of which not one packet
// could be read (not a capture, unreadable, broken at its first record)
// gets no report: its error, on stderr, says it all.
type textReporter struct {
	w       io.Writer
	verbose bool // a line for good segments too
	multi   bool // more than one file: name it on each line
	live    bool // the title is printed at once, not with the first line of the file's report
	said    map[string]bool
	title   string // of the file begun, until printed
	printed bool   // anything was
	// explaining: -explain; diags are the diagnoses of the file being
	// reported, shown after its flow tables.
	explaining bool
	diags      []pcapverify.Diagnosis
	// keyless: -explain without -keys, which the diagnosis section says
	// once (saidKeyless).
	keyless, saidKeyless bool
}

func (p *textReporter) explain(file string, ds []pcapverify.Diagnosis) { p.diags = ds }

// diagnoses prints the diagnosis section of -explain.
func (p *textReporter) diagnoses() {
	if !p.explaining {
		return
	}
	if p.keyless {
		p.keylessDiagnoses()
		return
	}
	if len(p.diags) == 0 {
		fmt.Fprintln(p.w, "\ndiagnosis: nothing to explain (no flow direction failed)")
		return
	}
	fmt.Fprintln(p.w, "\ndiagnosis:")
	for _, d := range p.diags {
		fmt.Fprintf(p.w, "  %s > %s: %s: %s\n", d.From, d.To, d.Cause, d.Message)
	}
	p.diags = nil
}

// keylessDiagnoses prints the diagnosis section of -explain without
// -keys, saying once which causes need keys.
func (p *textReporter) keylessDiagnoses() {
	if len(p.diags) == 0 {
		fmt.Fprintln(p.w, "\ndiagnosis: the wire shows no unsigned, isn or auth-kind cause")
	} else {
		fmt.Fprintln(p.w, "\ndiagnosis:")
		for _, d := range p.diags {
			fmt.Fprintf(p.w, "  %s > %s: %s: %s\n", d.From, d.To, d.Cause, d.Message)
		}
	}
	p.diags = nil
	if !p.saidKeyless {
		p.saidKeyless = true
		fmt.Fprintln(p.w, "  (without -keys only unsigned, isn and auth-kind can be told: algorithm, options, key-id, mac-length,")
		fmt.Fprintln(p.w, "  key-encoding, secret, peer-address and tampered need the keys: give -keys FILE)")
	}
}

func (p *textReporter) begin(file, title string) {
	p.title = title
	if p.live {
		p.head()
	}
}

// head prints the title of the file begun, once.
func (p *textReporter) head() {
	if p.title != "" {
		fmt.Fprintf(p.w, "%s\n", p.title)
		p.title, p.printed = "", true
	}
}

func (p *textReporter) segment(file string, r *pcapverify.Result) {
	if r.Verdict == pcapverify.Good && !p.verbose {
		return
	}
	p.head()
	var b strings.Builder
	if p.multi {
		b.WriteString(file + ": ")
	}
	fmt.Fprintf(&b, "  frame %d: ", r.Frame)
	if r.Src.IsValid() {
		fmt.Fprintf(&b, "%v > %v ", r.Src, r.Dst)
		if r.HasTCP {
			fmt.Fprintf(&b, "[%v] seq %d ", r.Flags, r.Seq)
		}
	}
	switch r.Kind {
	case pcapverify.KindAO:
		fmt.Fprintf(&b, "ao keyid %d rnext %d sne %d ", r.KeyID, r.RNextKeyID, r.SNE)
	case pcapverify.KindMD5:
		b.WriteString("md5 ")
	}
	b.WriteString(strings.ToUpper(r.Verdict.String()))
	if r.Key != "" {
		fmt.Fprintf(&b, " (%s", r.Key)
		if r.Alg != "" && r.Alg != "md5" {
			fmt.Fprintf(&b, ", %s", r.Alg)
		}
		if r.Sender {
			b.WriteString(", sender's key")
		}
		b.WriteString(")")
	}
	if r.Reason != "" {
		// A reason is given once per file and direction: the ISN hint of
		// a capture without its handshake would fill the screen.
		k := fmt.Sprint(r.Src, r.Dst, r.Reason)
		if !p.said[k] {
			if p.said == nil {
				p.said = map[string]bool{}
			}
			if len(p.said) < 10000 {
				p.said[k] = true
			}
			b.WriteString(": " + r.Reason)
		}
	}
	fmt.Fprintln(p.w, b.String())
}

func (p *textReporter) end(file string, t *pcapverify.Totals, fs []pcapverify.FlowSummary, err error) {
	clear(p.said)
	if err != nil && t.Packets == 0 && p.title != "" {
		p.title = "" // nothing was read: no report
		return
	}
	p.head()
	p.tables(fs)
	p.diagnoses()
	fmt.Fprintf(p.w, "\n%s: %s\n", file, describe(t))
	if err != nil {
		fmt.Fprintf(p.w, "%s: stopped at an error: %v\n", file, err)
	}
}

func (p *textReporter) table(file string, t *pcapverify.Totals, fs []pcapverify.FlowSummary, now time.Time) {
	p.head()
	fmt.Fprintf(p.w, "\n%s %s: %s\n", now.Format("15:04:05"), file, describe(t))
	p.tables(fs)
	p.diagnoses()
}

// tables prints a table per flow.
func (p *textReporter) tables(fs []pcapverify.FlowSummary) {
	for _, f := range fs {
		conn := ""
		if f.Connections > 1 {
			conn = fmt.Sprintf(", %d connections", f.Connections)
		}
		fmt.Fprintf(p.w, "\nflow %d: %s <-> %s%s\n", f.Flow, f.Endpoints[0], f.Endpoints[1], conn)
		if f.Reading != "" {
			fmt.Fprintf(p.w, "  reading: %s\n", f.Reading)
		}
		tw := tabwriter.NewWriter(p.w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  FROM\tISN\tAUTH\tKEYIDS\tSNE\tGOOD\tBAD\tNO-KEY\tUNSIGNED\tMALFORMED\tUNKNOWN-ISN")
		for _, d := range f.Directions {
			auth := strings.Join(d.Auth, "+")
			if len(d.Algs) > 0 && !(len(d.Algs) == 1 && d.Algs[0] == "md5") {
				auth += " " + strings.Join(d.Algs, ",")
			}
			switch d.Reading {
			case "sender":
				auth += " (sender's keys)"
			case "receiver+sender":
				auth += " (both readings)"
			}
			ids := "-"
			if len(d.KeyIDs) > 0 {
				ids = strings.Trim(strings.ReplaceAll(fmt.Sprint(d.KeyIDs), " ", ","), "[]")
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
}

func (p *textReporter) summary(t *pcapverify.Totals, o outcome) {
	if !p.printed && o.exit == exitError {
		return // every capture failed before its first packet, as stderr says
	}
	switch {
	case o.files > 1 && o.failed == 0:
		fmt.Fprintf(p.w, "all %d captures: %s\n", o.files, describe(t))
	case o.files > 1:
		fmt.Fprintf(p.w, "%d captures, %d of them stopped at an error: %s\n", o.files, o.failed, describe(t))
	}
	switch o.exit {
	case exitGood:
		if t.Counts[pcapverify.UnknownISN] > 0 {
			fmt.Fprintln(p.w, "result: nothing failed, but some segments could not be checked (unknown-isn)")
		} else {
			fmt.Fprintln(p.w, "result: every checked segment is good")
		}
	case exitFailed:
		if n := t.Counts[pcapverify.Untracked]; n > 0 && onlyUntracked(t) {
			fmt.Fprintf(p.w, "result: FAILED: %d segments were not checked (untracked: their flows came after the %d a verifier tracks per capture)\n", n, t.MaxFlows)
		} else if p.keyless {
			fmt.Fprintln(p.w, "result: FAILED (see the diagnosis above)")
		} else {
			fmt.Fprintln(p.w, "result: FAILED (see the segments above)")
		}
	case exitError:
		fmt.Fprintln(p.w, "result: ERROR: a capture could not be read whole (see the error above)")
	case exitNothing:
		fmt.Fprintf(p.w, "result: NOTHING VERIFIED (exit 3): %s\n", strings.TrimPrefix(o.why, "nothing was verified: "))
	}
}

// describe is a one-line account of totals.
func describe(t *pcapverify.Totals) string {
	var parts []string
	for v := range pcapverify.NumVerdicts {
		if c := t.Counts[v]; c > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c, v))
		}
	}
	s := fmt.Sprintf("%d packets, %d segments judged", t.Packets, t.Checked())
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, ", ")
	}
	if t.UntrackedFlows > 0 || t.UntrackedMore {
		n := fmt.Sprintf("%d flows", t.UntrackedFlows)
		switch {
		case t.UntrackedMore:
			n = "more than " + n
		case t.UntrackedFlows == 1:
			n = "1 flow"
		}
		s += fmt.Sprintf("; %s not tracked (a verifier tracks %d flows per capture)", n, t.MaxFlows)
	}
	if t.EvictedFlows > 0 {
		s += fmt.Sprintf("; %d flows that never verified evicted for room (a verifier tracks %d at once)", t.EvictedFlows, t.MaxFlows)
	}
	if t.Skipped > 0 {
		s += fmt.Sprintf("; %d packets not concerned by any key", t.Skipped)
	}
	return s
}

// onlyUntracked reports whether every failing segment of t is untracked.
func onlyUntracked(t *pcapverify.Totals) bool {
	for v := range pcapverify.NumVerdicts {
		if v.Failing() && v != pcapverify.Untracked && t.Counts[v] > 0 {
			return false
		}
	}
	return true
}
