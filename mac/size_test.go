package mac

import (
	"runtime"
	"testing"
)

// TestContextSized: a context holds its own algorithm family's working
// state only (no HMAC hashes or SHAKE sponges in a CMAC context, no
// SHAKE sponges in an HMAC one, buffers sized for the hash), so that a
// context a busy connection keeps costs what its algorithm needs. The
// bound is the heap one NewContext allocates, every allocation counted.
func TestContextSized(t *testing.T) {
	for _, c := range []struct {
		alg *Algorithm
		max uint64
	}{
		{lookup(t, "cmac(aes128)"), 256},
		{lookup(t, "hmac(sha1)"), 1024},
		{lookup(t, "hmac(sha256)"), 1024},
		{lookup(t, "kmac256-128"), 1024},
		{TCPMD5, 768},
	} {
		const n = 64
		keep := make([]*Context, n)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := range keep {
			keep[i] = c.alg.NewContext()
		}
		runtime.ReadMemStats(&after)
		per := (after.TotalAlloc - before.TotalAlloc) / n
		t.Logf("%s: %d bytes per context", c.alg, per)
		if per > c.max {
			t.Errorf("%s: a context takes %d bytes of heap, want at most %d", c.alg, per, c.max)
		}
		runtime.KeepAlive(keep)
	}
}

func lookup(t *testing.T, name string) *Algorithm {
	t.Helper()
	a, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
