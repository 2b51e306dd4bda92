//go:build linux

package main

import (
	"errors"
	"net/netip"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"testing"

	"github.com/tcpsig/tcpsig/shim/nfqueue"
	"github.com/tcpsig/tcpsig/shim/nfrules"
)

// The pass-through queue of BenchmarkShimMD5's "queue" leg: the shim's
// netfilter queue and reader (batched reads and verdicts, poll(2) on a
// locked thread) with no MAC and no rewriting, every packet accepted as it
// came. Its round trip is the least any shim built on a netfilter queue
// can add on this machine.
const (
	boundQueue = 60
	boundTable = "tcpsig-bound"
)

// TestQueueBoundHelper runs the pass-through queue for the peer in
// TCPSIG_BOUND_PEER until SIGTERM.
func TestQueueBoundHelper(t *testing.T) {
	if os.Getenv("TCPSIG_BOUND_HELPER") != "1" {
		t.Skip("helper process for BenchmarkShimMD5's queue leg")
	}
	peer, err := netip.ParsePrefix(os.Getenv("TCPSIG_BOUND_PEER"))
	if err != nil {
		t.Fatal(err)
	}
	q, err := nfqueue.Open(nfqueue.Config{Num: boundQueue})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nfrules.Install(nfrules.Spec{Table: boundTable, Queue: boundQueue, Peers: []netip.Prefix{peer}}); err != nil {
		t.Fatal(err)
	}
	defer nfrules.Remove(boundTable)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	go func() { <-sig; q.Close() }()
	// As the shim does: a thread per reader, and a P beside the one its
	// poll(2) holds.
	runtime.GOMAXPROCS(runtime.NumCPU() + 1)
	runtime.LockOSThread()
	os.Stdout.WriteString("ready\n")
	var ps [64]nfqueue.Packet
	for {
		n, err := q.ReadBatch(ps[:])
		if errors.Is(err, nfqueue.ErrClosed) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := range ps[:n] {
			_ = q.AddVerdict(ps[i].ID, nfqueue.Accept, nil)
		}
		_ = q.Flush()
	}
}
