package lifetime

import (
	"math"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/keys"
)

// TestSchedule: windows are [start, end), the accept window widened by
// the tolerance, open bounds open, and a far end such as 9999-12-31
// (routers' "forever") no end rather than an overflow.
func TestSchedule(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	far := time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
	s, timed := Of(keys.Lifetime{Send: keys.Window{Start: t0, End: far}, Accept: keys.Window{End: t0.Add(time.Hour)}, Tolerance: time.Minute})
	if !timed || s.SendTo != math.MaxInt64 || s.AcceptFrom != math.MinInt64 || s.AcceptTo != t0.Add(time.Hour+time.Minute).UnixNano() {
		t.Fatalf("Of: %+v (timed %v)", s, timed)
	}
	for _, c := range []struct {
		at   time.Time
		want uint32
	}{
		{t0.Add(-time.Nanosecond), OffSend},
		{t0, 0},
		{t0.Add(time.Hour + time.Minute - time.Nanosecond), 0},
		{t0.Add(time.Hour + time.Minute), OffAccept},
	} {
		if got := s.Off(c.at.UnixNano()); got != c.want {
			t.Errorf("Off at %v: %b, want %b", c.at, got, c.want)
		}
	}
	if n := s.Next(t0.UnixNano()); n != t0.Add(time.Hour+time.Minute).UnixNano() {
		t.Errorf("Next after the send start: %v", time.Unix(0, n))
	}
	if s.Ended(t0.Add(2 * time.Hour).UnixNano()) {
		t.Error("Ended while the send lifetime runs to 9999")
	}
	if _, timed := Of(keys.Lifetime{}); timed {
		t.Error("the zero Lifetime is timed")
	}
}
