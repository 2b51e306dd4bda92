package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/netip"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/cpuid/v2"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/mac"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/segment"
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
				rows, err := measure(alg, op, p, *d, realRun)
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

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, " ")
}

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
func measure(alg, op string, payload int, d time.Duration, run benchRun) ([2]benchRow, error) {
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
	return rows, timeCell(&rows, workers, d, run)
}

// timeCell times the two backends' workers in rounds, each running clone
// and rekey in turn (which goes first alternates): first each backend's
// first worker on one goroutine, n segments per round, n chosen so that a
// round takes about d over the rounds; then all the workers at once, n
// segments each. So each backend runs about d on one core and d on all.
// It fills in the rows' figures.
func timeCell(rows *[2]benchRow, workers [2][]*benchWorker, d time.Duration, run benchRun) error {
	procs, rounds := len(workers[0]), benchRounds(d)
	round := d / time.Duration(rounds)
	var n [2]int
	for i := range n {
		rows[i].SegmentBytes, rows[i].Rounds, rows[i].Cores = workers[i][0].bytes, rounds, procs
		// Warm up, doubling the calls until they take a quarter of a
		// round; that says how many make one.
		for k := 1; ; k *= 2 {
			sp, err := run([]func() error{workers[i][0].step}, k)
			if err != nil {
				return err
			}
			wall := sp.wall
			if wall >= round/4 || k >= 1<<30 {
				n[i] = max(1, int(float64(k)*float64(round)/float64(max(wall, 1))))
				break
			}
		}
	}
	var ns, gbits, held, waited [2][]float64
	statsOK := true
	for r := range rounds {
		for j := range 2 {
			i := (j + r) % 2
			sp, err := run([]func() error{workers[i][0].step}, n[i])
			if err != nil {
				return err
			}
			ns[i] = append(ns[i], float64(max(sp.wall, 1).Nanoseconds())/float64(n[i]))
		}
		if procs < 2 {
			continue
		}
		for j := range 2 {
			i := (j + r + 1) % 2
			steps := make([]func() error, procs)
			for k, w := range workers[i] {
				steps[k] = w.step
			}
			sp, err := run(steps, n[i])
			if err != nil {
				return err
			}
			wall := max(sp.wall, 1)
			gbits[i] = append(gbits[i], float64(procs*n[i]*rows[i].SegmentBytes*8)/float64(wall.Nanoseconds()))
			held[i] = append(held[i], float64(sp.cpu)/float64(wall))
			waited[i] = append(waited[i], float64(sp.wait)/float64(wall)/float64(procs))
			statsOK = statsOK && sp.ok
		}
	}
	for i := range rows {
		one := summarise(ns[i])
		rows[i].NsPerSegment, rows[i].NsMin, rows[i].NsMax = one.median, one.min, one.max
		rows[i].Gbps1 = float64(rows[i].SegmentBytes*8) / one.median
		if procs < 2 {
			rows[i].AllCoresOut = "GOMAXPROCS is 1"
			continue
		}
		counted := gbits[i]
		if statsOK {
			counted = nil
			for r, w := range waited[i] {
				if w <= waitMax {
					counted = append(counted, gbits[i][r])
				}
			}
			rows[i].CoresHeld = summarise(slices.Clone(held[i])).median
			rows[i].Waited = summarise(slices.Clone(waited[i])).median
			rows[i].HeldRounds = len(counted)
		}
		if len(counted) < heldRounds(rounds) {
			rows[i].AllCoresOut = fmt.Sprintf("its %d goroutines had their cores (waited for them %.0f%% of the time or less) in %d of %d rounds: other processes ran",
				procs, waitMax*100, len(counted), rounds)
			continue
		}
		all := summarise(counted)
		rows[i].GbpsAll, rows[i].GbpsAllMin, rows[i].GbpsAllMax = all.median, all.min, all.max
	}
	rows[1].RekeyOverClone = rows[1].NsPerSegment / rows[0].NsPerSegment
	return nil
}

// benchWorker signs or verifies one segment over and over.
type benchWorker struct {
	step  func() error
	bytes int
}

var (
	benchA = netip.MustParseAddrPort("10.0.0.1:40000")
	benchB = netip.MustParseAddrPort("10.0.0.2:179")
)

// benchSetup adds the keys of both ends to one keyring over pool and
// returns a maker of workers.
func benchSetup(alg string, pool *sigpool.Pool) (func(op string, payload int) (*benchWorker, error), error) {
	host := func(a netip.Addr) netip.Prefix { return netip.PrefixFrom(a, 32) }
	if alg == "md5" {
		ring := md5sig.NewKeyring(pool)
		for _, p := range []netip.Addr{benchA.Addr(), benchB.Addr()} {
			if _, err := ring.Add(keys.MD5{Peer: host(p), Key: []byte("bgp-session-secret")}); err != nil {
				return nil, err
			}
		}
		return func(op string, payload int) (*benchWorker, error) {
			seg, err := benchSegment(payload, []byte{segment.OptionKindMD5, segment.MD5OptionLen, 15: 0, 17: 0})
			if err != nil {
				return nil, err
			}
			if err := ring.Sign(&seg, 0); err != nil {
				return nil, err
			}
			if op == "sign" {
				return &benchWorker{step: func() error { return ring.Sign(&seg, 0) }, bytes: seg.Len()}, nil
			}
			return &benchWorker{step: func() error { return ring.Verify(&seg, 0) }, bytes: seg.Len()}, nil
		}, nil
	}
	keyLen := 20
	switch alg {
	case "cmac(aes128)":
		keyLen = 16
	case "cmac(aes)":
		keyLen = 32
	}
	if a, err := mac.Lookup(alg); err == nil {
		keyLen = max(keyLen, a.MinMasterKey()) // the draft's algorithms take 32 bytes or more
	}
	key := []byte(strings.Repeat("k", keyLen))
	ring := ao.NewKeyring(pool)
	m, err := ring.Add(keys.AO{Peer: host(benchB.Addr()), SendID: 1, RecvID: 2, Algorithm: alg, Key: key})
	if err != nil {
		return nil, err
	}
	if _, err := ring.Add(keys.AO{Peer: host(benchA.Addr()), SendID: 2, RecvID: 1, Algorithm: alg, Key: key}); err != nil {
		return nil, err
	}
	const isnA, isnB = 1000, 5000
	return func(op string, payload int) (*benchWorker, error) {
		var snd, rcv ao.Conn
		if err := snd.Init(ring, ao.Endpoint{Local: benchA, Remote: benchB, LocalISN: isnA,
			Established: true, RemoteISN: isnB, CurrentSendID: 1, RNextRecvID: 2}, ao.Policy{}); err != nil {
			return nil, err
		}
		if err := rcv.Init(ring, ao.Endpoint{Local: benchB, Remote: benchA, LocalISN: isnB,
			Established: true, RemoteISN: isnA, CurrentSendID: 2, RNextRecvID: 1}, ao.Policy{}); err != nil {
			return nil, err
		}
		seg, err := benchSegment(payload, ao.AppendOption(nil, m.MACLen()))
		if err != nil {
			return nil, err
		}
		if err := snd.Sign(&seg); err != nil {
			return nil, err
		}
		if op == "sign" {
			return &benchWorker{step: func() error { return snd.Sign(&seg) }, bytes: seg.Len()}, nil
		}
		return &benchWorker{step: func() error { return rcv.Verify(&seg) }, bytes: seg.Len()}, nil
	}, nil
}

// benchSegment lays out an IPv4 data segment from A to B: a TCP header
// with timestamps and the authentication option auth, and a payload.
func benchSegment(payload int, auth []byte) (segment.Segment, error) {
	opts := append([]byte{segment.OptionKindNOP, segment.OptionKindNOP, 8, 10, 0, 0, 1, 0, 0, 0, 2, 0}, auth...)
	for len(opts)%4 != 0 {
		opts = append(opts, segment.OptionKindNOP)
	}
	tcp := make([]byte, 20+len(opts)+payload)
	binary.BigEndian.PutUint16(tcp[0:], benchA.Port())
	binary.BigEndian.PutUint16(tcp[2:], benchB.Port())
	binary.BigEndian.PutUint32(tcp[4:], 1001)
	binary.BigEndian.PutUint32(tcp[8:], 5001)
	tcp[12] = byte((20 + len(opts)) / 4 << 4)
	tcp[13] = byte(segment.ACK | segment.PSH)
	binary.BigEndian.PutUint16(tcp[14:], 512)
	copy(tcp[20:], opts)
	for i := range payload {
		tcp[20+len(opts)+i] = byte(i)
	}
	return segment.FromTCP(benchA.Addr(), benchB.Addr(), tcp)
}
