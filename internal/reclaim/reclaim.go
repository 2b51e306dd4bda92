// Package reclaim does for one object what Linux RCU does for a TCP-AO MKT or
// a TCP-MD5 key: readers pin it without a lock, a deleter retires it, and the
// object's secret bytes are wiped exactly once, as soon as no reader can
// still use them.
//
// It promises:
//   - [Guard.Acquire] and [Guard.Release] take no lock and do not allocate,
//     and readers on different cores mostly touch different cache lines
//     (a sharded reader count, like Linux percpu_ref);
//   - after [Guard.Retire] or [Guard.RetireWait] no Acquire succeeds, and the
//     wipe function runs exactly once, after every reader that pinned the
//     object has released it;
//   - there is no global grace period: retiring one object waits only for
//     the readers of that object, and never for other writers.
//
// A reader that fails to Acquire treats the object as already deleted, as a
// Linux reader does when a key has left the RCU list.
//
// Go cannot promise that no copy of a secret survives in memory (the runtime
// may move stacks, and the garbage collector frees without zeroing); the wipe
// clears the bytes the object owns.
package reclaim

import "sync/atomic"

// Guard states. A Guard only moves forward through them.
const (
	live     = iota // Acquire succeeds
	retiring        // Retire has claimed the Guard and is publishing its drain function
	retired         // waiting for the pinned readers to release
	drained         // no reader holds a pin; the drain function has been started
)

// Guard protects one object (an MKT or an MD5 key) whose secret bytes must be
// wiped after deletion, once no reader can still use them. Readers pin with
// [Guard.Acquire] and unpin with [Guard.Release]; a deleter calls
// [Guard.Retire] or [Guard.RetireWait] once. The zero Guard is live and
// ready to use; a Guard must not be copied after first use. Why no reader
// ever sees wiped bytes is argued at tryDrain.
type Guard struct {
	state atomic.Uint32
	cells atomic.Pointer[column] // nil until the first Acquire
	drain func()                 // written before state becomes retired; run once by tryDrain
}

// Pin is the token of one successful [Guard.Acquire]; pass it to the matching
// [Guard.Release]. It records which shard of the reader count the Acquire
// incremented.
//
// Shards are chosen per P (the Go scheduler's processor, about one per core),
// so the readers on one core keep incrementing the same cache line.
type Pin struct {
	c *atomic.Int32
}

// Acquire pins the object for reading. It returns false once the Guard is
// retired: the caller must then treat the object as gone and must not call
// Release. Otherwise the caller may use the object until it calls
// Release(pin), exactly once. A pinned reader must not call
// [Guard.RetireWait] on the same Guard (it would wait for itself).
//
// Acquire does not lock and does not allocate, except the first Acquire of
// a Guard, which takes a global lock to give the Guard its counts (4 bytes
// per shard, carved from blocks shared by 32 Guards). A writer that wants
// the data path never to allocate does one Acquire and Release before it
// publishes the object.
func (g *Guard) Acquire() (Pin, bool) { return g.AcquireHint(shard()) }

// AcquireHint is Acquire with the reader's own shard hint: a reader that
// stays on one core (a connection's segments) passes a value fixed for it
// and skips the per-P lookup.
func (g *Guard) AcquireHint(hint uint32) (Pin, bool) {
	if g.state.Load() != live {
		return Pin{}, false
	}
	col := g.cells.Load()
	if col == nil {
		col = g.allocCells()
	}
	c := col.cell(hint)
	c.Add(1)
	if g.state.Load() != live {
		c.Add(-1)
		g.tryDrain()
		return Pin{}, false
	}
	return Pin{c}, true
}

// Release unpins the object. If the Guard was retired and this was the last
// pin, the wipe function given to [Guard.Retire] runs here, on the caller's
// goroutine, before Release returns.
func (g *Guard) Release(p Pin) {
	if p.c == nil {
		return // not a pin of a successful Acquire
	}
	p.c.Add(-1)
	if g.state.Load() != live {
		g.tryDrain()
	}
}

// Retire marks the object deleted and returns at once, as Linux's del_async
// (call_rcu) does. From now on Acquire returns false. wipe runs exactly once,
// as soon as no reader holds a pin: before Retire returns if none does, and
// otherwise on the goroutine of the reader that lets go last, inside its
// [Guard.Release] (or inside an Acquire that was failing at that moment) —
// on the data path. wipe must therefore be quick and must not block: clear()
// of a few arrays. Use [Guard.RetireWait] for anything slower.
//
// A Guard is retired once: a second call of Retire or RetireWait panics.
func (g *Guard) Retire(wipe func()) {
	g.retire(wipe)
}

// RetireWait marks the object deleted, waits until every reader that pinned
// it has released it, then runs wipe on the caller's goroutine and returns.
// It waits only for the readers of this Guard. From the moment it is called,
// Acquire returns false.
//
// A Guard is retired once: a second call of Retire or RetireWait panics.
func (g *Guard) RetireWait(wipe func()) {
	g.claim()
	if g.idle() { // no reader in flight: no channel to wait on
		g.state.Store(drained)
		wipe()
		return
	}
	done := make(chan struct{})
	g.publish(func() { close(done) })
	<-done
	wipe()
}

// Retired reports whether Retire or RetireWait has been called. The wipe may
// not have run yet.
func (g *Guard) Retired() bool {
	return g.state.Load() != live
}

func (g *Guard) retire(drain func()) {
	if drain == nil {
		drain = func() {}
	}
	g.claim()
	g.publish(drain)
}

// claim moves the Guard from live to retiring: from now on every Acquire
// fails, and a tryDrain returns at once.
func (g *Guard) claim() {
	if !g.state.CompareAndSwap(live, retiring) {
		panic("reclaim: Guard retired twice")
	}
}

// idle reports, for a claimed Guard, whether no reader holds a pin: the
// shards read after the claim are all zero (as in tryDrain, so none can
// be taken either). A failing Acquire's brief increment may make it false.
func (g *Guard) idle() bool {
	col := g.cells.Load()
	return col == nil || col.zero()
}

// publish completes the retirement of a claimed Guard: drain runs once no
// reader holds a pin.
func (g *Guard) publish(drain func()) {
	g.drain = drain
	g.state.Store(retired)
	g.tryDrain()
}

// How it works: the reader count is split into shards (see [Pin]), and
// state is one word. The three operations, with Go's sequentially
// consistent atomics:
//
//	Acquire:  state == live?   shard += 1;  state == live? -> pinned
//	                                        otherwise shard -= 1, tryDrain
//	Release:  shard -= 1;  state != live? -> tryDrain
//	Retire:   state = retired;  tryDrain
//	tryDrain: state == retired, and every shard is 0 -> CAS retired->drained
//	          -> the winner runs the drain function
//
// Why no reader ever uses a wiped object. A reader is pinned only if its
// second load of state returned live. All atomics form one total order, so
// that load, and the increment before it, come before the store of retired.
// Every read of the shards in tryDrain comes after that store, so it sees
// the increment until the reader's own decrement. Each shard counts the pins
// taken on it minus the pins released on it (Release always decrements the
// shard its Acquire incremented), so it is never negative, and it is not zero
// while a reader that pinned on it still holds the pin. After the store of
// retired no new reader can pin. Hence once tryDrain has seen every shard at
// zero (each at some moment after the store), no pin is held and none can
// be taken: the drain may run. The CAS lets exactly one goroutine run it.
//
// Why the drain always happens. A failed Acquire increments a shard too, for
// a moment, so a tryDrain may see a non-zero shard that no pinned reader
// holds. Every goroutine that decrements after the store of retired runs
// tryDrain after its decrement. If none does, the retirer's own tryDrain
// sees every shard at zero. Otherwise take the last such decrement in the
// total order: every increment has been matched by then (a pin still held,
// or an increment after it, would mean a later decrement), so its tryDrain
// sees every shard at zero. Only readers whose first check ran before Retire
// claimed the Guard can still increment, so such transient increments are
// few and a stream of late readers cannot postpone the drain.
// The same Dekker argument covers Release: it either sees a state other than
// live and runs tryDrain itself, or its decrement comes before the store of
// retired and therefore before the retirer's own tryDrain reads the shards.
//
// The retiring state closes one gap: Retire first claims the Guard
// (live->retiring, so a second Retire panics instead of overwriting the drain
// function), then stores the drain function, then stores retired. A tryDrain
// that sees retiring returns at once; the retirer's own tryDrain, which reads
// the shards after the store of retired, does the work.
//
// RetireWait first reads the shards while the Guard is still retiring: the
// claim already made every later Acquire fail, so the argument above, with
// the claim in place of the store of retired, shows that all zero means no
// pin is held or can be taken; it then wipes at once, with no drain function
// and no channel. Otherwise it publishes its drain function as Retire does.
//
// tryDrain runs the drain function if the Guard is retired and no reader
// holds a pin, at most once over all callers. See the Guard comment.
func (g *Guard) tryDrain() {
	if g.state.Load() != retired {
		return
	}
	if !g.idle() {
		return
	}
	if g.state.CompareAndSwap(retired, drained) {
		f := g.drain
		g.drain = nil
		f()
	}
}
