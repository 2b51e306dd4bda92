//go:build linux

package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
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
const removalAfter = 2000

// floodPorts is how many source ports the SYN flood turns over: a SYN
// from a port whose earlier one B's shim still tracks replaces it, so
// the flood never fills the shim's table (whose refusals would hide what
// the key lets in).
const floodPorts = 1000

// The attacks come in bursts: so many segments at once, then a pause.
// The shim's reader is kept busy without M taking a CPU away from the
// reload, so the two run side by side as on a machine with cores to
// spare. A replay costs the reader less than a SYN (no session to start,
// no SYN-ACK to sign): its bursts are closer.
const (
	floodBurst  = 256
	floodPause  = 2 * time.Millisecond
	replayBurst = 64
	replayPause = 200 * time.Microsecond
)

// attack calls send(n) for n = 1, 2, ..., in bursts, until n
// reaches mark+removalAfter (mark starts at the top; the caller sets it,
// from next, once the reload returned), and sends the first error but
// ENOBUFS (M's queue full, as a flood makes it), or nil, on done. next is
// the number the next call will take: a number is taken (next moves past
// it) before its segment is built or sent, so every number from mark on
// was sent after the caller read next, and the one that may have been
// on its way then is below mark.
func attack(burst uint32, pause time.Duration, send func(n uint32) error) (next, mark *atomic.Uint32, done chan error) {
	if raceEnabled {
		// The race detector slows the shims about tenfold: the attack,
		// meant to race the reload and not to starve the sessions, slows
		// as much (under -race and a busy machine the replays otherwise
		// ran through their 2^22 numbers before the reload).
		pause *= 10
	}
	next, mark, done = new(atomic.Uint32), new(atomic.Uint32), make(chan error, 1)
	next.Store(1)
	mark.Store(^uint32(0) - removalAfter)
	go func() {
		for {
			n := next.Add(1) - 1
			if n >= mark.Load()+removalAfter || n >= 1<<22-1 {
				done <- nil
				return
			}
			if err := send(n); err != nil && !errors.Is(err, syscall.ENOBUFS) {
				done <- err
				return
			}
			if n%burst == 0 {
				time.Sleep(pause)
			}
		}
	}()
	return next, mark, done
}

// numberReplay writes n (< 2²²) into pkt's IPv4 identification and DSCP,
// which no MAC covers: the low 16 bits, then 6 more (IP ID 0 would be the
// kernel's to choose).
func numberReplay(pkt []byte, n uint32) error {
	if err := onpath.SetIPv4ID(pkt, uint16(n)); err != nil {
		return err
	}
	pkt[1] = byte(n>>16) << 2
	return nil
}

// replayNumber reads numberReplay's number back.
func replayNumber(pkt []byte) uint32 {
	id, _ := onpath.IPv4ID(pkt)
	return uint32(id) | uint32(pkt[1]>>2)<<16
}

// removalSessions is how many sessions A and B hold: M replays into each,
// so that B's reload has as many to move off key 2 as a router has
// peers' sessions.
const removalSessions = 96

// removalEnv is a removal test's world: the namespaces, M, the shims and
// the sessions, moved to key 12.
type removalEnv struct {
	t          *testing.T
	on         *onpath.Net
	att        *onpath.Attacker
	nsA, nsB   *ns
	dirB, sock string
	shB        *proc.Proc
	ds         []*duplex
	old, new   keys.AO // B's MKTs for A's prefix: key 2 (removed) and 12

	mu       sync.Mutex
	keyID    map[onpath.Flow]uint8  // each direction's last KeyID, M saw
	captured map[onpath.Flow][]byte // A's first data segment signed with key 2, by session (A to B)
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

// flowOf is seg's direction.
func flowOf(seg *segment.Segment) onpath.Flow {
	h := seg.Header()
	return onpath.Flow{Peer: netip.AddrPortFrom(seg.Src(), h.SrcPort()), Target: netip.AddrPortFrom(seg.Dst(), h.DstPort())}
}

// newRemovalEnv builds the world: shims on key 2, removalSessions
// sessions on it (M keeping, of each, A's first data segment), then key 12
// on both ends and the sessions moved to it.
func newRemovalEnv(t *testing.T) *removalEnv {
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
	e := &removalEnv{t: t, on: on, att: att, nsA: &ns{on.A}, nsB: &ns{on.B},
		keyID: map[onpath.Flow]uint8{}, captured: map[onpath.Flow][]byte{}}
	prefixA := netip.MustParsePrefix("192.0.2.0/24")
	e.old, e.new = removalKey(2, 0x22, prefixA), removalKey(12, 0xcc, prefixA)
	toB := netip.PrefixFrom(onpath.AddrB, 32)
	dirA := shortDir(t)
	keysA := writeKeys(t, dirA, "keys.json", removalFile(removalKey(2, 0x22, toB)))
	shA, sockA := startShim(t, e.nsA, dirA, "-keys", keysA, "-queue", removalQueue)
	e.dirB = shortDir(t)
	keysB := writeKeys(t, e.dirB, "keys.json", removalFile(e.old))
	e.shB, e.sock = startShim(t, e.nsB, e.dirB, "-keys", keysB, "-queue", removalQueue, "-queues", "1")

	// The sessions, with M watching each way's KeyIDs.
	watch := func(from, to netip.Addr) {
		stop := att.Watch(onpath.Flow{Peer: netip.AddrPortFrom(from, 0), Target: netip.AddrPortFrom(to, 0)},
			func(pkt []byte, seg *segment.Segment) {
				id, _, ok := aoIDs(seg)
				if !ok {
					return
				}
				f := flowOf(seg)
				e.mu.Lock()
				defer e.mu.Unlock()
				e.keyID[f] = id
				if from == onpath.AddrA && len(seg.Payload()) > 0 && id == e.old.SendID && e.captured[f] == nil {
					e.captured[f] = bytes.Clone(pkt)
				}
			})
		t.Cleanup(stop)
	}
	watch(onpath.AddrA, onpath.AddrB)
	watch(onpath.AddrB, onpath.AddrA)
	for i := range removalSessions {
		e.ds = append(e.ds, dialDuplex(t, e.nsA, e.nsB, fmt.Sprintf("session %d", i), &net.ListenConfig{}, onpath.AddrA, byte(i)))
	}
	exchange(t, 4<<10, e.ds...)
	if !waitFor(10*time.Second, func() bool { e.mu.Lock(); defer e.mu.Unlock(); return len(e.captured) == len(e.ds) }) {
		t.Fatalf("M captured a data segment of A's signed with key 2 on %d sessions of %d", len(e.captured), len(e.ds))
	}

	// Key 12 on both ends; the sessions move to it.
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
	var left []string
	if !waitFor(30*time.Second, func() bool {
		exchange(t, 1<<10, e.ds...)
		left = e.notOn(e.new.SendID)
		return len(left) == 0
	}) {
		t.Fatalf("sessions not moved to key 12: %v", left)
	}
	return e
}

// notOn lists the sessions' directions whose last KeyID was not id.
func (e *removalEnv) notOn(id uint8) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var left []string
	for _, d := range e.ds {
		for _, f := range []onpath.Flow{d.flow, {Peer: d.flow.Target, Target: d.flow.Peer}} {
			if got := e.keyID[f]; got != id {
				left = append(left, fmt.Sprintf("%v: KeyID %d", f, got))
			}
		}
	}
	return left
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

// TestShimRemovedKeyReplay: M replays, into each of B's sessions in
// turn, a data segment A genuinely signed with key 2 before the session
// moved to key 12: its RNextKeyID names key 2, asking B to send with it
// again. Each replay carries its number in its IP identification and
// DSCP, which no MAC covers. While key 2 is still in, the replays verify
// and reach B's TCP (an old duplicate, which it drops) but move no key:
// B's data written meanwhile is signed with key 12 (finding 5). Then a
// SIGHUP reload removes key 2, M replaying all along: after the reload
// returned, B's TCP is handed none of the replays sent from then on, and
// B signs none of the data it sends from then on with key 2.
func TestShimRemovedKeyReplay(t *testing.T) {
	e := newRemovalEnv(t)
	type id struct {
		port     uint16
		seq, ack uint32
	}
	var replays [][]byte
	isReplay := map[id]bool{}
	for _, d := range e.ds {
		pkt := e.captured[d.flow]
		seg, err := segment.ParsePacket(pkt)
		if err != nil {
			t.Fatal(err)
		}
		replays = append(replays, pkt)
		isReplay[id{seg.Header().SrcPort(), seg.Header().Seq(), seg.Header().Ack()}] = true
	}

	// What B's TCP is handed: the replays, by number.
	var mu sync.Mutex
	delivered := map[uint32]int{}
	in, err := onpath.Listen(e.on.B, func(pkt []byte, seg *segment.Segment) {
		h := seg.Header()
		if seg.Src() != onpath.AddrA || !isReplay[id{h.SrcPort(), h.Seq(), h.Ack()}] {
			return
		}
		mu.Lock()
		delivered[replayNumber(pkt)]++
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	// What B sends A, by KeyID: its data from each session's snd_nxt now
	// on (phase 1, while M replays before the reload), and from its
	// snd_nxt once that data was read (phase 2, after the reload): data
	// written in a phase is signed in it.
	sndStart, sndMid := map[onpath.Flow]uint32{}, map[onpath.Flow]uint32{}
	backFlow := func(d *duplex) onpath.Flow { return onpath.Flow{Peer: d.flow.Target, Target: d.flow.Peer} }
	for _, d := range e.ds {
		sndStart[backFlow(d)] = e.att.Tracker.View(d.flow).FromTarget.Next
	}
	var sent, sentOld [3]atomic.Uint64 // by phase
	var phase atomic.Int32             // sndMid is written before phase 2 is stored
	stop := e.att.Watch(onpath.Flow{Peer: netip.AddrPortFrom(onpath.AddrB, 0), Target: netip.AddrPortFrom(onpath.AddrA, 0)},
		func(_ []byte, seg *segment.Segment) {
			f, p := flowOf(seg), phase.Load()
			start, ok := sndStart[f]
			if p == 2 {
				start = sndMid[f]
			}
			if p == 0 || !ok || len(seg.Payload()) == 0 || int32(seg.Header().Seq()-start) < 0 {
				return
			}
			sent[p].Add(1)
			if id, _, _ := aoIDs(seg); id == e.old.SendID {
				sentOld[p].Add(1)
			}
		})
	defer stop()

	// M replays, the sessions in turn, from before the SIGHUP until
	// removalAfter replays after the reload returned.
	next, mark, done := attack(replayBurst, replayPause, func(n uint32) error {
		if uint16(n) == 0 {
			return nil // IP ID 0 is the kernel's to choose: this number is skipped
		}
		pkt := replays[n%uint32(len(replays))]
		if err := numberReplay(pkt, n); err != nil {
			return err
		}
		return e.att.SendPacket(pkt)
	})
	// Phase 1: the replays verify (key 2 is still in) and reach B's TCP,
	// but ask B in vain to send with key 2 again (finding 5: a segment
	// older than the newest accepted moves no key).
	if !waitFor(10*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(delivered) > len(replays) }) {
		t.Fatalf("no replay reached B's TCP before the reload: %v", in.Err())
	}
	phase.Store(1)
	for _, d := range e.ds {
		d.writeBA(4 << 10)
	}
	exchangeEnd(t, e.ds)
	for _, d := range e.ds {
		sndMid[backFlow(d)] = e.att.Tracker.View(d.flow).FromTarget.Next
	}
	// Phase 2: the reload removes key 2.
	e.remove()
	mark.Store(next.Load())
	phase.Store(2)
	for _, d := range e.ds {
		d.writeBA(4 << 10)
	}
	if err := <-done; err != nil {
		t.Fatalf("replaying: %v", err)
	}
	total := next.Load() - 2 // next is past the number that ended the attack
	// A's data after the last replay: once B read it, the replays before
	// it on the same queue were all answered.
	exchange(t, 4<<10, e.ds...)
	if !in.Sync(10 * time.Second) {
		t.Fatalf("the inbox did not drain: %v", in.Err())
	}
	if n := in.Dropped(); n > 0 || in.Err() != nil {
		t.Fatalf("the inbox missed %d segments (%v): its count would prove nothing", n, in.Err())
	}
	mu.Lock()
	var before, after int
	var late []uint32
	for n, c := range delivered {
		if n >= mark.Load() {
			after += c
			late = append(late, n)
		} else {
			before += c
		}
	}
	mu.Unlock()
	st, err := shimStatusOf(e.sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("replayed %d sessions' key-2 segments %d times, %d after the reload returned; B's TCP took %d of those before, %d after; "+
		"B's data segments while M replayed before the reload: %d, %d signed with key 2; after: %d, %d signed with key 2; B dropped %s; %s",
		len(replays), total, total-mark.Load()+1, before, after, sent[1].Load(), sentOld[1].Load(), sent[2].Load(), sentOld[2].Load(),
		dropLine(st.Counters.Dropped), errorsIn(e.shB.Log()))
	if after > 0 {
		slices.Sort(late)
		t.Errorf("B's TCP took %d replayed segments signed with removed key 2 after the reload returned (from %d on): numbers %v", after, mark.Load(), late[:min(len(late), 10)])
	}
	if sentOld[1].Load() > 0 {
		t.Errorf("replays rolled B's sending key back: %d of its data segments signed with key 2 before the reload, its sessions on key 12", sentOld[1].Load())
	}
	if sentOld[2].Load() > 0 {
		t.Errorf("B signed %d of its data segments with removed key 2 after the reload returned", sentOld[2].Load())
	}
	if sent[1].Load() == 0 || sent[2].Load() == 0 {
		t.Errorf("M saw %d and %d of B's data segments in the two phases: a check above proved nothing", sent[1].Load(), sent[2].Load())
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
	e := newRemovalEnv(t)
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

	var k ao.TrafficKey
	var pkt []byte
	next, mark, done := attack(floodBurst, floodPause, func(n uint32) error {
		from := netip.AddrPortFrom(removalFlood, uint16(10000+n%floodPorts))
		var err error
		if pkt, err = onpath.BuildSignedSYN(pkt[:0], &k, oldM, from, target, n, uint16(n)); err != nil {
			return err
		}
		return e.att.SendPacket(pkt)
	})
	time.Sleep(50 * time.Millisecond) // B holds half-open sessions on key 2
	e.remove()
	mark.Store(next.Load())
	if err := <-done; err != nil {
		t.Fatalf("flooding: %v", err)
	}
	sent := next.Load() - 2 // next is past the number that ended the attack
	// The sentinel: a SYN signed with key 12 after the flood, on the same
	// queue. Once B's TCP got it, it got all it would of the flood.
	pkt, err = onpath.BuildSignedSYN(nil, &k, newM, netip.AddrPortFrom(removalFlood, 9999), target, sentinel, 1)
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
	exchange(t, 4<<10, e.ds...)
	mu.Lock()
	var before, after int
	var late []uint32
	for n, c := range delivered {
		switch {
		case n == sentinel:
		case n >= mark.Load():
			after += c
			late = append(late, n)
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
		slices.Sort(late)
		t.Errorf("B's TCP took %d SYNs signed with removed key 2 after the reload returned (from %d on): numbers %v", after, mark.Load(), late[:min(len(late), 10)])
	}
}
