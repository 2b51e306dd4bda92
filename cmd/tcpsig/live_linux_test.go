package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/harness/netns"
	"github.com/tcpsig/tcpsig/harness/usertcp"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/linuxsock"
	"github.com/tcpsig/tcpsig/packetauth"
	"github.com/tcpsig/tcpsig/pcapverify"
)

// Live verification (tcpsig verify -i) in network namespaces the tests
// create: the kernel's TCP-MD5 over a veth pair, TCP-AO from the
// project's userspace endpoint forwarded between two TUN devices.

func needNetns(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("not root: the test creates network namespaces and opens packet sockets")
	}
}

// liveSink is what a live run writes: it keeps the output, decodes the
// JSON segment objects (or counts the text verdict lines) and closes
// fired when until first holds.
type liveSink struct {
	mu    sync.Mutex
	out   bytes.Buffer
	part  []byte
	segs  []segmentJSON
	until func(segs []segmentJSON) bool
	fired chan struct{}
}

func newLiveSink() *liveSink { return &liveSink{fired: make(chan struct{})} }

func (s *liveSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.out.Write(p)
	s.part = append(s.part, p...)
	for {
		i := bytes.IndexByte(s.part, '\n')
		if i < 0 {
			break
		}
		line := s.part[:i]
		s.part = s.part[i+1:]
		var sg segmentJSON
		if bytes.HasPrefix(line, []byte(`{"frame"`)) && json.Unmarshal(line, &sg) == nil {
			s.segs = append(s.segs, sg)
		}
	}
	s.check()
	return len(p), nil
}

// await sets the condition and waits for it (or fails after a bound).
func (s *liveSink) await(t *testing.T, what string, until func([]segmentJSON) bool) {
	t.Helper()
	s.mu.Lock()
	s.fired = make(chan struct{})
	s.until = until
	s.check()
	fired := s.fired
	s.mu.Unlock()
	select {
	case <-fired:
	case <-time.After(20 * time.Second):
		s.mu.Lock()
		defer s.mu.Unlock()
		t.Errorf("live run never showed %s; output so far:\n%s", what, s.out.String())
	}
}

func (s *liveSink) check() {
	if s.until != nil && s.until(s.segs) {
		s.until = nil
		close(s.fired)
	}
}

func (s *liveSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

// runLiveCLI runs the command on the calling goroutine (its packet socket
// opens in the caller's namespace) until the stop channel is closed;
// ready runs (on another goroutine) once packets are being read.
func runLiveCLI(args []string, stdout, stderr io.Writer, ready func(), stop <-chan struct{}) int {
	oldReady, oldCtx := liveReady, liveContext
	defer func() { liveReady, liveContext = oldReady, oldCtx }()
	liveReady = func() { go ready() }
	liveContext = func() (context.Context, context.CancelFunc) {
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-stop
			cancel()
		}()
		return ctx, cancel
	}
	return run(args, stdout, stderr)
}

// doIn runs f in the namespace k keeps.
func doIn(k *netns.Keeper, f func()) {
	_ = k.Do(func() error { f(); return nil })
}

// compareWithFile checks that verifying the -w file gives, frame by
// frame, the verdicts the live run gave.
func compareWithFile(t *testing.T, keyPath, file string, live []segmentJSON) {
	t.Helper()
	code, out, errOut := cli(t, "verify", "-json", "-keys", keyPath, file)
	segs, _ := jsonLines(t, out)
	if code != 1 || len(segs) != len(live) {
		t.Fatalf("verify -w file: exit %d, %d segments, live %d; %s", code, len(segs), len(live), errOut)
	}
	for i := range segs {
		a, b := segs[i], live[i]
		if a.Frame != b.Frame || a.Verdict != b.Verdict || a.Src != b.Src || a.Reason != b.Reason {
			t.Errorf("segment %d: file %+v, live %+v", i, a, b)
		}
	}
}

// The kernel's TCP-MD5 between two namespaces over a veth pair, watched
// live on one end: a connection with the right key (every segment good),
// then a client with a wrong key (its SYNs bad). -w's file reproduces the
// live verdicts.
func TestLiveKernelMD5(t *testing.T) {
	needNetns(t)
	if err := linuxsock.ProbeMD5(); errors.Is(err, linuxsock.ErrNoMD5) {
		t.Skip("kernel without TCP-MD5: ", err)
	}
	server, client := netip.MustParseAddrPort("192.0.2.1:1790"), netip.MustParseAddr("192.0.2.2")
	key := []byte("veth-md5-secret")
	keyPath := writeFile(t, "keys.json", []byte(fmt.Sprintf(`{"md5": [
		{"name": "server", "peer": "%v", "key": "text:%s"},
		{"name": "client", "peer": "%v", "key": "text:%s"}]}`, client, key, server.Addr(), key)))
	pcapng := filepath.Join(t.TempDir(), "live.pcapng")
	sink, errOut := newLiveSink(), &bytes.Buffer{}
	var code int
	err := netns.Run(func() error {
		b, err := netns.NewKeeper()
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if err := netns.AddVeth("clvA", "clvB", b.FD()); err != nil {
			return err
		}
		if err := netns.AddAddr("clvA", netip.PrefixFrom(server.Addr(), 24)); err != nil {
			return err
		}
		if err := netns.LinkUp("clvA"); err != nil {
			return err
		}
		var berr error
		doIn(b, func() {
			if berr = netns.LinkUp("clvB"); berr == nil {
				berr = netns.AddAddr("clvB", netip.PrefixFrom(client, 24))
			}
		})
		if berr != nil {
			return berr
		}
		ln, err := linuxsock.ListenConfig(linuxsock.Keys{MD5: []keys.MD5{{Peer: netip.PrefixFrom(client, 32), Key: key}}}).
			Listen(context.Background(), "tcp4", server.String())
		if err != nil {
			return err
		}
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					req, _ := io.ReadAll(c)
					_, _ = c.Write(bytes.Repeat(req, 2))
				}()
			}
		}()
		stop := make(chan struct{})
		traffic := func() {
			defer close(stop)
			var derr error
			doIn(b, func() {
				c, err := linuxsock.Dialer(linuxsock.Keys{MD5: []keys.MD5{{Peer: netip.PrefixFrom(server.Addr(), 32), Key: key}}}).
					Dial("tcp4", server.String())
				if err != nil {
					derr = err
					return
				}
				defer c.Close()
				_, _ = c.Write(bytes.Repeat([]byte("hello over veth "), 200))
				_ = c.(*net.TCPConn).CloseWrite()
				_, derr = io.ReadAll(c)
			})
			if derr != nil {
				t.Errorf("good connection: %v", derr)
				return
			}
			// Both FINs, then the client's last ACK.
			sink.await(t, "the good connection's close", func(segs []segmentJSON) bool {
				fins := 0
				for i, s := range segs {
					if strings.Contains(s.Flags, "F") {
						fins++
					}
					if fins == 2 && i+1 < len(segs) && segs[i+1].Src != server.String() {
						return true
					}
				}
				return false
			})
			doIn(b, func() {
				d := linuxsock.Dialer(linuxsock.Keys{MD5: []keys.MD5{{Peer: netip.PrefixFrom(server.Addr(), 32), Key: []byte("wrong-key")}}})
				d.Timeout = 1500 * time.Millisecond
				if c, err := d.Dial("tcp4", server.String()); err == nil {
					c.Close()
					t.Error("a client with the wrong key connected")
				}
			})
			sink.await(t, "a bad SYN", func(segs []segmentJSON) bool {
				return segs[len(segs)-1].Verdict == "bad"
			})
		}
		code = runLiveCLI([]string{"verify", "-json", "-every", "100ms", "-i", "clvA", "-port", "1790", "-w", pcapng, "-keys", keyPath}, sink, errOut, traffic, stop)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	segs, sum := jsonLines(t, sink.String())
	if code != 1 || sum.Summary.Exit != 1 || errOut.Len() != 0 {
		t.Fatalf("exit %d, summary %+v, stderr %q", code, sum.Summary, errOut)
	}
	if !strings.Contains(sink.String(), `{"table":{"time":"`) {
		t.Errorf("no periodic flow table in the -json output:\n%s", sink.String())
	}
	n := verdictsOf(segs)
	if n["good"] < 8 || n["bad"] < 1 || n["good"]+n["bad"] != len(segs) {
		t.Errorf("verdicts %v", n)
	}
	for _, s := range segs {
		if s.Verdict == "bad" && (s.Flags != "S" || s.Src[:len("192.0.2.2")] != "192.0.2.2" || s.Key != "server" || s.Kind != "md5") {
			t.Errorf("bad segment %+v, want the wrong-key client's SYN judged with the server's key", s)
		}
	}
	compareWithFile(t, keyPath, pcapng, segs)
}

// TCP-AO from the project's userspace endpoint (usertcp with packetauth):
// two endpoints behind two TUN devices, the kernel forwarding between
// them, watched live on one TUN device in text mode: a conversation with
// the right MKT (good), then a client whose MKT has the wrong key (bad,
// and the server drops it). The flow table comes every -every and at the
// end; -w's file reproduces the live verdicts.
func TestLiveUserspaceAO(t *testing.T) {
	needNetns(t)
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skip("no /dev/net/tun: ", err)
	}
	client, server := netip.MustParseAddrPort("192.0.2.1:40000"), netip.MustParseAddrPort("198.51.100.1:179")
	key := []byte("userspace-ao-key")
	keyPath := writeFile(t, "keys.json", []byte(fmt.Sprintf(`{"ao": [
		{"name": "client", "alg": "hmac(sha256)", "key": "text:%s", "sndid": 1, "rcvid": 2, "peer": "%v"},
		{"name": "server", "alg": "hmac(sha256)", "key": "text:%s", "sndid": 2, "rcvid": 1, "peer": "%v"}]}`,
		key, server.Addr(), key, client.Addr())))
	pcapng := filepath.Join(t.TempDir(), "live.pcapng")
	sink, errOut := newLiveSink(), &bytes.Buffer{}
	var code int
	err := netns.Run(func() error {
		if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0); err != nil {
			return err
		}
		tuns := map[string]*usertcp.TUN{}
		for name, p := range map[string]string{"cltunA": "192.0.2.254/24", "cltunB": "198.51.100.254/24"} {
			tun, err := usertcp.OpenTUN(name)
			if err != nil {
				return err
			}
			defer tun.Close()
			tuns[name] = tun
			if err := netns.LinkUp(name); err != nil {
				return err
			}
			if err := netns.AddAddr(name, netip.MustParsePrefix(p)); err != nil {
				return err
			}
		}
		stop := make(chan struct{})
		exchange := func(port uint16, clientKey []byte, limit time.Duration) (usertcp.Stats, usertcp.Stats, error) {
			cring, sring := ao.NewKeyring(nil), ao.NewKeyring(nil)
			if _, err := cring.Add(keys.AO{Peer: netip.PrefixFrom(server.Addr(), 32), SendID: 1, RecvID: 2, Algorithm: "hmac(sha256)", Key: clientKey}); err != nil {
				return usertcp.Stats{}, usertcp.Stats{}, err
			}
			if _, err := sring.Add(keys.AO{Peer: netip.PrefixFrom(client.Addr(), 32), SendID: 2, RecvID: 1, Algorithm: "hmac(sha256)", Key: key}); err != nil {
				return usertcp.Stats{}, usertcp.Stats{}, err
			}
			c := netip.AddrPortFrom(client.Addr(), port)
			const ciss, siss = 0x1000, 0x2000
			cauth, err := packetauth.New(packetauth.Config{AO: cring})
			if err != nil {
				return usertcp.Stats{}, usertcp.Stats{}, err
			}
			defer cauth.Close()
			sauth, err := packetauth.New(packetauth.Config{AO: sring})
			if err != nil {
				return usertcp.Stats{}, usertcp.Stats{}, err
			}
			defer sauth.Close()
			ctx, cancel := context.WithTimeout(context.Background(), limit)
			defer cancel()
			return usertcp.Exchange(ctx, tuns["cltunA"], tuns["cltunB"],
				usertcp.Config{Local: c, Remote: server, Auth: cauth, ISS: ciss, RTO: 100 * time.Millisecond, MaxRetries: 2},
				usertcp.Config{Local: server, Auth: sauth, ISS: siss, RTO: 100 * time.Millisecond, MaxRetries: 2},
				[]byte("220 hello\r\n"), bytes.Repeat([]byte("request "), 500), bytes.Repeat([]byte("reply "), 700))
		}
		traffic := func() {
			defer close(stop)
			cs, ss, err := exchange(40000, key, 10*time.Second)
			if err != nil {
				t.Errorf("good exchange: %v", err)
				return
			}
			want := cs.Sent + ss.Sent
			sink.await(t, fmt.Sprintf("%d good segments", want), func([]segmentJSON) bool {
				return strings.Count(sink.out.String(), " GOOD (") >= want
			})
			// The server drops every SYN: the client gives up after its
			// retransmissions, the server at the deadline.
			if _, _, err := exchange(40001, []byte("not-the-key"), 2*time.Second); err == nil || !strings.Contains(err.Error(), usertcp.ErrTimeout.Error()) {
				t.Errorf("wrong-key exchange: %v, want the server to drop the client (ErrTimeout)", err)
			}
			sink.await(t, "the wrong key's SYNs", func([]segmentJSON) bool {
				return strings.Count(sink.out.String(), "[S] seq 4096 ao keyid 1 rnext 2 sne 0 BAD (server") >= 2
			})
		}
		code = runLiveCLI([]string{"verify", "-v", "-every", "50ms", "-i", "cltunA", "-w", pcapng, "-keys", keyPath}, sink, errOut, traffic, stop)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out := sink.String()
	if code != 1 || errOut.Len() != 0 {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
	for _, want := range []string{
		"Verifying the packets that pass cltunA as they come",
		// A segment is judged with its receiver's MKT.
		"198.51.100.1:179 > 192.0.2.1:40000 [S.] seq 8192 ao keyid 2 rnext 1 sne 0 GOOD (client, hmac(sha256))",
		"192.0.2.1:40001 > 198.51.100.1:179 [S] seq 4096 ao keyid 1 rnext 2 sne 0 BAD (server, hmac(sha256)): MAC does not match",
		"cltunA (live): ", // a periodic table
		"flow 2: 192.0.2.1:40001 <-> 198.51.100.1:179", // the final table
		"result: FAILED",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	_, fileOut, _ := cli(t, "verify", "-json", "-keys", keyPath, pcapng)
	fileSegs, _ := jsonLines(t, fileOut)
	n := verdictsOf(fileSegs)
	if n["bad"] < 2 || n["good"] < 10 || strings.Count(out, " GOOD (") != n["good"] || strings.Count(out, " BAD (") != n["bad"] {
		t.Errorf("-w file verdicts %v; live: %d good, %d bad", n, strings.Count(out, " GOOD ("), strings.Count(out, " BAD ("))
	}
}

// Without CAP_NET_RAW, one clear line and exit 2. The capability is
// dropped on one locked thread, which then ends with its goroutine.
func TestLiveWithoutCapNetRaw(t *testing.T) {
	keyPath := writeFile(t, "k.json", demoKeys(t))
	type res struct {
		code   int
		stderr string
		err    error
	}
	done := make(chan res)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread is discarded
		if os.Geteuid() == 0 {
			hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
			var data [2]unix.CapUserData
			if err := unix.Capget(&hdr, &data[0]); err != nil {
				done <- res{err: err}
				return
			}
			data[0].Effective &^= 1 << unix.CAP_NET_RAW
			if err := unix.Capset(&hdr, &data[0]); err != nil {
				done <- res{err: err}
				return
			}
		}
		code, _, errOut := cli(t, "verify", "-i", "lo", "-keys", keyPath)
		done <- res{code: code, stderr: errOut}
	}()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.code != 2 || r.stderr != "tcpsig verify: -i lo: reading packets needs CAP_NET_RAW: run as root, or give the binary the capability (sudo setcap cap_net_raw+ep $(command -v tcpsig))\n" {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}

// SIGTERM (and Ctrl-C) end a live run with the final table and summary.
func TestLiveSIGTERM(t *testing.T) {
	needNetns(t)
	keyPath := writeFile(t, "k.json", demoKeys(t))
	var code int
	var out, errOut bytes.Buffer
	err := netns.Run(func() error {
		old := liveReady
		defer func() { liveReady = old }()
		liveReady = func() { _ = syscall.Kill(os.Getpid(), syscall.SIGTERM) }
		code = run([]string{"verify", "-i", "lo", "-keys", keyPath}, &out, &errOut)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if code != 3 || !strings.Contains(out.String(), "lo (live): 0 packets, 0 segments judged\nresult: NOTHING VERIFIED (exit 3)") {
		t.Errorf("exit %d, stderr %q\n%s", code, errOut.String(), out.String())
	}
}

// Live mode's flag mistakes.
func TestLiveFlags(t *testing.T) {
	keyPath := writeFile(t, "k.json", demoKeys(t))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"verify", "-i", "lo"}, "-keys FILE is required to verify live packets"},
		{[]string{"verify", "-i", "lo", "-keys", keyPath, "c.pcap"}, "no CAPTURE file with it"},
		{[]string{"verify", "-port", "179", "-keys", keyPath, "c.pcap"}, "-port, -w and -every go with -i IFACE"},
		{[]string{"verify", "-i", "lo", "-port", "70000", "-keys", keyPath}, "-port 70000 is not a TCP port"},
		{[]string{"verify", "-i", "no-such-if9", "-keys", keyPath}, "-i no-such-if9: no such interface (have: "},
	} {
		code, _, errOut := cli(t, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stderr %q", tc.args, code, errOut)
		}
		oneLine(t, errOut)
	}
}

// -port keeps TCP from or to the port, over IPv4 and IPv6 (with an
// extension header too), and nothing else.
func TestKeepPort(t *testing.T) {
	cv := newConvo(t, convoConfig{client: cli6, server: srv6, clientISN: 1, serverISN: 2, md5Key: []byte("k")})
	cv.send(cv.c, 2, nil) // SYN
	v6 := cv.pkts[0]
	v4 := demoPcapPackets(t)[0]
	// The IPv6 packet with an 8-byte hop-by-hop header before TCP.
	ext := append(append(append([]byte(nil), v6[:40]...), 6, 0, 1, 4, 0, 0, 0, 0), v6[40:]...)
	ext[6] = 0
	binary.BigEndian.PutUint16(ext[4:], binary.BigEndian.Uint16(v6[4:])+8)
	for _, tc := range []struct {
		name string
		ip   []byte
		port int
		want bool
	}{
		{"any port", v4, 0, true},
		{"v4 dst", v4, 40002, true},
		{"v4 src", v4, 40001, true},
		{"v4 other", v4, 179, false},
		{"v6", v6, int(srv6.Port()), true},
		{"v6 other", v6, 1, false},
		{"v6 extension header", ext, int(srv6.Port()), true},
		{"not tcp", []byte{0x45, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8}, 179, false},
		{"short", []byte{0x45}, 179, false},
	} {
		if got := keepPort(tc.ip, tc.port); got != tc.want {
			t.Errorf("%s: keepPort = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// demoPcapPackets returns the IP packets of the built-in sample.
func demoPcapPackets(t *testing.T) [][]byte {
	t.Helper()
	c, err := pcapverify.Open(bytes.NewReader(demoPcap))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for {
		ip, _, err := c.Next()
		if err != nil {
			return out
		}
		out = append(out, append([]byte(nil), ip...))
	}
}
