package shim

import (
	"sync"
	"time"
)

// The drop log's token buckets, one per verdict: a burst of dropLogBurst
// lines, then one every dropLogEvery. A flood of one kind of forgery logs
// at most 3600/dropLogEvery.Seconds() lines an hour per verdict (about
// 60 KiB), each saying how many drops it stands for.
const (
	dropLogBurst = 10
	dropLogEvery = 6 * time.Second
)

// dropLog rate-limits the log lines of dropped packets: a token bucket per
// verdict, so one reason's flood neither fills a disk nor hides another
// reason's first drops.
type dropLog struct {
	now func() time.Time
	mu  sync.Mutex
	b   [numVerdicts]tokenBucket
}

// tokenBucket holds up to dropLogBurst tokens, refilled one per
// dropLogEvery.
type tokenBucket struct {
	tokens     float64
	last       time.Time // of the last refill
	started    bool
	suppressed uint64 // drops not logged since the last line
}

// allow reports whether a drop of verdict v may be logged now, and how
// many drops of v were not logged since the last line (which this one then
// stands for).
func (d *dropLog) allow(v verdict) (ok bool, suppressed uint64) {
	if v >= numVerdicts {
		v = verdictOther
	}
	now := time.Now
	if d.now != nil {
		now = d.now
	}
	t := now()
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.b[v].take(t)
}

// take reports whether a line may be written at t, and how many were not
// since the last one (which this one then stands for).
func (b *tokenBucket) take(t time.Time) (ok bool, suppressed uint64) {
	if !b.started {
		b.tokens, b.last, b.started = dropLogBurst, t, true
	} else if dt := t.Sub(b.last); dt > 0 {
		b.tokens = min(dropLogBurst, b.tokens+float64(dt)/float64(dropLogEvery))
		b.last = t
	}
	if b.tokens < 1 {
		b.suppressed++
		return false, 0
	}
	b.tokens--
	suppressed, b.suppressed = b.suppressed, 0
	return true, suppressed
}
