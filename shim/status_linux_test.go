//go:build linux

package shim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

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

// getStatus reads the status the way README shows: HTTP over the unix
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
