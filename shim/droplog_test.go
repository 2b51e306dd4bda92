package shim

import (
	"testing"
	"time"
)

// TestDropLogBucket: each verdict has its own bucket of dropLogBurst
// lines, refilled one per dropLogEvery; the line after a gap says how many
// drops it stands for. The clock is the test's.
func TestDropLogBucket(t *testing.T) {
	now := time.Unix(1000, 0)
	d := &dropLog{now: func() time.Time { return now }}
	for i := range dropLogBurst {
		if ok, _ := d.allow(verdictBadMAC); !ok {
			t.Fatalf("drop %d of a burst refused", i)
		}
	}
	for range 100 {
		if ok, _ := d.allow(verdictBadMAC); ok {
			t.Fatal("a drop past the burst was logged")
		}
	}
	if ok, _ := d.allow(verdictUnsigned); !ok {
		t.Error("another verdict's first drop was refused: one flood must not hide another reason")
	}
	now = now.Add(dropLogEvery)
	ok, suppressed := d.allow(verdictBadMAC)
	if !ok || suppressed != 100 {
		t.Errorf("after %v: allowed %v, suppressed %d; want true, 100", dropLogEvery, ok, suppressed)
	}
	if ok, _ := d.allow(verdictBadMAC); ok {
		t.Error("two lines after one refill")
	}
	now = now.Add(time.Hour)
	n := 0
	for range 1000 {
		if ok, _ := d.allow(verdictBadMAC); ok {
			n++
		}
	}
	if n != dropLogBurst {
		t.Errorf("after an hour's quiet %d lines of a flood, want the burst %d", n, dropLogBurst)
	}
	// A clock that steps back refills nothing and breaks nothing.
	now = now.Add(-time.Minute)
	if ok, _ := d.allow(verdictBadMAC); ok {
		t.Error("a clock stepping back refilled the bucket")
	}
}
