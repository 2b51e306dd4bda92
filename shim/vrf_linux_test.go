//go:build linux

package shim

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tcpsig/tcpsig/harness/netns"
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
