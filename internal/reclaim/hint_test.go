package reclaim

import "testing"

// AcquireHint pins like Acquire on the shard the hint names: the wipe
// waits for such pins too, and no pin is given once retired.
func TestAcquireHint(t *testing.T) {
	var g Guard
	wiped := 0
	p, ok := g.AcquireHint(12345)
	if !ok {
		t.Fatal("live guard refused a pin")
	}
	g.Retire(func() { wiped++ })
	if wiped != 0 {
		t.Fatal("wiped while a hinted pin was held")
	}
	if _, ok := g.AcquireHint(7); ok {
		t.Fatal("pin given after retire")
	}
	g.Release(p)
	if wiped != 1 {
		t.Fatalf("wipe ran %d times", wiped)
	}
}
