//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tcpsig/tcpsig/harness/capture"
	"github.com/tcpsig/tcpsig/harness/kstat"
	"github.com/tcpsig/tcpsig/harness/netns"
	"github.com/tcpsig/tcpsig/harness/vrfproof"
	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/linuxsock"
	"github.com/tcpsig/tcpsig/mac"
)

// The linuxsock cases configure kernel sockets through the public package
// only (linuxsock, keyfile); the harness just watches: a capture of lo and
// the namespace's TcpExt counters. linuxsock-ao writes its capture and the
// keys file it loaded into the results (linuxsockPcap, linuxsockKeys), and
// run-qemu.sh has "tcpsig verify" check one against the other.
const (
	linuxsockPcap = "linuxsock-ao.pcap"
	linuxsockKeys = "linuxsock-keys.json"
	linuxsockKind = "linuxsock"
)

func init() {
	register(
		Case{Name: "linuxsock-ao", Kind: linuxsockKind, Run: func(t *T) { inNS(t, func() error { runLinuxsockAO(t); return nil }) }},
		Case{Name: "linuxsock-md5-vrf", Kind: linuxsockKind, Run: func(t *T) { inNS(t, func() error { return vrfproof.Run(t.Logf) }) }},
		Case{Name: "linuxsock-gotest", Kind: linuxsockKind, Run: runLinuxsockTests},
	)
}

// linuxsockTest is package linuxsock's test binary, which run-qemu.sh
// builds into the initramfs (go test -c): its kernel tests skip where the
// host kernel lacks a feature, and here run under Linux 6.12.
const linuxsockTest = "/linuxsock.test"

func runLinuxsockTests(t *T) {
	if _, err := os.Stat(linuxsockTest); err != nil {
		t.Fatalf("no test binary: %v", err)
	}
	out, err := exec.Command(linuxsockTest, "-test.v", "-test.count=1", "-test.timeout=80s").CombinedOutput()
	t.addResultFile("linuxsock-test.log", out)
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "--- ") || strings.HasPrefix(strings.TrimSpace(line), "kernel_linux_test.go") ||
			strings.HasPrefix(line, "FAIL") || strings.HasPrefix(line, "ok") || strings.HasPrefix(line, "PASS") {
			t.Logf("%s", line)
		}
	}
	if err != nil {
		t.Errorf("go test ./linuxsock under this kernel: %v", err)
	}
}

// inNS runs f in a fresh network namespace: its own lo, counters and
// sysctls (SACK on, as by default: TS then appear only in the SYNs).
func inNS(t *T, f func() error) {
	var fatalErr any
	err := netns.Run(func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				fatalErr = r // T.Fatalf's panic, re-raised on the case goroutine
			}
		}()
		return f()
	})
	if fatalErr != nil {
		panic(fatalErr)
	}
	t.check(err, "in a namespace")
}

// lsConn is one kernel<->kernel TCP-AO connection of linuxsock-ao.
type lsConn struct {
	name     string
	alg      string
	cli, srv netip.Addr
	maclen   int
	exclude  bool
	keyLen   int
	rotate   string // "", "select" (SelectAOKeys) or "delete" (DeleteAOKey with set-rnext)
}

// lsConns: every algorithm Linux accepts (mac.Names that are Linux's), IPv4 and
// IPv6, maclen 4..16, options excluded on every other one, 80-byte keys
// on IPv4 (the most Linux takes; cmac(aes) takes 16 or 32), and two
// rotations.
func lsConns() []lsConn {
	var cs []lsConn
	for i, alg := range mac.Names() {
		if a, _ := mac.Lookup(alg); !a.Linux() {
			continue // the draft's algorithms, which no kernel has (they sort last)
		}
		n := byte(i + 1)
		v4 := lsConn{alg: alg, cli: netip.AddrFrom4([4]byte{127, 0, 2, n}), srv: netip.AddrFrom4([4]byte{127, 0, 1, n}),
			maclen: 4 + i%13, exclude: i%2 == 1, keyLen: 80}
		v6 := lsConn{alg: alg, cli: netip.AddrFrom16([16]byte{0xfd, 0, 0, 2, 15: n}), srv: netip.AddrFrom16([16]byte{0xfd, 0, 0, 1, 15: n}),
			maclen: 16 - i%13, exclude: i%2 == 0, keyLen: 1 + 6*i}
		if alg == "cmac(aes)" {
			v4.keyLen, v6.keyLen = 32, 16
		}
		cs = append(cs, v4, v6)
	}
	cs = append(cs,
		lsConn{alg: "hmac(sha256)", cli: netip.MustParseAddr("127.0.2.100"), srv: netip.MustParseAddr("127.0.1.100"), maclen: 12, keyLen: 32, rotate: "select"},
		lsConn{alg: "cmac(aes128)", cli: netip.MustParseAddr("fd00:2::100"), srv: netip.MustParseAddr("fd00:1::100"), maclen: 12, keyLen: 20, rotate: "delete"})
	for i := range cs {
		c := &cs[i]
		fam := "v4"
		if c.cli.Is6() {
			fam = "v6"
		}
		c.name = fmt.Sprintf("%s-%s-maclen%d-key%d", c.alg, fam, c.maclen, c.keyLen)
		if c.exclude {
			c.name += "-exclopt"
		}
		if c.rotate != "" {
			c.name += "-rotate-" + c.rotate
		}
	}
	return cs
}

// entries returns the keys-file entries of c: the client's MKT A
// (100/200) and the server's (200/100), and with a rotation B (101/201)
// before them, so that A, added last, is where each connection starts.
func (c lsConn) entries() []keyfile.AO {
	mk := func(side, label string, peer netip.Addr, snd, rcv uint8) keyfile.AO {
		return keyfile.AO{Name: c.name + "-" + side + "-" + label, Config: keys.AO{
			Peer: netip.PrefixFrom(peer, peer.BitLen()), SendID: snd, RecvID: rcv, Algorithm: c.alg,
			Key: keyMaterial(c.name, label, c.keyLen, false), MACLen: c.maclen, ExcludeOptions: c.exclude}}
	}
	var es []keyfile.AO
	if c.rotate != "" {
		es = append(es, mk("client", "B", c.srv, 101, 201), mk("server", "B", c.cli, 201, 101))
	}
	return append(es, mk("client", "A", c.srv, 100, 200), mk("server", "A", c.cli, 200, 100))
}

// runLinuxsockAO writes a keys file for every connection of lsConns,
// loads it with keyfile.Load, and brings each connection up with
// linuxsock.ListenConfig and linuxsock.Dialer while lo is captured. Each
// connection carries data both ways; the rotations switch keys through
// the package and are checked on the wire; the counters read through the
// package must equal the namespace's TCPAOGood (and, for a wrong-key SYN
// after the capture, TCPAOBad).
func runLinuxsockAO(t *T) {
	conns := lsConns()
	for _, c := range conns {
		if c.srv.Is6() {
			t.check(netns.AddAddr("lo", netip.PrefixFrom(c.srv, 128)), "address")
			t.check(netns.AddAddr("lo", netip.PrefixFrom(c.cli, 128)), "address")
		}
	}
	var kf keyfile.File
	for _, c := range conns {
		kf.AO = append(kf.AO, c.entries()...)
	}
	js, err := kf.Marshal()
	t.check(err, "keys file")
	dir, err := os.MkdirTemp("", "linuxsock")
	t.check(err, "tmp")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, linuxsockKeys)
	t.check(os.WriteFile(path, js, 0o600), "keys file")
	loaded, err := keyfile.Load(path)
	t.check(err, "keyfile.Load")
	keys := linuxsock.FileKeys(loaded)
	t.Logf("keys file: %d MKTs for %d connections", len(keys.AO), len(conns))

	// One listener per connection, all up before the capture starts so
	// that it can filter on their ports.
	lns := make([]*net.TCPListener, len(conns))
	var ports []uint16
	for i, c := range conns {
		ln, err := linuxsock.ListenConfig(keys).Listen(context.Background(), "tcp", netip.AddrPortFrom(c.srv, 0).String())
		t.check(err, c.name+": listen")
		defer ln.Close()
		lns[i] = ln.(*net.TCPListener)
		ports = append(ports, uint16(ln.Addr().(*net.TCPAddr).Port))
	}
	capt, err := capture.Start(capture.Options{Filter: capture.TCPPorts(ports...)})
	t.check(err, "capture")
	defer capt.Stop()

	var good uint64
	for i, c := range conns {
		good += lsRun(t, capt, c, lns[i], keys)
	}
	capt.WaitIdle(300*time.Millisecond, 10*time.Second)
	t.check(capt.Stop(), "capture")
	pkts := capt.Packets()
	pf := filepath.Join(dir, linuxsockPcap)
	t.check(capture.WriteFile(pf, capture.LinkTypeEthernet, pkts), "pcap")
	b, err := os.ReadFile(pf)
	t.check(err, "pcap")
	t.addResultFile(linuxsockPcap, b)
	t.addResultFile(linuxsockKeys, js)
	t.Logf("%d connections, %d segments captured, %d verified by the kernel in the counted windows", len(conns), len(pkts), good)

	for _, c := range conns {
		if c.rotate != "" {
			lsWire(t, c, pkts)
		}
	}
	lsBad(t, conns[0], lns[0])
	lsFlags(t, conns[1], lns[1], keys)
}

// lsRun brings up c on ln, moves data both ways (and rotates), and
// checks that the counters the package reads (TCP_AO_INFO of both
// sockets and the listener, and TCP_AO_GET_KEYS per key) sum to the
// namespace's TCPAOGood over the connection, with nothing bad. It returns
// that count.
func lsRun(t *T, capt *capture.Capture, c lsConn, ln *net.TCPListener, keys linuxsock.Keys) uint64 {
	capt.WaitIdle(100*time.Millisecond, 5*time.Second) // the previous connection's FINs are counted
	before, err := kstat.TCPExt()
	t.check(err, "netstat")
	d := linuxsock.Dialer(keys)
	d.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(c.cli, 0))
	d.Timeout = 15 * time.Second
	nc, err := d.Dial("tcp", ln.Addr().String())
	t.check(err, c.name+": dial")
	cc := nc.(*net.TCPConn)
	defer cc.Close()
	ln.SetDeadline(time.Now().Add(15 * time.Second))
	sc, err := ln.AcceptTCP()
	t.check(err, c.name+": accept")
	defer sc.Close()
	for _, n := range []int{1, 1000, 3000} {
		exchange(t, cc, sc, n, n)
	}
	switch c.rotate {
	case "select":
		// The client asks for the server's B; the server switches its
		// current key when it sees RNextKeyID 201, then asks for the
		// client's B in turn. The A keys, neither current nor RNext any
		// more, are deleted.
		t.check(linuxsock.SelectAOKeys(cc, linuxsock.RNext, 0, 201), "client: RNext 201")
		exchange(t, cc, sc, 100, 100)
		t.check(linuxsock.SelectAOKeys(sc, linuxsock.RNext, 0, 101), "server: RNext 101")
		exchange(t, cc, sc, 100, 100)
		a := c.entries()[2:]
		t.check(linuxsock.DeleteAOKey(cc, a[0].Config, linuxsock.AODelete{}), "client: delete A")
		t.check(linuxsock.DeleteAOKey(sc, a[1].Config, linuxsock.AODelete{}), "server: delete A")
	case "delete":
		// The client asks for the server's B; the server then deletes its
		// A, which is still its RNext key, choosing B as RNext in the same
		// call (a forced delete), and speaks first: until the client has
		// verified a segment asking for its B, it sends with A, which the
		// server no longer has (a segment already in flight is dropped as
		// key-not-found). The client deletes its A once it sends with B.
		t.check(linuxsock.SelectAOKeys(cc, linuxsock.RNext, 0, 201), "client: RNext 201")
		exchange(t, cc, sc, 100, 100)
		a := c.entries()[2:]
		err := linuxsock.DeleteAOKey(sc, a[1].Config, linuxsock.AODelete{})
		if !errors.Is(err, syscall.EBUSY) {
			t.Errorf("%s: deleting the RNext key without a replacement: %v, want EBUSY", c.name, err)
		}
		t.check(linuxsock.DeleteAOKey(sc, a[1].Config, linuxsock.AODelete{SetRNext: true, RNext: 101}), "server: delete A, RNext 101")
		send(t, sc, cc, "s2c", 100)
		exchange(t, cc, sc, 100, 100)
		t.check(linuxsock.DeleteAOKey(cc, a[0].Config, linuxsock.AODelete{}), "client: delete A")
	}
	if c.rotate != "" {
		exchange(t, cc, sc, 1000, 1000)
		ci, err := linuxsock.ReadAOInfo(cc)
		t.check(err, "client TCP_AO_INFO")
		si, err := linuxsock.ReadAOInfo(sc)
		t.check(err, "server TCP_AO_INFO")
		if ci.Current != 101 || ci.RNext != 201 || si.Current != 201 || si.RNext != 101 {
			t.Errorf("%s: after the rotation client %d/%d server %d/%d, want 101/201 and 201/101", c.name, ci.Current, ci.RNext, si.Current, si.RNext)
		}
		for side, s := range map[string]*net.TCPConn{"client": cc, "server": sc} {
			ks, err := linuxsock.AOKeys(s)
			t.check(err, side+" TCP_AO_GET_KEYS")
			if len(ks) != 1 || ks[0].SendID%100 != 1 || ks[0].Good == 0 || !ks[0].Current || !ks[0].RNext {
				t.Errorf("%s: %s keys after the rotation: %v", c.name, side, ks)
			}
		}
	}
	capt.WaitIdle(300*time.Millisecond, 5*time.Second) // delayed ACKs land
	after, err := kstat.TCPExt()
	t.check(err, "netstat")
	var sock, perKey linuxsock.AOCounters
	for side, s := range map[string]linuxsock.Socket{"client": cc, "server": sc, "listener": ln} {
		i, err := linuxsock.ReadAOInfo(s)
		t.check(err, side+" TCP_AO_INFO")
		sock.Good += i.Counters.Good
		sock.Bad += i.Counters.Bad
		sock.KeyNotFound += i.Counters.KeyNotFound
		ks, err := linuxsock.AOKeys(s)
		t.check(err, side+" TCP_AO_GET_KEYS")
		for _, k := range ks {
			perKey.Good += k.Good
			perKey.Bad += k.Bad
		}
	}
	mib := func(n string) uint64 { return after[n] - before[n] }
	// The listener's counters count every connection it served: one each.
	// A forced delete ("delete") may drop a segment the peer sent with the
	// deleted key before it saw the new RNextKeyID: key-not-found then,
	// counted alike on both sides.
	if sock.Good != mib("TCPAOGood") || sock.Bad != 0 || mib("TCPAOBad") != 0 || sock.KeyNotFound != mib("TCPAOKeyNotFound") ||
		(c.rotate != "delete" && sock.KeyNotFound != 0) {
		t.Errorf("%s: socket counters good %d bad %d key-not-found %d; TcpExt TCPAOGood %d TCPAOBad %d TCPAOKeyNotFound %d",
			c.name, sock.Good, sock.Bad, sock.KeyNotFound, mib("TCPAOGood"), mib("TCPAOBad"), mib("TCPAOKeyNotFound"))
	}
	if c.rotate == "" && perKey.Good != sock.Good {
		t.Errorf("%s: per-key good %d, per-socket %d", c.name, perKey.Good, sock.Good)
	}
	t.Logf("%s: TcpExt TCPAOGood +%d = TCP_AO_INFO good (client+server+listener) %d; per key %d; key-not-found %d = %d",
		c.name, mib("TCPAOGood"), sock.Good, perKey.Good, sock.KeyNotFound, mib("TCPAOKeyNotFound"))
	return sock.Good
}

// lsWire checks a rotation on the wire: each direction's KeyID moves from
// A's to B's once and never back, and the RNextKeyIDs ask for B.
func lsWire(t *T, c lsConn, pkts []capture.Packet) {
	var c2s, s2c []uint8
	for _, p := range pkts {
		s, err := parseFrame(p.Data)
		if err != nil || !s.hasAO {
			continue
		}
		switch {
		case s.src == c.cli && s.dst == c.srv:
			c2s = append(c2s, s.keyID)
		case s.src == c.srv && s.dst == c.cli:
			s2c = append(s2c, s.keyID)
		}
	}
	for _, d := range []struct {
		name     string
		ids      []uint8
		from, to uint8
	}{{"client->server", c2s, 100, 101}, {"server->client", s2c, 200, 201}} {
		switched := 0
		for i, id := range d.ids {
			if id != d.from && id != d.to {
				t.Errorf("%s %s: KeyID %d", c.name, d.name, id)
			}
			if i > 0 && id != d.ids[i-1] {
				switched++
			}
		}
		if len(d.ids) == 0 || d.ids[0] != d.from || d.ids[len(d.ids)-1] != d.to || switched != 1 {
			t.Errorf("%s %s: KeyIDs %v, want %d then %d", c.name, d.name, d.ids, d.from, d.to)
		}
		t.Logf("%s %s: KeyID %d x%d, then %d", c.name, d.name, d.from, count(d.ids, d.from), d.to)
	}
}

func count(ids []uint8, v uint8) int {
	n := 0
	for _, id := range ids {
		if id == v {
			n++
		}
	}
	return n
}

// lsBad dials c's listener with the right KeyIDs and a wrong key (after
// the capture): the listener's TCP_AO_INFO and its key's counters count
// the SYNs as bad, as many as TCPAOBad.
func lsBad(t *T, c lsConn, ln *net.TCPListener) {
	wrong := c.entries()[0].Config
	wrong.Key = []byte("not the key")
	if wrong.Algorithm == "cmac(aes)" {
		wrong.Key = make([]byte, 16)
	}
	before, err := kstat.TCPExt()
	t.check(err, "netstat")
	li0, err := linuxsock.ReadAOInfo(ln)
	t.check(err, "listener TCP_AO_INFO")
	d := linuxsock.Dialer(linuxsock.Keys{AO: []keys.AO{wrong}})
	d.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(c.cli, 0))
	d.Timeout = 2500 * time.Millisecond
	if nc, err := d.Dial("tcp", ln.Addr().String()); err == nil {
		nc.Close()
		t.Errorf("%s: a wrong key connected", c.name)
	}
	time.Sleep(200 * time.Millisecond)
	after, err := kstat.TCPExt()
	t.check(err, "netstat")
	li, err := linuxsock.ReadAOInfo(ln)
	t.check(err, "listener TCP_AO_INFO")
	ks, err := linuxsock.AOKeys(ln)
	t.check(err, "listener TCP_AO_GET_KEYS")
	var keyBad uint64
	for _, k := range ks {
		if k.Peer.Addr() == c.cli {
			keyBad += k.Bad
		}
	}
	bad, mib := li.Counters.Bad-li0.Counters.Bad, after["TCPAOBad"]-before["TCPAOBad"]
	if bad == 0 || bad != mib || keyBad != li.Counters.Bad {
		t.Errorf("%s: wrong-key SYNs: listener bad +%d, its key's bad %d, TcpExt TCPAOBad +%d", c.name, bad, keyBad, mib)
	}
	t.Logf("%s: wrong-key SYNs: listener TCP_AO_INFO bad +%d = TcpExt TCPAOBad +%d (key %v: bad %d)", c.name, bad, mib, c.cli, keyBad)
}

// lsFlags sets and clears ao_required and accept_icmps on a connection,
// checks that choosing keys keeps them, and that set_counters writes the
// counters.
func lsFlags(t *T, c lsConn, ln *net.TCPListener, keys linuxsock.Keys) {
	d := linuxsock.Dialer(keys)
	d.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(c.cli, 0))
	d.Timeout = 15 * time.Second
	nc, err := d.Dial("tcp", ln.Addr().String())
	t.check(err, c.name+": dial")
	defer nc.Close()
	cc := nc.(*net.TCPConn)
	t.check(linuxsock.SetAOFlags(cc, true, true), "flags on")
	t.check(linuxsock.SelectAOKeys(cc, linuxsock.Current|linuxsock.RNext, 100, 200), "select")
	i, err := linuxsock.ReadAOInfo(cc)
	t.check(err, "TCP_AO_INFO")
	if !i.Required || !i.AcceptICMPs || i.Current != 100 || i.RNext != 200 {
		t.Errorf("%s: flags on, keys chosen: %+v", c.name, i)
	}
	t.check(linuxsock.SetAOFlags(cc, false, false), "flags off")
	want := linuxsock.AOCounters{Good: 1 << 40, Bad: 2, KeyNotFound: 3, Required: 4, DroppedICMP: 5}
	t.check(linuxsock.SetAOCounters(cc, want), "counters")
	i, err = linuxsock.ReadAOInfo(cc)
	t.check(err, "TCP_AO_INFO")
	if i.Required || i.AcceptICMPs || i.Counters.Good < want.Good || i.Counters.Bad != 2 || i.Counters.DroppedICMP != 5 {
		t.Errorf("%s: flags off, counters set: %+v", c.name, i)
	}
	ln.SetDeadline(time.Now().Add(5 * time.Second))
	if sc, err := ln.Accept(); err == nil {
		sc.Close()
	}
	t.Logf("%s: ao_required/accept_icmps set and cleared, counters written: %+v", c.name, i.Counters)
}
