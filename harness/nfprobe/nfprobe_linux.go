// Package nfprobe tells a test whether this kernel can run tcpsig shim:
// queue packets by an nftables rule (nft_queue, or xt NFQUEUE through
// nft_compat) and bind a netfilter queue.
package nfprobe

import (
	"errors"
	"net/netip"
	"sync"
	"syscall"
	"testing"

	"github.com/tcpsig/tcpsig/harness/netns"
	"github.com/tcpsig/tcpsig/shim/nfqueue"
	"github.com/tcpsig/tcpsig/shim/nfrules"
)

var probe struct {
	once sync.Once
	err  error
}

// Need skips t when the kernel lacks what the shim needs, and fails it
// when the probe fails for another reason. It probes once per process, in
// a network namespace of its own, so it needs root.
func Need(t testing.TB) {
	t.Helper()
	probe.once.Do(func() {
		probe.err = netns.Run(func() error {
			q, err := nfqueue.Open(nfqueue.Config{Num: 1})
			if err != nil {
				return err
			}
			defer q.Close()
			_, err = nfrules.Install(nfrules.Spec{Table: "probe", Queue: 1, Peers: []netip.Prefix{netip.MustParsePrefix("192.0.2.9/32")}})
			return err
		})
	})
	if err := probe.err; err != nil {
		for _, e := range []error{syscall.ENOENT, syscall.EOPNOTSUPP, syscall.EPROTONOSUPPORT, syscall.EAFNOSUPPORT} {
			if errors.Is(err, e) {
				t.Skipf("needs a kernel with nf_tables and a netfilter queue (nfnetlink_queue, nft_queue or xt NFQUEUE): %v", err)
			}
		}
		t.Fatalf("probing the netfilter queue: %v", err)
	}
}
