//go:build linux

package shim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/harness/netns"
	"github.com/tcpsig/tcpsig/shim/nfqueue"
	"github.com/tcpsig/tcpsig/shim/nfrules"
	"golang.org/x/sys/unix"
)

// statusShim is a shim (not running: no root needed) tracking one TCP-AO
// session seeded as a restarted shim would, logging to log.
func statusShim(t *testing.T, dir string, log io.Writer) *Shim {
	t.Helper()
	keys := filepath.Join(dir, "keys.json")
	body := `{"ao": [{"alg": "hmac(sha1)", "key": "text:one", "sndid": 1, "rcvid": 2, "peer": "192.0.2.1/32"}]}`
	if err := os.WriteFile(keys, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Keys: keys, Queue: 1, Status: filepath.Join(dir, "shim.sock"),
		Log: slog.New(slog.NewTextHandler(log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	err = s.layer.Seed(ao.Endpoint{Local: netip.MustParseAddrPort("192.0.2.2:40000"), Remote: netip.MustParseAddrPort("192.0.2.1:179"),
		Established: true, LocalISN: 1000, RemoteISN: 5000, SendSeq: 1001, RecvSeq: 5001, CurrentSendID: 1, RNextRecvID: 2})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// getStatus reads the status the way docs/shim.md shows: HTTP over the unix
// socket (curl --unix-socket SOCK http://shim/).
func getStatus(t *testing.T, sock, path string) (int, []byte) {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	resp, err := c.Get("http://shim" + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// TestStatusHTTP: the status socket answers HTTP GET with JSON whose kinds
// and states are the words of the SIGUSR1 log, not numbers.
func TestStatusHTTP(t *testing.T) {
	dir := t.TempDir()
	var log bytes.Buffer
	s := statusShim(t, dir, &log)
	ln, err := s.serveStatus()
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, path := range []string{"/", "/status"} {
		code, b := getStatus(t, s.cfg.Status, path)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, code, b)
		}
		var raw struct {
			Counters map[string]any   `json:"counters"`
			Conns    []map[string]any `json:"conns"`
		}
		if err := json.Unmarshal(b, &raw); err != nil {
			t.Fatalf("GET %s: %v\n%s", path, err, b)
		}
		if len(raw.Conns) != 1 {
			t.Fatalf("GET %s: conns %v, want the seeded session", path, raw.Conns)
		}
		if d, _ := raw.Counters["dropped"].(map[string]any); raw.Counters["signed"] == nil || d == nil || d["bad_mac"] == nil {
			t.Errorf("GET %s: counters %v, want the log's names (signed, dropped.bad_mac)", path, raw.Counters)
		}
		c := raw.Conns[0]
		if c["kind"] != "TCP-AO" || c["state"] != "established" || c["local"] != "192.0.2.2:40000" || c["keyid"] != 1.0 || c["rnext"] != 2.0 {
			t.Errorf("GET %s: conn %v", path, c)
		}
	}
	if code, _ := getStatus(t, s.cfg.Status, "/nothing"); code != http.StatusNotFound {
		t.Errorf("GET /nothing: %d, want 404", code)
	}
	st, err := ReadStatus(context.Background(), s.cfg.Status)
	if err != nil {
		t.Fatalf("ReadStatus: %v", err)
	}
	if len(st.Conns) != 1 || st.Conns[0].Kind != "TCP-AO" || st.Conns[0].State != "established" || st.Conns[0].RNextKeyID != 2 {
		t.Errorf("ReadStatus: conns %+v, want the seeded session", st.Conns)
	}
	if _, err := ReadStatus(context.Background(), filepath.Join(dir, "nothing.sock")); err == nil {
		t.Error("ReadStatus of a path with no socket: no error")
	}
	s.LogStatus()
	if !strings.Contains(log.String(), "kind=TCP-AO state=established") {
		t.Errorf("the log does not use the status's words:\n%s", log.String())
	}
}

// TestStatusPath: the shim replaces only a stale socket at the status
// path; a regular file, a directory or a socket another shim answers on is
// an error and stays.
func TestStatusPath(t *testing.T) {
	dir := t.TempDir()
	s := statusShim(t, dir, io.Discard)
	sock := s.cfg.Status

	if err := os.WriteFile(sock, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.serveStatus(); !errors.Is(err, ErrStatusPath) {
		t.Errorf("a regular file at the path: %v, want ErrStatusPath", err)
	}
	// New refuses it too, before Run installs anything.
	if _, err := New(s.cfg); !errors.Is(err, ErrStatusPath) || !strings.Contains(err.Error(), "is a regular file, not a socket") {
		t.Errorf("New with a regular file at the status path: %v, want ErrStatusPath", err)
	}
	if b, err := os.ReadFile(sock); err != nil || string(b) != "precious" {
		t.Fatalf("the file at the path was touched: %q, %v", b, err)
	}
	os.Remove(sock)
	if err := os.Mkdir(sock, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := s.serveStatus(); !errors.Is(err, ErrStatusPath) {
		t.Errorf("a directory at the path: %v, want ErrStatusPath", err)
	}
	os.Remove(sock)

	// A live socket (another shim's): refused, and still served.
	other, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.serveStatus(); !errors.Is(err, ErrStatusPath) {
		t.Errorf("a socket that answers: %v, want ErrStatusPath", err)
	}
	other.(*net.UnixListener).SetUnlinkOnClose(false)
	other.Close()

	// The same socket, now stale (its process gone): replaced.
	if fi, err := os.Lstat(sock); err != nil || fi.Mode().Type() != os.ModeSocket {
		t.Fatalf("no stale socket to test with: %v %v", fi, err)
	}
	ln, err := s.serveStatus()
	if err != nil {
		t.Fatalf("a stale socket: %v, want it replaced", err)
	}
	defer ln.Close()
	if code, _ := getStatus(t, sock, "/"); code != http.StatusOK {
		t.Errorf("after replacing the stale socket: %d", code)
	}
}

// TestStatusQueueDrops: the status socket shows the kernel's drop counters
// of the shim's queues. Its queue here is bound but answered by nobody and
// holds 2 packets: of 8 connections' SYNs, the kernel drops (and counts)
// at least 6, and the status read over HTTP from threads outside the
// namespace shows them.
func TestStatusQueueDrops(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces and netfilter rules")
	}
	dir := t.TempDir()
	s := statusShim(t, dir, io.Discard)
	peer := netip.MustParseAddr("192.0.2.1")
	err := netns.Run(func() error {
		if err := netns.AddAddr("lo", netip.MustParsePrefix("192.0.2.1/32")); err != nil {
			return err
		}
		q, err := nfqueue.Open(nfqueue.Config{Num: 31, MaxLen: 2})
		if err != nil {
			return err
		}
		defer q.Close()
		s.setQueues([]*nfqueue.Queue{q})
		if _, err := nfrules.Install(nfrules.Spec{Table: "shtest", Queue: 31, Peers: []netip.Prefix{netip.PrefixFrom(peer, 32)}}); err != nil {
			return err
		}
		for range 8 {
			fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			if err := unix.Connect(fd, &unix.SockaddrInet4{Port: 9, Addr: peer.As4()}); err != nil && err != unix.EINPROGRESS && err != unix.EPERM {
				return err
			}
		}
		ln, err := s.serveStatus()
		if err != nil {
			return err
		}
		defer ln.Close()
		code, b := getStatus(t, s.cfg.Status, "/")
		if code != http.StatusOK {
			t.Fatalf("GET /: %d %s", code, b)
		}
		var st struct {
			Queues []map[string]float64 `json:"queues"`
		}
		if err := json.Unmarshal(b, &st); err != nil {
			return err
		}
		if len(st.Queues) != 1 || st.Queues[0]["num"] != 31 || st.Queues[0]["waiting"] != 2 || st.Queues[0]["queue_full"] < 6 {
			t.Errorf("status queues %v: want queue 31 with 2 waiting and at least 6 dropped", st.Queues)
		}
		t.Logf("queues: %v", st.Queues)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestStatusSocketMode: the status socket is 0600 whatever the umask (0,
// or one that takes the owner's own bits), and the directories the shim
// creates for it 0700; a directory that exists keeps its mode.
func TestStatusSocketMode(t *testing.T) {
	for _, mask := range []int{0, 0o277} {
		t.Run(fmt.Sprintf("umask %#o", mask), func(t *testing.T) {
			dir := t.TempDir()
			s := statusShim(t, dir, io.Discard)
			if err := os.Mkdir(filepath.Join(dir, "run"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(filepath.Join(dir, "run"), 0o755); err != nil {
				t.Fatal(err)
			}
			setUmask(t, mask)
			// In a directory that exists, then in two the shim creates.
			for _, sock := range []string{s.cfg.Status, filepath.Join(dir, "run", "tcpsig", "sub", "shim.sock")} {
				s.cfg.Status = sock
				ln, err := s.serveStatus()
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
				if fi, err := os.Lstat(sock); err != nil || fi.Mode() != os.ModeSocket|statusMode {
					t.Errorf("%s: %v %v, want %v", sock, fi.Mode(), err, os.ModeSocket|statusMode)
				}
				if code, b := getStatus(t, sock, "/"); code != http.StatusOK {
					t.Errorf("GET / on %s: %d %s", sock, code, b)
				}
			}
			for path, want := range map[string]os.FileMode{
				filepath.Join(dir, "run", "tcpsig", "sub"): os.ModeDir | 0o700,
				filepath.Join(dir, "run", "tcpsig"):        os.ModeDir | 0o700,
				filepath.Join(dir, "run"):                  os.ModeDir | 0o755,
			} {
				if fi, err := os.Lstat(path); err != nil || fi.Mode() != want {
					t.Errorf("%s: %v %v, want %v", path, fi.Mode(), err, want)
				}
			}
		})
	}
}

// TestStatusSocketNeverOpen: under umask 0 the socket is statusMode as
// bind(2) creates it, before any chmod: no moment at which anyone could
// connect.
func TestStatusSocketNeverOpen(t *testing.T) {
	setUmask(t, 0)
	sock := filepath.Join(t.TempDir(), "shim.sock")
	ln, err := listenUnixMode(sock, statusMode)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if fi, err := os.Lstat(sock); err != nil || fi.Mode() != os.ModeSocket|statusMode {
		t.Errorf("%s as bound: %v %v, want %v", sock, fi.Mode(), err, os.ModeSocket|statusMode)
	}
}

// lockedWriter is an io.Writer safe for the status server's goroutines
// and the test's at once.
type lockedWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// peerHelperEnv names the socket TestStatusPeerHelper reads as nobody.
const peerHelperEnv = "TCPSIG_STATUS_PEER_SOCK"

// TestStatusPeerCred: a client running as nobody (uid 65534) is closed
// unanswered even where the socket's mode would let it in (chmod 0666
// here), and warned of; root's client is served. The client is a child
// process (this test binary, TestStatusPeerHelper) that drops to nobody
// before it connects: SO_PEERCRED holds the connecting credentials.
func TestStatusPeerCred(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the client drops to uid 65534")
	}
	// A directory nobody may pass through (t.TempDir's parent is 0700).
	dir, err := os.MkdirTemp("", "tcpsig-status-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	var log lockedWriter
	s := statusShim(t, dir, &log)
	ln, err := s.serveStatus()
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := os.Chmod(s.cfg.Status, 0o666); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestStatusPeerHelper$", "-test.v")
		cmd.Env = append(os.Environ(), peerHelperEnv+"="+s.cfg.Status)
		out, _ := cmd.CombinedOutput()
		if !strings.Contains(string(out), "OUTCOME refused") {
			t.Fatalf("nobody's client, want it refused:\n%s", out)
		}
		_, outcome, _ := strings.Cut(string(out), "OUTCOME ")
		outcome, _, _ = strings.Cut(outcome, "\n")
		t.Logf("nobody's client: %s", outcome)
	}
	if code, b := getStatus(t, s.cfg.Status, "/"); code != http.StatusOK {
		t.Errorf("root's client: %d %s, want served", code, b)
	}
	if n := strings.Count(log.String(), "refused a client"); n != 1 || !strings.Contains(log.String(), "uid=65534") {
		t.Errorf("want one warning (the second refusal within refusalEvery) naming uid 65534, got %d:\n%s", n, log.String())
	}
}

// TestStatusPeerHelper is TestStatusPeerCred's client: as nobody, it
// sends GET / to the socket in $TCPSIG_STATUS_PEER_SOCK and prints
// "OUTCOME served", "OUTCOME refused" (closed unanswered) or why it
// could not tell.
func TestStatusPeerHelper(t *testing.T) {
	sock := os.Getenv(peerHelperEnv)
	if sock == "" {
		t.Skip("the client of TestStatusPeerCred, run by it")
	}
	// Setgroups, Setgid and Setuid apply to every thread (Go ≥ 1.16).
	if err := syscall.Setgroups(nil); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Setgid(65534); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Setuid(65534); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() != 65534 || os.Geteuid() != 65534 {
		t.Fatalf("still uid %d euid %d", os.Getuid(), os.Geteuid())
	}
	c, err := net.DialTimeout("unix", sock, 5*time.Second)
	if err != nil {
		fmt.Println("OUTCOME cannot connect:", err)
		return
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "GET / HTTP/1.0\r\nHost: shim\r\n\r\n"); err != nil {
		fmt.Println("OUTCOME refused (write:", err, ")")
		return
	}
	b, err := io.ReadAll(c)
	switch {
	case len(b) > 0:
		fmt.Printf("OUTCOME served: %.40q\n", b)
	case err == nil || errors.Is(err, syscall.ECONNRESET):
		fmt.Println("OUTCOME refused")
	default:
		fmt.Println("OUTCOME unknown:", err)
	}
}

// TestStatusPeerRules: root and the shim's user are answered, no one else.
func TestStatusPeerRules(t *testing.T) {
	for _, c := range []struct {
		peer, self uint32
		want       bool
	}{{0, 0, true}, {0, 1000, true}, {1000, 1000, true}, {65534, 0, false}, {65534, 1000, false}, {1000, 1001, false}} {
		if got := allowedPeer(c.peer, c.self); got != c.want {
			t.Errorf("allowedPeer(%d, %d) = %v, want %v", c.peer, c.self, got, c.want)
		}
	}
}

// TestRefusalLog: one warning per refusalEvery, the next one counting the
// refusals in between; the clock is the test's.
func TestRefusalLog(t *testing.T) {
	var log bytes.Buffer
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := refusalLog{log: slog.New(slog.NewTextHandler(&log, nil)), now: func() time.Time { return now }}
	cred := &unix.Ucred{Pid: 7, Uid: 65534, Gid: 65534}
	for _, step := range []time.Duration{0, time.Second, refusalEvery - 2*time.Second, time.Second, refusalEvery} {
		now = now.Add(step)
		r.refused(cred, nil)
	}
	r.refused(nil, errNoPeerCred)
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "suppressed=0 uid=65534 gid=65534 pid=7") ||
		!strings.Contains(lines[1], "suppressed=2") || !strings.Contains(lines[2], "suppressed=0") {
		t.Errorf("warnings:\n%s\nwant three: at 0 (none suppressed), at 10s (2 suppressed), at 20s", log.String())
	}
}
