//go:build linux

package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tcpsig/tcpsig/harness/netns"
)

// TestKeysCheckIfIndex (issue 38, finding 2): tcpsig keys check refuses
// (exit 2, naming the entry) an entry bound to the ifindex of an
// interface that is not a VRF, here a plain veth, or of no interface, as
// the shim and Linux (EINVAL) refuse it; "ifindex": 0, the default
// domain, is sound.
func TestKeysCheckIfIndex(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a network namespace with a veth pair")
	}
	err := netns.Run(func() error {
		if err := netns.AddVeth("kcvrf0", "kcvrf1", -1); err != nil {
			return err
		}
		veth, err := net.InterfaceByName("kcvrf0")
		if err != nil {
			return err
		}
		for _, c := range []struct {
			ifindex int
			code    int
			wants   []string
		}{
			{veth.Index, 2, []string{fmt.Sprintf(`tcpsig keys check: ao[0] ("blue"): ifindex %d (kcvrf0): not an L3 master (VRF) device`, veth.Index),
				fmt.Sprintf(`tcpsig keys check: md5[0]: ifindex %d (kcvrf0): not an L3 master (VRF) device`, veth.Index)}},
			{434343, 2, []string{`ao[0] ("blue"): ifindex 434343: no such interface`}},
			{0, 0, nil},
		} {
			body := fmt.Sprintf(`{"ao": [{"name": "blue", "alg": "hmac(sha256)", "key": "text:Check-Key-Qw3rty-Uiop", "sndid": 1, "rcvid": 1, "peer": "192.0.2.2/32", "ifindex": %d}],
				"md5": [{"peer": "198.51.100.2/32", "key": "text:md5-Check-Key", "ifindex": %[1]d}]}`, c.ifindex)
			path := filepath.Join(t.TempDir(), "keys.json")
			if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
				return err
			}
			var out, errb bytes.Buffer
			code := runKeys([]string{"check", path}, &out, &errb)
			if code != c.code {
				t.Errorf("ifindex %d: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", c.ifindex, code, c.code, &out, &errb)
			}
			for _, w := range c.wants {
				if !strings.Contains(errb.String(), w) {
					t.Errorf("ifindex %d: stderr does not say %q:\n%s", c.ifindex, w, &errb)
				}
			}
			if c.code != 0 && strings.Contains(out.String(), "\nok\n") {
				t.Errorf("ifindex %d: says ok:\n%s", c.ifindex, &out)
			}
			t.Logf("ifindex %d: exit %d\n%s%s", c.ifindex, code, &out, &errb)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
