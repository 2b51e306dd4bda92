//go:build linux

package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tcpsig/tcpsig/harness/capture"
	"github.com/tcpsig/tcpsig/harness/netns"
)

// Case is one entry of the case table. Run gets a fresh *T; it records its
// captures with T.addCapture and reports problems with T.Errorf/T.Fatalf.
type Case struct {
	Name string
	Kind string // "kernel-kernel" for captures; other files may add other kinds
	Run  func(t *T)
	// Timeout bounds the case (caseTimeout when 0): a case that waits on
	// daemons' timers (BGP's) needs more.
	Timeout time.Duration
}

var registry []Case

// register adds cases to the table (call it from an init function); a
// name already in the table is a programming error.
func register(cs ...Case) {
	for _, c := range cs {
		for _, o := range registry {
			if o.Name == c.Name {
				panic("duplicate case " + c.Name)
			}
		}
		registry = append(registry, c)
	}
}

// T is the per-case context.
type T struct {
	name     string
	errs     []string
	skipped  string // why the case could not run here (Skipf)
	log      *bytes.Buffer
	captures []capturedFile
}

type capturedFile struct {
	entry ManifestCapture
	pcap  []byte
}

type fatal struct{}

// resultFiles are files cases add to the result tar besides their
// captures (T.addResultFile), under their own names.
var resultFiles struct {
	sync.Mutex
	files []resultFile
}

type resultFile struct {
	name string
	b    []byte
}

// addResultFile puts b into the result tar as name, for the host to
// check (run-qemu.sh).
func (t *T) addResultFile(name string, b []byte) {
	resultFiles.Lock()
	defer resultFiles.Unlock()
	resultFiles.files = append(resultFiles.files, resultFile{name, b})
}

func (t *T) Logf(format string, a ...any) {
	fmt.Fprintf(t.log, "  [%s] %s\n", t.name, fmt.Sprintf(format, a...))
}

// Errorf records a failure and continues.
func (t *T) Errorf(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	t.errs = append(t.errs, msg)
	fmt.Fprintf(t.log, "  [%s] ERROR %s\n", t.name, msg)
}

// Fatalf records a failure and ends the case.
func (t *T) Fatalf(format string, a ...any) {
	t.Errorf(format, a...)
	panic(fatal{})
}

// Skipf ends a case that cannot run here (a program the initramfs lacks),
// saying why: it is counted as skipped, never as passed.
func (t *T) Skipf(format string, a ...any) {
	t.skipped = fmt.Sprintf(format, a...)
	fmt.Fprintf(t.log, "  [%s] SKIP %s\n", t.name, t.skipped)
	panic(fatal{})
}

// check ends the case on a non-nil error.
func (t *T) check(err error, what string) {
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// addCapture records pkts, captured on lo (Ethernet), as the capture e
// describes. The pcap is written by harness/capture (gopacket's pcapgo)
// into a scratch file and kept in memory for the result tar.
func (t *T) addCapture(e ManifestCapture, pkts []capture.Packet) {
	dir, err := os.MkdirTemp("", "pcap")
	t.check(err, "pcap")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, e.File)
	t.check(capture.WriteFile(path, capture.LinkTypeEthernet, pkts), "pcap")
	b, err := os.ReadFile(path)
	t.check(err, "pcap")
	t.captures = append(t.captures, capturedFile{entry: e, pcap: b})
}

// caseTimeout bounds one case; a hung case is abandoned (its goroutine
// keeps its sockets) so that the others still run and the results are
// written.
const caseTimeout = 90 * time.Second

func runCase(c Case, log *bytes.Buffer) (res CaseResult, files []capturedFile) {
	t := &T{name: c.Name, log: &bytes.Buffer{}}
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(fatal); !ok {
					t.Errorf("panic: %v\n%s", r, debug.Stack())
				}
			}
		}()
		c.Run(t)
	}()
	timeout := caseTimeout
	if c.Timeout > 0 {
		timeout = c.Timeout
	}
	select {
	case <-done:
	case <-time.After(timeout):
		fmt.Fprintf(log, "  [%s] ERROR timed out after %v\n", c.Name, timeout)
		return CaseResult{Name: c.Name, Kind: c.Kind, Errors: []string{fmt.Sprintf("timed out after %v", timeout)},
			Seconds: time.Since(start).Seconds()}, nil
	}
	log.Write(t.log.Bytes())
	res = CaseResult{Name: c.Name, Kind: c.Kind, Pass: len(t.errs) == 0, Errors: t.errs, Seconds: time.Since(start).Seconds()}
	if t.skipped != "" && len(t.errs) == 0 {
		res.Pass, res.Skipped = false, t.skipped
	}
	for _, f := range t.captures {
		res.Captures = append(res.Captures, f.entry.Name)
	}
	return res, t.captures
}

func uptime() float64 {
	b, _ := os.ReadFile("/proc/uptime")
	f, _ := strconv.ParseFloat(strings.Fields(string(b) + " 0")[0], 64)
	return f
}

func kernelRelease() string {
	var u syscall.Utsname
	if syscall.Uname(&u) != nil {
		return "unknown"
	}
	var b []byte
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

const manifestNotes = "Kernel<->kernel TCP-AO on lo inside a qemu guest (Linux built from Debian's linux-source-6.12 with CONFIG_TCP_AO). " +
	"Link type Ethernet (EN10MB; lo frames carry zero MACs); each segment recorded once (AF_PACKET, PACKET_OUTGOING only). " +
	"TCP checksums are not filled in (CHECKSUM_PARTIAL on lo); both TCP-AO and TCP-MD5 zero the checksum field before MACing. " +
	"keys.ao lists the MKTs of both endpoints; an entry's peer is the address of the other end. " +
	"Segments sent by full sockets put the AO option first; ACKs sent from TIME-WAIT put it after TS (feature ao-after-ts). " +
	"isn/sne are given only for captures without a handshake (TCP_REPAIR pairs)."

// runGuest is "guest run": set up lo, run the cases, write the tar.
func runGuest(args []string) int {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	out := fs.String("out", "/dev/vda", "where to write the result tar")
	only := fs.String("cases", "", "comma-separated case names or name prefixes (default all)")
	repeat := fs.Int("repeat", 1, "run each selected case this many times, without the retry (to hunt a rare failure)")
	fs.Parse(args)

	log := &bytes.Buffer{}
	res := Results{Kernel: kernelRelease(), BootSeconds: uptime()}
	fmt.Printf("guest: kernel %s, %d CPUs, up %.1fs, %d cases registered\n", res.Kernel, runtime.NumCPU(), res.BootSeconds, len(registry))
	for _, err := range setupNetwork() {
		res.SetupFailures = append(res.SetupFailures, err.Error())
		fmt.Printf("guest: setup: %v\n", err)
	}
	man := Manifest{Kernel: strings.SplitN(res.Kernel, "-", 2)[0], GeneratedBy: "harness/kernellab/run-qemu.sh", LinkType: "EN10MB", Notes: manifestNotes}
	var files []capturedFile
	t0 := time.Now()
	for _, c := range registry {
		if !selected(c.Name, *only) {
			continue
		}
		if *repeat > 1 {
			for i := 0; i < *repeat; i++ {
				n := log.Len()
				r, fs := runCase(c, log)
				res.Cases = append(res.Cases, r)
				files = append(files, fs...)
				fmt.Printf("CASE %-40s %s %.2fs (run %d of %d)\n", c.Name, passFail(r.Pass), r.Seconds, i+1, *repeat)
				if !r.Pass {
					os.Stdout.Write(log.Bytes()[n:])
				}
			}
			continue
		}
		n := log.Len()
		r, fs := runCase(c, log)
		if r.Skipped != "" {
			res.Cases = append(res.Cases, r)
			fmt.Printf("CASE %-40s SKIP %s\n", c.Name, r.Skipped)
			continue
		}
		if !r.Pass {
			// One retry: under TCG on a busy host a timer can fire late.
			// The first attempt's errors stay in the log and the result.
			first := r
			fmt.Printf("CASE %-40s RETRY after: %s\n", c.Name, firstLine(strings.Join(r.Errors, "; ")))
			r, fs = runCase(c, log)
			r.Retried = true
			r.FirstErrors = first.Errors
			r.Seconds += first.Seconds
		}
		res.Cases = append(res.Cases, r)
		files = append(files, fs...)
		fmt.Printf("CASE %-40s %s %.2fs\n", c.Name, passFail(r.Pass), r.Seconds)
		if !r.Pass {
			os.Stdout.Write(log.Bytes()[n:])
		}
	}
	res.CasesSeconds = time.Since(t0).Seconds()
	man.Captures = []ManifestCapture{} // "captures": [] when no case recorded one (TCPSIG_CASES=live)
	for _, f := range files {
		man.Captures = append(man.Captures, f.entry)
	}
	if err := writeTar(*out, man, res, files, log.Bytes()); err != nil {
		fmt.Printf("guest: writing results: %v\n", err)
		return 1
	}
	fmt.Printf("guest: %d cases in %.1fs, %d captures written to %s\n", len(res.Cases), res.CasesSeconds, len(files), *out)
	for _, r := range res.Cases {
		if !r.Pass && r.Skipped == "" {
			return 1
		}
	}
	return 0
}

func passFail(pass bool) string {
	if pass {
		return "PASS"
	}
	return "FAIL"
}

func selected(name, only string) bool {
	if only == "" {
		return true
	}
	for _, p := range strings.Split(only, ",") {
		if p != "" && strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

func writeTar(path string, man Manifest, res Results, files []capturedFile, log []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		f, err = os.Create(path)
		if err != nil {
			return err
		}
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	tw := tar.NewWriter(w)
	add := func(name string, b []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), ModTime: time.Now()}); err != nil {
			return err
		}
		_, err := tw.Write(b)
		return err
	}
	for _, c := range files {
		if err := add(c.entry.File, c.pcap); err != nil {
			return err
		}
	}
	resultFiles.Lock()
	defer resultFiles.Unlock()
	for _, f := range resultFiles.files {
		if err := add(f.name, f.b); err != nil {
			return err
		}
	}
	mj, _ := json.MarshalIndent(man, "", "  ")
	rj, _ := json.MarshalIndent(res, "", "  ")
	for _, e := range []struct {
		n string
		b []byte
	}{{"manifest.json", append(mj, '\n')}, {"results.json", append(rj, '\n')}, {"guest.log", log}} {
		if err := add(e.n, e.b); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Sync()
}

// setupNetwork prepares lo: MTU 1500 (realistic segment sizes), the IPv6
// addresses fd00::1 and fd00::2 (usable once netns.AddAddr returns),
// timestamps on, SACK off (with SACK Linux drops TS from an AO SYN-ACK and,
// without TS there, from every segment).
func setupNetwork() []error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(netns.SetMTU("lo", 1500))
	add(netns.LinkUp("lo"))
	add(netns.AddAddr("lo", netip.MustParsePrefix("fd00::1/128")))
	add(netns.AddAddr("lo", netip.MustParsePrefix("fd00::2/128")))
	for k, v := range map[string]string{
		"net/ipv4/tcp_sack":       "0",
		"net/ipv4/tcp_timestamps": "1",
		"net/ipv4/tcp_ecn":        "0",
		"net/ipv4/tcp_syncookies": "1",
	} {
		add(sysctl(k, v))
	}
	return errs
}

func sysctl(key, val string) error {
	if err := os.WriteFile("/proc/sys/"+key, []byte(val), 0o644); err != nil {
		return fmt.Errorf("sysctl %s=%s: %w", key, val, err)
	}
	return nil
}
