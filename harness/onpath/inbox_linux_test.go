//go:build linux

package onpath

import (
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/segment"
)

// TestInboxAndWatch: packets M sends with SendPacket (numbered by IP
// ID) reach B's TCP, where an Inbox sees each with its number, Sync
// waiting until it has; M's Watch sees B's answers (its RSTs from a closed
// port) and never M's own packets.
func TestInboxAndWatch(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces, a raw and a packet socket")
	}
	n, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	att, err := Start(n.M, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { att.Close() })
	var mu sync.Mutex
	ids := map[uint16]int{}
	in, err := Listen(n.B, func(pkt []byte, seg *segment.Segment) {
		if seg.Src() == AddrA && seg.Header().DstPort() == 9 {
			id, _ := IPv4ID(pkt)
			mu.Lock()
			ids[id]++
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var rsts, own int
	var wmu sync.Mutex
	stop := att.Watch(Flow{Peer: netip.AddrPortFrom(AddrB, 9), Target: netip.AddrPortFrom(AddrA, 0)}, func(_ []byte, seg *segment.Segment) {
		wmu.Lock()
		defer wmu.Unlock()
		if seg.Header().Flags().Has(segment.RST) {
			rsts++
		}
	})
	defer stop()
	stopOwn := att.Watch(Flow{Peer: netip.AddrPortFrom(AddrA, 0), Target: netip.AddrPortFrom(AddrB, 9)}, func([]byte, *segment.Segment) {
		wmu.Lock()
		own++
		wmu.Unlock()
	})
	defer stopOwn()

	for id := uint16(1); id <= 3; id++ {
		pkt, err := segment.AppendPacket(nil, segment.IP{Src: AddrA, Dst: AddrB, ID: id},
			segment.Fields{SrcPort: 40000 + id, DstPort: 9, Seq: uint32(id), Flags: segment.SYN, Window: 1024}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := att.SendPacket(pkt); err != nil {
			t.Fatal(err)
		}
	}
	if !waitFor(10*time.Second, func() bool { wmu.Lock(); defer wmu.Unlock(); return rsts == 3 }) {
		t.Fatalf("M saw %d of B's RSTs, want 3", rsts)
	}
	if !in.Sync(10 * time.Second) {
		t.Fatalf("Sync: %v", in.Err())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ids) != 3 || ids[1] != 1 || ids[2] != 1 || ids[3] != 1 {
		t.Errorf("B's TCP was handed %v (IP ID: copies), want 1, 2 and 3 once each", ids)
	}
	if in.Dropped() != 0 || in.Err() != nil {
		t.Errorf("inbox dropped %d, error %v", in.Dropped(), in.Err())
	}
	wmu.Lock()
	defer wmu.Unlock()
	if own != 0 {
		t.Errorf("Watch saw %d of M's own packets", own)
	}
}
