//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/tcpsig/tcpsig/harness/netns"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/linuxsock"
	"github.com/tcpsig/tcpsig/shim"
)

// getUnix GETs path over HTTP on the unix socket sock, as curl
// --unix-socket does.
func getUnix(t *testing.T, sock, path string) []byte {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	defer c.CloseIdleConnections()
	resp, err := c.Get("http://shim" + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s on %s: %v %s\n%s", path, sock, err, resp.Status, b)
	}
	return b
}

// getTCP GETs path from addr over TCP in namespace n (HTTP/1.0 by hand:
// the socket must be made on n's thread) and returns the status line and
// the body.
func getTCP(t *testing.T, n *ns, addr, path string) (string, []byte) {
	t.Helper()
	var status string
	var body []byte
	if err := n.Do(func() error {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "GET %s HTTP/1.0\r\nHost: shim\r\n\r\n", path)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		status = resp.Status
		body, err = io.ReadAll(resp.Body)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return status, body
}

func parseMetrics(t *testing.T, b []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the scrape does not parse: %v\n%s", err, b)
	}
	return fams
}

// series returns the value of family name's series with labels (pairs).
func series(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	for _, m := range fams[name].GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		ok := true
		for i := 0; i+1 < len(labels); i += 2 {
			ok = ok && have[labels[i]] == labels[i+1]
		}
		if ok && m.Counter != nil {
			return m.Counter.GetValue(), true
		}
		if ok && m.Gauge != nil {
			return m.Gauge.GetValue(), true
		}
	}
	return 0, false
}

// TestShimMetrics: a real shim under a TCP-MD5 transfer (A's kernel
// signs) serves the same metrics on its status socket and on -metrics
// (TCP, in its namespace), never the status there; the key's good
// segments, the queue's kernel counters and the session are in them;
// they parse and pass promtool check metrics; with -log-format json every
// log line is a JSON object.
func TestShimMetrics(t *testing.T) {
	needQueue(t)
	const secret = "tcpsig-metrics-secret"
	nsA, nsB := newPair(t)
	if err := nsB.Do(func() error { return netns.LinkUp("lo") }); err != nil {
		t.Fatal(err)
	}
	dir := shortDir(t)
	keyPath := writeKeys(t, dir, "keys.json", fmtKeysMD5(addrA4, secret))
	const addr = "127.0.0.1:9180"
	sh, sock := startShim(t, nsB, dir, "-keys", keyPath, "-queue", "61", "-queues", "1", "-metrics", addr, "-log-format", "json")
	const size = 4 << 20
	tr := startTransfer(t, nsA, nsB, linuxsock.ListenConfig(linuxsock.Keys{MD5: []keys.MD5{{Peer: netip.PrefixFrom(addrB4, 32), Key: []byte(secret)}}}), size)
	waitErr(t, tr.send(0, size), "transfer")

	overUnix := getUnix(t, sock, "/metrics")
	status, overTCP := getTCP(t, nsB, addr, "/metrics")
	if !strings.HasPrefix(status, "200") {
		t.Fatalf("GET /metrics on %s: %s", addr, status)
	}
	for name, b := range map[string][]byte{"status socket": overUnix, "-metrics": overTCP} {
		fams := parseMetrics(t, b)
		peer := netip.PrefixFrom(addrA4, 32).String()
		if v, ok := series(fams, "tcpsig_shim_segments_total", "peer", peer, "kind", "md5", "verdict", "good"); !ok || v == 0 {
			t.Errorf("%s: good TCP-MD5 segments of %s: %v (present %v), want some", name, peer, v, ok)
		}
		if v, ok := series(fams, "tcpsig_shim_packets_total", "result", "signed"); !ok || v == 0 {
			t.Errorf("%s: signed packets %v, want some", name, v)
		}
		if _, ok := series(fams, "tcpsig_shim_queue_dropped_packets_total", "queue", "61", "reason", "queue_full"); !ok {
			t.Errorf("%s: no kernel drop counter for queue 61", name)
		}
		if v, ok := series(fams, "tcpsig_shim_sessions", "peer", peer, "kind", "md5", "state", "established"); !ok || v != 1 {
			t.Errorf("%s: established TCP-MD5 sessions %v, want 1", name, v)
		}
		if _, ok := series(fams, "go_goroutines"); !ok {
			t.Errorf("%s: no Go runtime metrics", name)
		}
		t.Logf("scrape on the %s:\n%s", name, b)
		promtoolLint(t, name, b)
	}
	tr.finish(t)
	if status, _ := getTCP(t, nsB, addr, "/"); !strings.HasPrefix(status, "404") {
		t.Errorf("GET / on -metrics: %s, want 404: the status (ISNs, SNEs) is for the unix socket only", status)
	}
	if err := stopShim(sh); err != nil {
		t.Error(err)
	}
	lines := 0
	for _, l := range strings.Split(strings.TrimSpace(sh.Log()), "\n") {
		if !strings.HasPrefix(l, "{") {
			continue // the test binary's own lines
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil || rec["msg"] == nil || rec["level"] == nil {
			t.Errorf("-log-format json: %q is not a log record (%v)", l, err)
		}
		lines++
	}
	if lines < 2 {
		t.Errorf("-log-format json: %d JSON lines in the log:\n%s", lines, sh.Log())
	}
	uninstall(t, nsB, 61)
}

// promtoolLint runs promtool check metrics on a scrape (Debian's
// prometheus package; CI installs it); without it, says so.
func promtoolLint(t *testing.T, name string, b []byte) {
	t.Helper()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Logf("%s: promtool not found (apt-get install prometheus): the scrape's lint is not checked", name)
		return
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(b)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("%s: promtool check metrics: %v\n%s", name, err, out)
	}
}

// TestShimNotify: the systemd unit's own ExecStart (its paths moved to a
// temporary directory), started with NOTIFY_SOCKET (a unixgram socket of
// the test's, as systemd's), says READY=1 only once its rules are in and
// its status and metrics answer; SIGHUP (the unit's ExecReload) brings
// RELOADING=1 then READY=1, SIGTERM (systemctl stop) STOPPING=1, and the
// rules stay.
func TestShimNotify(t *testing.T) {
	needQueue(t)
	_, nsB := newPair(t)
	if err := nsB.Do(func() error { return netns.LinkUp("lo") }); err != nil {
		t.Fatal(err)
	}
	dir := shortDir(t)
	notifyPath := filepath.Join(dir, "notify")
	nc, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: notifyPath, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	keyPath := writeKeys(t, dir, "keys.json", fmtKeysMD5(addrA4, "notify-secret"))
	sock := filepath.Join(dir, "run", "shim.sock")
	args := shimUnitArgs(t, readUnit(t, "tcpsig-shim.service"))
	for i, a := range args {
		switch a {
		case "/etc/tcpsig/keys.json":
			args[i] = keyPath
		case "/run/tcpsig/shim.sock":
			args[i] = sock
		case "/var/lib/tcpsig/state.json":
			args[i] = filepath.Join(dir, "state.json")
		}
	}
	f, _, _ := parseShimFlags(args[1:], io.Discard, io.Discard)
	j, _ := json.Marshal(args)
	p := nsB.start(t, "tcpsig shim", []string{"TCPSIG_SHIM_HELPER=1", "TCPSIG_SHIM_ARGS=" + string(j), "NOTIFY_SOCKET=" + notifyPath},
		os.Args[0], "-test.run=^TestShimHelperProcess$", "-test.v=false")
	next := func(what string) string {
		t.Helper()
		_ = nc.SetReadDeadline(time.Now().Add(20 * time.Second))
		buf := make([]byte, 4096)
		n, _, err := nc.ReadFromUnix(buf)
		if err != nil {
			t.Fatalf("waiting for %s: %v\n%s", what, err, p.Log())
		}
		return string(buf[:n])
	}
	ready := next("READY=1")
	if !strings.HasPrefix(ready, "READY=1\n") || !strings.Contains(ready, "STATUS=1 peers") {
		t.Errorf("first notification %q, want READY=1 and a STATUS", ready)
	}
	table := shim.TableName(uint16(f.queue))
	if !rulesExist(t, nsB, table) {
		t.Error("READY=1 before the rules were in")
	}
	if _, err := shimStatusOf(sock); err != nil {
		t.Errorf("READY=1 before the status socket answers: %v", err)
	}
	if status, _ := getTCP(t, nsB, f.metrics, "/metrics"); !strings.HasPrefix(status, "200") {
		t.Errorf("READY=1 before -metrics %s answers: %s", f.metrics, status)
	}
	// The guide's curl of the metrics, on this shim's socket.
	for _, l := range serviceDocCommands(t) {
		if !strings.HasPrefix(l, "curl ") {
			continue
		}
		args := shellWords(t, strings.ReplaceAll(l, "/run/tcpsig/shim.sock", sock))
		if _, err := exec.LookPath("curl"); err != nil {
			t.Logf("no curl: the guide's %s is not run", l)
			break
		}
		out, err := exec.Command(args[0], append([]string{"-sS"}, args[1:]...)...).CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("\ntcpsig_shim_keys{kind=\"md5\"} 1\n")) {
			t.Errorf("the guide's %s: %v\n%s", l, err, out)
		}
	}
	if err := p.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if got := next("RELOADING=1"); !strings.HasPrefix(got, "RELOADING=1\nMONOTONIC_USEC=") {
		t.Errorf("on SIGHUP %q, want RELOADING=1 and MONOTONIC_USEC", got)
	}
	if got := next("READY=1 after the reload"); !strings.HasPrefix(got, "READY=1\nSTATUS=") {
		t.Errorf("after the reload %q, want READY=1", got)
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if got := next("STOPPING=1"); got != "STOPPING=1" {
		t.Errorf("on SIGTERM %q, want STOPPING=1", got)
	}
	if err := p.Stop(syscall.SIGTERM, 10*time.Second); err != nil {
		t.Error(err)
	}
	if !rulesExist(t, nsB, table) {
		t.Error("the rules went with the shim")
	}
	// The guide's (and the uninstall unit's) tcpsig shim -uninstall.
	var ran bool
	for _, l := range serviceDocCommands(t) {
		if rest, ok := strings.CutPrefix(l, "tcpsig shim -uninstall"); ok {
			var out, errb bytes.Buffer
			var code int
			if err := nsB.Do(func() error {
				code = run(shellWords(t, "shim -uninstall"+rest), &out, &errb)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if code != 0 || !strings.Contains(out.String(), "removed the rules of queue") || rulesExist(t, nsB, table) {
				t.Errorf("the guide's %s: exit %d, %q %q", l, code, out.String(), errb.String())
			}
			ran = true
		}
	}
	if !ran {
		t.Error("the guide has no tcpsig shim -uninstall")
		uninstall(t, nsB, int(f.queue))
	}
}
