//go:build linux

package shim

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/harness/netns"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/packetauth"
	"github.com/tcpsig/tcpsig/segment"
	"github.com/tcpsig/tcpsig/shim/nfqueue"
)

// TestDomains: an interface's L3 domain is its own index for a VRF, its
// master's for an interface enslaved to a VRF, else 0 (a bridge port, a
// plain interface), as Linux's l3mdev_master_ifindex.
func TestDomains(t *testing.T) {
	links := map[uint32]link{
		1: {name: "lo"},
		2: {name: "vrf-blue", vrf: true},
		3: {name: "veth0", master: 2},
		4: {name: "br0"},
		5: {name: "veth1", master: 4},
		6: {name: "veth2", master: 9}, // a master the table does not hold
	}
	want := map[uint32]int{1: 0, 2: 2, 3: 2, 4: 0, 5: 0, 6: 0}
	got := domains(links)
	for i, d := range want {
		if got[i] != d {
			t.Errorf("ifindex %d (%s): domain %d, want %d", i, links[i].name, got[i], d)
		}
	}
	if len(got) != len(want) {
		t.Errorf("domains %v", got)
	}
}

// vrfKeys writes a 0600 keys file with a TCP-AO and a TCP-MD5 entry bound
// to ifindex ao and md5 (-1: no ifindex field) and returns its path.
func vrfKeys(t *testing.T, ao, md5 int) string {
	t.Helper()
	field := func(i int) string {
		if i < 0 {
			return ""
		}
		return fmt.Sprintf(`, "ifindex": %d`, i)
	}
	body := fmt.Sprintf(`{"ao": [{"name": "blue-peer", "alg": "hmac(sha256)", "key": "text:ao-secret", "sndid": 1, "rcvid": 1, "peer": "192.0.2.9/32"%s}],
		"md5": [{"name": "blue-md5", "peer": "198.51.100.9/32", "key": "text:md5-secret"%s}]}`, field(ao), field(md5))
	path := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestIfIndexNotVRF (issue 38, finding 2): a keys file whose entry is
// bound to the ifindex of a plain veth, or of no interface, is refused at
// start (New) and on reload, with an error naming the entry, as Linux
// refuses such a key (EINVAL): such an entry would cover a domain no
// packet is ever in and protect nothing. "ifindex": 0 (the default
// domain) needs no interface; a VRF's ifindex is taken where the kernel
// has VRFs.
func TestIfIndexNotVRF(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a network namespace with a veth pair")
	}
	err := netns.Run(func() error {
		if err := netns.AddVeth("vrfchk0", "vrfchk1", -1); err != nil {
			return err
		}
		veth, err := net.InterfaceByName("vrfchk0")
		if err != nil {
			return err
		}
		for _, tc := range []struct {
			name     string
			ao, md5  int
			entries  []string
			notFound bool
		}{
			{"TCP-AO on a veth", veth.Index, -1, []string{`ao[0] ("blue-peer"): ifindex`, "(vrfchk0)"}, false},
			{"TCP-MD5 on a veth", -1, veth.Index, []string{`md5[0] ("blue-md5"): ifindex`, "(vrfchk0)"}, false},
			{"both on no interface", 424242, 424243, []string{`ao[0] ("blue-peer"): ifindex 424242: no such interface`, `md5[0] ("blue-md5"): ifindex 424243: no such interface`}, true},
		} {
			path := vrfKeys(t, tc.ao, tc.md5)
			_, err := New(Config{Keys: path})
			if !errors.Is(err, ErrIfIndex) {
				t.Errorf("%s: New: %v, want ErrIfIndex", tc.name, err)
				continue
			}
			for _, e := range tc.entries {
				if !strings.Contains(err.Error(), e) {
					t.Errorf("%s: New: %q does not name %q", tc.name, err, e)
				}
			}
			t.Logf("%s: %v", tc.name, err)
		}
		// Reload: refused whole, the keys as they were.
		path := vrfKeys(t, -1, 0)
		s, err := New(Config{Keys: path})
		if err != nil {
			return fmt.Errorf(`"ifindex": 0 refused: %w`, err)
		}
		before := s.keys
		bad := vrfKeys(t, veth.Index, 0)
		s.cfg.Keys = bad
		if err := s.reload(); !errors.Is(err, ErrIfIndex) || !strings.Contains(err.Error(), `ao[0] ("blue-peer")`) {
			t.Errorf("reload: %v, want ErrIfIndex naming ao[0]", err)
		}
		if s.keys != before {
			t.Error("reload refused, yet the keys changed")
		}
		// A VRF's ifindex is taken (the host kernel may lack VRFs).
		if err := netns.AddVRF("vrfchk2", 10); errors.Is(err, syscall.EOPNOTSUPP) {
			t.Log("no CONFIG_NET_VRF here: the VRF's acceptance is left to the kernel lab")
			return nil
		} else if err != nil {
			return err
		}
		vrf, err := net.InterfaceByName("vrfchk2")
		if err != nil {
			return err
		}
		if _, err := New(Config{Keys: vrfKeys(t, vrf.Index, vrf.Index)}); err != nil {
			t.Errorf("entries bound to a VRF: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestL3MapFollowsLinks: the link table the packet path reads knows the
// namespace's interfaces from the start, learns a new one from its link
// notification (or, asked about it first, from a read the miss causes),
// and says false for an index no interface has.
func TestL3MapFollowsLinks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a network namespace")
	}
	err := netns.Run(func() error {
		m, err := openL3Map(slog.New(slog.DiscardHandler))
		if err != nil {
			return err
		}
		defer m.Close()
		if d, ok := m.domain(1); !ok || d != 0 {
			t.Errorf("lo: domain %d %v, want 0", d, ok)
		}
		if d, ok := m.domain(0); !ok || d != 0 {
			t.Errorf("no interface: domain %d %v, want 0", d, ok)
		}
		if _, ok := m.domain(525252); ok {
			t.Error("an index no interface has was placed in a domain")
		}
		reads := m.reads.Load()
		if err := netns.AddVeth("l3map0", "l3map1", -1); err != nil {
			return err
		}
		veth, err := net.InterfaceByName("l3map0")
		if err != nil {
			return err
		}
		// Without asking: the notification makes it read the table.
		for deadline := time.Now().Add(10 * time.Second); m.reads.Load() == reads; {
			if time.Now().After(deadline) {
				return errors.New("no read of the link table after a new link")
			}
			time.Sleep(10 * time.Millisecond)
		}
		if d, ok := m.domain(uint32(veth.Index)); !ok || d != 0 {
			t.Errorf("new veth %d: domain %d %v, want 0", veth.Index, d, ok)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestVRFPaths: the shim judges a packet in its interface's domain. With
// an MKT for the peer bound to domain 7 (a VRF of index 7, its slave of
// index 2): the peer's unsigned SYN is dropped when it comes in by either
// and passes by an interface of the default domain; the host's SYN to the
// peer is signed when it leaves by the VRF device, passes untouched when
// it meets the output hook again by the slave already signed, is signed
// there when it is not (IPv6 link-local traffic is not diverted through
// the VRF device), and leaves the default domain unsigned. A packet of an
// interface the table does not know is dropped.
func TestVRFPaths(t *testing.T) {
	path := vrfKeys(t, -1, -1)
	s, err := New(Config{Keys: path})
	if err != nil {
		t.Fatal(err)
	}
	peer := netip.MustParseAddr("203.0.113.9")
	if _, err := s.aoRing.Add(keys.AO{Peer: netip.PrefixFrom(peer, 32), SendID: 5, RecvID: 5, Algorithm: "hmac(sha256)",
		Key: []byte("bound to seven"), MACLen: 12, IfIndex: 7, HasIfIndex: true}); err != nil {
		t.Fatal(err)
	}
	m := &l3Map{log: slog.New(slog.DiscardHandler)}
	table := map[uint32]int{1: 0, 2: 7, 7: 7, 3: 0}
	m.snap.Store(&table)
	s.l3 = m
	in := func(dev uint32) ([]byte, []byte, error) {
		pkt := packet(t, peer, segment.SYN, 1000, 0, "")
		out, err := s.transform(nil, &nfqueue.Packet{Hook: nfqueue.HookInput, InDev: dev, Payload: pkt})
		return pkt, out, err
	}
	for _, dev := range []uint32{7, 2} {
		if _, _, err := in(dev); !errors.Is(err, packetauth.ErrUnsigned) {
			t.Errorf("unsigned SYN by interface %d (domain 7): %v, want ErrUnsigned", dev, err)
		}
	}
	if pkt, out, err := in(3); err != nil || !bytes.Equal(out, pkt) {
		t.Errorf("unsigned SYN by interface 3 (default domain): %v, want it passed untouched", err)
	}
	if _, _, err := in(99); !errors.Is(err, ErrUnknownInterface) {
		t.Errorf("SYN by an unknown interface: %v, want ErrUnknownInterface", err)
	}
	syn, err := segment.AppendPacket(nil, segment.IP{Src: shimAddr, Dst: peer},
		segment.Fields{SrcPort: 40000, DstPort: 179, Seq: 77, Flags: segment.SYN, Window: 65535}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := func(dev uint32, pkt []byte) ([]byte, error) {
		return s.transform(make([]byte, 0, 2048), &nfqueue.Packet{Hook: nfqueue.HookOutput, OutDev: dev, Payload: pkt})
	}
	wire, err := out(7, syn)
	if err != nil || !signed(wire) {
		t.Fatalf("SYN by the VRF device: %v, signed %v", err, signed(wire))
	}
	again, err := out(2, wire)
	if err != nil || &again[0] != &wire[0] {
		t.Errorf("the signed SYN's second pass, by the slave: %v, passed untouched %v", err, err == nil && &again[0] == &wire[0])
	}
	if again, err := out(2, syn); err != nil || !signed(again) {
		t.Errorf("an unsigned SYN by the slave alone: %v, signed %v", err, signed(again))
	}
	if plain, err := out(3, syn); err != nil || !bytes.Equal(plain, syn) || signed(plain) {
		t.Errorf("SYN by an interface of the default domain: %v, want it untouched", err)
	}
}
