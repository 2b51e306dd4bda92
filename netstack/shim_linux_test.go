package netstack

// gVisor ↔ a kernel socket behind tcpsig shim: TCP-AO where neither end's
// kernel knows the algorithm. The gVisor stack is wrapped by this package's
// Endpoint over the harness's TUN device; on the kernel's side of the
// device a plain socket (no keys) is signed and verified by `tcpsig shim`
// (built from ../cmd/tcpsig, run in the test's namespace); an AF_PACKET
// capture of the device is judged by `tcpsig verify`.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/harness/capture"
	"github.com/tcpsig/tcpsig/harness/kstat"
	"github.com/tcpsig/tcpsig/harness/nfprobe"
	"github.com/tcpsig/tcpsig/harness/proc"
	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/linuxsock"
	"github.com/tcpsig/tcpsig/packetauth"
	"github.com/tcpsig/tcpsig/shim"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
)

// shimAlgs are the algorithms run between gVisor and the shim, each in
// both directions of opening.
var shimAlgs = []string{"HMAC-SHA256-128", "KMAC256-128"}

// shimQueue is the shim's netfilter queue (each case has a namespace of
// its own, so they may share it).
const shimQueue = 7

// TestShimGVisor: per algorithm, gVisor dials a plain kernel listener
// behind tcpsig shim (IPv4), then a plain kernel socket dials a gonet
// listener (IPv6); each moves 16 MiB each way (sha256 equal; 2 MiB under
// the race detector), with 1 % loss for a while, as both ends rotate from
// MKT 1 to MKT 2 (the shim, reloaded with MKT 2 last, asks for it as its
// RNext and gVisor switches; gVisor then asks for it and the shim
// switches), and tcpsig verify judges the capture of the TUN device all
// good, with segments under both KeyIDs each way. With a wrong key (same
// KeyIDs, other bytes) nothing connects: the receiving end's layer counts
// every SYN as a bad MAC and the listener gets nothing.
func TestShimGVisor(t *testing.T) {
	needRoot(t)
	nfprobe.Need(t)
	bin := buildTCPSig(t)
	n := aoBulk()
	for _, alg := range shimAlgs {
		// One family per direction of opening: both are covered per
		// algorithm at the cost of two transfers, not four.
		for _, accept := range []bool{false, true} {
			v6 := accept
			t.Run(fmt.Sprintf("%s/%s/v6=%v", alg, opener(accept), v6), func(t *testing.T) {
				shimTransfer(t, bin, alg, v6, accept, n)
			})
		}
		for _, accept := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/wrong-key/%s", alg, opener(accept)), func(t *testing.T) {
				shimWrongKey(t, bin, alg, accept)
			})
		}
	}
}

func opener(accept bool) string {
	if accept {
		return "kernel-dials"
	}
	return "gvisor-dials"
}

// shimKey is the 32-byte master key of KeyID id for secret.
func shimKey(secret string, id int) [32]byte {
	return sha256.Sum256(fmt.Appendf(nil, "%s %d", secret, id))
}

// shimKeys is a keys file with one MKT per KeyID in ids (SendID = RecvID
// = the KeyID; no maclen: the draft's algorithms have 16) for peer, in
// that order.
func shimKeys(alg, secret string, peer netip.Addr, ids ...int) string {
	var b strings.Builder
	b.WriteString(`{"ao": [`)
	for i, id := range ids {
		if i > 0 {
			b.WriteString(",\n  ")
		}
		fmt.Fprintf(&b, `{"alg": %q, "key": "hex:%x", "sndid": %d, "rcvid": %d, "peer": "%v"}`,
			alg, shimKey(secret, id), id, id, peer)
	}
	b.WriteString("]}\n")
	return b.String()
}

// gvisorLayer is the gVisor side's layer, its keys read from a keys file
// as a program would, and its keyring (for the rotation).
func gvisorLayer(t *testing.T, body string) (*packetauth.Layer, *ao.Keyring) {
	t.Helper()
	ring := ao.NewKeyring(nil)
	if err := addKeys(ring, body); err != nil {
		t.Fatal(err)
	}
	l, err := packetauth.New(packetauth.Config{AO: ring, StackChecksums: true})
	if err != nil {
		t.Fatal(err)
	}
	return l, ring
}

// addKeys adds the TCP-AO entries of the keys file body to ring, read as
// a program would.
func addKeys(ring *ao.Keyring, body string) error {
	f, err := keyfile.Parse([]byte(body))
	if err != nil {
		return err
	}
	for _, e := range f.AO {
		if _, err := ring.Add(e.Config); err != nil {
			return err
		}
	}
	return nil
}

// shimTransfer is one transfer case of TestShimGVisor.
func shimTransfer(t *testing.T, bin, alg string, v6, accept bool, n int64) {
	const secret = "tcpsig shim gvisor"
	kp, naddr := addrs(v6)
	kaddr := kp.Addr()
	dir := shortTemp(t)
	layer, ring := gvisorLayer(t, shimKeys(alg, secret, kaddr, 1))
	shimFile := filepath.Join(dir, "shim.json")
	writeFile(t, shimFile, shimKeys(alg, secret, naddr, 1))
	// tcpsig verify reads both ends' MKTs.
	both := filepath.Join(dir, "verify.json")
	writeFile(t, both, mergeKeys(t, shimKeys(alg, secret, kaddr, 1, 2), shimKeys(alg, secret, naddr, 1, 2)))
	var ep *Endpoint
	inKernelNet(t, v6, wrapWith(t, layer, &ep), func(k *kernelNet) error {
		capt, err := capture.Start(capture.Options{Interface: tunName, Filter: capture.TCPPorts(kPort, gonetPrt)})
		if err != nil {
			return err
		}
		defer capt.Stop()
		sh, err := startShimProc(bin, dir, shimFile)
		if err != nil {
			return err
		}
		defer sh.stop(t)

		var gv packetauth.ConnInfo
		var sc shim.Status
		rotate := func(kc *net.TCPConn, nc *gonet.TCPConn) error {
			// 1 % loss around the first switch: SACK blocks, which
			// share 40 option bytes with the 20-byte option and
			// timestamps, and retransmissions under either key.
			if err := waitData(k, 3*n/16); err != nil {
				return err
			}
			k.tap.drop.Store(true)
			defer k.tap.drop.Store(false)
			if err := waitData(k, n/4); err != nil {
				return err
			}
			// MKT 2 on both ends, gVisor's first; the reloaded shim asks
			// for it (RNext 2) and gVisor's layer follows.
			if err := addKeys(ring, shimKeys(alg, secret, kaddr, 2)); err != nil {
				return err
			}
			if err := os.WriteFile(shimFile, []byte(shimKeys(alg, secret, naddr, 1, 2)), 0o600); err != nil {
				return err
			}
			if err := sh.Signal(syscall.SIGHUP); err != nil {
				return err
			}
			if err := waitData(k, 5*n/16); err != nil {
				return err
			}
			k.tap.drop.Store(false)
			if err := waitData(k, n/2); err != nil {
				return err
			}
			c, err := layerConn(ep, nc)
			if err != nil {
				return err
			}
			// gVisor asks for MKT 2 in turn: the shim follows.
			if err := c.SetRNext(2); err != nil {
				return err
			}
			if err := waitData(k, 3*n/4); err != nil {
				return err
			}
			for c := range ep.Layer().Conns {
				gv = c
			}
			sc, err = shimStatus(sh.sock)
			return err
		}
		terr := transfer(k, accept, n, linuxsock.Keys{}, rotate)
		out, in, c := settled(k, layer)
		st, serr := shimStatus(sh.sock)
		if terr != nil {
			t.Logf("to kernel %+v; from kernel %+v; layer %+v; shim %+v", out, in, c, st.Counters)
			return terr
		}
		if serr != nil {
			return serr
		}
		t.Logf("%d bytes each way, sha256 equal; to kernel %+v; from kernel %+v", n, out, in)
		t.Logf("gVisor's layer %+v; the shim %+v", c, st.Counters)
		var sconn shim.ConnStatus
		if len(sc.Conns) == 1 {
			sconn = sc.Conns[0]
		}
		t.Logf("after the rotation: gVisor current %d, rnext %d; the shim current %d, rnext %d",
			gv.CurrentKeyID, gv.RNextKeyID, sconn.CurrentKeyID, sconn.RNextKeyID)
		switch {
		case c.Dropped.Total() != 0 || st.Counters.Dropped.Total() != st.Counters.Dropped.NoConn:
			return fmt.Errorf("refused: gVisor's layer %+v, the shim %+v", c.Dropped, st.Counters.Dropped)
		case out.Signed != out.Packets-out.Dropped || in.Signed != in.Packets-in.Dropped:
			return fmt.Errorf("unsigned segments on the wire: to kernel %+v, from kernel %+v", out, in)
		case out.Dropped == 0 || in.Dropped == 0 || !raceEnabled && out.SACKBlocks == 0:
			// Some 25 of the kernel's packets lost make gVisor SACK; under
			// the race detector's 2 MiB, a few, perhaps ACKs only. (The
			// kernel's SACK blocks, trimmed by the shim, are fewer:
			// counted, not required.)
			return fmt.Errorf("no loss, or no SACK block to the kernel: to kernel %+v, from kernel %+v", out, in)
		case len(sc.Conns) != 1:
			return fmt.Errorf("the shim tracked %d connections mid-transfer, want 1", len(sc.Conns))
		case gv.CurrentKeyID != 2 || gv.RNextKeyID != 2 || sconn.CurrentKeyID != 2 || sconn.RNextKeyID != 2:
			return errors.New("the rotation did not end on KeyID 2 both ways")
		}
		capt.WaitIdle(200*time.Millisecond, 5*time.Second)
		if err := capt.Stop(); err != nil {
			return err
		}
		pcap := filepath.Join(dir, "cap.pcap")
		if err := capt.WriteFile(pcap); err != nil {
			return err
		}
		return verifyCapture(t, bin, both, pcap, capt.Len(), kaddr, naddr)
	})
}

// mergeKeys joins the "ao" arrays of keys files.
func mergeKeys(t *testing.T, files ...string) string {
	t.Helper()
	var all []json.RawMessage
	for _, f := range files {
		var v struct{ AO []json.RawMessage }
		if err := json.Unmarshal([]byte(f), &v); err != nil {
			t.Fatal(err)
		}
		all = append(all, v.AO...)
	}
	b, _ := json.Marshal(map[string]any{"ao": all})
	return string(b)
}

// verifyCapture runs tcpsig verify -json -v on the capture: every segment
// good (exit 0), every packet judged, and segments under KeyID 1 and 2 in
// both directions.
func verifyCapture(t *testing.T, bin, keys, pcap string, packets int, kaddr, naddr netip.Addr) error {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "verify", "-keys", keys, "-json", "-v", pcap)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	type segment struct {
		Src, Dst, Verdict string
		KeyID             *uint8
	}
	var sum struct {
		Summary struct {
			Packets, Segments uint64
			Verdicts          map[string]uint64
			Exit              int
		}
	}
	good := map[string]int{} // src>dst/keyid
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if bytes.HasPrefix(line, []byte(`{"summary"`)) {
			if err := json.Unmarshal(line, &sum); err != nil {
				return err
			}
			continue
		}
		var s segment
		if err := json.Unmarshal(line, &s); err != nil || s.KeyID == nil {
			continue
		}
		if s.Verdict == "good" {
			good[fmt.Sprintf("%s>%s/%d", hostOf(s.Src), hostOf(s.Dst), *s.KeyID)]++
		}
	}
	t.Logf("tcpsig verify: %d packets, %d segments, verdicts %v, exit %d; good by direction/KeyID %v",
		sum.Summary.Packets, sum.Summary.Segments, sum.Summary.Verdicts, sum.Summary.Exit, good)
	if err != nil {
		return fmt.Errorf("tcpsig verify: %v\n%s", err, stderr.String())
	}
	for _, want := range []string{
		fmt.Sprintf("%v>%v/1", naddr, kaddr), fmt.Sprintf("%v>%v/2", naddr, kaddr),
		fmt.Sprintf("%v>%v/1", kaddr, naddr), fmt.Sprintf("%v>%v/2", kaddr, naddr),
	} {
		if good[want] == 0 {
			return fmt.Errorf("tcpsig verify found no good segment %s", want)
		}
	}
	if sum.Summary.Packets != uint64(packets) || sum.Summary.Segments != uint64(packets) || sum.Summary.Verdicts["good"] != uint64(packets) {
		return fmt.Errorf("tcpsig verify judged %d of %d packets good (of %d segments)", sum.Summary.Verdicts["good"], packets, sum.Summary.Segments)
	}
	return nil
}

func hostOf(s string) string {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().String()
	}
	return s
}

// shimWrongKey: the two ends' MKTs share KeyIDs but not bytes. The
// receiving end of the SYNs (the shim when gVisor dials, gVisor's layer
// when the kernel does) counts each as a bad MAC, nothing is answered, and
// no connection reaches the listener.
func shimWrongKey(t *testing.T, bin, alg string, accept bool) {
	kp, naddr := addrs(false)
	dir := shortTemp(t)
	layer, _ := gvisorLayer(t, shimKeys(alg, "gvisor's key", kp.Addr(), 1))
	shimFile := filepath.Join(dir, "shim.json")
	writeFile(t, shimFile, shimKeys(alg, "the shim's key", naddr, 1))
	var ep *Endpoint
	inKernelNet(t, false, wrapWith(t, layer, &ep), func(k *kernelNet) error {
		sh, err := startShimProc(bin, dir, shimFile)
		if err != nil {
			return err
		}
		defer sh.stop(t)
		const wait = 2 * time.Second // two SYNs at least
		if !accept {
			ln, err := net.Listen("tcp", netip.AddrPortFrom(k.kaddr, kPort).String())
			if err != nil {
				return err
			}
			defer ln.Close()
			if c, err := dialGonet(k.s, netip.AddrPortFrom(k.kaddr, kPort), wait); err == nil {
				c.Close()
				return errors.New("gVisor connected with a wrong key")
			}
			out, in := k.tap.out.stats(), k.tap.in.stats()
			var st shim.Status
			for i := 0; i < 50; i++ { // the shim judges a SYN after the tap saw it
				if st, err = shimStatus(sh.sock); err != nil || st.Counters.Dropped.BadMAC >= uint64(out.SYNs) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err != nil {
				return err
			}
			t.Logf("gVisor's SYNs %d (signed %d); the shim %+v; answered %d", out.SYNs, out.Signed, st.Counters, in.Packets)
			switch {
			case out.SYNs < 2 || out.Signed != out.Packets:
				return fmt.Errorf("want >= 2 signed SYNs, got %+v", out)
			case st.Counters.Dropped.BadMAC != uint64(out.SYNs) || st.Counters.Dropped.Total() != st.Counters.Dropped.BadMAC:
				return fmt.Errorf("the shim refused %+v for %d SYNs, want each as a bad MAC", st.Counters.Dropped, out.SYNs)
			case st.Counters.Verified != 0 || in.Packets != 0:
				return fmt.Errorf("the shim verified %d, the kernel answered %d", st.Counters.Verified, in.Packets)
			case kstat.Pending(ln.(*net.TCPListener)):
				return errors.New("the kernel listener has a connection")
			}
			return nil
		}
		if err := k.dialRefused(&net.Dialer{Timeout: wait}); err != nil {
			return err
		}
		var st shim.Status
		var in, out wireStats
		for i := 0; i < 50; i++ { // the tap sees a SYN after the shim signed it
			if st, err = shimStatus(sh.sock); err != nil {
				return err
			}
			if in = k.tap.in.stats(); st.Counters.Signed == uint64(in.Packets) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		out, c := k.tap.out.stats(), layer.Counters()
		t.Logf("the kernel's SYNs %d (signed %d by the shim: %d); gVisor's layer %+v, endpoint dropped %d; answered %d",
			in.SYNs, in.Signed, st.Counters.Signed, c, ep.Dropped(), out.Packets)
		switch {
		case in.SYNs < 2 || in.Signed != in.Packets || st.Counters.Signed != uint64(in.SYNs):
			return fmt.Errorf("want >= 2 SYNs signed by the shim: tap %+v, the shim %+v", in, st.Counters)
		case c.Dropped.BadMAC != uint64(in.SYNs) || c.Dropped.Total() != c.Dropped.BadMAC || ep.Dropped() != uint64(in.SYNs):
			return fmt.Errorf("gVisor's layer refused %+v (endpoint %d) for %d SYNs, want each as a bad MAC", c.Dropped, ep.Dropped(), in.SYNs)
		case c.Verified != 0 || out.Packets != 0:
			return fmt.Errorf("gVisor's layer verified %d, answered %d", c.Verified, out.Packets)
		}
		return nil
	})
}

// shimProc is a running tcpsig shim and its status socket.
type shimProc struct {
	*proc.Proc
	sock string
}

// startShimProc runs bin shim in the calling goroutine's network namespace
// (the child is forked from its locked thread) and waits until its status
// socket answers.
func startShimProc(bin, dir, keys string) (*shimProc, error) {
	sock := filepath.Join(dir, "shim.sock")
	p, err := proc.Start("tcpsig shim", exec.Command(bin, "shim", "-keys", keys, "-queue", fmt.Sprint(shimQueue), "-status", sock))
	if err != nil {
		return nil, err
	}
	if err := p.WaitReady("serving its status", 20*time.Second, func() bool { _, err := shimStatus(sock); return err == nil }); err != nil {
		p.Kill()
		return nil, err
	}
	return &shimProc{p, sock}, nil
}

// stop ends the shim with SIGTERM (it removes its rules and exits 0); its
// log goes to the test's if the test failed.
func (p *shimProc) stop(t *testing.T) {
	if err := p.Stop(syscall.SIGTERM, 10*time.Second); err != nil {
		t.Errorf("tcpsig shim: %v", err)
	}
	if t.Failed() {
		t.Logf("tcpsig shim's log:\n%s", p.Log())
	}
}

// shimStatus reads the shim's status from its socket.
func shimStatus(sock string) (shim.Status, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return shim.ReadStatus(ctx, sock)
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// shortTemp is a temporary directory with a short path, for the shim's
// status socket (unix socket paths are limited to 107 bytes).
func shortTemp(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "tcpsig")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// buildTCPSig builds the tcpsig command of the parent module.
func buildTCPSig(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build tcpsig with: ", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "cmd", "tcpsig")); err != nil {
		t.Skip("no ../cmd/tcpsig to build (the test binary runs outside its source tree): ", err)
	}
	bin := filepath.Join(t.TempDir(), "tcpsig")
	cmd := exec.Command(goBin, "build", "-o", bin, "./cmd/tcpsig")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/tcpsig: %v\n%s", err, out)
	}
	return bin
}
