//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/harness/kstat"
	"github.com/tcpsig/tcpsig/harness/netns"
	"github.com/tcpsig/tcpsig/harness/nfprobe"
	"github.com/tcpsig/tcpsig/harness/proc"
	"github.com/tcpsig/tcpsig/shim"
	"github.com/tcpsig/tcpsig/shim/nfrules"
)

// The shim tests run BIRD, tcpsig shim (this test binary, re-executed) and
// TCP endpoints in two network namespaces joined by a veth pair:
//
//	ns A: shA 192.0.2.1/24 2001:db8::1/64  — the kernel signs (TCP-MD5)
//	ns B: shB 192.0.2.2/24 2001:db8::2/64  — plain sockets behind tcpsig shim

// TestShimHelperProcess is tcpsig itself when the shim tests re-execute
// the test binary; otherwise it does nothing.
func TestShimHelperProcess(t *testing.T) {
	if os.Getenv("TCPSIG_SHIM_HELPER") != "1" {
		t.Skip("helper process for the shim tests")
	}
	var args []string
	if err := json.Unmarshal([]byte(os.Getenv("TCPSIG_SHIM_ARGS")), &args); err != nil {
		os.Exit(2)
	}
	os.Exit(run(args, os.Stdout, os.Stderr))
}

func needRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces, netfilter rules and a netfilter queue")
	}
}

// ns is a network namespace kept alive by one locked goroutine; processes
// started from Do live in it.
type ns struct{ *netns.Keeper }

func newNS(t testing.TB) *ns {
	k, err := netns.NewKeeper()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	return &ns{k}
}

var (
	addrA4 = netip.MustParseAddr("192.0.2.1")
	addrB4 = netip.MustParseAddr("192.0.2.2")
	addrA6 = netip.MustParseAddr("2001:db8::1")
	addrB6 = netip.MustParseAddr("2001:db8::2")
)

// newPair makes namespaces A and B joined by a veth pair with the
// addresses above.
func newPair(t testing.TB) (a, b *ns) {
	a, b = newNS(t), newNS(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(a.Do(func() error { return netns.AddVeth("shA", "shB", b.FD()) }))
	for _, x := range []struct {
		n        *ns
		dev      string
		ip4, ip6 netip.Addr
	}{{a, "shA", addrA4, addrA6}, {b, "shB", addrB4, addrB6}} {
		must(x.n.Do(func() error {
			if err := netns.LinkUp(x.dev); err != nil {
				return err
			}
			if err := netns.AddAddr(x.dev, netip.PrefixFrom(x.ip4, 24)); err != nil {
				return err
			}
			return netns.AddAddr(x.dev, netip.PrefixFrom(x.ip6, 64))
		}))
	}
	return a, b
}

// start runs a command in n; it is killed at the end of the test and its
// output logged if the test failed.
func (n *ns) start(t testing.TB, name string, env []string, argv ...string) *proc.Proc {
	t.Helper()
	var p *proc.Proc
	err := n.Do(func() (err error) {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), env...)
		p, err = proc.Start(name, cmd)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("--- %s output:\n%s", name, p.Log())
		}
	})
	return p
}

// startShim runs tcpsig shim with args in n and waits until its status
// socket answers.
func startShim(t testing.TB, n *ns, dir string, args ...string) (*proc.Proc, string) {
	t.Helper()
	sock := filepath.Join(dir, "shim.sock")
	args = append([]string{"shim", "-status", sock}, args...)
	j, _ := json.Marshal(args)
	p := n.start(t, "tcpsig shim", []string{"TCPSIG_SHIM_HELPER=1", "TCPSIG_SHIM_ARGS=" + string(j)},
		os.Args[0], "-test.run=^TestShimHelperProcess$", "-test.v=false")
	waitReady(t, p, "serving its status", func() bool { _, err := shimStatusOf(sock); return err == nil })
	return p, sock
}

// waitReady waits up to 20 s until ready reports true, and fails t if p
// exits first or the time runs out without it.
func waitReady(t testing.TB, p *proc.Proc, what string, ready func() bool) {
	t.Helper()
	if err := p.WaitReady(what, 20*time.Second, ready); err != nil {
		t.Fatal(err)
	}
}

// shimStatusOf reads a shim's status from its socket, as docs/shim.md's
// curl command does.
func shimStatusOf(sock string) (shim.Status, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return shim.ReadStatus(ctx, sock)
}

// stopShim sends SIGTERM and returns the exit status (an error wrapping
// proc.ErrTimeout if it has not exited in 10 s).
func stopShim(p *proc.Proc) error { return p.Stop(syscall.SIGTERM, 10*time.Second) }

func writeKeys(t testing.TB, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func rulesExist(t testing.TB, n *ns, table string) bool {
	t.Helper()
	var ok bool
	if err := n.Do(func() (err error) { ok, err = nfrules.Exists(table); return err }); err != nil {
		t.Fatal(err)
	}
	return ok
}

func md5Counters(t testing.TB, n *ns) kstat.MD5 {
	t.Helper()
	var c kstat.MD5
	if err := n.Do(func() (err error) { c, err = kstat.ReadMD5(); return err }); err != nil {
		t.Fatal(err)
	}
	return c
}

// shortDir is a temporary directory with a short path: unix socket paths
// are limited to 107 bytes.
func shortDir(t testing.TB) string {
	d, err := os.MkdirTemp("", "shim")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// TestShimCommandErrors: usage errors exit 2 with a message.
func TestShimCommandErrors(t *testing.T) {
	dir := t.TempDir()
	keys := writeKeys(t, dir, "keys.json", fmtKeysMD5(addrA4, "s"))
	notes := writeKeys(t, dir, "notes", "precious")
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "-keys FILE is required"},
		{[]string{"-keys", "/nonexistent/keys.json"}, "no such file"},
		{[]string{"-keys", "k", "-queue", "70000"}, "want 0..65535"},
		{[]string{"-keys", "k", "-queues", "9"}, "want 1..8 queues"},
		{[]string{"-keys", "k", "-queue", "65535", "-queues", "2"}, "want 1..8 queues"},
		{[]string{"-keys", "k", "extra"}, "unexpected argument"},
		{[]string{"-keys", keys, "-status", notes}, "tcpsig shim: status path in use: " + notes + " is a regular file, not a socket: not removed\n"},
	} {
		var out, errb bytes.Buffer
		if code := run(append([]string{"shim"}, c.args...), &out, &errb); code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("shim %q: exit %d, stderr %q; want 2 and %q", c.args, code, errb.String(), c.want)
		}
	}
}

// fmtKeysMD5 is a keys file with one TCP-MD5 key for peer.
func fmtKeysMD5(peer netip.Addr, secret string) string {
	return fmt.Sprintf(`{"md5": [{"peer": %q, "key": "text:%s"}]}`, netip.PrefixFrom(peer, peer.BitLen()), secret)
}

func writeConf(path, body string) error { return os.WriteFile(path, []byte(body), 0o644) }

// needQueue skips without root, or when this kernel cannot queue
// packets by rule or bind a netfilter queue.
func needQueue(t testing.TB) {
	t.Helper()
	needRoot(t)
	nfprobe.Need(t)
}

// uninstall runs tcpsig shim -uninstall -queue queue in n, as an operator
// does, and checks that the rules are gone and that it said so.
func uninstall(t testing.TB, n *ns, queue int) {
	t.Helper()
	var out, errb bytes.Buffer
	var code int
	if err := n.Do(func() error {
		code = run([]string{"shim", "-uninstall", "-queue", fmt.Sprint(queue)}, &out, &errb)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if code != 0 || !strings.Contains(out.String(), "removed the rules of queue") {
		t.Errorf("shim -uninstall -queue %d: exit %d, stdout %q, stderr %q", queue, code, out.String(), errb.String())
	}
	if rulesExist(t, n, shim.TableName(uint16(queue))) {
		t.Errorf("rules of queue %d still there after -uninstall", queue)
	}
}
