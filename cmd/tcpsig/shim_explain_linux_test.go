//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/harness/proc"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/linuxsock"
	"github.com/tcpsig/tcpsig/shim"
)

// TestShimExplainMD5: A's kernel signs with TCP-MD5 a key that is not
// the one B's shim holds: the secret with a newline after it (read from
// a file with its newline), or another secret. B's shim drops A's SYNs
// and names the cause: its log says "drop explained … cause=key-encoding"
// (or secret) with the fix, tcpsig_shim_diagnoses_total counts it under
// A's peer prefix, and the status shows it as the peer's last diagnosis.
func TestShimExplainMD5(t *testing.T) {
	needQueue(t)
	if err := linuxsock.ProbeMD5(); errors.Is(err, linuxsock.ErrNoMD5) {
		t.Skip("kernel without TCP-MD5: ", err)
	}
	const secret = "tcpsig-explain-secret"
	for _, c := range []struct {
		name, clientKey, cause string
	}{
		{"newline", secret + "\n", "key-encoding"},
		{"wrong", "not-the-secret", "secret"},
	} {
		t.Run(c.name, func(t *testing.T) {
			nsA, nsB := newPair(t)
			dir := shortDir(t)
			keyPath := writeKeys(t, dir, "keys.json", fmtKeysMD5(addrA4, secret))
			sh, sock := startShim(t, nsB, dir, "-keys", keyPath, "-queue", "93", "-queues", "1")
			listen(t, nsB, netip.AddrPortFrom(addrB4, 1793))
			dialOnce(t, nsA, linuxsock.Keys{MD5: []keys.MD5{{Peer: netip.PrefixFrom(addrB4, 32), Key: []byte(c.clientKey)}}},
				netip.AddrPortFrom(addrB4, 1793))
			line := checkExplained(t, sh, sock, netip.PrefixFrom(addrA4, 32).String(), c.cause, "md5[0]")
			if c.name == "newline" {
				checkExplainDoc(t, line, getUnix(t, sock, "/metrics"), getUnix(t, sock, "/"))
			}
			if strings.Contains(sh.Log(), secret) || strings.Contains(sh.Log(), c.clientKey) {
				t.Error("a key reached the shim's log")
			}
			if err := stopShim(sh); err != nil {
				t.Errorf("shim exit on SIGTERM: %v", err)
			}
			uninstall(t, nsB, 93)
		})
	}
}

// TestShimExplainAO: two shims doing TCP-AO whose files disagree: A's
// excludes options (or uses another algorithm), B's does not. B's shim
// drops A's SYNs and names the cause and B's entry to change in its log,
// its metrics and its status.
func TestShimExplainAO(t *testing.T) {
	needQueue(t)
	entry := func(peer netip.Addr, alg string, exclude bool) string {
		return fmt.Sprintf(`{"ao": [{"alg": %q, "key": "text:tcpsig-explain-ao", "sndid": 1, "rcvid": 1, "peer": "%v/32", "exclude_options": %v}]}`,
			alg, peer, exclude)
	}
	for _, c := range []struct {
		name, fileA, cause string
	}{
		{"options", entry(addrB4, "hmac(sha1)", true), "options"},
		{"algorithm", entry(addrB4, "hmac(sha256)", false), "algorithm"},
	} {
		t.Run(c.name, func(t *testing.T) {
			nsA, nsB := newPair(t)
			dirA, dirB := shortDir(t), shortDir(t)
			keysA := writeKeys(t, dirA, "keys.json", c.fileA)
			keysB := writeKeys(t, dirB, "keys.json", entry(addrA4, "hmac(sha1)", false))
			startShim(t, nsA, dirA, "-keys", keysA, "-queue", "94", "-queues", "1")
			shB, sockB := startShim(t, nsB, dirB, "-keys", keysB, "-queue", "94", "-queues", "1")
			listen(t, nsB, netip.AddrPortFrom(addrB4, 1794))
			dialOnce(t, nsA, linuxsock.Keys{}, netip.AddrPortFrom(addrB4, 1794))
			checkExplained(t, shB, sockB, netip.PrefixFrom(addrA4, 32).String(), c.cause, "ao[0]")
		})
	}
}

// listen listens on ap in n (plain TCP) until the test ends.
func listen(t *testing.T, n *ns, ap netip.AddrPort) {
	t.Helper()
	var ln net.Listener
	if err := n.Do(func() (err error) { ln, err = net.Listen("tcp", ap.String()); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
}

// dialOnce connects from n to ap with keys (none: a plain socket), and
// fails t if the connection comes up: the far shim must drop the SYNs.
func dialOnce(t *testing.T, n *ns, k linuxsock.Keys, ap netip.AddrPort) {
	t.Helper()
	if err := n.Do(func() error {
		d := linuxsock.Dialer(k)
		d.Timeout = 1500 * time.Millisecond
		c, err := d.Dial("tcp", ap.String())
		if err == nil {
			c.Close()
			return errors.New("connected through a shim that must drop the SYNs")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// checkExplained waits for the shim's status to show peer's diagnosis,
// then checks its cause and entry there, in tcpsig_shim_diagnoses_total
// and in the log's "drop explained" line.
func checkExplained(t *testing.T, sh *proc.Proc, sock, peer, cause, entry string) string {
	t.Helper()
	var st shim.Status
	var d *shim.DiagnosisStatus
	if !waitFor(10*time.Second, func() bool {
		var err error
		if st, err = shimStatusOf(sock); err != nil {
			return false
		}
		for i := range st.Diagnoses {
			if st.Diagnoses[i].Peer == peer {
				d = &st.Diagnoses[i]
			}
		}
		return d != nil
	}) {
		t.Fatalf("no diagnosis of %s in the status: %+v (dropped %+v)", peer, st.Diagnoses, st.Counters.Dropped)
	}
	if d.Cause != cause || d.Entry != entry || d.Message == "" {
		t.Errorf("status diagnosis %+v, want cause %s, entry %s", *d, cause, entry)
	}
	scrape := getUnix(t, sock, "/metrics")
	promtoolLint(t, "diagnoses", scrape)
	fams := parseMetrics(t, scrape)
	if v, ok := series(fams, "tcpsig_shim_diagnoses_total", "peer", peer, "cause", cause); !ok || v < 1 {
		t.Errorf("tcpsig_shim_diagnoses_total{peer=%q,cause=%q} = %v (present %v), want at least 1", peer, cause, v, ok)
	}
	want := fmt.Sprintf("peer=%s local=", peer)
	var line string
	waitFor(5*time.Second, func() bool {
		for _, l := range strings.Split(sh.Log(), "\n") {
			if strings.Contains(l, `msg="drop explained"`) && strings.Contains(l, want) {
				line = l
			}
		}
		return line != ""
	})
	if !strings.Contains(line, "cause="+cause+" fix=") || !strings.Contains(line, "entry="+entry) {
		t.Errorf("the shim's log line %q, want cause=%s and entry=%s\n%s", line, cause, entry, sh.Log())
	}
	if n := strings.Count(sh.Log(), `msg="drop explained"`); n != 1 {
		t.Errorf("%d drop explained lines, want 1 (once per peer and cause)", n)
	}
	t.Logf("%s\nstatus: %+v", line, *d)
	return line
}

// checkExplainDoc compares the shim's "drop explained" line, its
// tcpsig_shim_diagnoses_total series and its status's "diagnoses" (as jq
// .diagnoses indents them) with docs/troubleshooting.md's section on the
// shim, but for the time and the client's port.
func checkExplainDoc(t *testing.T, line string, metrics, status []byte) {
	t.Helper()
	const page, heading = "docs/troubleshooting.md", "## The shim's log, metric and status"
	var series []string
	for _, l := range strings.Split(string(metrics), "\n") {
		if strings.Contains(l, "tcpsig_shim_diagnoses_total") {
			series = append(series, l)
		}
	}
	var st struct {
		Diagnoses json.RawMessage `json:"diagnoses"`
	}
	if err := json.Unmarshal(status, &st); err != nil {
		t.Fatal(err)
	}
	var diag bytes.Buffer
	if err := json.Indent(&diag, st.Diagnoses, "", "  "); err != nil {
		t.Fatal(err)
	}
	got := []string{line + "\n", strings.Join(series, "\n") + "\n", diag.String() + "\n"}
	blocks := docBlocks(t, page, heading)
	if len(blocks) != len(got) {
		t.Fatalf("%s %q: %d blocks, want %d:\n%s", page, heading, len(blocks), len(got), strings.Join(got, "\n"))
	}
	vary := regexp.MustCompile(`time=\S+|192\.0\.2\.1:\d+|"at": "[^"]*"`)
	for i := range got {
		if g, w := vary.ReplaceAllString(got[i], "_"), vary.ReplaceAllString(blocks[i], "_"); g != w {
			t.Errorf("%s %q block %d shows\n%s\nthe shim printed\n%s", page, heading, i+1, blocks[i], got[i])
		}
	}
}
