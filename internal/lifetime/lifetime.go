// Package lifetime is a key's RFC 8177 lifetimes as the engine applies
// them: a Schedule in Unix nanoseconds, the state bits it gives at a
// moment, and the loop that applies a keyring's schedules at each
// boundary. Packages ao and md5sig share it; keys.Lifetime is what
// configurations carry.
package lifetime

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/tcpsig/tcpsig/keys"
)

// The state bits of a key at a moment: outside its send lifetime (it
// signs nothing), outside its accept lifetime widened by its tolerance
// (it verifies nothing).
const (
	OffSend uint32 = 1 << iota
	OffAccept
	OffBoth = OffSend | OffAccept
)

// Schedule is a keys.Lifetime in Unix nanoseconds: each window is
// [from, to), the accept window already widened by the tolerance; an open
// bound is math.MinInt64 or math.MaxInt64.
type Schedule struct {
	SendFrom, SendTo, AcceptFrom, AcceptTo int64
}

// Of returns l as a Schedule, and whether it limits its key at all.
func Of(l keys.Lifetime) (Schedule, bool) {
	a := l.AcceptWindow()
	s := Schedule{Nanos(l.Send.Start, math.MinInt64), Nanos(l.Send.End, math.MaxInt64),
		Nanos(a.Start, math.MinInt64), Nanos(a.End, math.MaxInt64)}
	return s, l.Scheduled()
}

// Nanos is t in Unix nanoseconds, open for the zero time, clamped to the
// int64 range (a far end such as 9999-12-31 is no end here).
func Nanos(t time.Time, open int64) int64 {
	switch {
	case t.IsZero():
		return open
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	case t.Before(time.Unix(0, math.MinInt64)):
		return math.MinInt64
	}
	return t.UnixNano()
}

// Off returns the state bits at now.
func (s *Schedule) Off(now int64) uint32 {
	var off uint32
	if now < s.SendFrom || now >= s.SendTo {
		off |= OffSend
	}
	if now < s.AcceptFrom || now >= s.AcceptTo {
		off |= OffAccept
	}
	return off
}

// Ended reports whether both lifetimes are over at now: the key will
// never sign or verify again.
func (s *Schedule) Ended(now int64) bool { return now >= s.SendTo && now >= s.AcceptTo }

// Next returns the first bound after now, math.MaxInt64 without one.
func (s *Schedule) Next(now int64) int64 {
	n := int64(math.MaxInt64)
	for _, b := range [...]int64{s.SendFrom, s.SendTo, s.AcceptFrom, s.AcceptTo} {
		if b > now && b < n {
			n = b
		}
	}
	return n
}

// Clock is a keyring's clock: time.Now when nil.
type Clock func() time.Time

// Now reads c in Unix nanoseconds.
func (c Clock) Now() int64 {
	if c == nil {
		return Nanos(time.Now(), 0)
	}
	return Nanos(c(), 0)
}

// Keeper is what a keyring keeps for its keys' lifetimes, under the
// keyring's lock: its clock, how many of its keys have a lifetime, and
// Run's wake-up.
type Keeper struct {
	Clock Clock
	Timed int
	wake  chan struct{}
}

// SetClock makes now the clock (time.Now when nil), under mu, the
// keyring's lock.
func (k *Keeper) SetClock(mu sync.Locker, now func() time.Time) {
	mu.Lock()
	k.Clock = now
	mu.Unlock()
}

// Changed records that a key with a lifetime came (+1) or went (-1), and
// wakes Run; under the keyring's lock.
func (k *Keeper) Changed(delta int) {
	k.Timed += delta
	select {
	case k.wake <- struct{}{}:
	default:
	}
}

// Run calls advance now and at each moment it returns (the zero time:
// none), on the keeper's clock, until ctx is done, and then returns
// ctx's error; a key with a lifetime added or deleted meanwhile makes it
// call advance again at once. mu is the keyring's lock, which guards k.
func (k *Keeper) Run(ctx context.Context, mu sync.Locker, advance func() time.Time) error {
	mu.Lock()
	if k.wake == nil {
		k.wake = make(chan struct{}, 1)
	}
	wake := k.wake
	mu.Unlock()
	now := func() int64 {
		mu.Lock()
		defer mu.Unlock()
		return k.Clock.Now()
	}
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		wait := time.Duration(math.MaxInt64)
		if next := advance(); !next.IsZero() {
			wait = time.Duration(Nanos(next, 0) - now())
		}
		t.Reset(max(wait, 0))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		case <-wake:
		}
	}
}
