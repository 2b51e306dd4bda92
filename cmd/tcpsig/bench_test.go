package main

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// A cell's rounds: at least 7, at most 101, always odd, about 250 µs
// each.
func TestBenchRounds(t *testing.T) {
	for d, want := range map[time.Duration]int{time.Millisecond: 7, 2 * time.Millisecond: 9, 5 * time.Millisecond: 21,
		30 * time.Millisecond: 101, time.Second: 101} {
		if got := benchRounds(d); got != want {
			t.Errorf("benchRounds(%v) = %d, want %d", d, got, want)
		}
	}
}

// The figure is the median: an outlier as the README once showed (2.5 ms
// for one MAC) is only the spread's maximum.
func TestSummarise(t *testing.T) {
	s := summarise([]float64{250, 251, 249, 2477343, 252, 248, 250})
	if s != (spread{250, 248, 2477343}) {
		t.Errorf("odd: %+v", s)
	}
	if s := summarise([]float64{4, 1, 3, 2}); s != (spread{2.5, 1, 4}) {
		t.Errorf("even: %+v", s)
	}
}

// scripted is a benchRun of made-up costs: clone's segment 100 ns,
// rekey's 300, the goroutines on all cores each as fast as one alone,
// running the cores given and waiting the rest; one clone round on one
// core, the first after an all-cores run, is 1000 times slower. It logs which backend ran: c or
// r on one goroutine, C or R on all.
type scripted struct {
	held    float64
	slowOdd bool // every other all-cores round of a backend holds one core, at half the speed
	allRuns [2]int
	backend int // set by the workers' steps
	log     strings.Builder
	all     bool // an all-cores run happened
	outlier bool // the slow round happened
}

func (s *scripted) workers(procs int) [2][]*benchWorker {
	var w [2][]*benchWorker
	for i := range w {
		for range procs {
			w[i] = append(w[i], &benchWorker{step: func() error { s.backend = i; return nil }, bytes: 100})
		}
	}
	return w
}

func (s *scripted) run(steps []func() error, n int) (benchSpan, error) {
	steps[0]()
	wall := time.Duration(n) * [2]time.Duration{100, 300}[s.backend]
	if len(steps) > 1 {
		s.log.WriteString([2]string{"C", "R"}[s.backend])
		s.all = true
		if s.allRuns[s.backend]++; s.slowOdd && s.allRuns[s.backend]%2 == 0 {
			// Another process had one of the cores the whole round.
			return benchSpan{wall: 2 * wall, cpu: 2 * wall, wait: 2 * wall, ok: true}, nil
		}
		// What the goroutines did not run, they waited.
		return benchSpan{wall: wall, cpu: time.Duration(s.held * float64(wall)), wait: time.Duration((2 - s.held) * float64(wall)), ok: true}, nil
	}
	s.log.WriteString([2]string{"c", "r"}[s.backend])
	if s.backend == 0 && s.all && !s.outlier {
		s.outlier = true
		wall *= 1000
	}
	return benchSpan{wall: wall}, nil
}

// timeCell: rounds alternate the backends, and which goes first, on one
// core and on all; a figure is the median, so the outlier round is only
// its spread's maximum; the ratio is the two medians'; the all-cores
// figure counts only the rounds whose goroutines had their cores (waited
// 10% of the time or less), and shows when a quarter of the rounds did.
func TestTimeCell(t *testing.T) {
	const d = 5 * time.Millisecond
	rounds := benchRounds(d)
	for _, c := range []struct {
		held    float64
		slowOdd bool
	}{{1.95, false}, {1.2, false}, {1.95, true}} {
		held := c.held
		s := &scripted{held: held, slowOdd: c.slowOdd}
		var rows [2]benchRow
		if err := timeCell(&rows, s.workers(2), d, s.run); err != nil {
			t.Fatal(err)
		}
		// The warm-ups (c…, then r…), then each round: one core in
		// turn, then all cores in the other order.
		log := s.log.String()
		warm, timed := log[:len(log)-4*rounds], log[len(log)-4*rounds:]
		if strings.Trim(warm, "cr") != "" || !strings.HasPrefix(warm, "c") || !strings.HasSuffix(warm, "r") {
			t.Errorf("warm-ups %s", warm)
		}
		for r := range rounds {
			if got, want := timed[4*r:4*r+4], [2]string{"crRC", "rcCR"}[r%2]; got != want {
				t.Fatalf("round %d: %s, want %s (%s)", r, got, want, timed)
			}
		}
		clone, rekey := rows[0], rows[1]
		if clone.NsPerSegment != 100 || rekey.NsPerSegment != 300 || clone.Rounds != rounds || clone.Cores != 2 || clone.SegmentBytes != 100 {
			t.Errorf("medians %v %v, rounds %d, cores %d", clone.NsPerSegment, rekey.NsPerSegment, clone.Rounds, clone.Cores)
		}
		if !s.outlier || clone.NsMax != 100000 || clone.NsMin != 100 || rekey.NsMax != 300 {
			t.Errorf("spreads %v-%v, %v-%v: the outlier round is not clone's maximum alone", clone.NsMin, clone.NsMax, rekey.NsMin, rekey.NsMax)
		}
		if rekey.RekeyOverClone != 3 || clone.RekeyOverClone != 0 || math.Abs(clone.Gbps1-8) > 1e-9 {
			t.Errorf("ratio %v (clone row %v), Gbit/s %v", rekey.RekeyOverClone, clone.RekeyOverClone, clone.Gbps1)
		}
		counted := rounds
		if c.slowOdd {
			counted = (rounds + 1) / 2
		}
		if held > 1.8 {
			// The slow rounds, which held one core, count for nothing.
			if clone.AllCoresOut != "" || clone.GbpsAll != 16 || clone.GbpsAllMin != 16 || math.Abs(rekey.GbpsAll-16.0/3) > 1e-9 ||
				clone.HeldRounds != counted || rekey.HeldRounds != counted {
				t.Errorf("%+v: all cores %v (%v-%v) %v in %d rounds (%q)", c, clone.GbpsAll, clone.GbpsAllMin, clone.GbpsAllMax, rekey.GbpsAll, clone.HeldRounds, clone.AllCoresOut)
			}
		} else if clone.GbpsAll != 0 || rekey.GbpsAll != 0 || clone.CoresHeld != held ||
			rekey.AllCoresOut != fmt.Sprintf("its 2 goroutines had their cores (waited for them 10%% of the time or less) in 0 of %d rounds: other processes ran", rounds) {
			t.Errorf("%+v: all cores %v %v (%q), want left out", c, clone.GbpsAll, rekey.GbpsAll, rekey.AllCoresOut)
		}
	}
	// One core: no all-cores runs, and the reason.
	s := &scripted{}
	var rows [2]benchRow
	if err := timeCell(&rows, s.workers(1), time.Millisecond, s.run); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(s.log.String(), "CR") || rows[0].AllCoresOut != "GOMAXPROCS is 1" || rows[0].GbpsAll != 0 {
		t.Errorf("one core: log %s, %+v", s.log.String(), rows[0])
	}
}
