package sigpool

import (
	"sync"
	"testing"

	"github.com/tcpsig/tcpsig/mac"
)

// StartHint gives exclusive requests like Start, whatever the hint, and
// the request of the right algorithm.
func TestStartHint(t *testing.T) {
	p := mustNew(Config{Shards: 3})
	alg, _ := mac.Lookup("hmac(sha256)")
	id, err := p.Alloc(alg, 64)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release(id)
	var mu sync.Mutex
	held := map[*Request]bool{}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				r := mustStartHint(p, id, uint32(g*7919+i))
				mu.Lock()
				if held[r] {
					mu.Unlock()
					t.Error("a request handed out twice")
					r.End()
					return
				}
				held[r] = true
				mu.Unlock()
				if r.MAC.Algorithm() != alg {
					t.Error("wrong algorithm")
				}
				mu.Lock()
				delete(held, r)
				mu.Unlock()
				r.End()
			}
		}()
	}
	wg.Wait()
}
