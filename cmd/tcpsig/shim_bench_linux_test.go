//go:build linux

package main

import (
	"io"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/harness/netns"
	"github.com/tcpsig/tcpsig/linuxsock"
	"github.com/tcpsig/tcpsig/md5sig"
)

// BenchmarkShimMD5 measures what tcpsig shim costs a TCP-MD5 session:
// A's kernel signs, B's plain socket is behind the shim, against the same
// transfer unsigned between the same namespaces (to a second address of A
// that no key covers, so its packets pass the rules unqueued). Each
// iteration is one round of both, interleaved; the metrics are medians
// over the rounds. Run with -benchtime=Nx (N rounds).
//
//	MB/s-plain, MB/s-shim   one 32 MiB transfer B -> A
//	us-rtt-plain, us-rtt-shim  a 64-byte request and its reply, mean of 2000
//	us-added/segment        (rtt-shim - rtt-plain) / 2: each round trip
//	                        crosses the shim twice (signed out, verified in)
func BenchmarkShimMD5(b *testing.B) {
	if testing.Short() {
		b.Skip("-short")
	}
	needQueue(b)
	const secret = "tcpsig-bench"
	nsA, nsB := newPair(b)
	plainA := netip.MustParseAddr("192.0.2.11")
	if err := nsA.Do(func() error { return netns.AddAddr("shA", netip.PrefixFrom(plainA, 24)) }); err != nil {
		b.Fatal(err)
	}
	dir := shortDir(b)
	keys := writeKeys(b, dir, "keys.json", fmtKeysMD5(addrA4, secret))
	startShim(b, nsB, dir, "-keys", keys, "-queue", "44")

	lc := linuxsock.ListenConfig(linuxsock.Keys{MD5: []md5sig.Config{{Peer: netip.PrefixFrom(addrB4, 32), Key: []byte(secret)}}})
	var lnSigned, lnPlain net.Listener
	if err := nsA.Do(func() (err error) {
		if lnSigned, err = lc.Listen(b.Context(), "tcp4", "192.0.2.1:0"); err != nil {
			return err
		}
		lnPlain, err = net.Listen("tcp4", "192.0.2.11:0")
		return err
	}); err != nil {
		b.Fatal(err)
	}
	defer lnSigned.Close()
	defer lnPlain.Close()
	for _, ln := range []net.Listener{lnSigned, lnPlain} {
		go serveBench(ln)
	}
	dial := func(ln net.Listener) net.Conn {
		var c net.Conn
		if err := nsB.Do(func() (err error) {
			c, err = net.Dial("tcp4", ln.Addr().String())
			return err
		}); err != nil {
			b.Fatal(err)
		}
		return c
	}
	const size = 32 << 20
	const pings = 2000
	buf := make([]byte, 1<<16)
	throughput := func(ln net.Listener) float64 {
		c := dial(ln)
		defer c.Close()
		if _, err := c.Write([]byte{'T'}); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		for n := 0; n < size; n += len(buf) {
			if _, err := c.Write(buf); err != nil {
				b.Fatal(err)
			}
		}
		c.(*net.TCPConn).CloseWrite()
		if _, err := io.ReadFull(c, buf[:1]); err != nil { // the server's "all read"
			b.Fatal(err)
		}
		return float64(size) / time.Since(start).Seconds() / 1e6
	}
	rtt := func(ln net.Listener) float64 {
		c := dial(ln)
		defer c.Close()
		if _, err := c.Write([]byte{'P'}); err != nil {
			b.Fatal(err)
		}
		msg := make([]byte, 64)
		start := time.Now()
		for range pings {
			if _, err := c.Write(msg); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(c, msg); err != nil {
				b.Fatal(err)
			}
		}
		return float64(time.Since(start).Microseconds()) / pings
	}
	var tp, ts, rp, rs []float64
	for range b.N {
		tp = append(tp, throughput(lnPlain))
		ts = append(ts, throughput(lnSigned))
		rp = append(rp, rtt(lnPlain))
		rs = append(rs, rtt(lnSigned))
	}
	med := func(x []float64) float64 { slices.Sort(x); return x[len(x)/2] }
	b.ReportMetric(med(tp), "MB/s-plain")
	b.ReportMetric(med(ts), "MB/s-shim")
	b.ReportMetric(med(rp), "us-rtt-plain")
	b.ReportMetric(med(rs), "us-rtt-shim")
	b.ReportMetric((med(rs)-med(rp))/2, "us-added/segment")
	b.ReportMetric(0, "ns/op")
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
