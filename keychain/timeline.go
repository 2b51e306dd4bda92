package keychain

import (
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/keys"
)

// Timeline is a keys file's schedule from a moment on, per peer: which
// keys send and which are accepted, span by span, and what is wrong
// with it.
type Timeline struct {
	Peers    []PeerTimeline
	Problems []string // a moment with no send key, or a send key the other end does not accept then
	Warnings []string // a tolerance smaller than the file's clock_skew
}

// PeerTimeline is one peer's spans, for the peers that have a key with a
// lifetime, or whose key's mirror on the other end has one (the others'
// keys send and are accepted always).
type PeerTimeline struct {
	Peer  netip.Prefix
	MD5   bool
	Spans []Span
}

// Span is a stretch of time in which the same keys send and are accepted;
// a zero Until is "no end".
type Span struct {
	From, Until  time.Time
	Send, Accept []string // entry labels
}

// entry is one key of the file, as the timeline sees it.
type entry struct {
	label string
	view  keysView
}

// entries lists f's keys.
func entries(f *keyfile.File) []entry {
	var out []entry
	for i, e := range f.AO {
		out = append(out, entry{keyfile.Label("ao", i, e.Name), aoView(e)})
	}
	for i, e := range f.MD5 {
		out = append(out, entry{keyfile.Label("md5", i, e.Name), md5View(e)})
	}
	return out
}

// Check is f's timeline from now on. With other (the file of the ends
// f's peers are, or nil), each span where one of f's keys sends is
// checked against other: a mirror of that key must be accepted there
// (inside its accept lifetime widened by its tolerance) for the whole
// span. Call Check(other, f, …) as well for the other direction.
func Check(f, other *keyfile.File, now time.Time) Timeline {
	var t Timeline
	if f == nil {
		return t
	}
	all := entries(f)
	var theirs []entry
	if other != nil {
		theirs = entries(other)
	}
	type peerKey struct {
		p   netip.Prefix
		md5 bool
	}
	var order []peerKey
	byPeer := map[peerKey][]entry{}
	for _, e := range all {
		k := peerKey{e.view.peer, e.view.md5}
		if _, ok := byPeer[k]; !ok {
			order = append(order, k)
		}
		byPeer[k] = append(byPeer[k], e)
		if l := e.view.lifetime; l.Scheduled() && f.ClockSkew > 0 && l.Tolerance < f.ClockSkew {
			t.Warnings = append(t.Warnings, fmt.Sprintf("%s: accept tolerance %v is smaller than the file's clock_skew %v: a peer whose clock is that far off is refused at the edges of the accept lifetime",
				e.label, l.Tolerance, f.ClockSkew))
		}
	}
	for _, k := range order {
		es := byPeer[k]
		// A peer without lifetimes on either end sends and accepts
		// always, as before lifetimes: no timeline.
		scheduled := func(e entry) bool {
			return e.view.lifetime.Scheduled() || slices.ContainsFunc(theirs, func(o entry) bool {
				return o.view.lifetime.Scheduled() && mirrors(e.view, o.view)
			})
		}
		if !slices.ContainsFunc(es, scheduled) {
			continue
		}
		pt := PeerTimeline{Peer: k.p, MD5: k.md5}
		for _, s := range spans(es, theirs, other != nil, now) {
			pt.Spans = append(pt.Spans, s.Span)
			t.Problems = append(t.Problems, s.problems...)
		}
		t.Peers = append(t.Peers, pt)
	}
	return t
}

// spanCheck is a span and what is wrong in it.
type spanCheck struct {
	Span
	problems []string
}

// spans cuts time from now at every bound of es's lifetimes (and of
// their mirrors' accept lifetimes in theirs) and says, span by span,
// which of es send and are accepted, and what is wrong.
func spans(es, theirs []entry, checkOther bool, now time.Time) []spanCheck {
	bounds := []time.Time{now}
	add := func(w keys.Window) {
		for _, b := range []time.Time{w.Start, w.End} {
			if !b.IsZero() && b.After(now) {
				bounds = append(bounds, b)
			}
		}
	}
	mirrorsOf := map[string][]entry{}
	for _, e := range es {
		add(e.view.lifetime.Send)
		add(e.view.lifetime.AcceptWindow())
		for _, o := range theirs {
			if mirrors(e.view, o.view) {
				mirrorsOf[e.label] = append(mirrorsOf[e.label], o)
				add(o.view.lifetime.AcceptWindow())
			}
		}
	}
	slices.SortFunc(bounds, func(a, b time.Time) int { return a.Compare(b) })
	bounds = slices.CompactFunc(bounds, time.Time.Equal)
	var out []spanCheck
	reported := map[string]bool{} // a key's first failing span is reported, not every one
	for i, from := range bounds {
		var s spanCheck
		s.From = from
		if i+1 < len(bounds) {
			s.Until = bounds[i+1]
		}
		for _, e := range es {
			l := e.view.lifetime
			if l.SendActive(from) {
				s.Send = append(s.Send, e.label)
				ms := mirrorsOf[e.label]
				if checkOther && !reported[e.label] && !slices.ContainsFunc(ms, func(o entry) bool { return o.view.lifetime.AcceptActive(from) }) {
					reported[e.label] = true
					why := "the other end accepts no mirror of it then"
					if len(ms) == 0 {
						why = "the other end has no mirror of it (the same key" + map[bool]string{false: ", KeyIDs swapped", true: ""}[e.view.md5] + ")"
					}
					s.problems = append(s.problems, fmt.Sprintf("peer %v: from %s: %s sends, but %s", e.view.peer, stamp(s.From), e.label, why))
				}
			}
			if l.AcceptActive(from) {
				s.Accept = append(s.Accept, e.label)
			}
		}
		if len(s.Send) == 0 {
			s.problems = append(s.problems, fmt.Sprintf("peer %v: %s: no key sends", es[0].view.peer, s.when()))
		}
		if n := len(out); n > 0 && slices.Equal(out[n-1].Send, s.Send) && slices.Equal(out[n-1].Accept, s.Accept) && len(s.problems) == 0 && len(out[n-1].problems) == 0 {
			out[n-1].Until = s.Until
			continue
		}
		out = append(out, s)
	}
	return out
}

// when is the span as "from T until U" (or "from T on").
func (s Span) when() string {
	if s.Until.IsZero() {
		return "from " + stamp(s.From) + " on"
	}
	return "from " + stamp(s.From) + " until " + stamp(s.Until)
}

// stamp is t in RFC 3339, UTC.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// Write prints the timeline, a peer a paragraph, a span a line.
func (t Timeline) Write(w io.Writer) {
	for _, p := range t.Peers {
		kind := "TCP-AO"
		if p.MD5 {
			kind = "TCP-MD5"
		}
		fmt.Fprintf(w, "timeline of peer %v (%s):\n", p.Peer, kind)
		for _, s := range p.Spans {
			until := "(no end)            "
			if !s.Until.IsZero() {
				until = stamp(s.Until)
			}
			fmt.Fprintf(w, "  %s .. %s  sends %s; accepts %s\n", stamp(s.From), until, list(s.Send), list(s.Accept))
		}
	}
}

// list is labels joined, or "nothing".
func list(labels []string) string {
	if len(labels) == 0 {
		return "nothing"
	}
	return strings.Join(labels, ", ")
}
