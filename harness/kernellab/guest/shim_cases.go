//go:build linux

package main

// The shim cases: Linux 6.12's own TCP-AO on one side, plain kernel
// sockets behind shim (tcpsig shim without its command line) on
// the other, in two namespaces joined by a veth pair:
//
//	ns K: shK 192.0.2.1/24 2001:db8::1/64  kernel TCP-AO sockets (MKTs 1 and 2)
//	ns S: shS 192.0.2.2/24 2001:db8::2/64  plain sockets behind the shim
//
// 16 MiB cross each way at once; half-way the shim's keys file gains MKT 2
// (last) and the shim reloads, as on SIGHUP, asking the kernel for KeyID 2
// (RNextKeyID); the kernel's side then asks the same of the shim
// (set_rnext). The kernel must verify every segment (TCPAOGood rises;
// TCPAOBad, TCPAOKeyNotFound and TCPAORequired stay), both ends must end on
// MKT 2, and the data must arrive intact.

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/harness/capture"
	"github.com/tcpsig/tcpsig/harness/kstat"
	"github.com/tcpsig/tcpsig/harness/netns"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/linuxsock"
	"github.com/tcpsig/tcpsig/shim"
)

func init() {
	for _, alg := range []string{"hmac(sha1)", "cmac(aes128)", "hmac(sha256)"} {
		for _, kernelDials := range []bool{true, false} {
			name := "shim-" + algSlug(alg) + "-shim-dials"
			if kernelDials {
				name = "shim-" + algSlug(alg) + "-kernel-dials"
			}
			register(Case{Name: name, Kind: "shim-kernel", Run: func(t *T) { shimCase(t, alg, kernelDials, false) }})
			if alg == "hmac(sha256)" && !kernelDials {
				// The control: the same transfer and rotation, kernel
				// TCP-AO on both sides.
				register(Case{Name: "aopair-hmac-sha256-rotation", Kind: "shim-kernel", Run: func(t *T) { shimOrKernel(t, alg, false, false, true) }})
			}
			if alg == "hmac(sha256)" {
				register(Case{Name: name + "-v6", Kind: "shim-kernel", Run: func(t *T) { shimCase(t, alg, kernelDials, true) }})
			}
		}
	}
}

func algSlug(alg string) string {
	switch alg {
	case "hmac(sha1)":
		return "hmac-sha1"
	case "cmac(aes128)":
		return "cmac-aes128"
	}
	return "hmac-sha256"
}

// newShimNS makes a namespace kept by a goroutine for the case.
func newShimNS(t *T) *netns.Keeper {
	k, err := netns.NewKeeper()
	t.check(err, "namespace")
	return k
}

func shimCase(t *T, alg string, kernelDials, v6 bool) { shimOrKernel(t, alg, kernelDials, v6, false) }

// shimOrKernel runs the shim case, or with kernelOnly its control: the
// same transfer and rotation with kernel TCP-AO on both sides, no shim.
func shimOrKernel(t *T, alg string, kernelDials, v6, kernelOnly bool) {
	const size = 16 << 20
	k4, s4 := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	k6, s6 := netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::2")
	kA, sA, network := k4, s4, "tcp4"
	if v6 {
		kA, sA, network = k6, s6, "tcp6"
	}
	mkt := func(id uint8, peer netip.Addr) keys.AO {
		key := make([]byte, 16)
		for i := range key {
			key[i] = byte(0x40 + int(id)*16 + i)
		}
		return keys.AO{Peer: netip.PrefixFrom(peer, peer.BitLen()), SendID: id, RecvID: id, Algorithm: alg, Key: key, MACLen: 12}
	}
	nsK, nsS := newShimNS(t), newShimNS(t)
	defer nsK.Close()
	defer nsS.Close()
	t.check(nsK.Do(func() error { return netns.AddVeth("shK", "shS", nsS.FD()) }), "veth")
	for _, x := range []struct {
		n     *netns.Keeper
		dev   string
		a, a6 netip.Addr
	}{{nsK, "shK", k4, k6}, {nsS, "shS", s4, s6}} {
		t.check(x.n.Do(func() error {
			if err := netns.LinkUp(x.dev); err != nil {
				return err
			}
			if err := netns.AddAddr(x.dev, netip.PrefixFrom(x.a, 24)); err != nil {
				return err
			}
			return netns.AddAddr(x.dev, netip.PrefixFrom(x.a6, 64))
		}), "addresses")
	}

	// The shim's keys file: MKT 1 now, MKT 1 and 2 (2 last) after the reload.
	dir, err := os.MkdirTemp("", "shim")
	t.check(err, "temp dir")
	defer os.RemoveAll(dir)
	keysPath := filepath.Join(dir, "keys.json")
	writeKeys := func(ids ...uint8) {
		s := `{"ao": [`
		for i, id := range ids {
			c := mkt(id, kA)
			if i > 0 {
				s += ","
			}
			s += fmt.Sprintf(`{"alg": %q, "key": "hex:%x", "sndid": %d, "rcvid": %d, "peer": "%v"}`, alg, c.Key, id, id, c.Peer)
		}
		t.check(os.WriteFile(keysPath, []byte(s+"]}"), 0o600), "keys file")
	}
	writeKeys(1)
	// Warnings, and each dropped packet (debug), go to the case's log.
	logw := &lineWriter{t: t}
	var sh *shim.Shim
	skeys := linuxsock.Keys{}
	if kernelOnly {
		skeys.AO = []keys.AO{mkt(1, kA)}
	} else {
		// As tcpsig shim does: a P for each reader, which sleeps in
		// poll(2) holding one, beside the CPUs.
		if want := runtime.NumCPU() + shim.DefaultQueues(); runtime.GOMAXPROCS(0) < want {
			runtime.GOMAXPROCS(want)
		}
		sh, err = shim.New(shim.Config{Keys: keysPath, Queue: 9, Log: slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		t.check(err, "shim")
		ctx, stop := context.WithCancel(context.Background())
		shimDone := nsS.Go(func() error { return sh.Run(ctx) })
		defer func() {
			stop()
			if err := <-shimDone; err != nil {
				t.Errorf("shim: %v", err)
			}
		}()
		// Run has bound the queue and installed its rules once it answers
		// a reload (it serves them from its loop).
		t.check(sh.Reload(), "shim start")
	}

	// The kernel's MKTs: 2 added first, then 1, which a dialling socket
	// then uses (Linux takes the key added last) and a listener answers
	// with (the SYN asks for 1).
	kkeys := linuxsock.Keys{AO: []keys.AO{mkt(2, sA), mkt(1, sA)}}
	var before map[string]uint64
	t.check(nsK.Do(func() (err error) { before, err = kstat.TCPExt(); return err }), "TcpExt")

	// What reaches the kernel, to name any segment it refuses.
	var capt *capture.Capture
	t.check(nsK.Do(func() (err error) { capt, err = capture.Start(capture.Options{Interface: "shK"}); return err }), "capture")
	defer capt.Stop()

	// connect listens in one namespace, dials from the other and returns
	// both ends (a listener closed once it has accepted).
	connect := func(lns, dns *netns.Keeper, lkeys, dkeys linuxsock.Keys, laddr netip.Addr) (listened, dialed net.Conn) {
		var ln net.Listener
		t.check(lns.Do(func() (err error) {
			ln, err = linuxsock.ListenConfig(lkeys).Listen(context.Background(), network, netip.AddrPortFrom(laddr, 0).String())
			return err
		}), "listen")
		defer ln.Close()
		acc := make(chan net.Conn, 1)
		go func() { c, _ := ln.Accept(); acc <- c }()
		t.check(dns.Do(func() (err error) {
			d := linuxsock.Dialer(dkeys)
			d.Timeout = 20 * time.Second
			dialed, err = d.Dial(network, ln.Addr().String())
			return err
		}), "dial")
		select {
		case listened = <-acc:
		case <-time.After(20 * time.Second):
			t.Fatalf("no connection accepted")
		}
		return listened, dialed
	}
	var kc, sc net.Conn
	if kernelDials {
		sc, kc = connect(nsS, nsK, skeys, kkeys, sA)
	} else {
		kc, sc = connect(nsK, nsS, kkeys, skeys, kA)
	}
	if kc == nil || sc == nil {
		t.Fatalf("no connection")
	}
	defer kc.Close()
	defer sc.Close()
	// On a failure or a refused segment, name the segments that do not
	// verify (deferred: a failed write ends the case early).
	defer func() {
		var now map[string]uint64
		err := nsK.Do(func() (err error) { now, err = kstat.TCPExt(); return err })
		if err == nil && now["TCPAOBad"] == before["TCPAOBad"] && len(t.errs) == 0 {
			return
		}
		capt.Stop()
		ring := ao.NewKeyring(nil)
		mkts := map[uint8]*ao.MKT{}
		for _, id := range []uint8{1, 2} {
			if m, err := ring.Add(mkt(id, kA)); err == nil {
				mkts[id] = m
			}
		}
		t.Logf("kernel TCPAOBad %d -> %d; the segments the kernel received that do not verify:", before["TCPAOBad"], now["TCPAOBad"])
		if keys, err := linuxsock.AOKeys(kc.(*net.TCPConn)); err == nil {
			for _, k := range keys {
				t.Logf("kernel key %d/%d: good %d bad %d current %v rnext %v", k.SendID, k.RecvID, k.Good, k.Bad, k.Current, k.RNext)
			}
		}
		info, err := linuxsock.ReadAOInfo(kc.(*net.TCPConn))
		t.Logf("kernel TCP_AO_INFO %+v %v", info, err)
		if b, err := os.ReadFile("/proc/meminfo"); err == nil {
			t.Logf("meminfo: %s", strings.Join(strings.Fields(string(b))[:12], " "))
		}
		klog := make([]byte, 1<<16)
		if n, err := unix.Klogctl(3, klog); err == nil {
			lines := strings.Split(strings.TrimSpace(string(klog[:n])), "\n")
			for _, l := range lines[max(0, len(lines)-15):] {
				t.Logf("dmesg: %s", l)
			}
		}
		snd, rcv, r, err := repairState(kc.(*net.TCPConn))
		t.Logf("kernel snd_nxt %d rcv_nxt %d, repair %+v, %v", snd, rcv, r, err)
		for _, l := range refusedSegments(capt.Packets(), capt.LinkType(), sA, kA, mkts, rcv) {
			t.Logf("%s", l)
		}
	}()
	deadline := time.Now().Add(85 * time.Second)
	kc.SetDeadline(deadline)
	sc.SetDeadline(deadline)

	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i ^ i>>9)
	}
	want := sha256.Sum256(data)
	type result struct {
		sum [32]byte
		err error
	}
	// half is closed when the shim side has read half the stream.
	half := make(chan struct{})
	read := func(c net.Conn, signal bool) chan result {
		r := make(chan result, 1)
		go func() {
			h := sha256.New()
			_, err := io.CopyN(h, c, size/2)
			if signal {
				close(half)
			}
			if err == nil {
				_, err = io.CopyN(h, c, size/2)
			}
			r <- result{[32]byte(h.Sum(nil)), err}
		}()
		return r
	}
	write := func(c net.Conn) chan error {
		e := make(chan error, 1)
		go func() { _, err := c.Write(data); e <- err }()
		return e
	}
	fromK, fromS := read(sc, true), read(kc, false)
	wk, ws := write(kc), write(sc)
	start := time.Now()
	select {
	case <-half:
	case <-time.After(80 * time.Second):
		t.Fatalf("no progress to half-way")
	}
	// The rotation: the shim's file gains MKT 2 (last) and the shim
	// reloads, as on SIGHUP: it asks the kernel for MKT 2 (RNextKeyID 2),
	// which the kernel follows. The kernel's own RNext is its operator's to
	// move, as one rotating both ends would; the shim then follows it.
	var mid map[string]uint64
	t.check(nsK.Do(func() (err error) { mid, err = kstat.TCPExt(); return err }), "TcpExt")
	writeKeys(1, 2)
	if kernelOnly {
		t.check(linuxsock.AddAOKey(sc.(*net.TCPConn), mkt(2, kA), linuxsock.RNext), "S side: add MKT 2 as RNext")
	} else {
		t.check(sh.Reload(), "reload with MKT 2")
	}
	t.check(linuxsock.SelectAOKeys(kc.(*net.TCPConn), linuxsock.RNext, 0, 2), "kernel set_rnext 2")
	for _, e := range []chan error{wk, ws} {
		t.check(<-e, "write")
	}
	for _, r := range []chan result{fromK, fromS} {
		res := <-r
		t.check(res.err, "read")
		if res.sum != want {
			t.Errorf("data corrupted (SHA-256 %x, want %x)", res.sum[:8], want[:8])
		}
	}
	secs := time.Since(start).Seconds()

	var after map[string]uint64
	t.check(nsK.Do(func() (err error) { after, err = kstat.TCPExt(); return err }), "TcpExt")
	for _, c := range []string{"TCPAOBad", "TCPAOKeyNotFound", "TCPAORequired"} {
		if after[c] != before[c] {
			t.Errorf("kernel %s %d -> %d", c, before[c], after[c])
		}
	}
	t.Logf("kernel TCPAOGood/Bad before %d/%d, at the reload %d/%d, after %d/%d", before["TCPAOGood"], before["TCPAOBad"],
		mid["TCPAOGood"], mid["TCPAOBad"], after["TCPAOGood"], after["TCPAOBad"])
	good := after["TCPAOGood"] - before["TCPAOGood"]
	if good < size/1500 {
		t.Errorf("kernel TCPAOGood rose by %d only; 16 MiB from the shim side is more segments than that", good)
	}
	info, err := linuxsock.ReadAOInfo(kc.(*net.TCPConn))
	t.check(err, "TCP_AO_INFO")
	if info.Current != 2 || info.RNext != 2 {
		t.Errorf("kernel socket current/rnext %d/%d after the reload, want 2/2", info.Current, info.RNext)
	}
	if kernelOnly {
		t.Logf("%s kernel only: 2x16 MiB in %.1fs, kernel TCPAOGood +%d, kernel keys now %d/%d", alg, secs, good, info.Current, info.RNext)
		return
	}
	st := sh.Status()
	if st.Counters.Dropped.Total() != 0 || st.Counters.Signed == 0 || st.Counters.Verified == 0 {
		t.Errorf("shim counters %+v: want signed and verified, none dropped", st.Counters)
	}
	if len(st.Conns) != 1 || st.Conns[0].CurrentKeyID != 2 || st.Conns[0].RNextKeyID != 2 {
		t.Errorf("shim sessions %+v: want one, on MKT 2 (current and RNext)", st.Conns)
	}
	t.Logf("%s: 2x16 MiB in %.1fs (%.1f MiB/s each way), kernel TCPAOGood +%d, TCPAOBad +0, kernel keys now %d/%d; shim signed %d, verified %d",
		alg, secs, 16/secs, good, info.Current, info.RNext, st.Counters.Signed, st.Counters.Verified)
}

// lineWriter passes log lines to the case's log.
type lineWriter struct {
	mu sync.Mutex
	t  *T
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.t.Logf("shim: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
