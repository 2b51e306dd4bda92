//go:build linux

package main

// shim-vrf: a keys file entry bound to a VRF, enforced by the shim in
// that VRF only (issue 38, finding 2). Two namespaces joined by a veth
// pair:
//
//	ns K: vrK 192.0.2.1/24               kernel TCP-AO sockets, or plain ones
//	ns S: vrS 192.0.2.2/24 in vrf-blue   plain sockets bound to vrf-blue,
//	      (table 10)                     behind the shim, whose MKT for
//	                                     192.0.2.1 is bound to vrf-blue
//
// First the control: the MKT bound to the default domain ("ifindex": 0)
// covers nothing in vrf-blue, and an unsigned connection from K goes
// through. Reloaded with the MKT bound to vrf-blue's ifindex: an unsigned
// connection from K's plain socket is dropped (the SYN never reaches the
// listener; the shim counts it unsigned); a signed one from K's TCP-AO
// socket works both ways, and so does the shim side dialling K's TCP-AO
// listener from the VRF (each of S's segments meets the output hook
// twice, by vrf-blue then by vrS, and is signed once). The shim before
// issue 38 looked every key up in the default domain: with the entry
// bound to vrf-blue, the unsigned connection went through.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/tcpsig/tcpsig/harness/kstat"
	"github.com/tcpsig/tcpsig/harness/netns"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/linuxsock"
	"github.com/tcpsig/tcpsig/shim"
)

func init() {
	register(Case{Name: "shim-vrf", Kind: "shim-kernel", Run: shimVRF})
}

// bindVRF is a Control that binds a socket to the VRF device vrf.
func bindVRF(vrf string) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) { err = syscall.BindToDevice(int(fd), vrf) }); cerr != nil {
			return cerr
		}
		return err
	}
}

func shimVRF(t *T) {
	kA, sA := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	mkt := func(peer netip.Addr) keys.AO {
		return keys.AO{Peer: netip.PrefixFrom(peer, 32), SendID: 1, RecvID: 1, Algorithm: "hmac(sha256)",
			Key: []byte("vrf-blue sixteen"), MACLen: 12}
	}
	nsK, nsS := newShimNS(t), newShimNS(t)
	defer nsK.Close()
	defer nsS.Close()
	t.check(nsK.Do(func() error { return netns.AddVeth("vrK", "vrS", nsS.FD()) }), "veth")
	t.check(nsK.Do(func() error {
		if err := netns.LinkUp("vrK"); err != nil {
			return err
		}
		return netns.AddAddr("vrK", netip.PrefixFrom(kA, 24))
	}), "K's address")
	var vrfIndex int
	t.check(nsS.Do(func() error {
		for _, step := range []func() error{
			func() error { return netns.AddVRF("vrf-blue", 10) },
			func() error { return netns.SetMaster("vrS", "vrf-blue") },
			func() error { return netns.LinkUp("vrf-blue") },
			func() error { return netns.LinkUp("vrS") },
			func() error { return netns.AddAddr("vrS", netip.PrefixFrom(sA, 24)) },
		} {
			if err := step(); err != nil {
				return err
			}
		}
		vrf, err := net.InterfaceByName("vrf-blue")
		if err != nil {
			return err
		}
		vrfIndex = vrf.Index
		return nil
	}), "vrf-blue with vrS in it")

	dir, err := os.MkdirTemp("", "shim-vrf")
	t.check(err, "temp dir")
	defer os.RemoveAll(dir)
	keysPath := filepath.Join(dir, "keys.json")
	writeKeys := func(ifindex int) {
		c := mkt(kA)
		body := fmt.Sprintf(`{"ao": [{"name": "k-in-blue", "alg": %q, "key": "hex:%x", "sndid": 1, "rcvid": 1, "peer": "%v", "ifindex": %d}]}`,
			c.Algorithm, c.Key, c.Peer, ifindex)
		t.check(os.WriteFile(keysPath, []byte(body), 0o600), "keys file")
	}
	writeKeys(0)
	var sh *shim.Shim
	logw := &lineWriter{t: t}
	// New in S's namespace: it checks that the entry's ifindex is a VRF there.
	t.check(nsS.Do(func() (err error) {
		sh, err = shim.New(shim.Config{Keys: keysPath, Queue: 11, Queues: 1, Log: slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		return err
	}), "shim with an entry bound to the default domain")
	ctx, stop := context.WithCancel(context.Background())
	shimDone := nsS.Go(func() error { return sh.Run(ctx) })
	defer func() {
		stop()
		if err := <-shimDone; err != nil {
			t.Errorf("shim: %v", err)
		}
	}()
	t.check(sh.Reload(), "shim start")

	// S's listener: a plain socket in vrf-blue, answering one byte.
	var ln net.Listener
	t.check(nsS.Do(func() (err error) {
		lc := net.ListenConfig{Control: bindVRF("vrf-blue")}
		lc.SetMultipathTCP(false)
		ln, err = lc.Listen(context.Background(), "tcp4", netip.AddrPortFrom(sA, 0).String())
		return err
	}), "listen in vrf-blue")
	defer ln.Close()
	accepted := make(chan string, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b := make([]byte, 5)
			c.SetDeadline(time.Now().Add(20 * time.Second))
			if _, err := io.ReadFull(c, b); err == nil {
				c.Write([]byte("pong"))
			}
			accepted <- c.RemoteAddr().String()
			c.Close()
		}
	}()
	// exchange dials S's listener from K with keys (none: a plain socket)
	// and reports whether ping/pong went across within bound.
	exchange := func(k linuxsock.Keys, bound time.Duration) (bool, error) {
		var ok bool
		err := nsK.Do(func() error {
			d := &net.Dialer{}
			if len(k.AO) > 0 {
				d = linuxsock.Dialer(k)
			}
			d.Timeout = bound
			c, err := d.Dial("tcp4", ln.Addr().String())
			if err != nil {
				return nil
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(bound))
			if _, err := c.Write([]byte("ping!")); err != nil {
				return nil
			}
			b := make([]byte, 4)
			_, err = io.ReadFull(c, b)
			ok = err == nil && string(b) == "pong"
			return nil
		})
		return ok, err
	}
	counters := func() map[string]uint64 {
		var m map[string]uint64
		t.check(nsK.Do(func() (err error) { m, err = kstat.TCPExt(); return err }), "TcpExt")
		return m
	}

	// 0. The control: bound to the default domain, the entry covers
	// nothing in vrf-blue, and the unsigned connection goes through.
	ok, err := exchange(linuxsock.Keys{}, 20*time.Second)
	t.check(err, "unsigned dial (control)")
	if !ok {
		t.Fatalf("control: with the entry bound to the default domain, the unsigned connection into vrf-blue failed")
	}
	t.Logf("control, entry bound to the default domain: unsigned into vrf-blue connected %v", ok)
	// The reload checks the ifindex in Run's namespace, where vrf-blue is.
	writeKeys(vrfIndex)
	t.check(sh.Reload(), "reload with the entry bound to vrf-blue")

	// 1. Unsigned, from the covered peer, into vrf-blue: dropped.
	before := sh.Status().Counters
	ok, err = exchange(linuxsock.Keys{}, 4*time.Second)
	t.check(err, "unsigned dial")
	after := sh.Status().Counters
	if ok {
		t.Errorf("an unsigned connection from the covered peer got through into vrf-blue")
	}
	if after.Dropped.Unsigned <= before.Dropped.Unsigned {
		t.Errorf("shim unsigned drops %d -> %d: want the unsigned SYNs dropped as unsigned", before.Dropped.Unsigned, after.Dropped.Unsigned)
	}
	t.Logf("unsigned into vrf-blue: connected %v, shim unsigned drops %d -> %d", ok, before.Dropped.Unsigned, after.Dropped.Unsigned)

	// 2. Signed (K's kernel TCP-AO): works, every segment verified by K.
	k0 := counters()
	ok, err = exchange(linuxsock.Keys{AO: []keys.AO{mkt(sA)}}, 20*time.Second)
	t.check(err, "signed dial")
	k1 := counters()
	if !ok {
		t.Errorf("the signed connection into vrf-blue failed")
	}
	for _, c := range []string{"TCPAOBad", "TCPAOKeyNotFound", "TCPAORequired"} {
		if k1[c] != k0[c] {
			t.Errorf("kernel %s %d -> %d", c, k0[c], k1[c])
		}
	}
	if k1["TCPAOGood"] < k0["TCPAOGood"]+3 {
		t.Errorf("kernel TCPAOGood %d -> %d: want the shim's SYN-ACK and data verified", k0["TCPAOGood"], k1["TCPAOGood"])
	}
	t.Logf("signed into vrf-blue: connected %v, kernel TCPAOGood %d -> %d", ok, k0["TCPAOGood"], k1["TCPAOGood"])

	// 3. S dials out of vrf-blue to K's TCP-AO listener: signed once.
	var kln net.Listener
	t.check(nsK.Do(func() (err error) {
		kln, err = linuxsock.ListenConfig(linuxsock.Keys{AO: []keys.AO{mkt(sA)}}).Listen(context.Background(), "tcp4", netip.AddrPortFrom(kA, 0).String())
		return err
	}), "K's TCP-AO listener")
	defer kln.Close()
	got := make(chan string, 1)
	go func() {
		c, err := kln.Accept()
		if err != nil {
			got <- err.Error()
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(20 * time.Second))
		b := make([]byte, 5)
		_, err = io.ReadFull(c, b)
		if err == nil {
			_, err = c.Write([]byte("pong"))
		}
		got <- fmt.Sprintf("%s %v", b, err)
	}()
	k2 := counters()
	t.check(nsS.Do(func() error {
		d := net.Dialer{Timeout: 20 * time.Second, Control: bindVRF("vrf-blue")}
		c, err := d.Dial("tcp4", kln.Addr().String())
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(20 * time.Second))
		if _, err := c.Write([]byte("ping!")); err != nil {
			return err
		}
		b := make([]byte, 4)
		_, err = io.ReadFull(c, b)
		return err
	}), "S dials out of vrf-blue")
	if r := <-got; r != "ping! <nil>" {
		t.Errorf("K's listener: %s", r)
	}
	k3 := counters()
	if k3["TCPAOBad"] != k2["TCPAOBad"] || k3["TCPAOGood"] < k2["TCPAOGood"]+3 {
		t.Errorf("kernel TCPAOGood %d -> %d, TCPAOBad %d -> %d: want S's segments verified", k2["TCPAOGood"], k3["TCPAOGood"], k2["TCPAOBad"], k3["TCPAOBad"])
	}
	st := sh.Status().Counters
	t.Logf("S out of vrf-blue: kernel TCPAOGood %d -> %d; shim signed %d verified %d dropped %d", k2["TCPAOGood"], k3["TCPAOGood"], st.Signed, st.Verified, st.Dropped.Total())

}
