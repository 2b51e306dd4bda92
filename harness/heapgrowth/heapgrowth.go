// Package heapgrowth measures, for a benchmark, how much the live heap
// grows per unit of work (per connection, per MKT), each round in a fresh
// child process of the test binary, so that what earlier rounds or
// benchmarks left in the process (contexts a pool keeps for reuse, entries
// it releases later) never moves a round's starting heap. The figure
// reported is the median over the rounds.
//
// Report re-executes the running test binary with -test.run=^$,
// -test.bench matching exactly the calling benchmark, -test.benchtime=1x
// and -test.count=1, and with ChildEnv set to the benchmark's name; in
// that child Report calls measure once and prints the figure on a line of
// its own, which the parent reads back.
package heapgrowth

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Rounds is the least number of rounds a figure is the median of
// (-benchtime 1x runs exactly that many).
const Rounds = 5

// ChildEnv names, in a child process of Report, the benchmark whose round
// it is to measure; the child prints the figure after result.
const (
	ChildEnv = "TCPSIG_GROW_ROUND"
	result   = "tcpsig-grow-round: "
)

// Report reports unit (b.ReportMetric) as the median of measure over
// max(b.N, Rounds) rounds, each run in a fresh process of this test binary
// that runs only b. measure returns one round's figure, typically the
// growth of the live heap divided by the units the round made; it runs
// only in the child processes.
func Report(b *testing.B, unit string, measure func() float64) {
	b.Helper()
	if os.Getenv(ChildEnv) == b.Name() {
		fmt.Printf("%s%g\n", result, measure())
		return
	}
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	parts := strings.Split(b.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	var per []float64
	for range max(b.N, Rounds) {
		cmd := exec.Command(exe, "-test.run=^$", "-test.bench="+strings.Join(parts, "/"), "-test.benchtime=1x", "-test.count=1")
		cmd.Env = append(os.Environ(), ChildEnv+"="+b.Name())
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("%v: %v\n%s", cmd, err, out)
		}
		_, after, ok := strings.Cut(string(out), result)
		v, perr := strconv.ParseFloat(strings.TrimSpace(strings.SplitN(after, "\n", 2)[0]), 64)
		if !ok || perr != nil {
			b.Fatalf("no figure from %v:\n%s", cmd, out)
		}
		per = append(per, v)
	}
	b.ReportMetric(Median(per), unit)
}

// Median returns the median of xs (the mean of the middle two when their
// number is even), 0 for none. xs is left as it was.
func Median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Live returns the live heap after two collections (the second empties
// what sync.Pools kept from the first): what a round's measure subtracts.
func Live() float64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapAlloc)
}
