package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/cpuid/v2"

	"github.com/tcpsig/tcpsig/mac"
	"github.com/tcpsig/tcpsig/sigpool"
)

// benchPayloads are the payload sizes measured: a bare ACK, a small
// write, the IPv4 default MSS, a full 1500-byte-MTU segment and a full
// 9000-byte-jumbo one.
var benchPayloads = []int{0, 64, 536, 1448, 8948}

var benchBackends = []sigpool.Backend{sigpool.Clone, sigpool.Rekey}

// benchRow is one measurement: an algorithm, backend, operation and
// payload size, on one core and on all, each the median of benchRounds
// rounds with their spread. A rekey row also carries its median time over
// the clone row's, and, for an algorithm whose two backends do the same
// work, why. The all-cores figure is 0 when left out, with the reason.
type benchRow struct {
	Alg            string  `json:"alg"`
	Backend        string  `json:"backend"`
	Op             string  `json:"op"`
	Payload        int     `json:"payload"`
	SegmentBytes   int     `json:"segment_bytes"`
	Rounds         int     `json:"rounds"`
	NsPerSegment   float64 `json:"ns_per_segment"` // median over the rounds
	NsMin          float64 `json:"ns_min"`
	NsMax          float64 `json:"ns_max"`
	Gbps1          float64 `json:"gbit_s_one_core"` // from the median
	GbpsAll        float64 `json:"gbit_s_all_cores"`
	GbpsAllMin     float64 `json:"gbit_s_all_cores_min"`
	GbpsAllMax     float64 `json:"gbit_s_all_cores_max"`
	Cores          int     `json:"cores"`
	CoresHeld      float64 `json:"cores_held,omitempty"`       // on all cores, the goroutines' CPU time over wall time, median of the rounds
	Waited         float64 `json:"all_cores_waited,omitempty"` // on all cores, their share of the time waiting, runnable, for a core, median of the rounds
	HeldRounds     int     `json:"held_rounds,omitempty"`      // the rounds on all cores that had their cores (waitMax), of which the figure is the median
	AllCoresOut    string  `json:"all_cores_left_out,omitempty"`
	RekeyOverClone float64 `json:"rekey_over_clone,omitempty"` // rekey's NsPerSegment over clone's
	SameWork       string  `json:"same_work,omitempty"`
}

// sameWork says why the two backends do the same work for alg, or ""
// when the clone saves a key schedule per segment.
func sameWork(alg string) string {
	if alg == "md5" {
		return "TCP-MD5 has no key schedule: both hash the key bytes after each segment"
	}
	if a, err := mac.Lookup(alg); err == nil && !a.Clones() {
		return "its hash exports no state, so a key's template is its two padded key blocks, which every segment absorbs under either backend"
	}
	return ""
}

// cpuInfo is the machine the numbers belong to.
type cpuInfo struct {
	Model      string   `json:"model"`
	Logical    int      `json:"logical_cores"`
	GOMAXPROCS int      `json:"gomaxprocs"`
	Features   []string `json:"features"` // the SHA and AES ones present
	Missing    []string `json:"missing"`  // the SHA and AES ones absent
	GOARCH     string   `json:"goarch"`
}

// cpuOf describes this machine.
func cpuOf() cpuInfo {
	c := cpuInfo{Model: cpuid.CPU.BrandName, Logical: cpuid.CPU.LogicalCores, GOMAXPROCS: runtime.GOMAXPROCS(0), GOARCH: runtime.GOARCH,
		Features: []string{}, Missing: []string{}}
	if c.Model == "" {
		c.Model = "unknown"
	}
	feats := []cpuid.FeatureID{cpuid.SHA, cpuid.AESNI, cpuid.VAES, cpuid.CLMUL, cpuid.AVX2, cpuid.AVX512F}
	if runtime.GOARCH == "arm64" {
		feats = []cpuid.FeatureID{cpuid.SHA1, cpuid.SHA2, cpuid.SHA3, cpuid.SHA512, cpuid.AESARM, cpuid.PMULL}
	}
	for _, f := range feats {
		if cpuid.CPU.Supports(f) {
			c.Features = append(c.Features, f.String())
		} else {
			c.Missing = append(c.Missing, f.String())
		}
	}
	return c
}

// algList is the repeatable -alg flag.
type algList []string

func (a *algList) String() string { return strings.Join(*a, ",") }
func (a *algList) Set(s string) error {
	if strings.EqualFold(s, "md5") {
		*a = append(*a, "md5")
		return nil
	}
	alg, err := mac.Lookup(s)
	if err != nil {
		return fmt.Errorf("unknown algorithm %q (known: %s, md5)", s, strings.Join(mac.Names(), ", "))
	}
	*a = append(*a, alg.Name())
	return nil
}

// minBenchTime is the shortest -time: below it, starting the goroutines
// of a measurement takes longer than the measurement.
const minBenchTime = time.Millisecond

// gbps formats a throughput with three significant digits, so that a
// slow cell never reads 0.00.
func gbps(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	case v >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// runBench is "tcpsig bench".
func runBench(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	asJSON := fs.Bool("json", false, "")
	d := fs.Duration("time", 30*time.Millisecond, "")
	var algs algList
	fs.Var(&algs, "alg", "")
	rest, err := parseArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, benchHelp)
		return 0
	}
	if err != nil {
		return failf(stderr, "bench: %v (see tcpsig help bench)", err)
	}
	if len(rest) > 0 {
		return failf(stderr, "bench: unexpected argument %q (see tcpsig help bench)", rest[0])
	}
	if *d < minBenchTime {
		return failf(stderr, "bench: -time %v is too short to measure anything: at least %v", *d, minBenchTime)
	}
	if len(algs) == 0 {
		algs = append(mac.Names(), "md5")
	}
	cpu := cpuOf()
	var emit func(benchRow)
	done := func() {}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		_ = enc.Encode(map[string]cpuInfo{"cpu": cpu})
		emit = func(r benchRow) { _ = enc.Encode(r) }
	} else {
		emit, done = benchTable(stdout, cpu, *d)
	}
	for _, alg := range algs {
		why := sameWork(alg)
		for _, p := range benchPayloads {
			for _, op := range []string{"sign", "verify"} {
				rows, err := measure(alg, op, p, *d)
				if err != nil {
					return failf(stderr, "bench: %s %s %d: %v", alg, op, p, err)
				}
				rows[1].SameWork = why
				emit(rows[0])
				emit(rows[1])
			}
		}
	}
	done()
	return 0
}

// benchTable returns the text table's emitter of rows (a clone row, then
// its rekey row) and what ends the table.
func benchTable(w io.Writer, cpu cpuInfo, d time.Duration) (emit func(benchRow), done func()) {
	procs := cpu.GOMAXPROCS
	_, _, checked := ownThreadStats()
	fmt.Fprintf(w, "CPU: %s, %d logical cores, GOMAXPROCS %d (%s)\n", cpu.Model, cpu.Logical, procs, cpu.GOARCH)
	fmt.Fprintf(w, "SHA/AES features: %s; absent: %s\n", orNone(cpu.Features), orNone(cpu.Missing))
	fmt.Fprintf(w, "Each cell ran for %v per backend on 1 core and on %d, in %d rounds; segment = TCP header (timestamps + auth option) + payload.\n", d, procs, benchRounds(d))
	fmt.Fprintf(w, "A figure is the median of the rounds, (min-max) their spread; a round runs clone and rekey in turn.\n")
	fmt.Fprintf(w, "clone: every context loads the key's prepared template (sigpool.Clone, the default);\n")
	fmt.Fprintf(w, "rekey: every context runs the key schedule again per segment, as Linux does (sigpool.Rekey).\n")
	fmt.Fprintf(w, "REKEY/CLONE is the rekey median over the clone median. Throughput is the clone backend's.\n")
	all := fmt.Sprintf("GBIT/S %d CORES (MIN-MAX)", procs)
	switch {
	case procs < 2:
		fmt.Fprintf(w, "No column for all cores: GOMAXPROCS is 1, so all cores is one.\n")
		all = ""
	case checked:
		fmt.Fprintf(w, "GBIT/S %d CORES: %d goroutines at once, over the rounds in which they waited for a core %.0f%% of the time or less (another process running), where a quarter of the rounds did.\n",
			procs, procs, waitMax*100)
	default:
		fmt.Fprintf(w, "GBIT/S %d CORES: %d goroutines at once; tcpsig reads no thread's wait time here, so whether they had the cores is not checked.\n", procs, procs)
	}
	fmt.Fprintln(w)
	line := func(cols ...any) {
		fmt.Fprintln(w, strings.TrimRight(fmt.Sprintf("%-15s  %-6s  %7s  %-21s  %-21s  %11s  %13s  %s", cols...), " "))
	}
	line("ALGORITHM", "OP", "PAYLOAD", "CLONE NS (MIN-MAX)", "REKEY NS (MIN-MAX)", "REKEY/CLONE", "GBIT/S 1 CORE", all)
	ns := func(r benchRow) string { return fmt.Sprintf("%.0f (%.0f-%.0f)", r.NsPerSegment, r.NsMin, r.NsMax) }
	var clone benchRow
	var out, cells int
	held := spread{min: math.Inf(1), max: math.Inf(-1)} // the median rounds' wait shares of the cells left out
	emit = func(r benchRow) {
		if r.Backend == sigpool.Clone.String() {
			clone = r
			return
		}
		cell := ""
		switch {
		case procs < 2:
		case clone.AllCoresOut != "":
			cell = "-"
			out++
			held.min, held.max = min(held.min, clone.Waited), max(held.max, clone.Waited)
		default:
			cell = fmt.Sprintf("%s (%s-%s)", gbps(clone.GbpsAll), gbps(clone.GbpsAllMin), gbps(clone.GbpsAllMax))
		}
		cells++
		line(r.Alg, r.Op, fmt.Sprint(r.Payload), ns(clone), ns(r),
			fmt.Sprintf("%.2f", r.RekeyOverClone), gbps(clone.Gbps1), cell)
		if r.SameWork != "" && r.Op == "verify" && r.Payload == benchPayloads[len(benchPayloads)-1] {
			fmt.Fprintf(w, "  %s: clone and rekey do the same work: %s.\n", r.Alg, r.SameWork)
		}
	}
	done = func() {
		if out > 0 {
			fmt.Fprintf(w, "-: %d of %d cells left out: in too few of their rounds did the goroutines have the %d cores (in the median round they waited for them %.0f-%.0f%% of the time: other processes ran), so a figure would measure that load.\n",
				out, cells, procs, held.min*100, held.max*100)
		}
	}
	return emit, done
}

// orNone lists s, or says none.
func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, " ")
}
