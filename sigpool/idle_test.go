package sigpool

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// TestChurnOneSlot: a keyring whose keys of one algorithm come and go
// Allocs and Releases that algorithm over and over, while a connection
// holds Start..End on it. Each Release finds the held shard busy and
// leaves its wipe for after the End; the slot is idle meanwhile, and the
// next Alloc takes it back. It never gives ErrPoolFull (every such slot
// once stayed taken until its wipe), always the one slot, and the holder's
// MACs are never disturbed.
func TestChurnOneSlot(t *testing.T) {
	const churns = 10000
	p := mustNew(Config{Shards: 1}) // one shard: most Releases find it held
	a := lookup(t, "hmac(sha256)")
	raw := keyFor(a, 9)
	tmpl := template(t, a, raw)
	want := direct(t, a, raw, []byte("one segment"))
	first, err := p.Alloc(a, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Release(first); err != nil {
		t.Fatal(err)
	}

	var stop atomic.Bool
	var held, refused atomic.Int64
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the connection
		defer wg.Done()
		sum := make([]byte, 0, a.Size())
		for !stop.Load() {
			r, err := p.Start(first)
			if errors.Is(err, ErrNotAllocated) { // idle at this moment
				refused.Add(1)
				runtime.Gosched()
				continue
			}
			if err == nil {
				err = r.Key(tmpl)
			}
			if err != nil {
				errs <- err
				return
			}
			r.MAC.Write([]byte("one "))
			runtime.Gosched() // hold the shard while the churn Releases
			r.MAC.Write([]byte("segment"))
			sum = r.MAC.Finish(sum[:0])
			r.End()
			held.Add(1)
			if !bytes.Equal(sum, want) {
				errs <- fmt.Errorf("holder's MAC %x, want %x", sum, want)
				return
			}
		}
	}()
	for i := 0; i < churns && len(errs) == 0; i++ {
		id, err := p.Alloc(a, 0)
		if err != nil {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("churn %d: %v", i, err)
		}
		if id != first {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("churn %d: slot %v, want the one slot %v", i, id, first)
		}
		if i%64 == 0 { // and sign, as a new key's first segment does
			if got := sign(t, p, id, tmpl, raw, []byte("one segment")); !bytes.Equal(got, want) {
				stop.Store(true)
				wg.Wait()
				t.Fatalf("churn %d: MAC %x, want %x", i, got, want)
			}
		}
		if err := p.Release(id); err != nil {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("churn %d: Release: %v", i, err)
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	p.cleanup.Wait()
	idleWiped(t, p, first, a)
	for i := range p.entries {
		if ID(i) != first && p.entries[i].alg != nil {
			t.Fatalf("slot %d taken too (%v): the churn used more than one", i, p.entries[i].alg)
		}
	}
	t.Logf("holder: %d messages, %d Starts refused while idle", held.Load(), refused.Load())
}

// TestNoTakeOverWhileHeld: an idle slot whose shard request is still held
// (released between Start and End) is not taken over: the holder keeps
// its context undisturbed, an Alloc of another algorithm that needs the
// slot is ErrPoolFull, and after the End (and its wipe) it gets the slot,
// with contexts of its own algorithm and nothing of the holder's left.
func TestNoTakeOverWhileHeld(t *testing.T) {
	p := mustNew(Config{Shards: 2})
	p.limit = 1
	a, b := lookup(t, "hmac(sha1)"), lookup(t, "cmac(aes128)")
	id, err := p.Alloc(a, 0)
	if err != nil {
		t.Fatal(err)
	}
	raw := keyFor(a, 4)
	r := mustStart(p, id)
	if err := r.MAC.Schedule(&r.Spare, raw); err != nil { // a key of the holder's in Spare
		t.Fatal(err)
	}
	if err := r.Key(&r.Spare); err != nil {
		t.Fatal(err)
	}
	r.MAC.Write([]byte("held "))
	old := r.MAC
	if err := p.Release(id); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Alloc(b, 0); !errors.Is(err, ErrPoolFull) {
		t.Fatalf("Alloc taking over a slot whose request is held: %v, want ErrPoolFull", err)
	}
	if r.MAC != old || r.Spare.Empty() {
		t.Fatal("the holder's context or Spare key was taken away")
	}
	r.MAC.Write([]byte("across a refused take-over"))
	if got, want := r.MAC.Finish(nil), direct(t, a, raw, []byte("held across a refused take-over")); !bytes.Equal(got, want) {
		t.Fatalf("holder's MAC %x, want %x", got, want)
	}
	r.End()
	p.cleanup.Wait() // the late wipe holds the shard while it runs
	if got := old.Finish(nil); len(got) != 0 {
		t.Fatalf("the holder's context not wiped after End: Finish %x", got)
	}
	idb, err := p.Alloc(b, 0)
	if err != nil || idb != id {
		t.Fatalf("Alloc after End: %v, %v; want slot %v taken over", idb, err, id)
	}
	for i, c := range contexts(p, idb) {
		if c == old || c.Algorithm() != b {
			t.Fatalf("shard %d: context of %v after the take-over, want a new one of %v", i, c.Algorithm(), b)
		}
		if sp := &p.shards[i].reqs[idb].Spare; !sp.Empty() {
			t.Fatalf("shard %d: the holder's Spare key survived the take-over", i)
		}
	}
	rawb := keyFor(b, 5)
	if got, want := sign(t, p, idb, template(t, b, rawb), rawb, []byte("m")), direct(t, b, rawb, []byte("m")); !bytes.Equal(got, want) {
		t.Fatalf("after the take-over: %x want %x", got, want)
	}
	if _, err := p.Alloc(a, 0); !errors.Is(err, ErrPoolFull) {
		t.Fatalf("Alloc of a into a table b holds: %v, want ErrPoolFull", err)
	}
}

// TestStartDuringTakeOver: Start of a released ID is ErrNotAllocated or,
// once the slot is held again, a working request of whatever algorithm
// holds it, never a race with the Alloc that takes it over (run with
// -race).
func TestStartDuringTakeOver(t *testing.T) {
	p := mustNew(Config{Shards: 2})
	p.limit = 1
	algs := []string{"hmac(sha1)", "hmac(sha256)"}
	id, err := p.Alloc(lookup(t, algs[0]), 0)
	if err != nil {
		t.Fatal(err)
	}
	p.Release(id)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			if r, err := p.Start(id); err == nil {
				if r.MAC == nil {
					panic("a request without a context")
				}
				r.End()
			}
		}
	}()
	for i := 0; i < 2000; i++ {
		got, err := p.Alloc(lookup(t, algs[i%2]), 0)
		if err != nil {
			continue // the other goroutine held a shard: not taken over
		}
		if got != id {
			t.Fatalf("slot %v, want %v", got, id)
		}
		p.Release(got)
	}
	stop.Store(true)
	wg.Wait()
}
