//go:build linux

package nfrules

import (
	"encoding/binary"
	"net/netip"
	"reflect"
	"slices"
	"testing"

	"github.com/google/nftables/expr"
	"github.com/google/nftables/xt"
	"golang.org/x/sys/unix"
)

// TestRulesBothMethods: the native queue statement and the xt NFQUEUE
// target get the same matches, each rule ending in the same queue number;
// the ICMP rules (one per IPv4 peer, one per code per IPv6 peer) and, with
// IPv6 peers, the one rule for first fragments go to the first queue, the
// TCP rules one per queue. Only the xt method runs on a
// kernel without nft_queue, so this is what shows the native rules.
func TestRulesBothMethods(t *testing.T) {
	spec := Spec{Queue: 5, Queues: 3}
	for _, peers := range [][]netip.Prefix{
		{netip.MustParsePrefix("192.0.2.2/32"), netip.MustParsePrefix("198.51.100.0/24")},
		{netip.MustParsePrefix("2001:db8::2/128")},
	} {
		nOut, nIn := rules(spec, NativeQueue, peers)
		xOut, xIn := rules(spec, XTQueue, peers)
		icmpPerPeer, frags := 1, 0
		if peers[0].Addr().Is6() {
			icmpPerPeer, frags = 2, 1
		}
		if len(nOut) != 3*len(peers) || len(nIn) != (3+icmpPerPeer)*len(peers)+frags || len(xOut) != len(nOut) || len(xIn) != len(nIn) {
			t.Fatalf("%v: native %d+%d rules, xt %d+%d; want %d out and %d in", peers, len(nOut), len(nIn), len(xOut), len(xIn),
				3*len(peers), (3+icmpPerPeer)*len(peers)+frags)
		}
		icmp, fragRules, xs := 0, 0, slices.Concat(xOut, xIn)
		for i, r := range slices.Concat(nOut, nIn) {
			x := xs[i]
			if !reflect.DeepEqual(r[:len(r)-1], x[:len(x)-1]) {
				t.Errorf("%v rule %d: the methods' matches differ", peers, i)
			}
			q, ok := r[len(r)-1].(*expr.Queue)
			tg, ok2 := x[len(x)-1].(*expr.Target)
			if !ok || !ok2 || tg.Name != "NFQUEUE" || q.Flag != 0 {
				t.Fatalf("%v rule %d ends in %#v and %#v, want a queue without bypass and NFQUEUE", peers, i, r[len(r)-1], x[len(x)-1])
			}
			if info := []byte(*tg.Info.(*xt.Unknown)); binary.NativeEndian.Uint16(info) != q.Num {
				t.Errorf("%v rule %d: native queue %d, xt %d", peers, i, q.Num, binary.NativeEndian.Uint16(info))
			}
			if h, ok := r[0].(*expr.Exthdr); ok && h.Type == unix.IPPROTO_FRAGMENT {
				fragRules++
				if q.Num != spec.Queue {
					t.Errorf("%v rule %d: first fragments to queue %d, want the first, %d", peers, i, q.Num, spec.Queue)
				}
				continue
			}
			if proto := r[1].(*expr.Cmp).Data[0]; proto == unix.IPPROTO_ICMP || proto == unix.IPPROTO_ICMPV6 {
				icmp++
				if q.Num != spec.Queue {
					t.Errorf("%v rule %d: ICMP to queue %d, want the first, %d", peers, i, q.Num, spec.Queue)
				}
			}
		}
		if icmp != icmpPerPeer*len(peers) || fragRules != frags {
			t.Errorf("%v: %d ICMP rules and %d for first fragments, want %d and %d", peers, icmp, fragRules, icmpPerPeer*len(peers), frags)
		}
	}
}
