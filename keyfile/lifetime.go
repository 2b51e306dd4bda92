package keyfile

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/tcpsig/tcpsig/keys"
)

// Key lifetimes (RFC 8177 §3.2) in the keys file:
//
//	{"accept_tolerance": 60, "clock_skew": 30,
//	 "ao": [{…, "send_lifetime":   {"start": "2026-12-01T00:00:00Z", "end": "2027-01-01T00:00:00Z"},
//	           "accept_lifetime": {"start": "2026-12-01T00:00:00Z"}},
//	        {…, "lifetime": {"start": "2027-01-01T00:00:00Z"}, "accept_tolerance": 120}]}
//
// "lifetime" sets the send and the accept lifetime at once (RFC 8177's
// send-accept-lifetime); "send_lifetime" and "accept_lifetime" set them
// apart. Each has a "start" and an "end", RFC 3339 times, either of which
// may be absent (no start: since always; no end: for ever). A key signs
// from its send start up to, not including, its send end, and verifies
// likewise inside its accept lifetime widened on both sides by the
// tolerance: the entry's "accept_tolerance" in seconds, else the file's.
// "clock_skew" is how far the file's author assumes the ends' clocks
// differ, in seconds; it changes no key (tcpsig keys check warns of a
// tolerance smaller than it).

// ErrLifetime is the kind of error of a lifetime that cannot be read or
// cannot be: an unparsable time, an end at or before its start, a
// negative tolerance, "lifetime" given with "send_lifetime" or
// "accept_lifetime".
var ErrLifetime = errors.New("keyfile: bad lifetime")

// ErrLifetimeUnsupported is the kind of error [File.RefuseLifetimes]
// returns: the file gives a key a lifetime that the road loading it
// cannot honour.
var ErrLifetimeUnsupported = errors.New("keyfile: key lifetimes are not honoured here")

// lifetimeFields are the fields of an entry that make its lifetime.
var lifetimeFields = []string{"lifetime", "send_lifetime", "accept_lifetime", "accept_tolerance"}

// timeLayout is how times are read and written: RFC 3339, with a fraction
// of a second when there is one.
const timeLayout = time.RFC3339Nano

// lifetime decodes an entry's lifetime fields; fileTol is the file's
// accept tolerance, the entry's when it gives none.
func lifetime(fields map[string][]byte, e *Error, fileTol time.Duration) (keys.Lifetime, error) {
	l := keys.Lifetime{Tolerance: fileTol}
	if v, ok := fields["accept_tolerance"]; ok {
		d, err := tolerance(v)
		if err != nil {
			return l, e.wrap("accept_tolerance", err)
		}
		l.Tolerance = d
	}
	if v, ok := fields["lifetime"]; ok {
		for _, f := range []string{"send_lifetime", "accept_lifetime"} {
			if _, both := fields[f]; both {
				return l, e.with("lifetime", ErrLifetime, `sets the send and the accept lifetime at once: give it or "`+f+`", not both`)
			}
		}
		w, err := window(v, e, "lifetime")
		if err != nil {
			return l, err
		}
		l.Send, l.Accept = w, w
		return l, nil
	}
	for _, f := range []struct {
		name string
		dst  *keys.Window
	}{{"send_lifetime", &l.Send}, {"accept_lifetime", &l.Accept}} {
		if v, ok := fields[f.name]; ok {
			w, err := window(v, e, f.name)
			if err != nil {
				return l, err
			}
			*f.dst = w
		}
	}
	return l, nil
}

// window decodes one lifetime object, {"start": T, "end": T}, of the
// field called name.
func window(v []byte, e *Error, name string) (keys.Window, error) {
	var w keys.Window
	if k := kind(v); k != "an object" {
		return w, e.with(name, ErrSyntax, "want an object {\"start\": …, \"end\": …}, got "+k)
	}
	seen := map[string]bool{}
	for _, m := range members(v) {
		if seen[m.name] {
			return w, e.with(name+"."+m.name, ErrSyntax, "given twice")
		}
		seen[m.name] = true
		var dst *time.Time
		switch m.name {
		case "start":
			dst = &w.Start
		case "end":
			dst = &w.End
		default:
			return w, unknown(e, m.name, []string{"start", "end"}, "field of "+name)
		}
		t, err := timestamp(m.v)
		if err != nil {
			return w, e.wrap(name+"."+m.name, err)
		}
		*dst = t
	}
	if w.IsZero() {
		return w, e.with(name, ErrLifetime, `neither "start" nor "end": leave the field out for a key without a lifetime`)
	}
	if !w.Start.IsZero() && !w.End.IsZero() && !w.Start.Before(w.End) {
		return w, e.with(name+".end", ErrLifetime, fmt.Sprintf("%s is not after the start, %s",
			w.End.Format(timeLayout), w.Start.Format(timeLayout)))
	}
	return w, nil
}

// timestamp decodes an RFC 3339 time, in UTC.
func timestamp(v []byte) (time.Time, error) {
	s, err := str(v)
	if err != nil {
		return time.Time{}, err
	}
	t, err := time.Parse(timeLayout, s)
	if err != nil {
		// Never the value: it may be a key pasted here.
		return time.Time{}, valueError{ErrLifetime, "not an RFC 3339 time (want e.g. 2026-12-01T00:00:00Z or 2026-12-01T01:00:00+01:00)" + keyHint(s)}
	}
	return t.UTC(), nil
}

// tolerance decodes an accept tolerance: whole seconds, 0..2^32-1
// (RFC 8177's uint32).
func tolerance(v []byte) (time.Duration, error) {
	n, err := integer(v, math.MinInt64, math.MaxInt64, "")
	if err != nil {
		return 0, err
	}
	if n < 0 || n > math.MaxUint32 {
		return 0, valueError{ErrLifetime, fmt.Sprintf("%d seconds is not in 0..%d", n, uint32(math.MaxUint32))}
	}
	return time.Duration(n) * time.Second, nil
}

// Scheduled reports whether some entry of f has a lifetime that limits
// it in time (a send or accept lifetime; a tolerance alone limits
// nothing).
func (f *File) Scheduled() bool {
	return f.RefuseLifetimes("") != nil
}

// RefuseLifetimes is the rule for a road that cannot honour key lifetimes
// yet: it returns an [*Error] wrapping [ErrLifetimeUnsupported] that
// names the first entry with a send or accept lifetime and road (what is
// loading the file, "tcpsig shim" say), or nil when no entry has one. A
// file without lifetimes means what it meant before lifetimes, and
// passes.
func (f *File) RefuseLifetimes(road string) error {
	if f == nil {
		return nil
	}
	if road == "" {
		road = "this program"
	}
	refuse := func(label string, l keys.Lifetime) error {
		return &Error{Entry: label, Err: ErrLifetimeUnsupported, msg: fmt.Sprintf(
			"has a lifetime (%v), which %s cannot honour yet: it would sign and accept the key outside it; remove the entry's lifetime fields or load the file where lifetimes are honoured",
			l, road)}
	}
	for i, e := range f.AO {
		if e.Config.Lifetime.Scheduled() {
			return refuse(Label("ao", i, e.Name), e.Config.Lifetime)
		}
	}
	for i, e := range f.MD5 {
		if e.Config.Lifetime.Scheduled() {
			return refuse(Label("md5", i, e.Name), e.Config.Lifetime)
		}
	}
	return nil
}

// checkWritable refuses what Marshal cannot write as it is: a tolerance
// that is not whole seconds (the file's or an entry's); Parse refuses
// the rest.
func (f *File) checkWritable() error {
	whole := func(d time.Duration) bool { return d%time.Second == 0 }
	if !whole(f.AcceptTolerance) || !whole(f.ClockSkew) {
		return &Error{Err: ErrLifetime, msg: "accept_tolerance and clock_skew are whole seconds"}
	}
	for i, e := range f.AO {
		if !whole(e.Config.Lifetime.Tolerance) {
			return &Error{Entry: Label("ao", i, e.Name), Field: "accept_tolerance", Err: ErrLifetime, msg: "not whole seconds"}
		}
	}
	for i, e := range f.MD5 {
		if !whole(e.Config.Lifetime.Tolerance) {
			return &Error{Entry: Label("md5", i, e.Name), Field: "accept_tolerance", Err: ErrLifetime, msg: "not whole seconds"}
		}
	}
	return nil
}
