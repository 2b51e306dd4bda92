//go:build linux

package shim

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/diagnose"
	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/segment"
	"github.com/tcpsig/tcpsig/shim/nfqueue"
)

// The shim explains its drops (package diagnose): when it drops a covered
// peer's segment for a bad MAC, a KeyID it has no key for, a missing
// option or the other kind's option, the drop path hands a copy of the
// packet to one worker through a bounded queue, at most one per peer
// prefix per explainEvery. The worker reads the keys file again (the
// shim keeps no key bytes once its keyrings hold them), checks that it is
// the file in use, searches it, wipes it, and logs the cause once per
// peer and cause, counts it (tcpsig_shim_diagnoses_total) and keeps the
// peer's last diagnosis for the status. Nothing of this runs for a
// segment that verifies.
const (
	explainQueue = 16               // copies waiting for the worker; a full queue drops the copy
	explainEvery = 10 * time.Second // at most one search per peer prefix per this
)

// explainJob is a dropped segment's copy and what the drop path knew.
type explainJob struct {
	pkt      []byte // from explainer.free; the worker gives it back
	peer     *peerEntry
	verdict  verdict
	local    netip.AddrPort
	remote   netip.AddrPort
	isns     ao.ISNs
	isnKnown bool
	sne      uint32
	at       time.Time
}

// explainer is the drop path's side of the diagnoses (the queue, the
// buffers) and the worker's results.
type explainer struct {
	every     time.Duration // explainEvery unless a test sets it
	q         chan explainJob
	free      chan []byte // buffers the worker gave back
	queueFull atomic.Uint64

	mu     sync.Mutex
	last   map[string]DiagnosisStatus // by peer label
	counts map[[2]string]uint64       // by peer label and cause
	logged map[[2]string]bool         // peer label and cause logged under gen
	gen    *peerTable                 // the keys file logged under: a reload logs again
	bucket tokenBucket                // the log's rate limit, as the drop log's per verdict
	stale  bool                       // the keys file on disk is not the one in use (logged once)
}

// DiagnosisStatus is the last diagnosis of a peer prefix's drops: the
// cause (a word of package diagnose's vocabulary), the fix, the keys-file
// entry to change ("" when there is none), the segment's addresses and
// when it was dropped.
type DiagnosisStatus struct {
	Peer    string         `json:"peer"`
	Cause   string         `json:"cause"`
	Message string         `json:"message"`
	Entry   string         `json:"entry"`
	Local   netip.AddrPort `json:"local"`
	Remote  netip.AddrPort `json:"remote"`
	Verdict string         `json:"verdict"`
	At      time.Time      `json:"at"`
}

// initExplainer sets up the queue; before Run.
func (s *Shim) initExplainer() {
	x := &s.obs.explain
	if x.every == 0 {
		x.every = explainEvery
	}
	x.q = make(chan explainJob, explainQueue)
	x.free = make(chan []byte, explainQueue+1)
	x.last, x.counts, x.logged = map[string]DiagnosisStatus{}, map[[2]string]uint64{}, map[[2]string]bool{}
}

// explainable reports whether a drop of verdict v is one a diagnosis can
// name the cause of.
func explainable(v verdict) bool {
	switch v {
	case verdictBadMAC, verdictNoKey, verdictUnsigned, verdictUnexpected:
		return true
	}
	return false
}

// offerExplain hands a copy of p, a covered peer's inbound segment dropped
// with verdict v, to the worker: unless the peer's prefix had one within
// the interval, the queue is full (the copy is dropped and counted) or it
// is not explainable. The drop path calls it; it never blocks.
func (s *Shim) offerExplain(p *nfqueue.Packet, e *peerEntry, v verdict, local, remote netip.AddrPort) {
	x := &s.obs.explain
	if x.q == nil || !explainable(v) || e.label == otherPeer ||
		(p.Hook != nfqueue.HookInput && p.Hook != nfqueue.HookPrerouting) {
		return
	}
	now := time.Now()
	next := e.counts.nextExplain.Load()
	if now.UnixNano() < next || !e.counts.nextExplain.CompareAndSwap(next, now.Add(x.every).UnixNano()) {
		return
	}
	var buf []byte
	select {
	case buf = <-x.free:
	default:
	}
	j := explainJob{pkt: append(buf[:0], p.Payload...), peer: e, verdict: v, local: local, remote: remote, at: now}
	j.isns, j.isnKnown, j.sne = s.isnsOf(j.pkt, local, remote)
	select {
	case x.q <- j:
	default:
		x.queueFull.Add(1)
		x.release(j.pkt)
	}
}

// release gives a buffer back for the next copy (or to the collector).
func (x *explainer) release(b []byte) {
	select {
	case x.free <- b[:0]:
	default:
	}
}

// isnsOf is what the layer knows of the ISNs (the sender's, the
// receiver's) and the SNE of an inbound segment: a SYN carries its own
// and needs no other; a SYN-ACK's receiver is the local end of a session
// the layer saw open; any other segment needs an established session.
func (s *Shim) isnsOf(pkt []byte, local, remote netip.AddrPort) (isns ao.ISNs, known bool, sne uint32) {
	seg, err := segment.ParsePacket(pkt)
	if err != nil {
		return
	}
	h := seg.Header()
	syn := h.Flags()&segment.SYN != 0
	if syn {
		isns.Src = h.Seq()
	}
	if syn && h.Flags()&segment.ACK == 0 {
		return isns, true, 0
	}
	c, ok := s.layer.Conn(local, remote)
	if !ok {
		return isns, false, 0
	}
	ep := c.Endpoint()
	isns.Dst = ep.LocalISN
	switch {
	case syn:
		return isns, ep.LocalISN != 0 || ep.Established, 0
	case ep.Established:
		isns.Src = ep.RemoteISN
		return isns, true, ao.ComputeSNE(ep.RecvSNE, ep.RecvSeq, h.Seq())
	}
	return isns, false, 0
}

// explainLoop is the worker: it diagnoses what the drop path queued until
// ctx is done.
func (s *Shim) explainLoop(ctx context.Context) {
	x := &s.obs.explain
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-x.q:
			s.explainJob(j)
			x.release(j.pkt)
		}
	}
}

// explainJob diagnoses one dropped segment with the keys file in use,
// holding no lock while it searches, and records the diagnosis.
func (s *Shim) explainJob(j explainJob) {
	kf, err := keyfile.LoadPrivate(s.cfg.Keys)
	if err != nil {
		s.log.Debug("drop not explained: reading the keys file", "peer", j.peer.label, "err", err)
		return
	}
	defer wipeFile(kf)
	if !s.keysInUse(kf) {
		x := &s.obs.explain
		x.mu.Lock()
		first := !x.stale
		x.stale = true
		x.mu.Unlock()
		if first {
			s.log.Warn("drops not explained: the keys file changed since it was applied (reload to apply it)", "keys", s.cfg.Keys)
		}
		return
	}
	d := diagnose.Explain(kf, diagnose.Direction{Failed: 1,
		Segments: []diagnose.Segment{{Packet: j.pkt, ISNs: j.isns, ISNKnown: j.isnKnown, SNE: j.sne}}})
	s.noteDiagnosis(j, d)
}

// keysInUse reports whether kf holds, entry for entry, the keys the shim
// applied (the same fingerprints and fields).
func (s *Shim) keysInUse(kf *keyfile.File) bool {
	k := &keySet{}
	for _, e := range kf.AO {
		k.AO, k.aoFP = append(k.AO, e.Config), append(k.aoFP, fingerprintOf(e.Config.Key))
	}
	for _, e := range kf.MD5 {
		k.MD5, k.md5FP = append(k.MD5, e.Config), append(k.md5FP, fingerprintOf(e.Config.Key))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(k.AO) != len(s.keys.AO) || len(k.MD5) != len(s.keys.MD5) {
		return false
	}
	for i := range k.AO {
		if !sameAO(s.keys, i, k, i) {
			return false
		}
	}
	for i := range k.MD5 {
		if !sameMD5(s.keys, i, k, i) {
			return false
		}
	}
	return true
}

// wipeFile clears the key bytes of kf.
func wipeFile(kf *keyfile.File) {
	for i := range kf.AO {
		clear(kf.AO[i].Config.Key)
	}
	for i := range kf.MD5 {
		clear(kf.MD5[i].Config.Key)
	}
}

// noteDiagnosis counts d under the peer's label and cause, keeps it as
// the peer's last, and logs it the first time the peer shows that cause
// under the keys in use (as the drop log's rate limit allows).
func (s *Shim) noteDiagnosis(j explainJob, d diagnose.Diagnosis) {
	x := &s.obs.explain
	label, cause := j.peer.label, string(d.Cause)
	x.mu.Lock()
	x.counts[[2]string{label, cause}]++
	x.last[label] = DiagnosisStatus{Peer: label, Cause: cause, Message: d.Fix, Entry: d.Entry,
		Local: j.local, Remote: j.remote, Verdict: j.verdict.String(), At: j.at.UTC()}
	if t := s.obs.peers.Load(); t != x.gen {
		x.gen, x.logged, x.stale = t, map[[2]string]bool{}, false
	}
	log := !x.logged[[2]string{label, cause}]
	var suppressed uint64
	if log {
		log, suppressed = x.bucket.take(time.Now())
		x.logged[[2]string{label, cause}] = log
	}
	x.mu.Unlock()
	if !log {
		return
	}
	args := []any{"verdict", j.verdict.String(), "peer", label, "local", j.local, "remote", j.remote,
		"cause", cause, "fix", d.Fix}
	if d.Entry != "" {
		args = append(args, "entry", d.Entry)
	}
	s.log.Warn("drop explained", append(args, "suppressed", suppressed)...)
}

// diagnoses lists each peer prefix's last diagnosis, in label order.
func (x *explainer) diagnoses() []DiagnosisStatus {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := make([]DiagnosisStatus, 0, len(x.last))
	for _, d := range x.last {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b DiagnosisStatus) int { return strings.Compare(a.Peer, b.Peer) })
	return out
}

// descDiagnoses describes tcpsig_shim_diagnoses_total.
var descDiagnoses = prometheus.NewDesc("tcpsig_shim_diagnoses_total",
	"Dropped segments of a covered peer (bad MAC, no key, unsigned, the other kind's option) whose cause the shim searched for off the packet path, at most one per peer prefix per 10 s, by peer prefix and cause (a word of tcpsig verify -explain's vocabulary).",
	[]string{"peer", "cause"}, nil)

// collectDiagnoses: the diagnoses by peer prefix and cause.
func (s *Shim) collectDiagnoses(out emit) {
	x := &s.obs.explain
	x.mu.Lock()
	defer x.mu.Unlock()
	for k, n := range x.counts {
		out.counter(descDiagnoses, n, k[0], k[1])
	}
}
