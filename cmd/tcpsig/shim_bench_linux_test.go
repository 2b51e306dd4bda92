//go:build linux

package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/harness/netns"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/linuxsock"
)

var (
	shimBenchMiB    = flag.Int("shimbench.mib", 32, "MiB each BenchmarkShimMD5 transfer moves")
	shimBenchQueues = flag.Int("shimbench.queues", 0, "the shim's -queues in BenchmarkShimMD5 (0: its default)")
	shimBenchMTU    = flag.Int("shimbench.mtu", 0, "the veth's MTU in BenchmarkShimMD5, both ends (0: the default, 1500)")
	shimBenchNoGSO  = flag.Bool("shimbench.nogso", false, "BenchmarkShimMD5 with TSO and GSO off on the veth (ethtool): every leg sends MSS-sized segments")
)

// BenchmarkShimMD5 sets tcpsig shim beside the kernel's own TCP-MD5 on the
// same veth, in one run. A's kernel signs and serves on four addresses: one
// that B's shim covers (B's socket is plain), one that B's kernel signs for
// itself (TCP_MD5SIG on both ends), one unsigned, and one unsigned whose
// packets cross a pass-through netfilter queue in B ("queue": the shim's
// reader with no MAC, what any shim on a queue must at least add). Each iteration is one
// round of every leg, the legs' order rotating between rounds; the metrics
// are medians over the rounds. Run with -benchtime=Nx (N rounds).
//
//	MB/s-{kernel,shim,plain,queue} one -shimbench.mib transfer B -> A
//	MB/s-shim-{2,8}conns       the same bytes split over 2 or 8 sessions at once
//	us-rtt-{kernel,shim,plain,queue} a 64-byte request and its reply, mean of 2000
//	                           (in blocks of 100, the legs taking turns)
//	rtt-{shim,queue}/kernel    the shim's (the queue's) round trip over the kernel's, and
//	tput-shim/{kernel,plain}   the shim's throughput over the others', in
//	                           each round (whose legs ran under the same load)
//	shim-cpu-ms/MiB[-Nconns]   the shim process's CPU time (user + system,
//	                           its verdicts' reinjection included) per MiB
//	shim-cores-Nconns          that CPU time over the wall time: above 1,
//	                           the shim's work ran on more than one core
//	shim-top-thread-Nconns     the busiest thread's share of it: 1, all on
//	                           one thread; 0.5, halved between two
func BenchmarkShimMD5(b *testing.B) {
	if testing.Short() {
		b.Skip("-short")
	}
	needQueue(b)
	const secret = "tcpsig-bench"
	nsA, nsB := newPair(b)
	if *shimBenchNoGSO {
		ethtool, err := exec.LookPath("ethtool")
		if err != nil {
			b.Skip("-shimbench.nogso needs ethtool (apt-get install ethtool)")
		}
		for _, x := range []struct {
			n   *ns
			dev string
		}{{nsA, "shA"}, {nsB, "shB"}} {
			if err := x.n.Do(func() error {
				out, err := exec.Command(ethtool, "-K", x.dev, "tso", "off", "gso", "off", "gro", "off").CombinedOutput()
				if err != nil {
					return fmt.Errorf("ethtool: %v: %s", err, out)
				}
				return nil
			}); err != nil {
				b.Fatal(err)
			}
		}
	}
	if *shimBenchMTU > 0 {
		// The unsigned leg's packets cross the veth as 64 KiB GSO
		// packets whatever the MTU; the signed legs' are MSS-sized
		// segments (TCP-MD5 turns GSO off; the shim's queue takes
		// segments): a larger MTU makes each carry more.
		for _, x := range []struct {
			n   *ns
			dev string
		}{{nsA, "shA"}, {nsB, "shB"}} {
			if err := x.n.Do(func() error { return netns.SetMTU(x.dev, *shimBenchMTU) }); err != nil {
				b.Fatal(err)
			}
		}
	}
	plainA, kernelA, queueA := netip.MustParseAddr("192.0.2.11"), netip.MustParseAddr("192.0.2.12"), netip.MustParseAddr("192.0.2.13")
	for _, a := range []netip.Addr{plainA, kernelA, queueA} {
		if err := nsA.Do(func() error { return netns.AddAddr("shA", netip.PrefixFrom(a, 24)) }); err != nil {
			b.Fatal(err)
		}
	}
	dir := shortDir(b)
	keyPath := writeKeys(b, dir, "keys.json", fmtKeysMD5(addrA4, secret))
	args := []string{"-keys", keyPath, "-queue", "44"}
	if *shimBenchQueues > 0 {
		args = append(args, "-queues", strconv.Itoa(*shimBenchQueues))
	}
	shimProc, _ := startShim(b, nsB, dir, args...)
	pid := shimProc.Cmd.Process.Pid
	startQueueBound(b, nsB, netip.PrefixFrom(queueA, 32))

	lc := linuxsock.ListenConfig(linuxsock.Keys{MD5: []keys.MD5{{Peer: netip.PrefixFrom(addrB4, 32), Key: []byte(secret)}}})
	var lnShim, lnKernel, lnPlain, lnQueue net.Listener
	if err := nsA.Do(func() (err error) {
		if lnShim, err = lc.Listen(b.Context(), "tcp4", netip.AddrPortFrom(addrA4, 0).String()); err != nil {
			return err
		}
		if lnKernel, err = lc.Listen(b.Context(), "tcp4", netip.AddrPortFrom(kernelA, 0).String()); err != nil {
			return err
		}
		if lnPlain, err = net.Listen("tcp4", netip.AddrPortFrom(plainA, 0).String()); err != nil {
			return err
		}
		lnQueue, err = net.Listen("tcp4", netip.AddrPortFrom(queueA, 0).String())
		return err
	}); err != nil {
		b.Fatal(err)
	}
	for _, ln := range []net.Listener{lnShim, lnKernel, lnPlain, lnQueue} {
		defer ln.Close()
		go serveBench(ln)
	}
	kernelDialer := linuxsock.Dialer(linuxsock.Keys{MD5: []keys.MD5{{Peer: netip.PrefixFrom(kernelA, 32), Key: []byte(secret)}}})
	type leg struct {
		name string
		ln   net.Listener
		d    *net.Dialer
	}
	legs := []leg{{"kernel", lnKernel, kernelDialer}, {"shim", lnShim, &net.Dialer{}}, {"plain", lnPlain, &net.Dialer{}}, {"queue", lnQueue, &net.Dialer{}}}
	dial := func(l leg) net.Conn {
		var c net.Conn
		if err := nsB.Do(func() (err error) {
			c, err = l.d.Dial("tcp4", l.ln.Addr().String())
			return err
		}); err != nil {
			b.Fatal(err)
		}
		return c
	}
	size := *shimBenchMiB << 20
	const pings = 2000
	// transfer moves size bytes over conns sessions at once and returns
	// MB/s and the shim's CPU time over the transfer.
	var topShare float64 // of the last transfer: the busiest thread's part of the shim's CPU time
	transfer := func(l leg, conns int) (float64, time.Duration, time.Duration) {
		cs := make([]net.Conn, conns)
		for i := range cs {
			cs[i] = dial(l)
			defer cs[i].Close()
			if _, err := cs[i].Write([]byte{'T'}); err != nil {
				b.Fatal(err)
			}
		}
		cpu0, threads0 := procCPU(b, pid), threadCPU(pid)
		start := time.Now()
		var wg sync.WaitGroup
		errs := make([]error, conns)
		for i, c := range cs {
			wg.Go(func() { errs[i] = sendAll(c, size/conns) })
		}
		wg.Wait()
		wall := time.Since(start)
		cpu := procCPU(b, pid) - cpu0
		var top, all time.Duration
		for tid, c := range threadCPU(pid) {
			d := c - threads0[tid]
			top, all = max(top, d), all+d
		}
		topShare = float64(top) / float64(max(all, 1))
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		return float64(size) / wall.Seconds() / 1e6, cpu, wall
	}
	// rtts makes pings round trips on a session of each leg, in blocks of
	// 100 taking turns, and returns each leg's mean in µs.
	rtts := func() []float64 {
		cs := make([]net.Conn, len(legs))
		for i, l := range legs {
			cs[i] = dial(l)
			defer cs[i].Close()
			if _, err := cs[i].Write([]byte{'P'}); err != nil {
				b.Fatal(err)
			}
		}
		msg := make([]byte, 64)
		total := make([]time.Duration, len(legs))
		for range pings / 100 {
			for i, c := range cs {
				start := time.Now()
				for range 100 {
					if _, err := c.Write(msg); err != nil {
						b.Fatal(err)
					}
					if _, err := io.ReadFull(c, msg); err != nil {
						b.Fatal(err)
					}
				}
				total[i] += time.Since(start)
			}
		}
		us := make([]float64, len(legs))
		for i := range us {
			us[i] = total[i].Seconds() * 1e6 / pings
		}
		return us
	}
	m := map[string][]float64{}
	mib := float64(size) / (1 << 20)
	for r := range b.N {
		for i := range legs {
			l := legs[(i+r)%len(legs)]
			tp, cpu, _ := transfer(l, 1)
			m["MB/s-"+l.name] = append(m["MB/s-"+l.name], tp)
			if l.name == "shim" {
				m["shim-cpu-ms/MiB"] = append(m["shim-cpu-ms/MiB"], cpu.Seconds()*1e3/mib)
				for _, n := range []int{2, 8} {
					tp, cpu, wall := transfer(l, n)
					m[fmt.Sprintf("MB/s-shim-%dconns", n)] = append(m[fmt.Sprintf("MB/s-shim-%dconns", n)], tp)
					m[fmt.Sprintf("shim-cpu-ms/MiB-%dconns", n)] = append(m[fmt.Sprintf("shim-cpu-ms/MiB-%dconns", n)], cpu.Seconds()*1e3/mib)
					m[fmt.Sprintf("shim-cores-%dconns", n)] = append(m[fmt.Sprintf("shim-cores-%dconns", n)], cpu.Seconds()/wall.Seconds())
					m[fmt.Sprintf("shim-top-thread-%dconns", n)] = append(m[fmt.Sprintf("shim-top-thread-%dconns", n)], topShare)
				}
			}
		}
		us := rtts()
		for i, l := range legs {
			m["us-rtt-"+l.name] = append(m["us-rtt-"+l.name], us[i])
		}
		// The ratios of each round, whose legs ran under the same load.
		m["rtt-shim/kernel"] = append(m["rtt-shim/kernel"], us[1]/us[0])
		m["rtt-queue/kernel"] = append(m["rtt-queue/kernel"], us[3]/us[0])
		n := len(m["MB/s-shim"]) - 1
		m["tput-shim/kernel"] = append(m["tput-shim/kernel"], m["MB/s-shim"][n]/m["MB/s-kernel"][n])
		m["tput-shim/plain"] = append(m["tput-shim/plain"], m["MB/s-shim"][n]/m["MB/s-plain"][n])
	}
	med := func(x []float64) float64 { x = slices.Clone(x); slices.Sort(x); return x[len(x)/2] }
	for k, v := range m {
		b.ReportMetric(med(v), k)
	}
	b.ReportMetric(0, "ns/op")
}

// sendAll writes n bytes to c, half-closes it and waits for the server's
// one-byte "all read".
func sendAll(c net.Conn, n int) error {
	buf := make([]byte, 1<<16)
	for sent := 0; sent < n; sent += len(buf) {
		if _, err := c.Write(buf[:min(len(buf), n-sent)]); err != nil {
			return err
		}
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		return err
	}
	_, err := io.ReadFull(c, buf[:1])
	return err
}

// threadCPU is the CPU time of each of process pid's threads so far.
func threadCPU(pid int) map[string]time.Duration {
	m := map[string]time.Duration{}
	tids, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, e := range tids {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, e.Name())); err == nil {
			m[e.Name()] = statCPU(b)
		}
	}
	return m
}

// procCPU is process pid's user + system CPU time so far, its exited
// threads' included (/proc/PID/stat utime and stime).
func procCPU(t testing.TB, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	return statCPU(b)
}

// statCPU is utime + stime of a /proc stat file; 0 if it does not parse.
func statCPU(b []byte) time.Duration {
	// The fields after the command name, which is in parentheses.
	f := bytes.Fields(b[bytes.LastIndexByte(b, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	var ticks int64
	for _, s := range f[11:13] { // utime, stime: fields 14 and 15
		v, _ := strconv.ParseInt(string(s), 10, 64)
		ticks += v
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}

// serveBench answers a benchmark connection: 'T' reads to EOF then
// writes one byte; 'P' echoes 64-byte messages.
func serveBench(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			var mode [1]byte
			if _, err := io.ReadFull(c, mode[:]); err != nil {
				return
			}
			if mode[0] == 'T' {
				_, _ = io.Copy(io.Discard, c)
				_, _ = c.Write([]byte{1})
				return
			}
			msg := make([]byte, 64)
			for {
				if _, err := io.ReadFull(c, msg); err != nil {
					return
				}
				if _, err := c.Write(msg); err != nil {
					return
				}
			}
		}()
	}
}

// startQueueBound runs the pass-through queue (TestQueueBoundHelper) for
// peer in n and waits until it is reading.
func startQueueBound(t testing.TB, n *ns, peer netip.Prefix) {
	t.Helper()
	p := n.start(t, "queue bound", []string{"TCPSIG_BOUND_HELPER=1", "TCPSIG_BOUND_PEER=" + peer.String()},
		os.Args[0], "-test.run=^TestQueueBoundHelper$", "-test.v=false")
	waitReady(t, p, "reading its queue", func() bool { return strings.Contains(p.Log(), "ready") })
}
