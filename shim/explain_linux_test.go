//go:build linux

package shim

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/segment"
	"github.com/tcpsig/tcpsig/shim/nfqueue"
)

// optionsPeer is aoPeer's end of metricsShim's session, configured with
// exclude_options where the shim's entry includes them.
func optionsPeer(t *testing.T) *ao.Conn { return aoPeerWith(t, 2, true) }

// aoPeerWith is aoPeer's end of metricsShim's session with the shim's
// secret, sending KeyID sendID, and exclude_options as given.
func aoPeerWith(t *testing.T, sendID uint8, exclude bool) *ao.Conn {
	t.Helper()
	ring := ao.NewKeyring(nil)
	if _, err := ring.Add(keys.AO{Peer: netip.PrefixFrom(shimAddr, 32), SendID: sendID, RecvID: 1, Algorithm: "hmac(sha1)",
		Key: []byte(metricsAOKey), ExcludeOptions: exclude}); err != nil {
		t.Fatal(err)
	}
	peer := new(ao.Conn)
	if err := peer.Init(ring, ao.Endpoint{Local: netip.AddrPortFrom(aoPeer, 179), Remote: netip.AddrPortFrom(shimAddr, 40000),
		LocalISN: 1000, RemoteISN: 1, Established: true, SendSeq: 1001, RecvSeq: 2, CurrentSendID: sendID, RNextRecvID: 1}, ao.Policy{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(peer.Close)
	return peer
}

// tsSegment is a segment from aoPeer with a timestamps option and a
// TCP-AO option signed by peer (so that excluding options matters).
func tsSegment(t *testing.T, peer *ao.Conn, seq uint32) []byte {
	t.Helper()
	var opt [20]byte
	ts := []byte{1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2}
	pkt, err := segment.AppendPacket(nil, segment.IP{Src: aoPeer, Dst: shimAddr},
		segment.Fields{SrcPort: 179, DstPort: 40000, Seq: seq, Ack: 2, Flags: segment.ACK | segment.PSH, Window: 65535,
			Options: [][]byte{ts, ao.AppendOption(opt[:0], 12)}},
		[]byte("data"))
	if err != nil {
		t.Fatal(err)
	}
	seg, err := segment.ParsePacket(pkt)
	if err != nil {
		t.Fatal(err)
	}
	if err := peer.Sign(&seg); err != nil {
		t.Fatal(err)
	}
	return pkt
}

// explainNext runs the worker on the next queued copy; false when none
// is queued.
func explainNext(s *Shim) bool {
	x := &s.obs.explain
	select {
	case j := <-x.q:
		s.explainJob(j)
		x.release(j.pkt)
		return true
	default:
		return false
	}
}

// TestExplainDrops: a covered peer's dropped segments reach the worker
// one per peer prefix per interval, through a bounded queue; the worker
// names the cause with the keys file in use (options: the peer excludes
// them; unsigned), logs it once per peer and cause and never a key byte,
// counts tcpsig_shim_diagnoses_total{peer,cause}, and the status and
// LogStatus show each peer's last diagnosis. A segment that verifies
// queues nothing.
func TestExplainDrops(t *testing.T) {
	var log bytes.Buffer
	s, good := metricsShim(t, &log)
	ln, err := s.serveStatus()
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	x := &s.obs.explain
	peer := optionsPeer(t)

	if err := inbound(t, s, aoSegment(t, good, 2, true, 1001)); err != nil {
		t.Fatalf("a good segment: %v", err)
	}
	if len(x.q) != 0 {
		t.Fatal("a segment that verified was queued for a diagnosis")
	}
	// Two drops within the interval: one copy.
	for seq := uint32(1005); seq < 1015; seq += 5 {
		if err := inbound(t, s, tsSegment(t, peer, seq)); err == nil {
			t.Fatal("a segment signed without options was accepted")
		}
	}
	if len(x.q) != 1 {
		t.Fatalf("%d copies queued for two drops of one peer within the interval, want 1", len(x.q))
	}
	if !explainNext(s) {
		t.Fatal("nothing queued")
	}
	// The interval over, the same cause again: counted, not logged again.
	s.obs.peers.Load().lookup(aoPeer).counts.nextExplain.Store(0)
	if err := inbound(t, s, tsSegment(t, peer, 1020)); err == nil || !explainNext(s) {
		t.Fatalf("after the interval: %v, or no copy queued", err)
	}
	// Another peer: an unsigned segment of the TCP-MD5 prefix.
	if err := inbound(t, s, packet(t, md5Peer, segment.ACK, 1, 1, "unsigned")); err == nil || !explainNext(s) {
		t.Fatalf("unsigned: %v, or no copy queued", err)
	}

	out := log.String()
	if n := strings.Count(out, "cause=options"); n != 1 {
		t.Errorf("%d log lines name cause=options, want 1:\n%s", n, out)
	}
	for _, want := range []string{
		`msg="drop explained" verdict=bad_mac peer=192.0.2.1/32 local=203.0.113.1:40000 remote=192.0.2.1:179 cause=options fix="ao[0]: set \"exclude_options\": true (the peer excludes options)" entry=ao[0]`,
		`peer=198.51.100.0/24 local=203.0.113.1:40000 remote=198.51.100.7:179 cause=unsigned`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the log has no %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, metricsAOKey) || strings.Contains(out, metricsMD5Key) {
		t.Error("a key reached the log")
	}
	fams, text := scrape(t, s)
	for _, c := range []struct {
		peer, cause string
		want        float64
	}{{"192.0.2.1/32", "options", 2}, {"198.51.100.0/24", "unsigned", 1}} {
		if v, ok := value(fams, "tcpsig_shim_diagnoses_total", "peer", c.peer, "cause", c.cause); !ok || v != c.want {
			t.Errorf("tcpsig_shim_diagnoses_total{peer=%q,cause=%q} = %v (%v), want %v\n%s", c.peer, c.cause, v, ok, c.want, text)
		}
	}
	_, body := getStatus(t, s.cfg.Status, "/")
	var st Status
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Diagnoses) != 2 || st.Diagnoses[0].Peer != "192.0.2.1/32" || st.Diagnoses[0].Cause != "options" ||
		st.Diagnoses[0].Entry != "ao[0]" || st.Diagnoses[1].Cause != "unsigned" || st.Diagnoses[1].Entry != "md5[0]" {
		t.Errorf("status diagnoses %+v", st.Diagnoses)
	}
	log.Reset()
	s.LogStatus()
	if !strings.Contains(log.String(), `msg=diagnosis peer=192.0.2.1/32 cause=options`) {
		t.Errorf("LogStatus shows no diagnosis:\n%s", log.String())
	}
}

// TestExplainQueueBound: copies past the queue's bound are dropped and
// counted, never waited for; their buffers are reused.
func TestExplainQueueBound(t *testing.T) {
	var log bytes.Buffer
	s, _ := metricsShim(t, &log)
	x := &s.obs.explain
	e := s.obs.peers.Load().lookup(md5Peer)
	for i := range explainQueue + 3 {
		e.counts.nextExplain.Store(0)
		if err := inbound(t, s, packet(t, md5Peer, segment.ACK, uint32(i), 1, "unsigned")); err == nil {
			t.Fatal("accepted")
		}
	}
	if len(x.q) != explainQueue || x.queueFull.Load() != 3 {
		t.Fatalf("%d queued, %d dropped; want %d and 3", len(x.q), x.queueFull.Load(), explainQueue)
	}
	for explainNext(s) {
	}
	if len(x.free) == 0 {
		t.Error("no buffer given back for reuse")
	}
	x.mu.Lock()
	n := x.counts[[2]string{"198.51.100.0/24", "unsigned"}]
	x.mu.Unlock()
	if n != explainQueue {
		t.Errorf("%d diagnoses counted, want %d", n, explainQueue)
	}
}

// TestExplainHookAllocs: under a flood of one peer's bad segments, the
// drop path's hook costs no allocation once the peer had its search of
// the interval.
func TestExplainHookAllocs(t *testing.T) {
	var log bytes.Buffer
	s, _ := metricsShim(t, &log)
	e := s.obs.peers.Load().lookup(md5Peer)
	e.counts.nextExplain.Store(time.Now().Add(time.Hour).UnixNano())
	p := &nfqueue.Packet{Hook: nfqueue.HookInput, Payload: packet(t, md5Peer, segment.ACK, 1, 1, "unsigned")}
	local, remote, _ := tuple(p)
	if n := testing.AllocsPerRun(100, func() { s.offerExplain(p, e, verdictUnsigned, local, remote) }); n != 0 {
		t.Errorf("%v allocations per drop within the interval, want 0", n)
	}
	if len(s.obs.explain.q) != 0 {
		t.Error("a copy queued within the interval")
	}
}

// TestExplainNoKey: a segment of an established TCP-AO session whose
// KeyID the shim has no key for (the peer sends KeyID 9 with the right
// secret; the shim's entry says rcvid 2) is explained as key-id with the
// session's ISNs, from the layer.
func TestExplainNoKey(t *testing.T) {
	var log bytes.Buffer
	s, _ := metricsShim(t, &log)
	err := inbound(t, s, tsSegment(t, aoPeerWith(t, 9, false), 1005))
	if classify(err) != verdictNoKey || !explainNext(s) {
		t.Fatalf("%v (%v), or no copy queued", err, classify(err))
	}
	d := s.obs.explain.diagnoses()
	if len(d) != 1 || d[0].Cause != "key-id" || d[0].Entry != "ao[0]" || d[0].Verdict != "no_key" {
		t.Errorf("diagnoses %+v, want key-id of ao[0]", d)
	}
}
