package keys

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"
)

// ErrLifetime is the error of a lifetime that cannot be: an end at or
// before its start, or a negative tolerance.
var ErrLifetime = errors.New("keys: invalid lifetime")

// MaxTolerance is the largest accept tolerance: RFC 8177's accept-tolerance
// is a uint32 of seconds.
const MaxTolerance = math.MaxUint32 * time.Second

// Window is one lifetime of a key (RFC 8177 §3.2): the key is in it from
// Start (inclusive) to End (exclusive). A zero Start is "since always", a
// zero End is "no end" (RFC 8177's no-end-time); the zero Window is
// RFC 8177's "always".
type Window struct {
	Start time.Time
	End   time.Time
}

// IsZero reports whether w is "always": no start and no end.
func (w Window) IsZero() bool { return w.Start.IsZero() && w.End.IsZero() }

// Contains reports whether t is inside w: Start ≤ t < End, each bound
// only when it is set.
func (w Window) Contains(t time.Time) bool {
	return (w.Start.IsZero() || !t.Before(w.Start)) && (w.End.IsZero() || t.Before(w.End))
}

// Widen returns w with each set bound moved out by d (an accept window
// with its tolerance).
func (w Window) Widen(d time.Duration) Window {
	if !w.Start.IsZero() {
		w.Start = w.Start.Add(-d)
	}
	if !w.End.IsZero() {
		w.End = w.End.Add(d)
	}
	return w
}

// Overlaps reports whether some moment is inside both w and o.
func (w Window) Overlaps(o Window) bool {
	// w starts before o ends and o starts before w ends.
	before := func(start, end time.Time) bool { return start.IsZero() || end.IsZero() || start.Before(end) }
	return before(w.Start, o.End) && before(o.Start, w.End)
}

// String is "always", "from T", "until T" or "from T until T", the times
// in RFC 3339 UTC.
func (w Window) String() string {
	const f = time.RFC3339Nano
	switch {
	case w.IsZero():
		return "always"
	case w.End.IsZero():
		return "from " + w.Start.UTC().Format(f)
	case w.Start.IsZero():
		return "until " + w.End.UTC().Format(f)
	}
	return "from " + w.Start.UTC().Format(f) + " until " + w.End.UTC().Format(f)
}

// Lifetime is a key's schedule (RFC 8177 §3.2): it signs only inside
// Send, and verifies only inside Accept widened on both sides by
// Tolerance (RFC 8177's accept-tolerance). The zero Lifetime is "always"
// for both: a key as it was before lifetimes, which is what a keys file
// entry without lifetimes means.
//
// Which roads honour a lifetime, and which refuse a key that has one,
// is the road's to say (package keyfile's File.RefuseLifetimes).
type Lifetime struct {
	Send      Window
	Accept    Window
	Tolerance time.Duration // ≥ 0; whole seconds in a keys file
}

// IsZero reports whether l is "always" with no tolerance.
func (l Lifetime) IsZero() bool { return l.Send.IsZero() && l.Accept.IsZero() && l.Tolerance == 0 }

// Scheduled reports whether l limits its key in time: a send or an
// accept window that is not "always".
func (l Lifetime) Scheduled() bool { return !l.Send.IsZero() || !l.Accept.IsZero() }

// SendActive reports whether a key with lifetime l may sign at t
// (RFC 8177's send-lifetime-active).
func (l Lifetime) SendActive(t time.Time) bool { return l.Send.Contains(t) }

// AcceptActive reports whether a key with lifetime l may verify at t:
// inside the accept window widened by the tolerance (RFC 8177's
// accept-lifetime-active, with accept-tolerance applied).
func (l Lifetime) AcceptActive(t time.Time) bool { return l.AcceptWindow().Contains(t) }

// AcceptWindow is the accept window widened by the tolerance: the
// moments at which AcceptActive is true.
func (l Lifetime) AcceptWindow() Window { return l.Accept.Widen(l.Tolerance) }

// Validate refuses a window whose end is at or before its start and a
// tolerance outside 0..MaxTolerance; the errors wrap [ErrLifetime].
func (l Lifetime) Validate() error {
	for _, w := range []struct {
		name string
		w    Window
	}{{"send", l.Send}, {"accept", l.Accept}} {
		if !w.w.Start.IsZero() && !w.w.End.IsZero() && !w.w.Start.Before(w.w.End) {
			return fmt.Errorf("%w: %s lifetime ends (%s) at or before it starts (%s)", ErrLifetime, w.name,
				w.w.End.UTC().Format(time.RFC3339Nano), w.w.Start.UTC().Format(time.RFC3339Nano))
		}
	}
	if l.Tolerance < 0 || l.Tolerance > MaxTolerance {
		return fmt.Errorf("%w: tolerance %v not in 0..%v", ErrLifetime, l.Tolerance, MaxTolerance)
	}
	return nil
}

// String is "send W, accept W (tolerance D)", or "always" for the zero
// Lifetime.
func (l Lifetime) String() string {
	if l.IsZero() {
		return "always"
	}
	return fmt.Sprintf("send %v, accept %v (tolerance %v)", l.Send, l.Accept, l.Tolerance)
}

// logAttrs are l's attributes for a configuration's slog group: none
// for the zero Lifetime.
func (l Lifetime) logAttrs() []slog.Attr {
	if l.IsZero() {
		return nil
	}
	return []slog.Attr{slog.String("send_lifetime", l.Send.String()), slog.String("accept_lifetime", l.Accept.String()),
		slog.Duration("accept_tolerance", l.Tolerance)}
}
