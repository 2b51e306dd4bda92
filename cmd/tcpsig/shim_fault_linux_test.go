//go:build linux

package main

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/harness/proc"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/linuxsock"
	"github.com/tcpsig/tcpsig/shim"
)

// transfer is one TCP connection from B (client, behind the shim) to A
// (server) carrying a known byte stream in two halves.
type transfer struct {
	conn net.Conn
	got  chan [32]byte // SHA-256 of what A read, once B closed
	want [32]byte
	data []byte
}

// startTransfer listens in A (with lc: kernel TCP-MD5 keys; nil: plain),
// connects from B and returns before any data is sent.
func startTransfer(t *testing.T, a, b *ns, lc *net.ListenConfig, size int) *transfer {
	t.Helper()
	tr := &transfer{got: make(chan [32]byte, 1), data: make([]byte, size)}
	for i := range tr.data {
		tr.data[i] = byte(i*7 + i>>11)
	}
	tr.want = sha256.Sum256(tr.data)
	var ln net.Listener
	if err := a.Do(func() (err error) {
		if lc == nil {
			lc = &net.ListenConfig{}
		}
		ln, err = lc.Listen(t.Context(), "tcp4", netip.AddrPortFrom(addrA4, 0).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		h := sha256.New()
		_, _ = io.Copy(h, c)
		tr.got <- [32]byte(h.Sum(nil))
	}()
	if err := b.Do(func() (err error) {
		d := net.Dialer{Timeout: 10 * time.Second, LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(addrB4, 0))}
		tr.conn, err = d.Dial("tcp4", ln.Addr().String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.conn.Close() })
	return tr
}

// send writes data[from:to] in the background and reports the result.
func (tr *transfer) send(from, to int) chan error {
	errc := make(chan error, 1)
	go func() {
		_ = tr.conn.SetWriteDeadline(time.Now().Add(90 * time.Second))
		_, err := tr.conn.Write(tr.data[from:to])
		errc <- err
	}()
	return errc
}

// finish closes B's side and checks that A read exactly the stream.
func (tr *transfer) finish(t *testing.T) {
	t.Helper()
	tr.conn.Close()
	select {
	case got := <-tr.got:
		if got != tr.want {
			t.Errorf("A read a different stream than B sent (SHA-256 %x, want %x)", got[:8], tr.want[:8])
		}
	case <-time.After(60 * time.Second):
		t.Fatal("A did not finish reading")
	}
}

func waitErr(t *testing.T, errc chan error, what string) {
	t.Helper()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(90 * time.Second):
		t.Fatalf("%s: no progress", what)
	}
}

// TestShimKillMD5: the shim is SIGKILLed while a TCP-MD5 transfer (A's
// kernel signs, B's plain socket behind the shim) is in flight, and
// restarted: it replaces the rules the dead shim left, signs and verifies
// the session it never saw the handshake of (TCP-MD5 needs no
// per-connection state), and the transfer completes byte for byte with A's
// kernel counting no failure.
func TestShimKillMD5(t *testing.T) {
	needQueue(t)
	const secret = "tcpsig-fault-secret"
	nsA, nsB := newPair(t)
	dir := shortDir(t)
	keyPath := writeKeys(t, dir, "keys.json", fmtKeysMD5(addrA4, secret))
	sh, sock := startShim(t, nsB, dir, "-keys", keyPath, "-queue", "42")
	before := md5Counters(t, nsA)
	const size = 16 << 20
	tr := startTransfer(t, nsA, nsB, linuxsock.ListenConfig(linuxsock.Keys{MD5: []keys.MD5{{Peer: netip.PrefixFrom(addrB4, 32), Key: []byte(secret)}}}), size)
	waitErr(t, tr.send(0, size/2), "first half")

	// Killed with the second half in flight: its rules stay, and with no
	// reader bound to the queue the kernel drops what they queue.
	second := tr.send(size/2, size)
	time.Sleep(20 * time.Millisecond)
	if err := sh.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-sh.Done()
	if !rulesExist(t, nsB, "tcpsig-shim-42") {
		t.Fatal("no rules left by the killed shim: the test shows nothing")
	}
	shim2, sock2 := startShim(t, nsB, dir, "-keys", keyPath, "-queue", "42")
	_ = sock
	waitErr(t, second, "second half after the restart")
	tr.finish(t)
	st, err := shimStatusOf(sock2)
	if err != nil {
		t.Fatal(err)
	}
	if st.Counters.Signed == 0 || st.Counters.Verified == 0 || st.Counters.Dropped.Total() != 0 {
		t.Errorf("restarted shim's counters %+v: want the session's packets signed and verified, none dropped", st.Counters)
	}
	after := md5Counters(t, nsA)
	if after.Failure != before.Failure || after.NotFound != before.NotFound {
		t.Errorf("A's kernel: TCPMD5Failure %d -> %d, NotFound %d -> %d; want no change", before.Failure, after.Failure, before.NotFound, after.NotFound)
	}
	if !strings.Contains(shim2.Log(), "taking over the rules an earlier run left") {
		t.Errorf("the restarted shim did not report the stale rules:\n%s", shim2.Log())
	}
	t.Logf("16 MiB across a SIGKILL: the restarted shim signed %d, verified %d; A's TCPMD5Failure %d",
		st.Counters.Signed, st.Counters.Verified, after.Failure)
	if err := stopShim(shim2); err != nil {
		t.Errorf("shim exit on SIGTERM: %v", err)
	}
	if !rulesExist(t, nsB, "tcpsig-shim-42") {
		t.Error("no rules left after SIGTERM: the session would be open to injection until the next start")
	}
	uninstall(t, nsB, 42)
}

// TestShimKillAOState: a TCP-AO session between two plain sockets, each
// behind its own shim (A's and B's), survives B's shim being SIGKILLed
// mid-transfer only through -state: restarted without it, the shim
// reports the session as seen without its handshake and drops its
// packets; restarted with it, the shim resumes the session (ISNs, SNEs,
// key IDs from the file) and the transfer completes byte for byte. The
// MACs here are the engine's on both ends: this shows the fault handling,
// the kernel interop is shown under qemu.
func TestShimKillAOState(t *testing.T) {
	needQueue(t)
	nsA, nsB := newPair(t)
	dirA, dirB := shortDir(t), shortDir(t)
	mkt := func(peer netip.Addr) string {
		return fmt.Sprintf(`{"ao": [{"alg": "hmac(sha256)", "key": "hex:%x", "sndid": 5, "rcvid": 5, "peer": "%v/32"}]}`,
			bytes.Repeat([]byte{0x5a}, 20), peer)
	}
	keysA := writeKeys(t, dirA, "keys.json", mkt(addrB4))
	keysB := writeKeys(t, dirB, "keys.json", mkt(addrA4))
	state := dirB + "/state.json"
	_, sockA := startShim(t, nsA, dirA, "-keys", keysA, "-queue", "43")
	shimB, _ := startShim(t, nsB, dirB, "-keys", keysB, "-queue", "43", "-state", state)
	const size = 16 << 20
	tr := startTransfer(t, nsA, nsB, nil, size)
	waitErr(t, tr.send(0, size/2), "first half")
	if !waitFor(10*time.Second, func() bool {
		b, err := os.ReadFile(state)
		return err == nil && bytes.Contains(b, []byte(`"LocalISN"`))
	}) {
		t.Fatal("B's shim wrote no session to its state file")
	}
	kill := func(p *proc.Proc) {
		if err := p.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-p.Done()
	}
	kill(shimB)

	// Without the state: reported, not resumed.
	second := tr.send(size/2, size)
	blind, sockBlind := startShim(t, nsB, dirB, "-keys", keysB, "-queue", "43")
	var st shim.Status
	if !waitFor(30*time.Second, func() bool {
		var err error
		st, err = shimStatusOf(sockBlind)
		return err == nil && len(st.Unseen) > 0
	}) {
		t.Fatalf("the shim restarted without -state did not report the session; status %+v\n%s", st, blind.Log())
	}
	t.Logf("restarted without -state: unseen %+v", st.Unseen)
	kill(blind)

	// With the state: resumed, and the transfer completes.
	_, sockB := startShim(t, nsB, dirB, "-keys", keysB, "-queue", "43", "-state", state)
	waitErr(t, second, "second half after the restart with -state")
	tr.finish(t)
	if st, err := shimStatusOf(sockB); err != nil || st.Seeded != 1 {
		t.Errorf("restarted with -state: status %+v, %v; want one session resumed", st, err)
	}
	if st, err := shimStatusOf(sockA); err != nil || st.Counters.Dropped.BadMAC != 0 {
		t.Errorf("A's shim: %+v, %v; want no bad MAC", st.Counters, err)
	}
}
