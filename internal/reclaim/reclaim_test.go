package reclaim

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// counter is a wipe function that counts its calls.
type counter struct{ n atomic.Int32 }

func (c *counter) wipe()       { c.n.Add(1) }
func (c *counter) runs() int32 { return c.n.Load() }

func TestRetireWithoutReaders(t *testing.T) {
	for _, name := range []string{"Retire", "RetireWait"} {
		t.Run(name, func(t *testing.T) {
			for _, used := range []bool{false, true} {
				var g Guard
				var c counter
				if used { // readers came and went before the retire
					p1, _ := g.Acquire()
					p2, _ := g.Acquire()
					g.Release(p2)
					g.Release(p1)
				}
				retire(&g, name, c.wipe)
				if c.runs() != 1 {
					t.Fatalf("used=%v: wipe ran %d times before %s returned, want 1", used, c.runs(), name)
				}
				if !g.Retired() {
					t.Fatal("Retired() = false after retire")
				}
				if _, ok := g.Acquire(); ok {
					t.Fatal("Acquire succeeded after retire")
				}
				if c.runs() != 1 {
					t.Fatalf("wipe ran %d times, want 1", c.runs())
				}
			}
		})
	}
}

func retire(g *Guard, how string, wipe func()) {
	if how == "Retire" {
		g.Retire(wipe)
	} else {
		g.RetireWait(wipe)
	}
}

func TestRetireWhileHeld(t *testing.T) {
	var g Guard
	var c counter
	p1, ok1 := g.Acquire()
	p2, ok2 := g.Acquire()
	if !ok1 || !ok2 {
		t.Fatal("Acquire on a live Guard failed")
	}
	g.Retire(c.wipe)
	if c.runs() != 0 {
		t.Fatal("wipe ran while two readers hold pins")
	}
	if _, ok := g.Acquire(); ok {
		t.Fatal("Acquire succeeded after Retire")
	}
	g.Release(p1)
	if c.runs() != 0 {
		t.Fatal("wipe ran while a reader holds a pin")
	}
	g.Release(p2) // the last pin: the wipe runs here, before Release returns
	if c.runs() != 1 {
		t.Fatalf("wipe ran %d times after the last Release, want 1", c.runs())
	}
}

func TestRetireTwicePanics(t *testing.T) {
	for _, second := range []string{"Retire", "RetireWait"} {
		var g Guard
		var c counter
		g.Retire(c.wipe)
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("second retire (%s) did not panic", second)
				}
			}()
			retire(&g, second, c.wipe)
		}()
		if c.runs() != 1 {
			t.Errorf("wipe ran %d times, want 1", c.runs())
		}
	}
}

// TestRetireWaitWaitsForReader holds a pin on another goroutine while
// RetireWait runs. The wipe itself checks that the reader has released, so
// the test does not depend on timing; the select only adds that RetireWait
// has not returned by the time the Guard is seen retired.
func TestRetireWaitWaitsForReader(t *testing.T) {
	var g Guard
	var released, wipes atomic.Int32
	pinned, release, readerDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() { // the reader
		defer close(readerDone)
		p, ok := g.Acquire()
		if !ok {
			t.Error("Acquire on a live Guard failed")
		}
		close(pinned)
		<-release
		released.Store(1)
		g.Release(p)
	}()
	<-pinned

	returned := make(chan struct{})
	go func() { // the deleter
		defer close(returned)
		g.RetireWait(func() {
			if released.Load() == 0 {
				t.Error("wipe ran while the reader held its pin")
			}
			wipes.Add(1)
		})
		if wipes.Load() != 1 {
			t.Error("RetireWait returned before the wipe ran")
		}
	}()
	for !g.Retired() {
		runtime.Gosched()
	}
	select {
	case <-returned:
		t.Fatal("RetireWait returned while a reader holds a pin")
	default:
	}
	if wipes.Load() != 0 {
		t.Fatal("wipe ran while a reader holds a pin")
	}
	close(release)
	<-returned
	<-readerDone
	if wipes.Load() != 1 {
		t.Fatalf("wipe ran %d times, want 1", wipes.Load())
	}
}

// TestStress retires Guards while readers hammer them. Each reader checks,
// while it holds a pin, that the object has not been wiped: that is the
// property keyrings rely on (no reader computes with wiped key bytes). Fresh
// Guards also exercise the race between a first Acquire and the retire.
func TestStress(t *testing.T) {
	rounds := 200
	if testing.Short() {
		rounds = 20
	}
	readers := max(4, 2*runtime.GOMAXPROCS(0))
	for round := range rounds {
		for _, how := range []string{"Retire", "RetireWait"} {
			// Every third round retires before any reader has pinned (the
			// first Acquire races the retire); the others once the readers
			// have pinned and released many times.
			busy := 0
			if round%3 != 0 {
				busy = readers * (1 + round%50)
			}
			stressOnce(t, readers, how, busy)
		}
	}
}

// stressOnce starts readers on a fresh object and retires it once they have
// pinned it busy times in all.
func stressOnce(t *testing.T, readers int, how string, busy int) {
	type object struct {
		g      Guard
		secret [16]byte
		wiped  atomic.Bool
		wipes  atomic.Int32
		pins   atomic.Int64
	}
	o := new(object)
	for i := range o.secret {
		o.secret[i] = byte(i + 1)
	}
	wipe := func() {
		o.wiped.Store(true)
		clear(o.secret[:]) // a plain write: -race reports it if a reader still reads
		o.wipes.Add(1)
	}
	var wg sync.WaitGroup
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				p, ok := o.g.Acquire()
				if !ok {
					return
				}
				if o.wiped.Load() || o.secret[15] != 16 {
					t.Error("a reader holding a pin saw the object wiped")
				}
				o.pins.Add(1)
				runtime.Gosched()
				if o.wiped.Load() || o.secret[0] != 1 {
					t.Error("a reader holding a pin saw the object wiped")
				}
				o.g.Release(p)
			}
		}()
	}
	for o.pins.Load() < int64(busy) {
		runtime.Gosched()
	}
	retire(&o.g, how, wipe)
	wg.Wait()
	if n := o.wipes.Load(); n != 1 {
		t.Fatalf("%s: wipe ran %d times, want 1", how, n)
	}
}

func TestAcquireDoesNotAllocate(t *testing.T) {
	var g Guard
	p, _ := g.Acquire() // the first Acquire may allocate the Guard's counts
	g.Release(p)
	allocs := testing.AllocsPerRun(1000, func() {
		p, ok := g.Acquire()
		if !ok {
			t.Fatal("Acquire failed")
		}
		g.Release(p)
	})
	if allocs != 0 {
		t.Fatalf("Acquire+Release allocates %v times, want 0", allocs)
	}
}

// TestShards checks the layout: a Guard's shards are distinct cells in
// distinct rows, and Guards of one block do not share a cell.
func TestShards(t *testing.T) {
	var gs [2 * cellsPerLine]Guard
	seen := map[*atomic.Int32]int{}
	for i := range gs {
		p, _ := gs[i].Acquire()
		gs[i].Release(p)
		col := gs[i].cells.Load()
		if n := len(col.rows); n&(n-1) != 0 || n < runtime.GOMAXPROCS(0) && n < maxShards {
			t.Fatalf("%d shards for GOMAXPROCS=%d", n, runtime.GOMAXPROCS(0))
		}
		for s := range col.rows {
			c := col.cell(uint32(s))
			if j, dup := seen[c]; dup {
				t.Fatalf("Guards %d and %d share a cell", j, i)
			}
			seen[c] = i
		}
	}
}

// TestRetireWaitWithoutReadersDoesNotAllocate: with no pin held (none ever
// taken, or all released), RetireWait wipes at once, without the channel
// it waits on when a reader is in flight.
func TestRetireWaitWithoutReadersDoesNotAllocate(t *testing.T) {
	for _, used := range []bool{false, true} {
		gs := make([]Guard, 1001)
		if used {
			for i := range gs {
				p, _ := gs[i].Acquire()
				gs[i].Release(p)
			}
		}
		var c counter
		i := 0
		allocs := testing.AllocsPerRun(1000, func() {
			gs[i].RetireWait(c.wipe)
			i++
		})
		if allocs != 0 {
			t.Fatalf("used=%v: RetireWait allocates %v times, want 0", used, allocs)
		}
		if c.runs() != int32(i) {
			t.Fatalf("used=%v: %d wipes for %d RetireWaits", used, c.runs(), i)
		}
	}
}
