package netstack

// BIRD 2.17 with the kernel's TCP-AO against a BGP speaker of this test's
// own on a gVisor stack wrapped with a packetauth layer, over the TUN
// device of inKernelNet. BIRD is the qemu guest's (harness/kernellab/
// fetch-bird.sh lays Debian 13's bird2 into it); elsewhere the test skips.
// The speaker builds and parses its messages with gobgp's packet package:
// OPEN, KEEPALIVE, one UPDATE each way. Then a rotation from each end:
// the layer's SetRNext asks BIRD's kernel for MKT b, and BIRD's preferred
// key (birdc configure) asks the layer for it; the session stays up.

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/osrg/gobgp/v4/pkg/packet/bgp"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/harness/kstat"
	"github.com/tcpsig/tcpsig/harness/proc"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/packetauth"
)

const (
	birdBin  = "/usr/sbin/bird"
	birdcBin = "/usr/sbin/birdc"
)

// birdKey is one of BIRD's TCP-AO keys; the layer's MKT has the IDs the
// other way round.
type birdKey struct {
	send, recv uint8
	secret     string
}

func birdConf(alg string, passive bool, ks []birdKey, preferred int) string {
	var sb strings.Builder
	sb.WriteString("router id 192.0.2.1;\nlog stderr all;\ndebug protocols { states, events };\nprotocol device { scan time 10; }\n")
	sb.WriteString("protocol static { ipv4; route 198.51.100.0/25 blackhole; }\n")
	sb.WriteString("protocol bgp gvisor {\n\tlocal 192.0.2.1 as 65001;\n\tneighbor 192.0.2.2 as 65002;\n")
	sb.WriteString("\thold time 30; keepalive time 3;\n\tconnect retry time 2; connect delay time 1; error wait time 1, 4;\n")
	if passive {
		sb.WriteString("\tpassive on;\n")
	}
	sb.WriteString("\tauthentication ao;\n\tkeys {\n")
	birdAlg := map[string]string{"hmac(sha1)": "hmac sha1", "cmac(aes128)": "cmac aes128", "hmac(sha256)": "hmac sha256"}[alg]
	for i, k := range ks {
		fmt.Fprintf(&sb, "\t\tkey { send id %d; recv id %d; secret %q; algorithm %s;", k.send, k.recv, k.secret, birdAlg)
		if i == preferred {
			sb.WriteString(" preferred;")
		}
		sb.WriteString(" };\n")
	}
	sb.WriteString("\t};\n\tipv4 { import all; export all; };\n}\n")
	return sb.String()
}

func birdc(sock string, args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, birdcBin, append([]string{"-s", sock}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("birdc %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// waitUntil polls cond every 250 ms for up to d.
func waitUntil(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(250 * time.Millisecond)
	}
	return true
}

// speaker is the gVisor side's BGP: it answers BIRD's OPEN, sends
// KEEPALIVEs every 3 s and records the prefixes BIRD announces.
type speaker struct {
	c      net.Conn
	wmu    sync.Mutex
	mu     sync.Mutex
	routes map[netip.Prefix]bool
	open   *bgp.BGPOpen
	kas    int
	err    error
	done   chan struct{}
}

func (s *speaker) send(m *bgp.BGPMessage) error {
	b, err := m.Serialize()
	if err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err = s.c.Write(b)
	return err
}

// recv reads one BGP message (19-byte header, length at 16).
func (s *speaker) recv() (*bgp.BGPMessage, error) {
	hdr := make([]byte, bgp.BGP_HEADER_LENGTH)
	if _, err := io.ReadFull(s.c, hdr); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint16(hdr[16:18]))
	if n < bgp.BGP_HEADER_LENGTH || n > 4096 {
		return nil, fmt.Errorf("BGP message of length %d", n)
	}
	b := make([]byte, n)
	copy(b, hdr)
	if _, err := io.ReadFull(s.c, b[bgp.BGP_HEADER_LENGTH:]); err != nil {
		return nil, err
	}
	return bgp.ParseBGPMessage(b)
}

// run speaks BGP on c as AS 65002, router ID 192.0.2.2, announcing
// 198.51.100.128/25 with next hop 192.0.2.2.
func (s *speaker) run() {
	defer close(s.done)
	fail := func(err error) {
		s.mu.Lock()
		if s.err == nil {
			s.err = err
		}
		s.mu.Unlock()
	}
	open, err := bgp.NewBGPOpenMessage(65002, 30, netip.MustParseAddr("192.0.2.2"), []bgp.OptionParameterInterface{
		bgp.NewOptionParameterCapability([]bgp.ParameterCapabilityInterface{
			bgp.NewCapMultiProtocol(bgp.RF_IPv4_UC), bgp.NewCapFourOctetASNumber(65002)})})
	if err == nil {
		err = s.send(open)
	}
	if err != nil {
		fail(fmt.Errorf("OPEN: %w", err))
		return
	}
	stop := make(chan struct{})
	defer close(stop)
	announced := false
	for {
		m, err := s.recv()
		if err != nil {
			fail(fmt.Errorf("read: %w", err))
			return
		}
		switch b := m.Body.(type) {
		case *bgp.BGPOpen:
			s.mu.Lock()
			s.open = b
			s.mu.Unlock()
			if err := s.send(bgp.NewBGPKeepAliveMessage()); err != nil {
				fail(err)
				return
			}
			go func() {
				tick := time.NewTicker(3 * time.Second)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						return
					case <-tick.C:
						if s.send(bgp.NewBGPKeepAliveMessage()) != nil {
							return
						}
					}
				}
			}()
		case *bgp.BGPKeepAlive:
			s.mu.Lock()
			s.kas++
			s.mu.Unlock()
			if !announced {
				announced = true
				if err := s.announce(); err != nil {
					fail(fmt.Errorf("UPDATE: %w", err))
					return
				}
			}
		case *bgp.BGPUpdate:
			s.mu.Lock()
			for _, n := range b.NLRI {
				if p, err := netip.ParsePrefix(n.NLRI.String()); err == nil {
					s.routes[p] = true
				}
			}
			s.mu.Unlock()
		case *bgp.BGPNotification:
			fail(fmt.Errorf("NOTIFICATION %d/%d from BIRD", b.ErrorCode, b.ErrorSubcode))
			return
		}
	}
}

func (s *speaker) announce() error {
	nh, err := bgp.NewPathAttributeNextHop(netip.MustParseAddr("192.0.2.2"))
	if err != nil {
		return err
	}
	p, err := bgp.NewIPAddrPrefix(netip.MustParsePrefix("198.51.100.128/25"))
	if err != nil {
		return err
	}
	attrs := []bgp.PathAttributeInterface{
		bgp.NewPathAttributeOrigin(0),
		bgp.NewPathAttributeAsPath([]bgp.AsPathParamInterface{bgp.NewAs4PathParam(bgp.BGP_ASPATH_ATTR_TYPE_SEQ, []uint32{65002})}),
		nh,
	}
	return s.send(bgp.NewBGPUpdateMessage(nil, attrs, []bgp.PathNLRI{{NLRI: p}}))
}

func (s *speaker) has(p string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.routes[netip.MustParsePrefix(p)]
}

func (s *speaker) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// TestKernelAOBIRD: BIRD with the kernel's TCP-AO and the gVisor
// speaker reach Established, each learns the other's route, and a
// rotation from each end (the layer's SetRNext, then BIRD's preferred
// key) moves both ends to MKT b without the session dropping; the
// kernel counts no bad segment and the layer refuses none. Either side
// opens.
func TestKernelAOBIRD(t *testing.T) {
	needAO(t)
	for _, p := range []string{birdBin, birdcBin} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("no %s (harness/kernellab/run-qemu.sh lays Debian 13's BIRD 2.17 into its guest)", p)
		}
	}
	const alg = "hmac(sha256)"
	ks := []birdKey{{10, 20, "tcpsig-netstack-bird-a"}, {11, 21, "tcpsig-netstack-bird-b"}}
	for _, birdDials := range []bool{true, false} {
		t.Run(fmt.Sprintf("bird-dials=%v", birdDials), func(t *testing.T) {
			kp, naddr := addrs(false)
			ring := ao.NewKeyring(nil)
			// b, then a: the MKT added last is the one a new connection starts on
			for _, k := range []birdKey{ks[1], ks[0]} {
				if _, err := ring.Add(keys.AO{Peer: netip.PrefixFrom(kp.Addr(), 32), SendID: k.recv, RecvID: k.send,
					Algorithm: alg, Key: []byte(k.secret), MACLen: 12}); err != nil {
					t.Fatal(err)
				}
			}
			layer, err := packetauth.New(packetauth.Config{AO: ring})
			if err != nil {
				t.Fatal(err)
			}
			var ep *Endpoint
			dir := t.TempDir()
			conf, sock := filepath.Join(dir, "bird.conf"), filepath.Join(dir, "bird.ctl")
			if err := os.WriteFile(conf, []byte(birdConf(alg, !birdDials, ks, 0)), 0o600); err != nil {
				t.Fatal(err)
			}
			inKernelNet(t, false, wrapWith(t, layer, &ep), func(k *kernelNet) error {
				before, err := kstat.TCPExt()
				if err != nil {
					return err
				}
				cmd := exec.Command(birdBin, "-f", "-c", conf, "-s", sock, "-P", filepath.Join(dir, "bird.pid"))
				bird, err := proc.Start("bird", cmd)
				if err != nil {
					return err
				}
				defer func() {
					bird.Stop(syscall.SIGTERM, 10*time.Second)
					if t.Failed() {
						t.Logf("BIRD's log:\n%s", bird.Log())
					}
				}()
				if err := bird.WaitReady("its control socket", 60*time.Second, func() bool {
					return strings.Contains(birdc(sock, "show", "status"), "Daemon is up")
				}); err != nil {
					return err
				}
				var c net.Conn
				if birdDials {
					ln, err := listenGonet(k.s, netip.AddrPortFrom(naddr, 179))
					if err != nil {
						return err
					}
					acc := make(chan error, 1)
					go func() {
						var err error
						c, err = ln.Accept()
						acc <- err
					}()
					select {
					case err = <-acc:
					case <-time.After(90 * time.Second):
						err = fmt.Errorf("BIRD did not connect in 90s: %s", birdc(sock, "show", "protocols", "all", "gvisor"))
					}
					ln.Close()
					if err != nil {
						return err
					}
				} else {
					if c, err = dialGonet(k.s, netip.AddrPortFrom(k.kaddr, 179), 30*time.Second); err != nil {
						return fmt.Errorf("dial BIRD: %w", err)
					}
				}
				defer c.Close()
				sp := &speaker{c: c, routes: map[netip.Prefix]bool{}, done: make(chan struct{})}
				go sp.run()
				established := func() bool {
					return strings.Contains(birdc(sock, "show", "protocols", "gvisor"), "Established")
				}
				if !waitUntil(90*time.Second, func() bool {
					return sp.failure() != nil || established() && sp.has("198.51.100.0/25") &&
						strings.Contains(birdc(sock, "show", "route", "protocol", "gvisor"), "198.51.100.128/25")
				}) || sp.failure() != nil {
					return fmt.Errorf("no session with routes both ways (speaker: %v): %s\n%s", sp.failure(),
						birdc(sock, "show", "protocols", "all", "gvisor"), birdc(sock, "show", "route"))
				}
				local, remote := netip.MustParseAddrPort(c.LocalAddr().String()), netip.MustParseAddrPort(c.RemoteAddr().String())
				info := func() packetauth.ConnInfo {
					for ci := range ep.Layer().Conns {
						if ci.Local == local && ci.Remote == remote {
							return ci
						}
					}
					return packetauth.ConnInfo{}
				}
				aoInfo := func() string {
					var out []string
					for _, l := range strings.Split(birdc(sock, "show", "protocols", "all", "gvisor"), "\n") {
						if l = strings.TrimSpace(l); strings.HasPrefix(l, "Current key:") || strings.HasPrefix(l, "RNext key:") ||
							strings.HasPrefix(l, "Good packets:") || strings.HasPrefix(l, "Bad packets:") {
							out = append(out, strings.Join(strings.Fields(l), " "))
						}
					}
					return strings.Join(out, ", ")
				}
				t.Logf("Established, routes both ways; BIRD %s; layer %v", aoInfo(), info())

				// The layer asks BIRD's kernel for MKT b (RNextKeyID 11);
				// the kernel switches its current key at the next segment.
				if err := ep.Layer().SetRNext(local, remote, ks[1].send); err != nil {
					return err
				}
				if !waitUntil(60*time.Second, func() bool { return strings.Contains(aoInfo(), "Current key: 11") }) {
					return fmt.Errorf("after SetRNext(11): BIRD %s", aoInfo())
				}
				t.Logf("after the layer's SetRNext(11): BIRD %s; layer %v", aoInfo(), info())
				// BIRD prefers b: it asks the layer for it (RNextKeyID 21),
				// and the layer's current key follows.
				if err := os.WriteFile(conf, []byte(birdConf(alg, !birdDials, ks, 1)), 0o600); err != nil {
					return err
				}
				if out := birdc(sock, "configure"); !strings.Contains(out, "Reconfigured") {
					return fmt.Errorf("birdc configure: %s", out)
				}
				if !waitUntil(60*time.Second, func() bool { ci := info(); return ci.CurrentKeyID == ks[1].recv && ci.RNextKeyID == ks[1].send }) {
					return fmt.Errorf("after BIRD's configure with b preferred: layer %v, BIRD %s", info(), aoInfo())
				}
				sp.mu.Lock()
				kas := sp.kas
				sp.mu.Unlock()
				// two keepalives more from BIRD, on b
				if !waitUntil(60*time.Second, func() bool { sp.mu.Lock(); defer sp.mu.Unlock(); return sp.kas >= kas+2 }) || sp.failure() != nil {
					return fmt.Errorf("the session did not carry on on MKT b: speaker %v, BIRD %s", sp.failure(), birdc(sock, "show", "protocols", "all", "gvisor"))
				}
				if !established() || !strings.Contains(birdc(sock, "show", "route", "protocol", "gvisor"), "198.51.100.128/25") {
					return fmt.Errorf("after the rotation: %s", birdc(sock, "show", "protocols", "all", "gvisor"))
				}
				t.Logf("after BIRD's configure (b preferred): BIRD %s; layer %v", aoInfo(), info())
				after, err := kstat.TCPExt()
				if err != nil {
					return err
				}
				for _, n := range []string{"TCPAOBad", "TCPAOKeyNotFound", "TCPAORequired"} {
					if after[n] != before[n] {
						return fmt.Errorf("kernel %s %d -> %d", n, before[n], after[n])
					}
				}
				if d := ep.Layer().Counters().Dropped; d.Total() != 0 {
					return fmt.Errorf("the layer dropped %+v", d)
				}
				t.Logf("kernel TCPAOGood +%d, TCPAOBad +0; layer %+v", after["TCPAOGood"]-before["TCPAOGood"], ep.Layer().Counters())
				return nil
			})
		})
	}
}
