//go:build linux

package nfrules_test

import (
	"errors"
	"net/netip"
	"os"
	"syscall"
	"testing"

	"github.com/google/nftables"
	"github.com/tcpsig/tcpsig/harness/netns"
	"github.com/tcpsig/tcpsig/shim/nfrules"
)

func peers(s ...string) []netip.Prefix {
	var ps []netip.Prefix
	for _, x := range s {
		ps = append(ps, netip.MustParsePrefix(x))
	}
	return ps
}

// rules counts the rules per family and chain of table.
func rules(t *testing.T, table string) map[string]int {
	n := map[string]int{}
	c, err := nftables.New()
	if err != nil {
		t.Error(err) // not Fatal: this runs on the namespace's goroutine
		return n
	}
	for fam, name := range map[nftables.TableFamily]string{nftables.TableFamilyIPv4: "ip", nftables.TableFamilyIPv6: "ip6"} {
		tb := &nftables.Table{Name: table, Family: fam}
		for _, ch := range []string{"in", "out"} {
			rs, err := c.GetRules(tb, &nftables.Chain{Name: ch, Table: tb})
			if err != nil {
				continue // no such table or chain
			}
			n[name+" "+ch] = len(rs)
		}
	}
	return n
}

// TestInstallReplaceRemove: Install makes one TCP rule per peer and
// direction in the family of the peer, and input rules for the peer's ICMP
// hard errors (one for IPv4, one per code for IPv6); a second Install
// replaces the first (as after a crash or on reload), Remove leaves
// nothing, and removing twice is fine.
func TestInstallReplaceRemove(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces and netfilter rules")
	}
	var unsupported error
	err := netns.Run(func() error {
		if _, err := nfrules.Install(nfrules.Spec{Table: "shtest", Queue: 3, Peers: peers("192.0.2.1/32", "198.51.100.0/24", "2001:db8::1/128")}); err != nil {
			unsupported = err
			return nil
		}
		if got := rules(t, "shtest"); got["ip in"] != 2+2 || got["ip out"] != 2 || got["ip6 in"] != 1+2+1 || got["ip6 out"] != 1 {
			t.Errorf("after install: rules %v, want ip in 2+2 (TCP+ICMP), out 2, ip6 in 1+2+1 (TCP+ICMP+first fragments), out 1", got)
		}
		m, err := nfrules.Install(nfrules.Spec{Table: "shtest", Queue: 3, Peers: peers("192.0.2.9/32")})
		if err != nil {
			return err
		}
		t.Logf("queueing by %s", m)
		if got := rules(t, "shtest"); got["ip in"] != 1+1 || got["ip out"] != 1 || got["ip6 in"] != 0 || got["ip6 out"] != 0 {
			t.Errorf("after reinstall: rules %v, want ip in 1+1, out 1 and no ip6 table", got)
		}
		if ok, err := nfrules.Exists("shtest"); err != nil || !ok {
			t.Errorf("Exists = %v, %v after install", ok, err)
		}
		// Three queues: a TCP rule per queue, peer and direction; the ICMP
		// rules go to the first queue only.
		if _, err := nfrules.Install(nfrules.Spec{Table: "shtest", Queue: 3, Queues: 3, Peers: peers("192.0.2.9/32", "2001:db8::9/128")}); err != nil {
			return err
		}
		if got := rules(t, "shtest"); got["ip in"] != 3+1 || got["ip out"] != 3 || got["ip6 in"] != 3+2+1 || got["ip6 out"] != 3 {
			t.Errorf("three queues: rules %v, want in 3+1 and out 3 (ip), in 3+2+1 and out 3 (ip6)", got)
		}
		for i := range 2 {
			if err := nfrules.Remove("shtest"); err != nil {
				t.Errorf("Remove #%d: %v", i+1, err)
			}
		}
		if ok, err := nfrules.Exists("shtest"); err != nil || ok {
			t.Errorf("Exists = %v, %v after remove", ok, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if unsupported != nil {
		for _, e := range []error{syscall.ENOENT, syscall.EOPNOTSUPP, syscall.EPROTONOSUPPORT, syscall.EAFNOSUPPORT} {
			if errors.Is(unsupported, e) {
				t.Skipf("needs a kernel with nf_tables and a queue statement (nft_queue or xt NFQUEUE): %v", unsupported)
			}
		}
		t.Fatal(unsupported)
	}
}

// TestBadSpec: no peers, or no table name, is an error, not an empty table.
func TestBadSpec(t *testing.T) {
	if _, err := nfrules.Install(nfrules.Spec{Table: "shtest"}); !errors.Is(err, nfrules.ErrNoPeers) {
		t.Errorf("no peers: %v, want ErrNoPeers", err)
	}
	if _, err := nfrules.Install(nfrules.Spec{Peers: peers("192.0.2.1/32")}); err == nil {
		t.Error("empty table name accepted")
	}
	if _, err := nfrules.Install(nfrules.Spec{Table: "shtest", Queue: 65535, Queues: 2, Peers: peers("192.0.2.1/32")}); err == nil {
		t.Error("queues past 65535 accepted")
	}
}
