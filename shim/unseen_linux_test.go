//go:build linux

package shim

import (
	"bytes"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/segment"
	"github.com/tcpsig/tcpsig/shim/nfqueue"
)

// forgedAO is a segment from aoPeer to the shim's address with a TCP-AO
// option whose MAC is zero: what an off-path forger sends.
func forgedAO(t testing.TB, from, to uint16, seq uint32) []byte {
	t.Helper()
	var opt [20]byte
	pkt, err := segment.AppendPacket(nil, segment.IP{Src: aoPeer, Dst: shimAddr},
		segment.Fields{SrcPort: from, DstPort: to, Seq: seq, Ack: 1, Flags: segment.ACK, Window: 65535,
			Options: [][]byte{ao.AppendOption(opt[:0], 12)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return pkt
}

// localAO is a segment the local stack sends to aoPeer on a session the
// shim never saw the handshake of.
func localAO(t testing.TB, from, to uint16) []byte {
	t.Helper()
	pkt, err := segment.AppendPacket(nil, segment.IP{Src: shimAddr, Dst: aoPeer},
		segment.Fields{SrcPort: from, DstPort: to, Seq: 77, Ack: 1, Flags: segment.ACK | segment.PSH, Window: 65535}, []byte("data"))
	if err != nil {
		t.Fatal(err)
	}
	return pkt
}

// answerUnseen passes pkt through the shim's layer in its direction as a
// queue reader does, reporting it unseen on ErrNoConn.
func answerUnseen(t testing.TB, s *Shim, hook uint8, pkt []byte) {
	t.Helper()
	p := &nfqueue.Packet{Hook: hook, Payload: pkt}
	if _, err := s.transform(nil, p); err == nil {
		t.Fatalf("a session without its handshake passed (hook %d)", hook)
	} else {
		s.reportUnseen(p)
		s.dropped(p, err)
	}
}

func listed(st Status, local, remote netip.AddrPort) *UnseenConn {
	for i, u := range st.Unseen {
		if u.Local == local && u.Remote == remote {
			return &st.Unseen[i]
		}
	}
	return nil
}

// TestUnseenFlood: 20,000 forged ACKs from a covered TCP-AO peer, each
// with made-up ports (issue 38, finding 4), then a real session the shim
// never saw the handshake of, whose local end sends. The log holds a
// burst of unseen lines, not one per forgery; the table stays at its
// bound, evicting forgeries; the real session is listed, with the
// evidence of its local end; the status counts what went.
func TestUnseenFlood(t *testing.T) {
	var log bytes.Buffer
	s, _ := metricsShim(t, &log)
	const flood = 20000
	for i := range flood {
		answerUnseen(t, s, nfqueue.HookInput, forgedAO(t, uint16(1024+i), 40001, uint32(i)))
	}
	local, remote := netip.AddrPortFrom(shimAddr, 41000), netip.AddrPortFrom(aoPeer, 179)
	for range 3 {
		answerUnseen(t, s, nfqueue.HookOutput, localAO(t, local.Port(), remote.Port()))
	}
	st := s.Status()
	lines := strings.Count(log.String(), "TCP-AO session seen without its handshake")
	t.Logf("%d forged ACKs: %d unseen lines, %d listed, totals %+v", flood, lines, len(st.Unseen), st.UnseenTotals)
	if lines > 2*dropLogBurst {
		t.Errorf("%d unseen lines for %d forgeries and one session; want at most %d (a burst per kind of evidence)", lines, flood, 2*dropLogBurst)
	}
	if len(st.Unseen) > 1024 {
		t.Errorf("%d unseen sessions listed, want at most 1024", len(st.Unseen))
	}
	u := listed(st, local, remote)
	if u == nil {
		t.Fatalf("the real session %v–%v is not listed after the flood", local, remote)
	}
	if u.Evidence != "local" || u.Dropped != 3 || st.Unseen[0] != *u {
		t.Errorf("the real session listed as %+v (first listed %+v); want evidence local, 3 dropped, listed first", *u, st.Unseen[0])
	}
	if ev := st.UnseenTotals.Evicted["once"]; ev != flood-1023 {
		t.Errorf("evicted %v, want %d forgeries seen once", st.UnseenTotals.Evicted, flood-1023)
	}
	if sup := st.UnseenTotals.LogSuppressed; sup < flood-2*dropLogBurst {
		t.Errorf("log suppressed %d, want at least %d", sup, flood-2*dropLogBurst)
	}
	ln, err := s.serveStatus()
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	fams, _ := scrape(t, s)
	if v, _ := value(fams, "tcpsig_shim_sessions_unseen_evicted_total", "evidence", "once"); v != flood-1023 {
		t.Errorf("tcpsig_shim_sessions_unseen_evicted_total{evidence=once} %v, want %d", v, flood-1023)
	}
	if v, _ := value(fams, "tcpsig_shim_sessions_unseen_log_suppressed_total"); v != float64(st.UnseenTotals.LogSuppressed) {
		t.Errorf("tcpsig_shim_sessions_unseen_log_suppressed_total %v, want %d", v, st.UnseenTotals.LogSuppressed)
	}
	if !strings.Contains(log.String(), "the local stack sending on it") || !strings.Contains(log.String(), "local="+local.String()) {
		t.Errorf("the real session's first segment was not logged:\n%s", lastLines(log.String(), 5))
	}
}

// TestUnseenNoGlobalLock: the unseen path takes no lock of the shim's:
// with s.mu held (a reload, a status read), forgeries are still
// recorded and the packet path goes on.
func TestUnseenNoGlobalLock(t *testing.T) {
	var log bytes.Buffer
	s, _ := metricsShim(t, &log)
	s.mu.Lock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 100 {
			s.reportUnseen(&nfqueue.Packet{Hook: nfqueue.HookInput, Payload: forgedAO(t, uint16(2000+i), 40001, 1)})
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Error("reportUnseen still blocked on the shim's lock after 30 s")
	}
	s.mu.Unlock()
	<-done
	if n := len(s.Status().Unseen); n != 100 {
		t.Errorf("%d unseen listed, want 100", n)
	}
}

// TestUnseenEviction: the table's order of eviction, on the test's clock:
// forgeries seen once go first, then, when none is left, sessions seen
// only from the peer over time (least recently seen first); a session the
// local stack sent on is never evicted for one seen only from the peer,
// which is refused instead; idle entries expire, the forgeries first.
func TestUnseenEviction(t *testing.T) {
	now := time.Unix(10000, 0)
	u := &unseenTable{}
	ap := func(port int) netip.AddrPort { return netip.AddrPortFrom(aoPeer, uint16(port)) }
	me := netip.AddrPortFrom(shimAddr, 179)
	// A session seen only from its peer, over more than a second.
	u.see(me, ap(1), false, now)
	u.see(me, ap(1), false, now.Add(2*unseenPersistAfter))
	// Sessions whose local end sent.
	for p := 2; p < 10; p++ {
		u.see(me, ap(p), true, now)
	}
	// A flood of forgeries seen once, three times the table.
	for p := 100; p < 100+3*maxUnseen; p++ {
		u.see(me, ap(p), false, now.Add(3*unseenPersistAfter))
	}
	have := func(port int) bool { _, ok := u.idx[[2]netip.AddrPort{me, ap(port)}]; return ok }
	for p := 1; p < 10; p++ {
		if !have(p) {
			t.Errorf("session %d evicted by forgeries seen once", p)
		}
	}
	if c := u.counts(); c.len != maxUnseen || c.evicted[unseenOnce] != 3*maxUnseen-(maxUnseen-9) {
		t.Errorf("counts %+v: want %d entries, %d forgeries evicted", c, maxUnseen, 3*maxUnseen-(maxUnseen-9))
	}
	// The forgeries left seen again, seconds later: now they persist.
	// With none seen once left, a new one pushes out the least recently
	// seen persisting session (port 1), never a local one.
	later := now.Add(10 * unseenPersistAfter)
	for p := 100 + 2*maxUnseen + 9; p < 100+3*maxUnseen; p++ {
		u.see(me, ap(p), false, later)
	}
	if c := u.counts(); c.len != maxUnseen || c.evicted[unseenPersisting] != 0 {
		t.Fatalf("counts %+v: want the table full, none persisting evicted yet", c)
	}
	u.see(me, ap(5000), false, later)
	if have(1) || !have(5000) || u.counts().evicted[unseenPersisting] != 1 {
		t.Errorf("a new forgery in a table of persisting and local sessions: port 1 kept %v, counts %+v; want port 1 (least recently seen) evicted", have(1), u.counts())
	}
	for p := 2; p < 10; p++ {
		if !have(p) {
			t.Errorf("local session %d evicted by sessions seen only from the peer", p)
		}
	}
	// A table full of local sessions refuses one seen only from the peer.
	full := &unseenTable{}
	for p := range maxUnseen {
		full.see(me, ap(p), true, now)
	}
	full.see(me, ap(maxUnseen), false, now)
	if c := full.counts(); c.len != maxUnseen || c.evicted[unseenOnce] != 1 || c.evicted[unseenLocal] != 0 {
		t.Errorf("full of local sessions: counts %+v; want the newcomer refused", c)
	}
	full.see(me, ap(maxUnseen+1), true, now.Add(time.Second))
	if c := full.counts(); c.evicted[unseenLocal] != 1 || !func() bool { _, ok := full.idx[[2]netip.AddrPort{me, ap(maxUnseen + 1)}]; return ok }() {
		t.Errorf("a new local session in a table full of them: counts %+v; want the least recent evicted", c)
	}
	// Expiry: the forgeries seen once go after their minute, the others
	// stay for ten.
	e := &unseenTable{}
	e.see(me, ap(1), false, now)
	e.see(me, ap(2), true, now)
	e.expire(now.Add(unseenIdle[unseenOnce] + time.Second))
	if e.counts().len != 1 || e.list()[0].Remote != ap(2) {
		t.Errorf("after a minute: %+v, want only the local session", e.list())
	}
	e.expire(now.Add(unseenIdle[unseenLocal] + time.Second))
	if e.counts().len != 0 {
		t.Errorf("after ten minutes: %+v, want none", e.list())
	}
	// Slots are reused after expiry.
	for p := range 2 * maxUnseen {
		e.see(me, ap(p), false, now)
	}
	if c := e.counts(); c.len != maxUnseen {
		t.Errorf("refilled after expiry: %+v", c)
	}
}

// TestUnseenConcurrent: queue readers record at once (run under -race).
func TestUnseenConcurrent(t *testing.T) {
	var log bytes.Buffer
	s, _ := metricsShim(t, &log)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				hook := uint8(nfqueue.HookInput)
				if i%7 == 0 {
					hook = nfqueue.HookOutput
				}
				p := forgedAO(t, uint16(g*5000+i), 40001, 1)
				if hook == nfqueue.HookOutput {
					p = localAO(t, uint16(g*5000+i), 179)
				}
				s.reportUnseen(&nfqueue.Packet{Hook: hook, Payload: p})
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			_ = s.Status()
		}
	})
	wg.Wait()
	if n := len(s.Status().Unseen); n != maxUnseen {
		t.Errorf("%d listed, want %d", n, maxUnseen)
	}
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n") + fmt.Sprintf("\n(%d lines)", len(l))
}
