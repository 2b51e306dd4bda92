package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
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
// payload size, on one core and on all. A rekey row also carries its time
// over the clone row's of the same cell, and, for an algorithm whose two
// backends do the same work, why.
type benchRow struct {
	Alg            string  `json:"alg"`
	Backend        string  `json:"backend"`
	Op             string  `json:"op"`
	Payload        int     `json:"payload"`
	SegmentBytes   int     `json:"segment_bytes"`
	NsPerSegment   float64 `json:"ns_per_segment"`
	Gbps1          float64 `json:"gbit_s_one_core"`
	GbpsAll        float64 `json:"gbit_s_all_cores"`
	Cores          int     `json:"cores"`
	RekeyOverClone float64 `json:"rekey_over_clone,omitempty"`
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
	if *asJSON {
		enc := json.NewEncoder(stdout)
		_ = enc.Encode(map[string]cpuInfo{"cpu": cpu})
		emit = func(r benchRow) { _ = enc.Encode(r) }
	} else {
		fmt.Fprintf(stdout, "CPU: %s, %d logical cores, GOMAXPROCS %d (%s)\n", cpu.Model, cpu.Logical, cpu.GOMAXPROCS, cpu.GOARCH)
		fmt.Fprintf(stdout, "SHA/AES features: %s; absent: %s\n", orNone(cpu.Features), orNone(cpu.Missing))
		fmt.Fprintf(stdout, "Each cell ran for %v; segment = TCP header (timestamps + auth option) + payload.\n", *d)
		fmt.Fprintf(stdout, "clone: every context loads the key's prepared template (sigpool.Clone, the default);\n")
		fmt.Fprintf(stdout, "rekey: every context runs the key schedule again per segment, as Linux does (sigpool.Rekey).\n")
		fmt.Fprintf(stdout, "Throughput is the clone backend's.\n\n")
		const row = "%-15s  %-6s  %7s  %8s  %8s  %11s  %13s  %14s\n"
		fmt.Fprintf(stdout, row, "ALGORITHM", "OP", "PAYLOAD", "CLONE NS", "REKEY NS", "REKEY/CLONE", "GBIT/S 1 CORE", fmt.Sprintf("GBIT/S %d CORES", cpu.GOMAXPROCS))
		var clone benchRow
		emit = func(r benchRow) {
			if r.Backend == sigpool.Clone.String() {
				clone = r
				return
			}
			fmt.Fprintf(stdout, row, r.Alg, r.Op, fmt.Sprint(r.Payload), fmt.Sprintf("%.0f", clone.NsPerSegment),
				fmt.Sprintf("%.0f", r.NsPerSegment), fmt.Sprintf("%.2f", r.RekeyOverClone), gbps(clone.Gbps1), gbps(clone.GbpsAll))
			if r.SameWork != "" && r.Op == "verify" && r.Payload == benchPayloads[len(benchPayloads)-1] {
				fmt.Fprintf(stdout, "  %s: clone and rekey do the same work: %s.\n", r.Alg, r.SameWork)
			}
		}
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
	return 0
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, " ")
}

// measure runs one cell under both backends: op interleaved on one
// goroutine (rounds of benchRound calls under each backend, alternating
// which goes first; the medians over the rounds of the ns per segment and
// of the rekey/clone ratio), for d per backend; then each backend on
// GOMAXPROCS goroutines (each with its own connection and segment, one
// shared pool and keyring, as a server's connections share them) for d.
func measure(alg, op string, payload int, d time.Duration) ([2]benchRow, error) {
	var rows [2]benchRow
	var one [2]*benchWorker
	var makers [2]func(string, int) (*benchWorker, error)
	for i, b := range benchBackends {
		pool, err := sigpool.New(sigpool.Config{Backend: b})
		if err != nil {
			return rows, err
		}
		if makers[i], err = benchSetup(alg, pool); err != nil {
			return rows, err
		}
		if one[i], err = makers[i](op, payload); err != nil {
			return rows, err
		}
		rows[i] = benchRow{Alg: alg, Backend: b.String(), Op: op, Payload: payload, SegmentBytes: one[i].bytes, Cores: runtime.GOMAXPROCS(0)}
	}
	var ns [2][]float64
	var ratios []float64
	for start := time.Now(); time.Since(start) < 2*d || len(ratios) < 3; {
		var t [2]time.Duration
		for j := range 2 {
			i := (j + len(ratios)) % 2
			t[i] = timeRound(one[i].step)
		}
		for i := range 2 {
			ns[i] = append(ns[i], float64(t[i].Nanoseconds())/benchRound)
		}
		ratios = append(ratios, float64(t[1])/float64(t[0]))
	}
	for i := range rows {
		rows[i].NsPerSegment = median(ns[i])
		rows[i].Gbps1 = float64(rows[i].SegmentBytes*8) / rows[i].NsPerSegment
		g, err := allCores(makers[i], op, payload, d)
		if err != nil {
			return rows, err
		}
		rows[i].GbpsAll = g * float64(rows[i].SegmentBytes*8)
	}
	rows[1].RekeyOverClone = median(ratios)
	return rows, nil
}

// benchRound is the number of segments in one timed round of measure.
const benchRound = 16

// timeRound times benchRound calls of step.
func timeRound(step func() error) time.Duration {
	t0 := time.Now()
	for range benchRound {
		if step() != nil {
			panic("tcpsig bench: a segment failed to sign or verify")
		}
	}
	return time.Since(t0)
}

func median(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}

// allCores runs op on GOMAXPROCS goroutines, each with its own worker
// from newWorker, for d, and returns the segments per nanosecond of them
// all.
func allCores(newWorker func(string, int) (*benchWorker, error), op string, payload int, d time.Duration) (float64, error) {
	workers := make([]*benchWorker, runtime.GOMAXPROCS(0))
	for i := range workers {
		var err error
		if workers[i], err = newWorker(op, payload); err != nil {
			return 0, err
		}
	}
	var total atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for _, w := range workers {
		wg.Go(func() {
			n, _ := runFor(w.step, d)
			total.Add(n)
		})
	}
	wg.Wait()
	return float64(total.Load()) / float64(time.Since(start).Nanoseconds()), nil
}

// runFor calls step in growing batches until d has passed.
func runFor(step func() error, d time.Duration) (n int64, elapsed time.Duration) {
	start := time.Now()
	for batch := int64(1); ; batch *= 2 {
		for range batch {
			if step() != nil {
				panic("tcpsig bench: a segment failed to sign or verify")
			}
		}
		n += batch
		if elapsed = time.Since(start); elapsed >= d {
			return n, elapsed
		}
	}
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
