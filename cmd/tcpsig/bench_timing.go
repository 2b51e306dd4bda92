package main

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tcpsig/tcpsig/sigpool"
)

// How "tcpsig bench" times a cell: rounds that alternate the backends,
// on one core and on all, and their medians and spreads.

// benchRounds returns the number of rounds of a cell that runs d per
// backend and column: rounds of about roundTime, at least 7 and at most
// 101, an odd number. Its figure is their median, so a round slowed by the
// machine (a preemption, another process) cannot become it; it shows in
// the spread. Short rounds alternate the backends faster than a scheduler
// hands a shared core back and forth, so a busy spell hits both.
func benchRounds(d time.Duration) int {
	const roundTime = 250 * time.Microsecond
	return min(max(int(d/roundTime), 7), 101) | 1
}

// waitMax is the share of a round's time on all cores that its
// goroutines may have waited, runnable, for a core another process held,
// for the round to count: past it, the round measured that load. The
// figure is the median of the rounds that count, shown when at least a
// quarter of them do (heldRounds).
const waitMax = 0.1

// heldRounds is how many of a cell's rounds on all cores must count for
// its figure to be shown.
func heldRounds(rounds int) int { return max(3, rounds/4) }

// spread is the median, minimum and maximum of a cell's rounds.
type spread struct{ median, min, max float64 }

// summarise returns the spread of v (len(v) > 0); v is sorted in place.
func summarise(v []float64) spread {
	slices.Sort(v)
	m := v[len(v)/2]
	if len(v)%2 == 0 {
		m = (v[len(v)/2-1] + m) / 2
	}
	return spread{m, v[0], v[len(v)-1]}
}

// benchSpan is what one run of steps took: its wall time and, with
// several steps, their threads' CPU time and the time they waited,
// runnable, for a core another thread held (ok false where the system
// does not say).
type benchSpan struct {
	wall, cpu, wait time.Duration
	ok              bool
}

// benchRun runs each of steps n times, on its own goroutine when there
// are several. realRun does it; tests script it.
type benchRun func(steps []func() error, n int) (benchSpan, error)

var errBenchStep = errors.New("a segment failed to sign or verify")

// realRun times one goroutine from the caller. Several start together:
// each spins until all are running (so waking a thread is not timed), and
// the wall time is from the first one's start to the last one's end; the
// wait is each one's run delay meanwhile and how late it started.
func realRun(steps []func() error, n int) (benchSpan, error) {
	if len(steps) == 1 {
		t0 := time.Now()
		for range n {
			if steps[0]() != nil {
				return benchSpan{}, errBenchStep
			}
		}
		return benchSpan{wall: time.Since(t0)}, nil
	}
	type span struct {
		t0, t1    time.Time
		cpu, wait time.Duration
		ok        bool
		err       error
	}
	spans := make([]span, len(steps))
	var ready atomic.Int32
	var wg sync.WaitGroup
	for k, step := range steps {
		wg.Go(func() {
			runtime.LockOSThread() // so that the thread's times are the goroutine's
			defer runtime.UnlockOSThread()
			// A busy wait: Gosched on a locked thread would hand the
			// thread off through the kernel and start it late.
			for ready.Add(1); ready.Load() < int32(len(steps)); {
			}
			sp := &spans[k]
			c0, w0, ok0 := ownThreadStats()
			sp.t0 = time.Now()
			for range n {
				if step() != nil {
					sp.err = errBenchStep
					break
				}
			}
			sp.t1 = time.Now()
			c1, w1, ok1 := ownThreadStats()
			sp.cpu, sp.wait, sp.ok = c1-c0, w1-w0, ok0 && ok1
		})
	}
	wg.Wait()
	out := benchSpan{ok: true}
	first, last := spans[0].t0, spans[0].t1
	for _, sp := range spans {
		if sp.err != nil {
			return benchSpan{}, sp.err
		}
		if sp.t0.Before(first) {
			first = sp.t0
		}
		if sp.t1.After(last) {
			last = sp.t1
		}
		out.cpu, out.wait, out.ok = out.cpu+sp.cpu, out.wait+sp.wait, out.ok && sp.ok
	}
	// A goroutine that starts after the first one did was kept from its
	// core that long (past the barrier, only the scheduler holds it).
	for _, sp := range spans {
		out.wait += sp.t0.Sub(first)
	}
	out.wall = last.Sub(first)
	return out, nil
}

// measure runs one cell under both backends: the workers of each, one
// per GOMAXPROCS (each with its own connection and segment, one shared
// pool and keyring, as a server's connections share them), timed by
// timeCell.
func measure(alg, op string, payload int, d time.Duration) ([2]benchRow, error) {
	var rows [2]benchRow
	var workers [2][]*benchWorker
	for i, b := range benchBackends {
		pool, err := sigpool.New(sigpool.Config{Backend: b})
		if err != nil {
			return rows, err
		}
		newWorker, err := benchSetup(alg, pool)
		if err != nil {
			return rows, err
		}
		for range runtime.GOMAXPROCS(0) {
			w, err := newWorker(op, payload)
			if err != nil {
				return rows, err
			}
			workers[i] = append(workers[i], w)
		}
		rows[i] = benchRow{Alg: alg, Backend: b.String(), Op: op, Payload: payload}
	}
	return rows, timeCell(&rows, workers, d, realRun)
}

// timeCell times the two backends' workers in rounds, each running clone
// and rekey in turn (which goes first alternates): first each backend's
// first worker on one goroutine, n segments per round, n chosen so that a
// round takes about d over the rounds; then all the workers at once, n
// segments each. So each backend runs about d on one core and d on all.
// It fills in the rows' figures.
func timeCell(rows *[2]benchRow, workers [2][]*benchWorker, d time.Duration, run benchRun) error {
	procs, rounds := len(workers[0]), benchRounds(d)
	var n [2]int
	for i := range n {
		rows[i].SegmentBytes, rows[i].Rounds, rows[i].Cores = workers[i][0].bytes, rounds, procs
		var err error
		if n[i], err = roundSize(workers[i][0], d/time.Duration(rounds), run); err != nil {
			return err
		}
	}
	var t cellTimes
	if err := t.measure(workers, n, rounds, run); err != nil {
		return err
	}
	for i := range rows {
		t.fill(&rows[i], i)
	}
	rows[1].RekeyOverClone = rows[1].NsPerSegment / rows[0].NsPerSegment
	return nil
}

// roundSize warms w up, doubling the calls until they take a quarter of
// a round; that says how many make one round.
func roundSize(w *benchWorker, round time.Duration, run benchRun) (int, error) {
	for k := 1; ; k *= 2 {
		sp, err := run([]func() error{w.step}, k)
		if err != nil {
			return 0, err
		}
		wall := sp.wall
		if wall >= round/4 || k >= 1<<30 {
			return max(1, int(float64(k)*float64(round)/float64(max(wall, 1)))), nil
		}
	}
}

// cellTimes are a cell's rounds, per backend (clone, rekey): ns per
// segment on one core and, on all cores, the throughput, the cores held
// and the share of the time spent waiting for one; statsOK is false when
// a round's thread times were not read.
type cellTimes struct {
	ns, gbits, held, waited [2][]float64
	statsOK                 bool
}

// measure runs the rounds, n[i] segments per worker of backend i in each,
// the backends taking turns at going first.
func (t *cellTimes) measure(workers [2][]*benchWorker, n [2]int, rounds int, run benchRun) error {
	procs := len(workers[0])
	t.statsOK = true
	for r := range rounds {
		for j := range 2 {
			i := (j + r) % 2
			sp, err := run([]func() error{workers[i][0].step}, n[i])
			if err != nil {
				return err
			}
			t.ns[i] = append(t.ns[i], float64(max(sp.wall, 1).Nanoseconds())/float64(n[i]))
		}
		if procs < 2 {
			continue
		}
		for j := range 2 {
			i := (j + r + 1) % 2
			if err := t.allCores(i, workers[i], n[i], run); err != nil {
				return err
			}
		}
	}
	return nil
}

// allCores runs one round of backend i on all cores, each of workers
// signing or verifying n segments on its own goroutine.
func (t *cellTimes) allCores(i int, workers []*benchWorker, n int, run benchRun) error {
	procs := len(workers)
	steps := make([]func() error, procs)
	for k, w := range workers {
		steps[k] = w.step
	}
	sp, err := run(steps, n)
	if err != nil {
		return err
	}
	wall := max(sp.wall, 1)
	t.gbits[i] = append(t.gbits[i], float64(procs*n*workers[0].bytes*8)/float64(wall.Nanoseconds()))
	t.held[i] = append(t.held[i], float64(sp.cpu)/float64(wall))
	t.waited[i] = append(t.waited[i], float64(sp.wait)/float64(wall)/float64(procs))
	t.statsOK = t.statsOK && sp.ok
	return nil
}

// fill sets row's figures from backend i's rounds: the one-core spread,
// and the all-cores one over the rounds whose goroutines had their cores,
// or why it is left out.
func (t *cellTimes) fill(row *benchRow, i int) {
	procs, rounds := row.Cores, row.Rounds
	one := summarise(t.ns[i])
	row.NsPerSegment, row.NsMin, row.NsMax = one.median, one.min, one.max
	row.Gbps1 = float64(row.SegmentBytes*8) / one.median
	if procs < 2 {
		row.AllCoresOut = "GOMAXPROCS is 1"
		return
	}
	counted := t.gbits[i]
	if t.statsOK {
		counted = nil
		for r, w := range t.waited[i] {
			if w <= waitMax {
				counted = append(counted, t.gbits[i][r])
			}
		}
		row.CoresHeld = summarise(slices.Clone(t.held[i])).median
		row.Waited = summarise(slices.Clone(t.waited[i])).median
		row.HeldRounds = len(counted)
	}
	if len(counted) < heldRounds(rounds) {
		row.AllCoresOut = fmt.Sprintf("its %d goroutines had their cores (waited for them %.0f%% of the time or less) in %d of %d rounds: other processes ran",
			procs, waitMax*100, len(counted), rounds)
		return
	}
	all := summarise(counted)
	row.GbpsAll, row.GbpsAllMin, row.GbpsAllMax = all.median, all.min, all.max
}
