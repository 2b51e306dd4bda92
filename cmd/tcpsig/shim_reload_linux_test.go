//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/harness/proc"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/linuxsock"
)

// TestShimReloadMD5: SIGHUP mid-transfer with a keys file that gained a
// peer keeps the TCP-MD5 session (A's kernel signs) going: the data arrive
// byte for byte, A's kernel counts no failure, the shim drops nothing and
// now holds both keys.
func TestShimReloadMD5(t *testing.T) {
	needQueue(t)
	const secret = "tcpsig-reload-secret"
	nsA, nsB := newPair(t)
	dir := shortDir(t)
	keyPath := writeKeys(t, dir, "keys.json", fmtKeysMD5(addrA4, secret))
	sh, sock := startShim(t, nsB, dir, "-keys", keyPath, "-queue", "45")
	before := md5Counters(t, nsA)
	const size = 16 << 20
	tr := startTransfer(t, nsA, nsB, linuxsock.ListenConfig(linuxsock.Keys{MD5: []keys.MD5{{Peer: netip.PrefixFrom(addrB4, 32), Key: []byte(secret)}}}), size)
	waitErr(t, tr.send(0, size/2), "first half")
	writeKeys(t, dir, "keys.json", fmt.Sprintf(`{"md5": [{"peer": "%v/32", "key": "text:%s"}, {"peer": "198.51.100.7/32", "key": "text:other"}]}`, addrA4, secret))
	second := tr.send(size/2, size)
	if err := sh.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitErr(t, second, "second half")
	tr.finish(t)
	st, err := shimStatusOf(sock)
	if err != nil {
		t.Fatal(err)
	}
	if st.Keys["md5"] != 2 || st.Counters.Dropped.Total() != 0 {
		t.Errorf("after the reload: keys %v, counters %+v; want 2 MD5 keys and nothing dropped", st.Keys, st.Counters)
	}
	if after := md5Counters(t, nsA); after != before {
		t.Errorf("A's kernel MD5 counters %+v -> %+v", before, after)
	}
	if !waitFor(5*time.Second, func() bool { return bytes.Contains([]byte(sh.Log()), []byte("keys reloaded")) }) {
		t.Errorf("no reload logged:\n%s", sh.Log())
	}
}

// TestShimReloadAO: two plain sockets, each behind its own shim, run a
// TCP-AO session on MKT 1; half-way both keys files gain MKT 2 (last) and
// both shims get SIGHUP, in no set order: each asks the other for MKT 2
// (RNext) and switches when asked, so the session moves to MKT 2 both ways
// without a segment refused for a key one end lacked, and the data arrive
// byte for byte.
// (The engine is on both ends here; the same rotation against Linux's own
// TCP-AO is a qemu case.)
func TestShimReloadAO(t *testing.T) {
	needQueue(t)
	nsA, nsB := newPair(t)
	dirA, dirB := shortDir(t), shortDir(t)
	file := func(peer netip.Addr, ids ...int) string {
		s := `{"ao": [`
		for i, id := range ids {
			if i > 0 {
				s += ","
			}
			s += fmt.Sprintf(`{"alg": "cmac(aes128)", "key": "hex:%x", "sndid": %d, "rcvid": %d, "peer": "%v/32"}`,
				bytes.Repeat([]byte{byte(0x30 + id)}, 16), id, id, peer)
		}
		return s + "]}"
	}
	keysA := writeKeys(t, dirA, "keys.json", file(addrB4, 1))
	keysB := writeKeys(t, dirB, "keys.json", file(addrA4, 1))
	shA, sockA := startShim(t, nsA, dirA, "-keys", keysA, "-queue", "46")
	shB, sockB := startShim(t, nsB, dirB, "-keys", keysB, "-queue", "46")
	const size = 16 << 20
	tr := startTransfer(t, nsA, nsB, nil, size)
	waitErr(t, tr.send(0, size/2), "first half")
	writeKeys(t, dirA, "keys.json", file(addrB4, 1, 2))
	writeKeys(t, dirB, "keys.json", file(addrA4, 1, 2))
	second := tr.send(size/2, size)
	for _, p := range []*proc.Proc{shA, shB} {
		if err := p.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	waitErr(t, second, "second half")
	// The FIN exchange carries the last segments of the new keys.
	tr.finish(t)
	for _, sock := range []string{sockA, sockB} {
		st, err := shimStatusOf(sock)
		if err != nil {
			t.Fatal(err)
		}
		if st.Counters.Dropped.Total() != 0 {
			t.Errorf("%s: dropped %+v", sock, st.Counters.Dropped)
		}
		for _, c := range st.Conns {
			if c.CurrentKeyID != 2 || c.RNextKeyID != 2 {
				t.Errorf("%s: session %v-%v on KeyID %d / RNext %d after the reload, want 2/2", sock, c.Local, c.Remote, c.CurrentKeyID, c.RNextKeyID)
			}
		}
		if len(st.Conns) == 0 {
			t.Errorf("%s: no session tracked", sock)
		}
	}
	curlStatus(t, sockB)
}

// curlStatus reads a shim's status with docs/shim.md's command, curl
// --unix-socket SOCK http://shim/ (its socket made sock), and checks that
// its sessions' kind and state are the words the log uses.
func curlStatus(t *testing.T, sock string) {
	t.Helper()
	var cmdLine string
	for _, b := range docBlocks(t, "docs/shim.md", "## Reading the shim's status") {
		if l, _, _ := strings.Cut(b, "\n"); strings.HasPrefix(l, "# curl ") {
			cmdLine = strings.TrimPrefix(l, "# ")
		}
	}
	args := strings.Fields(cmdLine)
	if len(args) != 4 || args[1] != "--unix-socket" {
		t.Fatalf("docs/shim.md's status command %q is not curl --unix-socket SOCK URL", cmdLine)
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Log("no curl: docs/shim.md's status command is not tried (the status was read over HTTP all the same)")
		return
	}
	args[2] = sock
	var stderr bytes.Buffer
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.Bytes())
	}
	t.Logf("%s:\n%s", strings.Join(args, " "), out)
	var raw struct {
		Conns  []map[string]any `json:"conns"`
		Queues []map[string]any `json:"queues"`
	}
	if err := json.Unmarshal(out, &raw); err != nil || len(raw.Conns) == 0 {
		t.Fatalf("curl's output is not a status with a session: %v\n%s", err, out)
	}
	if len(raw.Queues) == 0 || raw.Queues[0]["queue_full"] == nil || raw.Queues[0]["socket_full"] == nil {
		t.Errorf("status queues %v: want each queue's kernel drop counters", raw.Queues)
	}
	for _, c := range raw.Conns {
		if c["kind"] != "TCP-AO" || c["state"] == nil || c["state"] == "unknown" {
			t.Errorf("session %v: kind %v state %v, want the log's words", c["remote"], c["kind"], c["state"])
		}
	}
}
