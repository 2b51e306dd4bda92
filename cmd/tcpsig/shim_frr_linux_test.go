//go:build linux

package main

import (
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

	"github.com/tcpsig/tcpsig/shim"
)

// frrBgpd is where Debian's frr package installs bgpd.
const frrBgpd = "/usr/lib/frr/bgpd"

// frr is one FRR bgpd of a test, run without zebra.
type frr struct {
	vty string // the directory of its vty socket
}

func needFRR(t *testing.T) {
	t.Helper()
	needQueue(t)
	needBIRD(t)
	if _, err := os.Stat(frrBgpd); err != nil {
		t.Skipf("needs FRR (%s: %v; Debian: apt-get install frr)", frrBgpd, err)
	}
	if _, err := exec.LookPath("vtysh"); err != nil {
		t.Skip("needs FRR's vtysh (not in PATH; Debian: apt-get install frr)")
	}
}

// startFRR writes a bgpd config for s (no password) and runs bgpd in n
// with its own config, pid file and vty socket under dir, without zebra
// (-Z) and so without touching the kernel's routes.
func startFRR(t *testing.T, n *ns, dir string, s birdSide) *frr {
	t.Helper()
	conf := fmt.Sprintf(`frr defaults traditional
hostname frr-a
log stdout informational
!
router bgp %d
 bgp router-id 192.0.2.1
 no bgp ebgp-requires-policy
 no bgp network import-check
 timers bgp 2 6
 neighbor %s remote-as %d
 neighbor %s timers connect 1
 address-family ipv4 unicast
  network %s
 exit-address-family
!
`, s.as, s.them, s.peer, s.them, s.route)
	vty := filepath.Join(dir, "frr")
	if err := os.Mkdir(vty, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(vty, "bgpd.conf")
	if err := writeConf(cfg, conf); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(vty, "bgpd.pid")
	p := n.start(t, "frr bgpd", nil, frrBgpd, "-Z", "-S", "-P", "0", "-f", cfg,
		"-i", pidFile, "-z", filepath.Join(vty, "zserv.api"), "--vty_socket", vty)
	// Before n.start's kill: bgpd keeps a log buffer in /var/tmp/frr/bgpd.PID
	// (a fixed path) and removes it when it exits on SIGTERM; the
	// removal here is for when it did not.
	t.Cleanup(func() {
		pid, _ := os.ReadFile(pidFile)
		_ = p.Stop(syscall.SIGTERM, 10*time.Second)
		if pid := strings.TrimSpace(string(pid)); pid != "" {
			os.RemoveAll("/var/tmp/frr/bgpd." + pid)
		}
	})
	return &frr{vty: vty}
}

// vtysh runs an FRR command against f's bgpd.
func (f *frr) vtysh(cmd string) string {
	out, err := exec.Command("vtysh", "--vty_socket", f.vty, "-d", "bgpd", "-c", cmd).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("vtysh: %v: %s", err, out)
	}
	return string(out)
}

// frrNeighbor is what the test reads of "show bgp neighbors PEER json".
type frrNeighbor struct {
	State       string `json:"bgpState"`
	Established int    `json:"connectionsEstablished"`
	Dropped     int    `json:"connectionsDropped"`
}

// neighbor reads f's view of peer; ok is false if bgpd did not answer.
func (f *frr) neighbor(peer netip.Addr) (frrNeighbor, bool) {
	var m map[string]frrNeighbor
	if err := json.Unmarshal([]byte(f.vtysh(fmt.Sprintf("show bgp neighbors %s json", peer))), &m); err != nil {
		return frrNeighbor{}, false
	}
	nb, ok := m[peer.String()]
	return nb, ok
}

// hasRoute reports whether f's BGP table holds prefix, learned from BGP.
func (f *frr) hasRoute(prefix string) bool {
	var r struct {
		Paths []struct {
			Valid bool `json:"valid"`
		} `json:"paths"`
	}
	if err := json.Unmarshal([]byte(f.vtysh("show bgp ipv4 unicast "+prefix+" json")), &r); err != nil {
		return false
	}
	return len(r.Paths) > 0 && r.Paths[0].Valid
}

// TestShimFRRBIRDSchedule: FRR's bgpd (no TCP-AO of its own) behind one
// tcpsig shim peers with BIRD behind another; neither daemon has a
// password, the shims do TCP-AO, and both keys files schedule a
// rotation: MKT 1 sends until T1 and is accepted until T2, MKT 2 sends
// from T1. The session comes up on MKT 1; at T1, with no signal and no
// reload, both shims move it to MKT 2 both ways. No segment is refused,
// the TCP connection is the same one (same ISNs), FRR counts one
// connection and no drop, and the routes stay exchanged.
func TestShimFRRBIRDSchedule(t *testing.T) {
	needFRR(t)
	nsA, nsB := newPair(t)
	dirA, dirB := shortDir(t), shortDir(t)
	now := time.Now().UTC().Truncate(time.Second)
	t1, t2 := now.Add(25*time.Second), now.Add(31*time.Second)
	file := func(peer netip.Addr) string { return aoScheduleFile(peer, "frr-bird-key", now, t1, t2) }
	_, sockA := startShim(t, nsA, dirA, "-keys", writeKeys(t, dirA, "keys.json", file(addrB4)), "-queue", "51")
	_, sockB := startShim(t, nsB, dirB, "-keys", writeKeys(t, dirB, "keys.json", file(addrA4)), "-queue", "51")

	sa, sb := birdPair(false)
	sb.passive = true
	b := startBIRD(t, nsB, dirB, "b", sb)
	// FRR connects only once BIRD listens: a SYN refused by B's kernel
	// would leave a second, reset session in the shims' status.
	if !waitFor(20*time.Second, func() bool { return listensBGP(t, nsB) }) {
		t.Fatalf("BIRD does not listen on port 179: %s", b.birdc("show", "protocols", "all", "peer"))
	}
	a := startFRR(t, nsA, dirA, sa)
	up := func() bool {
		nb, _ := a.neighbor(addrB4)
		return nb.State == "Established" && b.established()
	}
	if !waitFor(20*time.Second, up) {
		t.Fatalf("no Established session:\nFRR: %s\nBIRD: %s\nshim A: %s\nshim B: %s", a.vtysh("show bgp summary"),
			b.birdc("show", "protocols", "all", "peer"), statusText(sockA), statusText(sockB))
	}
	if !waitFor(10*time.Second, func() bool { return a.hasRoute(sb.route) && b.hasRoute(sa.route) }) {
		t.Fatalf("routes not exchanged:\nFRR: %s\nBIRD: %s", a.vtysh("show bgp ipv4 unicast"), b.birdc("show", "route"))
	}
	shims := []struct {
		name, sock string
		before     shim.ConnStatus
	}{{"shim A (FRR)", sockA, onlyConn(t, sockA)}, {"shim B (BIRD)", sockB, onlyConn(t, sockB)}}
	if !time.Now().Before(t1) {
		t.Fatalf("the session came up after T1 (%v): the rotation cannot be tested", t1)
	}
	t.Logf("Established on both sides, routes exchanged, %v before T1", time.Until(t1).Round(time.Second))
	for _, s := range shims {
		if c := s.before; c.CurrentKeyID != 1 || c.RNextKeyID != 1 {
			t.Fatalf("%s: before T1 the session is on KeyID %d / RNext %d, want 1/1", s.name, c.CurrentKeyID, c.RNextKeyID)
		}
	}

	time.Sleep(time.Until(t2.Add(time.Second)))
	// Two keepalive rounds (2 s each way) after T2: every segment since is
	// signed with MKT 2 and verified with it.
	time.Sleep(5 * time.Second)
	for _, s := range shims {
		st, err := shimStatusOf(s.sock)
		if err != nil {
			t.Fatal(err)
		}
		if d := st.Counters.Dropped.Total(); d != 0 {
			t.Errorf("%s: dropped %d segments: %+v", s.name, d, st.Counters.Dropped)
		}
		c, was := onlyConn(t, s.sock), s.before
		if c.LocalISN != was.LocalISN || c.RemoteISN != was.RemoteISN {
			t.Errorf("%s: the session's ISNs went from %d/%d to %d/%d: a new TCP connection", s.name, was.LocalISN, was.RemoteISN, c.LocalISN, c.RemoteISN)
		}
		if c.CurrentKeyID != 2 || c.RNextKeyID != 2 {
			t.Errorf("%s: after T1 the session is on KeyID %d / RNext %d, want 2/2", s.name, c.CurrentKeyID, c.RNextKeyID)
		}
		t.Logf("%s: session %v-%v on %d/%d, signed %d verified %d, ISNs %d/%d kept", s.name, c.Local, c.Remote,
			c.CurrentKeyID, c.RNextKeyID, c.Signed, c.Verified, c.LocalISN, c.RemoteISN)
		if len(st.MKTs) != 2 {
			t.Errorf("%s: status lists %d MKTs, want 2", s.name, len(st.MKTs))
		}
		for _, m := range st.MKTs {
			if m.SendActive != (m.SendID == 2) || m.AcceptActive != (m.SendID == 2) {
				t.Errorf("%s: MKT %d after T2: send_lifetime_active %v accept_lifetime_active %v", s.name, m.SendID, m.SendActive, m.AcceptActive)
			}
		}
	}
	nb, ok := a.neighbor(addrB4)
	if !ok || nb.State != "Established" || nb.Established != 1 || nb.Dropped != 0 {
		t.Errorf("FRR's neighbor after T2: %+v (answered %v), want Established, 1 connection established, 0 dropped", nb, ok)
	}
	t.Logf("FRR's neighbor %v: %s, %d connection established, %d dropped\n%s", addrB4, nb.State, nb.Established, nb.Dropped,
		strings.TrimSpace(a.vtysh("show bgp ipv4 unicast summary")))
	if out := b.birdc("show", "protocols", "peer"); !strings.Contains(out, "Established") {
		t.Errorf("BIRD after T2: %s", b.birdc("show", "protocols", "all", "peer"))
	} else {
		t.Logf("BIRD: %s", lastLine(out))
	}
	if !a.hasRoute(sb.route) || !b.hasRoute(sa.route) {
		t.Errorf("routes after T2:\nFRR: %s\nBIRD: %s", a.vtysh("show bgp ipv4 unicast"), b.birdc("show", "route"))
	}
}

// listensBGP reports whether a socket in n listens on TCP port 179.
func listensBGP(t *testing.T, n *ns) bool {
	t.Helper()
	var b []byte
	if err := n.Do(func() (err error) { b, err = os.ReadFile("/proc/thread-self/net/tcp"); return err }); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		// local_address rem_address st: ":00B3" is port 179, "0A" LISTEN.
		if f := strings.Fields(line); len(f) > 3 && strings.HasSuffix(f[1], ":00B3") && f[3] == "0A" {
			return true
		}
	}
	return false
}

// onlyConn is the one session a shim tracks; it fails t if there is
// another number of them.
func onlyConn(t *testing.T, sock string) shim.ConnStatus {
	t.Helper()
	st, err := shimStatusOf(sock)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Conns) != 1 {
		t.Fatalf("%s tracks %d sessions, want 1: %+v", sock, len(st.Conns), st.Conns)
	}
	return st.Conns[0]
}

// statusText is a shim's status as JSON, for a failure message.
func statusText(sock string) string {
	st, err := shimStatusOf(sock)
	if err != nil {
		return err.Error()
	}
	j, _ := json.Marshal(st)
	return string(j)
}
