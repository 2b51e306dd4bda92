//go:build unix

package netstack

// Bulk throughput between two gVisor stacks over an in-memory link, with
// and without the wrapper, per algorithm. Besides ns/op and B/s each
// benchmark reports the process's CPU time per byte (cpu-ns/B, from
// getrusage: wall time on a shared machine includes other processes) and
// heap allocations per packet moved (allocs/seg). BenchmarkInterleaved
// measures the ratio to unwrapped head to head.

import (
	"fmt"
	"net/netip"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
)

// benchAlgs are the wrappers measured: "" is no wrapper, "none" a wrapper
// whose layer covers no peer.
var benchAlgs = []string{"", "none", "md5", "hmac(sha1)", "cmac(aes128)", "hmac(sha256)", "hmac-sha256-128", "kmac256-128"}

func algName(alg string) string {
	if alg == "" {
		return "unwrapped"
	}
	return alg
}

const benchChunk = 64 << 10

// conn is one established connection of a pair with a reader draining it.
type benchConn struct {
	p    *pair
	w    *gonet.TCPConn
	read chan int64 // bytes read, sent after each want
	want chan int64
}

func openBench(tb testing.TB, alg string, mtu uint32) *benchConn {
	p, err := newPair(alg, mtu)
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := listenGonet(p.b, netip.AddrPortFrom(pairB.Addr(), 80))
	if err != nil {
		tb.Fatal(err)
	}
	acc := make(chan *gonet.TCPConn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			acc <- nil
			return
		}
		acc <- c.(*gonet.TCPConn)
	}()
	w, err := dialGonet(p.a, netip.AddrPortFrom(pairB.Addr(), 80), 10*time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	r := <-acc
	ln.Close()
	if r == nil {
		tb.Fatal("accept failed")
	}
	bc := &benchConn{p: p, w: w, read: make(chan int64), want: make(chan int64)}
	go func() {
		buf := make([]byte, 256<<10)
		var got int64
		for want := range bc.want {
			for got < want {
				n, err := r.Read(buf)
				got += int64(n)
				if err != nil {
					break
				}
			}
			bc.read <- got
		}
		r.Close()
	}()
	return bc
}

// send writes n bytes and returns once the peer has read them.
func (c *benchConn) send(tb testing.TB, buf []byte, total *int64, n int) {
	*total += int64(n)
	c.want <- *total
	for n > 0 {
		k, err := c.w.Write(buf[:min(n, len(buf))])
		if err != nil {
			tb.Fatal(err)
		}
		n -= k
	}
	if got := <-c.read; got != *total {
		tb.Fatalf("peer read %d of %d bytes", got, *total)
	}
}

func (c *benchConn) close() {
	close(c.want)
	c.w.Close()
	c.p.close()
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkBulk: one op sends 64 KiB from one stack to the other and
// waits until it is read.
func BenchmarkBulk(b *testing.B) {
	for _, mtu := range []uint32{1500, 9000} {
		for _, alg := range benchAlgs {
			b.Run(fmt.Sprintf("%s/mtu=%d", algName(alg), mtu), func(b *testing.B) {
				c := openBench(b, alg, mtu)
				defer c.close()
				buf := make([]byte, benchChunk)
				var total int64
				c.send(b, buf, &total, 4<<20) // warm up: windows open, pools filled
				var ms0, ms1 runtime.MemStats
				runtime.ReadMemStats(&ms0)
				seg0, cpu0 := c.p.segments.Load(), cpuTime()
				b.SetBytes(benchChunk)
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					c.send(b, buf, &total, benchChunk)
				}
				b.StopTimer()
				cpu, segs := cpuTime()-cpu0, c.p.segments.Load()-seg0
				runtime.ReadMemStats(&ms1)
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*benchChunk), "cpu-ns/B")
				b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(segs), "allocs/seg")
			})
		}
	}
}

// BenchmarkInterleaved runs an unwrapped pair and a wrapped one side by
// side and sends 1 MiB through each in turn, alternating which goes
// first; it reports the median over rounds of time(unwrapped) /
// time(wrapped) in percent: the wrapped throughput as a share of the
// unwrapped one under the same load. ns/op is per round.
func BenchmarkInterleaved(b *testing.B) {
	for _, mtu := range []uint32{1500, 9000} {
		for _, alg := range benchAlgs[1:] {
			b.Run(fmt.Sprintf("%s/mtu=%d", alg, mtu), func(b *testing.B) {
				plain, wrapped := openBench(b, "", mtu), openBench(b, alg, mtu)
				defer plain.close()
				defer wrapped.close()
				buf := make([]byte, benchChunk)
				var tp, tw int64
				plain.send(b, buf, &tp, 4<<20)
				wrapped.send(b, buf, &tw, 4<<20)
				const round = 1 << 20
				var ratios []float64
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					var dp, dw time.Duration
					for j := range 2 {
						start := time.Now()
						if (i+j)%2 == 0 {
							plain.send(b, buf, &tp, round)
							dp = time.Since(start)
						} else {
							wrapped.send(b, buf, &tw, round)
							dw = time.Since(start)
						}
					}
					ratios = append(ratios, 100*float64(dp)/float64(dw))
				}
				b.StopTimer()
				slices.Sort(ratios)
				b.ReportMetric(ratios[len(ratios)/2], "pct-of-unwrapped")
			})
		}
	}
}
