//go:build linux

package main

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/harness/onpath"
	"github.com/tcpsig/tcpsig/harness/proc"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/segment"
)

// The removed-key tests: an operator removes a TCP-AO key by SIGHUP (it
// leaked, say) while M, on the path, tries to keep it alive. They run in
// harness/onpath's namespaces, a shim on each end:
//
//	ns A: 192.0.2.1   — tcpsig shim signs for A's plain sockets
//	ns M: the router  — sniffs, replays, forges with the old key
//	ns B: 198.51.100.2 — tcpsig shim for B's plain sockets (one queue)
//
// Both shims start with key 2 (KeyID 2), the session A–B on it; both
// reloads add key 12, and the session moves to it (RFC 5925 §7.5.2); then
// B's reload removes key 2 while M attacks. An Inbox in B (a raw socket,
// which gets its copy after the shim's hook) sees what B's TCP was handed:
// after the reload returned, nothing signed with key 2 may be among it.

// removalQueue is the shims' queue in the removal tests' namespaces.
const removalQueue = "49"

// removalFlood is the address M floods SYNs from: inside the prefix B's
// keys cover, no host's.
var removalFlood = netip.MustParseAddr("192.0.2.9")

// removalAfter is how many attack segments M sends once the reload
// returned: the scenario, not a bound on anything.
const removalAfter = 600

// removalEnv is a removal test's world: the namespaces, M, the shims and
// the session moved to key 12.
type removalEnv struct {
	t          *testing.T
	on         *onpath.Net
	att        *onpath.Attacker
	nsA, nsB   *ns
	dirB, sock string
	shB        *proc.Proc
	d          *duplex
	old, new   keys.AO // B's MKTs for A's prefix: key 2 (removed) and 12
	lastKeyID  [2]atomic.Int32
}

func removalKey(id uint8, b byte, peer netip.Prefix) keys.AO {
	return keys.AO{Peer: peer, SendID: id, RecvID: id, Algorithm: "hmac(sha256)", Key: bytes.Repeat([]byte{b}, 20)}
}

func removalFile(ks ...keys.AO) string {
	var e []string
	for _, k := range ks {
		e = append(e, fmt.Sprintf(`{"alg": %q, "key": "hex:%x", "sndid": %d, "rcvid": %d, "peer": %q}`,
			k.Algorithm, k.Key, k.SendID, k.RecvID, k.Peer))
	}
	return `{"ao": [` + strings.Join(e, ", ") + `]}`
}

// aoIDs returns the KeyID and RNextKeyID of seg's TCP-AO option.
func aoIDs(seg *segment.Segment) (keyID, rnext uint8, ok bool) {
	a := seg.Auth()
	if !a.HasAO() {
		return 0, 0, false
	}
	o, err := ao.ParseOption(seg.Header()[a.AO:])
	if err != nil {
		return 0, 0, false
	}
	return o.KeyID, o.RNextKeyID, true
}

// newRemovalEnv builds the world up to the session on key 2; capture,
// when not nil, is given the first data segment A sends B on it.
func newRemovalEnv(t *testing.T, capture func(pkt []byte)) *removalEnv {
	t.Helper()
	needQueue(t)
	on, err := onpath.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(on.Close)
	att, err := onpath.Start(on.M, 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := att.Close(); err != nil {
			t.Errorf("attacker: %v", err)
		}
	})
	e := &removalEnv{t: t, on: on, att: att, nsA: &ns{on.A}, nsB: &ns{on.B}}
	prefixA := netip.MustParsePrefix("192.0.2.0/24")
	e.old, e.new = removalKey(2, 0x22, prefixA), removalKey(12, 0xcc, prefixA)
	toB := netip.PrefixFrom(onpath.AddrB, 32)
	dirA := shortDir(t)
	keysA := writeKeys(t, dirA, "keys.json", removalFile(removalKey(2, 0x22, toB)))
	shA, sockA := startShim(t, e.nsA, dirA, "-keys", keysA, "-queue", removalQueue)
	e.dirB = shortDir(t)
	keysB := writeKeys(t, e.dirB, "keys.json", removalFile(e.old))
	e.shB, e.sock = startShim(t, e.nsB, e.dirB, "-keys", keysB, "-queue", removalQueue, "-queues", "1")

	// The session, with M watching each way's KeyIDs.
	captured := make(chan struct{})
	var once sync.Once
	stopCap := att.Watch(onpath.Flow{Peer: netip.AddrPortFrom(onpath.AddrA, 0), Target: netip.AddrPortFrom(onpath.AddrB, 0)},
		func(pkt []byte, seg *segment.Segment) {
			id, _, ok := aoIDs(seg)
			if !ok {
				return
			}
			e.lastKeyID[0].Store(int32(id))
			if capture != nil && len(seg.Payload()) > 0 && id == 2 {
				once.Do(func() { capture(bytes.Clone(pkt)); close(captured) })
			}
		})
	t.Cleanup(stopCap)
	stopB := att.Watch(onpath.Flow{Peer: netip.AddrPortFrom(onpath.AddrB, 0), Target: netip.AddrPortFrom(onpath.AddrA, 0)},
		func(_ []byte, seg *segment.Segment) {
			if id, _, ok := aoIDs(seg); ok {
				e.lastKeyID[1].Store(int32(id))
			}
		})
	t.Cleanup(stopB)
	e.d = dialDuplex(t, e.nsA, e.nsB, "removal", &net.ListenConfig{}, onpath.AddrA, 3)
	exchange(t, 16<<10, e.d)
	if capture != nil {
		select {
		case <-captured:
		case <-time.After(10 * time.Second):
			t.Fatal("M captured no data segment of A's signed with key 2")
		}
	}

	// Key 12 on both ends; the session moves to it.
	writeKeys(t, dirA, "keys.json", removalFile(removalKey(2, 0x22, toB), removalKey(12, 0xcc, toB)))
	if err := shA.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	awaitKeys(t, "A adds key 12", sockA, map[string]int{"ao": 2})
	writeKeys(t, e.dirB, "keys.json", removalFile(e.old, e.new))
	if err := e.shB.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	awaitKeys(t, "B adds key 12", e.sock, map[string]int{"ao": 2})
	if !waitFor(20*time.Second, func() bool {
		exchange(t, 4<<10, e.d)
		return e.lastKeyID[0].Load() == 12 && e.lastKeyID[1].Load() == 12
	}) {
		t.Fatalf("the session did not move to key 12: A sends KeyID %d, B %d", e.lastKeyID[0].Load(), e.lastKeyID[1].Load())
	}
	return e
}

// remove writes B's keys file without key 2, sends SIGHUP and returns
// once B's status shows the file applied: B's reload has returned (the
// status waits for the lock the reload holds to its end).
func (e *removalEnv) remove() {
	e.t.Helper()
	writeKeys(e.t, e.dirB, "keys.json", removalFile(e.new))
	if err := e.shB.Signal(syscall.SIGHUP); err != nil {
		e.t.Fatal(err)
	}
	awaitKeys(e.t, "B removes key 2", e.sock, map[string]int{"ao": 1})
}

// errorsIn returns the error lines of a shim's log, for the report.
func errorsIn(log string) string {
	var errs []string
	for l := range strings.SplitSeq(log, "\n") {
		if strings.Contains(l, "level=ERROR") {
			errs = append(errs, strings.TrimSpace(l))
		}
	}
	if len(errs) == 0 {
		return "B's shim logged no error"
	}
	return "B's shim logged: " + strings.Join(errs, " | ")
}

// TestShimRemovedKeyReplay: M replays, during the SIGHUP reload that
// removes key 2 from B, a data segment A genuinely signed with key 2
// before the session moved to key 12 (its RNextKeyID names key 2, asking
// B to send with it again). Each replay carries its number in its IP
// identification, which no MAC covers. After the reload returned, B's TCP
// is handed none of the replays sent from then on, and B sends nothing
// signed with key 2 (its data written from then on is watched).
func TestShimRemovedKeyReplay(t *testing.T) {
	var replay []byte
	e := newRemovalEnv(t, func(pkt []byte) { replay = pkt })
	orig, err := segment.ParsePacket(replay)
	if err != nil {
		t.Fatal(err)
	}
	seq, ack := orig.Header().Seq(), orig.Header().Ack()

	// What B's TCP is handed: the replays, numbered by IP ID.
	var mu sync.Mutex
	delivered := map[uint16]int{}
	in, err := onpath.Listen(e.on.B, func(pkt []byte, seg *segment.Segment) {
		h := seg.Header()
		if seg.Src() != onpath.AddrA || h.Seq() != seq || h.Ack() != ack || len(seg.Payload()) != len(orig.Payload()) {
			return
		}
		id, _ := onpath.IPv4ID(pkt)
		mu.Lock()
		delivered[id]++
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	// What B sends A: its data from sndStart on, by KeyID.
	sndStart := e.att.Tracker.View(e.d.flow).FromTarget.Next
	var sentOld, sentAfter atomic.Uint64
	var watching atomic.Bool
	stop := e.att.Watch(onpath.Flow{Peer: e.d.flow.Target, Target: e.d.flow.Peer}, func(_ []byte, seg *segment.Segment) {
		if !watching.Load() || len(seg.Payload()) == 0 || int32(seg.Header().Seq()-sndStart) < 0 {
			return
		}
		sentAfter.Add(1)
		if id, _, _ := aoIDs(seg); id == e.old.SendID {
			sentOld.Add(1)
		}
	})
	defer stop()

	// M replays every ~100 µs from before the SIGHUP until removalAfter
	// replays after the reload returned.
	var next atomic.Uint32 // the number of the next replay; IP ID 0 would be the kernel's
	next.Store(1)
	var mark atomic.Uint32
	mark.Store(^uint32(0))
	done := make(chan error, 1)
	go func() {
		pkt := bytes.Clone(replay)
		for {
			n := next.Load()
			if n >= mark.Load()+removalAfter || n >= 60000 {
				done <- nil
				return
			}
			_ = onpath.SetIPv4ID(pkt, uint16(n))
			if err := e.att.SendPacket(pkt); err != nil && err != syscall.ENOBUFS {
				done <- err
				return
			}
			next.Add(1)
			time.Sleep(100 * time.Microsecond)
		}
	}()
	time.Sleep(50 * time.Millisecond) // B is on key 2 again (finding 1's way in)
	e.remove()
	mark.Store(next.Load())
	watching.Store(true)
	e.d.writeBA(32 << 10)
	if err := <-done; err != nil {
		t.Fatalf("replaying: %v", err)
	}
	sent := next.Load() - 1
	// A's data after the last replay: once B read it, the replays before
	// it on the same queue were all answered.
	exchange(t, 16<<10, e.d)
	if !in.Sync(10 * time.Second) {
		t.Fatalf("the inbox did not drain: %v", in.Err())
	}
	if n := in.Dropped(); n > 0 || in.Err() != nil {
		t.Fatalf("the inbox missed %d segments (%v): its count would prove nothing", n, in.Err())
	}
	mu.Lock()
	var before, after int
	for id, n := range delivered {
		if uint32(id) >= mark.Load() {
			after += n
		} else {
			before += n
		}
	}
	mu.Unlock()
	st, err := shimStatusOf(e.sock)
	if err != nil {
		t.Fatal(err)
	}
	log := errorsIn(e.shB.Log())
	t.Logf("replayed a key-2 segment %d times, %d after the reload returned; B's TCP took %d of those before, %d after; B sent %d data segments since, %d signed with key 2; B dropped %s; %s",
		sent, sent-mark.Load()+1, before, after, sentAfter.Load(), sentOld.Load(), dropLine(st.Counters.Dropped), log)
	if after > 0 {
		t.Errorf("B's TCP took %d replayed segments signed with removed key 2 after the reload returned", after)
	}
	if sentOld.Load() > 0 {
		t.Errorf("B signed %d of its data segments with removed key 2 after the reload returned", sentOld.Load())
	}
	if sentAfter.Load() == 0 {
		t.Errorf("M saw none of B's data segments after the reload: the check above proved nothing")
	}
	if after+before == 0 && sent > 0 {
		t.Logf("no replay reached B's TCP at all: the reload won every race")
	}
}

// TestShimRemovedKeySYNFlood: M, holding key 2 (why it is removed),
// floods B's listener with SYNs signed with it from 192.0.2.9, inside
// the prefix the key covers, during the SIGHUP reload that removes it.
// Each SYN's sequence number is its number. After the reload returned, B's
// TCP is handed none of the SYNs sent from then on; a SYN signed with key
// 12 after them is (the count is complete: one queue, in order), and the
// session carries on, on key 12.
func TestShimRemovedKeySYNFlood(t *testing.T) {
	e := newRemovalEnv(t, nil)
	var ln net.Listener
	if err := e.nsB.Do(func() (err error) {
		ln, err = net.Listen("tcp4", netip.AddrPortFrom(onpath.AddrB, 0).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	target := netip.MustParseAddrPort(ln.Addr().String())
	// M's keys: B's, as the attacker holds them.
	ring := ao.NewKeyring(nil)
	forB := func(k keys.AO) *ao.MKT {
		k.Peer = netip.PrefixFrom(onpath.AddrB, 32)
		m, err := ring.Add(k)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	oldM, newM := forB(e.old), forB(e.new)
	const sentinel = 0xfffffff0

	var mu sync.Mutex
	delivered := map[uint32]int{} // SYN number → copies B's TCP was handed
	in, err := onpath.Listen(e.on.B, func(_ []byte, seg *segment.Segment) {
		h := seg.Header()
		if seg.Src() != removalFlood || h.DstPort() != target.Port() || !h.Flags().Has(segment.SYN) {
			return
		}
		mu.Lock()
		delivered[h.Seq()]++
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })

	var next atomic.Uint32
	next.Store(1)
	var mark atomic.Uint32
	mark.Store(^uint32(0))
	done := make(chan error, 1)
	go func() {
		var k ao.TrafficKey
		var pkt []byte
		for {
			n := next.Load()
			if n >= mark.Load()+removalAfter || n >= 12000 {
				done <- nil
				return
			}
			from := netip.AddrPortFrom(removalFlood, uint16(10000+n%50000))
			var err error
			if pkt, err = onpath.BuildSignedSYN(pkt[:0], &k, oldM, from, target, n, uint16(n)); err == nil {
				err = e.att.SendPacket(pkt)
			}
			if err != nil && err != syscall.ENOBUFS {
				done <- err
				return
			}
			next.Add(1)
			time.Sleep(100 * time.Microsecond)
		}
	}()
	time.Sleep(50 * time.Millisecond) // B holds half-open sessions on key 2
	e.remove()
	mark.Store(next.Load())
	if err := <-done; err != nil {
		t.Fatalf("flooding: %v", err)
	}
	sent := next.Load() - 1
	// The sentinel: a SYN signed with key 12 after the flood, on the same
	// queue. Once B's TCP got it, it got all it would of the flood.
	var k ao.TrafficKey
	pkt, err := onpath.BuildSignedSYN(nil, &k, newM, netip.AddrPortFrom(removalFlood, 9999), target, sentinel, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !waitFor(10*time.Second, func() bool {
		mu.Lock()
		got := delivered[sentinel]
		mu.Unlock()
		if got == 0 {
			_ = e.att.SendPacket(pkt)
		}
		return got > 0
	}) {
		t.Fatal("B's TCP never got the SYN signed with key 12: the count below would prove nothing")
	}
	if !in.Sync(10 * time.Second) {
		t.Fatalf("the inbox did not drain: %v", in.Err())
	}
	if n := in.Dropped(); n > 0 || in.Err() != nil {
		t.Fatalf("the inbox missed %d segments (%v): its count would prove nothing", n, in.Err())
	}
	exchange(t, 16<<10, e.d)
	mu.Lock()
	var before, after int
	for n, c := range delivered {
		switch {
		case n == sentinel:
		case n >= mark.Load():
			after += c
		default:
			before += c
		}
	}
	mu.Unlock()
	st, err := shimStatusOf(e.sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("flooded %d SYNs signed with key 2, %d after the reload returned; B's TCP took %d of those before, %d after; B dropped %s; %s",
		sent, sent-mark.Load()+1, before, after, dropLine(st.Counters.Dropped), errorsIn(e.shB.Log()))
	if after > 0 {
		t.Errorf("B's TCP took %d SYNs signed with removed key 2 after the reload returned", after)
	}
}
