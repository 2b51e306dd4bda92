//go:build linux

package shim

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/packetauth"
	"github.com/tcpsig/tcpsig/segment"
	"github.com/tcpsig/tcpsig/shim/nfqueue"
)

// The metrics: Prometheus' text format at /metrics on the status socket
// and on Config.Metrics. Everything is read at scrape time from counters
// the packet path keeps anyway (the layer's, the keys', the kernel's
// queues'), except the refusals by peer prefix, which the drop path
// counts. Labels name configured peer prefixes and keys only, never a
// connection, so a scrape's size is bounded by the keys file.

// observer is the shim's bookkeeping for its metrics and its drop log.
type observer struct {
	registry *prometheus.Registry
	peers    atomic.Pointer[peerTable] // the keys file's peers, for the drop path

	// Under Shim.mu:
	counts  map[netip.Prefix]*peerCounts // every peer prefix configured since start
	other   *peerCounts
	keyBase map[keyLabels][2]uint64            // good and bad of keys gone, so a label set's counters only grow
	current map[[2]netip.AddrPort]rotationSeen // TCP-AO sessions' keys at the last tick

	reloadsOK, reloadsFailed atomic.Uint64
	lastGood                 atomic.Int64 // Unix nanoseconds of the last keys file applied (New's load or a reload)
	lastFailed               atomic.Bool  // the last reload was refused

	drops   dropLog
	explain explainer // the drops' diagnoses (explain_linux.go)

	// httpLimits bound the -metrics server (zero fields: the defaults);
	// metricsConns is its connection limiter once it serves.
	httpLimits   httpLimits
	metricsConns *connLimiter
}

// keyLabels identify one key in the metrics.
type keyLabels struct{ kind, peer, sndid, rcvid string }

// rotationSeen is a TCP-AO session's keys at one tick.
type rotationSeen struct{ current, rnext uint8 }

// initObserver sets up the metrics of s once its first keys file is in
// (under s.mu or before Run).
func (s *Shim) initObserver() {
	o := &s.obs
	o.counts, o.other, o.keyBase = map[netip.Prefix]*peerCounts{}, new(peerCounts), map[keyLabels][2]uint64{}
	o.current = map[[2]netip.AddrPort]rotationSeen{}
	o.peers.Store(newPeerTable(s.keys, o.counts, o.other))
	o.lastGood.Store(time.Now().UnixNano())
	o.registry = prometheus.NewRegistry()
	o.registry.MustRegister(shimCollector{s}, buildInfo(),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}

// Collector returns the shim's own metrics (tcpsig_shim_...) as a
// Prometheus collector, for a program that serves them in its own registry.
func (s *Shim) Collector() prometheus.Collector { return shimCollector{s} }

// metricsHandler serves the shim's registry in the text format.
func (s *Shim) metricsHandler() http.Handler {
	return promhttp.HandlerFor(s.obs.registry, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(s.log.Handler(), slog.LevelError),
		ErrorHandling: promhttp.ContinueOnError,
		// The status socket and -metrics answer the same: no gzip, so
		// a curl without --compressed reads it too.
		DisableCompression: true,
	})
}

// serveMetrics serves /metrics over HTTP on the TCP address
// Config.Metrics: only the metrics, never the status (which shows ISNs and
// SNEs). Whoever can reach the address gets bounded time and connections
// (httpLimits).
func (s *Shim) serveMetrics() (net.Listener, error) {
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", s.cfg.Metrics)
	if err != nil {
		return nil, fmt.Errorf("%w: -metrics %s: %w", ErrMetricsAddr, s.cfg.Metrics, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.metricsHandler())
	srv, lim := s.obs.httpLimits.server(mux)
	s.obs.metricsConns = lim
	go func() { _ = srv.Serve(ln) }()
	s.log.Info("serving metrics", "addr", ln.Addr().String(), "max_conns", lim.max, "idle_timeout", srv.IdleTimeout)
	return ln, nil
}

// ErrMetricsAddr is Run's error when it cannot listen on Config.Metrics.
var ErrMetricsAddr = errors.New("shim: cannot serve metrics")

// reloadObserved is reload with what the metrics follow: the result
// counted, the peer table and the gone keys' counts carried over, and
// systemd told (RELOADING=1, then READY=1).
func (s *Shim) reloadObserved() error {
	s.notify("RELOADING=1\nMONOTONIC_USEC=" + strconv.FormatInt(monotonicUsec(), 10))
	s.mu.Lock()
	oldAO, oldMD5 := s.aoMKT, s.md5Key
	s.mu.Unlock()
	err := s.reload()
	s.mu.Lock()
	s.keysChanged(oldAO, oldMD5)
	s.mu.Unlock()
	o := &s.obs
	if err != nil {
		o.reloadsFailed.Add(1)
		o.lastFailed.Store(true)
		s.notify("READY=1\nSTATUS=reload refused, keys unchanged: " + oneLine(err.Error()))
		return err
	}
	o.reloadsOK.Add(1)
	o.lastFailed.Store(false)
	o.lastGood.Store(time.Now().UnixNano())
	s.notify("READY=1\nSTATUS=" + s.statusLine())
	return nil
}

// keysChanged follows the keys file now in: the drop path's peer table,
// and the counters of the keys that went added to their label set's base.
// Under s.mu.
func (s *Shim) keysChanged(oldAO []*ao.MKT, oldMD5 []*md5sig.Key) {
	o := &s.obs
	o.peers.Store(newPeerTable(s.keys, o.counts, o.other))
	for _, m := range oldAO {
		if m == nil || contains(s.aoMKT, m) {
			continue
		}
		good, bad := m.Counters()
		l := aoLabels(m.Peer(), m.SendID(), m.RecvID())
		b := o.keyBase[l]
		o.keyBase[l] = [2]uint64{b[0] + good, b[1] + bad}
	}
	for _, k := range oldMD5 {
		if k == nil || contains(s.md5Key, k) {
			continue
		}
		good, bad := k.Counters()
		l := md5Labels(k.Peer())
		b := o.keyBase[l]
		o.keyBase[l] = [2]uint64{b[0] + good, b[1] + bad}
	}
}

func contains[T comparable](s []T, v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func aoLabels(p netip.Prefix, sndid, rcvid uint8) keyLabels {
	return keyLabels{kindAO, canonPrefix(p).String(), strconv.Itoa(int(sndid)), strconv.Itoa(int(rcvid))}
}

func md5Labels(p netip.Prefix) keyLabels { return keyLabels{kindMD5, canonPrefix(p).String(), "", ""} }

// noteDrop counts a packet the layer refused with err under its peer
// prefix, kind and verdict, and logs it: every drop at debug level (-v),
// else as the verdict's token bucket allows. Never a key: the line names
// the peer, the addresses, the KeyIDs of the segment's option and the
// error, whose text holds no key bytes.
func (s *Shim) noteDrop(p *nfqueue.Packet, err error) {
	v := classify(err)
	kind := errKind(err)
	local, remote, ok := tuple(p)
	peerAddr := remote.Addr()
	keyid, rnext := -1, -1
	var flags, seq any
	if ok {
		if seg, perr := segment.ParsePacket(p.Payload); perr == nil && len(seg.Header()) >= 20 {
			flags, seq = fmt.Sprintf("%#02x", seg.Header()[13]), binary.BigEndian.Uint32(seg.Header()[4:])
			if a := seg.Auth(); a.HasAO() && len(seg.Header()) >= a.AO+4 {
				keyid, rnext = int(seg.Header()[a.AO+2]), int(seg.Header()[a.AO+3])
				if kind == kindUnknown {
					kind = kindAO
				}
			} else if a.HasMD5() && kind == kindUnknown {
				kind = kindMD5
			}
		}
	} else if m, perr := segment.ParseICMP(p.Payload); perr == nil {
		// A hard error about one of our segments quotes it: the peer is
		// the quoted destination.
		if src, dst, qok := m.QuotedTCP(); qok {
			local, remote, peerAddr = src, dst, dst.Addr()
		}
	}
	e := s.obs.peers.Load().lookup(peerAddr)
	if e == nil {
		return // before initObserver: not a running shim
	}
	if kind == kindUnknown {
		kind = e.kind()
	}
	if v != verdictBadMAC && v != verdictGood { // the keys count bad MACs
		e.counts.drops[kindIndex(kind)][v].Add(1)
	}
	s.offerExplain(p, e, v, local, remote)
	debugging := s.log.Enabled(context.Background(), slog.LevelDebug)
	var suppressed uint64
	if !debugging {
		var allowed bool
		if allowed, suppressed = s.obs.drops.allow(v); !allowed {
			return
		}
	}
	dir := "in"
	if p.Hook == nfqueue.HookOutput || p.Hook == nfqueue.HookPostrouting {
		dir = "out"
	}
	args := []any{"verdict", v.String(), "peer", e.label, "kind", kind, "dir", dir, "local", local, "remote", remote}
	if keyid >= 0 {
		args = append(args, "keyid", keyid, "rnext", rnext)
	}
	if flags != nil {
		args = append(args, "flags", flags, "seq", seq)
	}
	args = append(args, "len", len(p.Payload), "err", err)
	if debugging {
		s.log.Debug("dropped", args...)
		return
	}
	s.log.Warn("dropped", append(args, "suppressed", suppressed)...)
}

// watchSessions counts the TCP-AO sessions' key changes since the last
// tick (a current key or an RNext other than then), by peer prefix: Run's
// ticker calls it.
func (s *Shim) watchSessions() {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := &s.obs
	t := o.peers.Load()
	seen := make(map[[2]netip.AddrPort]rotationSeen, len(o.current))
	for c := range s.layer.Conns {
		if c.Kind != packetauth.KindAO || c.State == packetauth.StateSynReceived || c.State == packetauth.StateSynSent {
			continue
		}
		k, now := [2]netip.AddrPort{c.Local, c.Remote}, rotationSeen{c.CurrentKeyID, c.RNextKeyID}
		seen[k] = now
		if was, ok := o.current[k]; ok && was != now {
			e := t.lookup(c.Remote.Addr())
			if was.current != now.current {
				e.counts.rotations[0].Add(1)
			}
			if was.rnext != now.rnext {
				e.counts.rotations[1].Add(1)
			}
		}
	}
	o.current = seen
}

// statusLine is the one-line summary systemctl status shows (STATUS=).
func (s *Shim) statusLine() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("%d peers, %d TCP-AO and %d TCP-MD5 keys, %d queues", len(s.keys.Peers), len(s.keys.AO), len(s.keys.MD5), len(s.queues))
}

func oneLine(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == '\n' || c == '\r' {
			b[i] = ' '
		}
	}
	return string(b)
}

// The metric descriptions.
var (
	descSegments = prometheus.NewDesc("tcpsig_shim_segments_total",
		"Covered peers' segments by peer prefix, kind (ao, md5), key (sndid, rcvid: TCP-AO) and verdict: good and bad_mac from the keys' counters, the other refusals counted by the drop path with no key.",
		[]string{"peer", "kind", "sndid", "rcvid", "verdict"}, nil)
	descPackets = prometheus.NewDesc("tcpsig_shim_packets_total",
		"Queued packets the layer passed untouched (a peer no key covers), signed or verified.",
		[]string{"result"}, nil)
	descDropped = prometheus.NewDesc("tcpsig_shim_packets_dropped_total",
		"Queued packets dropped, by reason as the status counts them (queue_message: a queue message or verdict that failed).",
		[]string{"reason"}, nil)
	descQueueDropped = prometheus.NewDesc("tcpsig_shim_queue_dropped_packets_total",
		"Packets the kernel dropped because a queue (queue_full) or its socket (socket_full) was full: the shim fell behind; TCP retransmits them.",
		[]string{"queue", "reason"}, nil)
	descQueueWaiting = prometheus.NewDesc("tcpsig_shim_queue_waiting_packets",
		"Packets waiting in a queue for a verdict.", []string{"queue"}, nil)
	descSessions = prometheus.NewDesc("tcpsig_shim_sessions",
		"Sessions tracked now, by peer prefix, kind and state (revoked: its key was removed, its packets dropped).",
		[]string{"peer", "kind", "state"}, nil)
	descPending = prometheus.NewDesc("tcpsig_shim_sessions_rotation_pending",
		"TCP-AO sessions whose RNext key is not their current key: the shim asked the peer to move to a key the peer has not asked it for yet.",
		[]string{"peer"}, nil)
	descUnseen = prometheus.NewDesc("tcpsig_shim_sessions_unseen",
		"TCP-AO sessions met without their handshake and not resumed from the state file: their packets are dropped.", nil, nil)
	descUnseenEvicted = prometheus.NewDesc("tcpsig_shim_sessions_unseen_evicted_total",
		"Unseen sessions let go to make room in the table of 1024 (or refused room, the table full of better evidence), by evidence: once (only the peer's segments, within a second: forgeries with made-up ports look so), persisting (only the peer's, over longer), local (the local stack sent on it).",
		[]string{"evidence"}, nil)
	descUnseenSuppressed = prometheus.NewDesc("tcpsig_shim_sessions_unseen_log_suppressed_total",
		"Unseen sessions' first sights not logged: the log's rate limit was reached.", nil, nil)
	descSessionEvents = prometheus.NewDesc("tcpsig_shim_sessions_events_total",
		"Sessions started (from a handshake or the state file), closed (RST, FIN both ways) and expired (idle).",
		[]string{"event"}, nil)
	descResumed = prometheus.NewDesc("tcpsig_shim_sessions_resumed_total",
		"TCP-AO sessions resumed from the state file at start.", nil, nil)
	descRotations = prometheus.NewDesc("tcpsig_shim_rotations_total",
		"TCP-AO sessions' key changes seen every 2 s, by peer prefix: key=current, the key sent with changed; key=rnext, the key asked for changed.",
		[]string{"peer", "key"}, nil)
	descKeys = prometheus.NewDesc("tcpsig_shim_keys",
		"Entries of the keys file in use, by kind.", []string{"kind"}, nil)
	descSendActive = prometheus.NewDesc("tcpsig_shim_key_send_lifetime_active",
		"1 while the key is inside its send lifetime (RFC 8177's send-lifetime-active; a key without lifetimes always), by peer prefix, kind and key.",
		[]string{"peer", "kind", "sndid", "rcvid"}, nil)
	descAcceptActive = prometheus.NewDesc("tcpsig_shim_key_accept_lifetime_active",
		"1 while the key is inside its accept lifetime widened by its tolerance (RFC 8177's accept-lifetime-active), by peer prefix, kind and key.",
		[]string{"peer", "kind", "sndid", "rcvid"}, nil)
	descKeySessions = prometheus.NewDesc("tcpsig_shim_key_sessions",
		"TCP-AO sessions whose current key (the one they sign with) it is, by peer prefix and key: with accept_lifetime_active 0 or send_lifetime_active 0, a rotation that has not completed.",
		[]string{"peer", "kind", "sndid", "rcvid"}, nil)
	descKeyring = prometheus.NewDesc("tcpsig_shim_keyring_keys",
		"Keys the keyrings hold now, by kind and whether the keys file in use names them: in_file=\"false\" is a key that should be gone (a reload that finds one deletes it and fails).",
		[]string{"kind", "in_file"}, nil)
	descReloads = prometheus.NewDesc("tcpsig_shim_reloads_total",
		"Reloads of the keys file (SIGHUP), by result: success (applied whole) or failure (refused whole, or an error applying it).",
		[]string{"result"}, nil)
	descLastGood = prometheus.NewDesc("tcpsig_shim_last_reload_success_timestamp_seconds",
		"When the keys file in use was applied (the start's load or the last successful reload), in seconds since the Unix epoch.", nil, nil)
	descLastOK = prometheus.NewDesc("tcpsig_shim_last_reload_successful",
		"1 if the last reload (or the start's load) was applied, 0 if it was refused.", nil, nil)
)

// shimCollector collects a shim's metrics at scrape time.
type shimCollector struct{ s *Shim }

// Describe sends every description.
func (c shimCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSegments, descPackets, descDropped, descQueueDropped, descQueueWaiting,
		descSessions, descPending, descUnseen, descUnseenEvicted, descUnseenSuppressed, descSessionEvents, descResumed, descRotations,
		descKeys, descKeyring, descSendActive, descAcceptActive, descKeySessions,
		descReloads, descLastGood, descLastOK, descDiagnoses} {
		ch <- d
	}
}

// emit sends const metrics on a Collect's channel.
type emit struct{ ch chan<- prometheus.Metric }

func (out emit) counter(d *prometheus.Desc, v uint64, labels ...string) {
	out.ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
}

func (out emit) gauge(d *prometheus.Desc, v float64, labels ...string) {
	out.ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

// Collect reads the counters: the layer's and the kernel's, the keys' (a
// lock of each keyring per key), the per-peer ones, and one walk of the
// sessions.
func (c shimCollector) Collect(ch chan<- prometheus.Metric) {
	s, out := c.s, emit{ch}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.obs.peers.Load()
	s.collectKeys(out)
	s.collectPeers(out, t)
	s.collectLayer(out)
	s.collectQueues(out)
	s.collectSessions(out, t)
	s.collectReloads(out)
	s.collectDiagnoses(out)
}

// collectKeys: per key the keyrings hold, good and bad_mac, and the
// keys by kind and whether the file names them; under s.mu.
func (s *Shim) collectKeys(out emit) {
	o := &s.obs
	// Per key: good and bad_mac, over the label sets of the keys in use
	// (entries differing only in ifindex share one).
	keySums := map[keyLabels][2]uint64{}
	var order []keyLabels
	add := func(l keyLabels, good, bad uint64) {
		if _, ok := keySums[l]; !ok {
			order = append(order, l)
			b := o.keyBase[l]
			keySums[l] = b
		}
		v := keySums[l]
		keySums[l] = [2]uint64{v[0] + good, v[1] + bad}
	}
	// Every MKT the keyring holds, whether the file names it or not.
	inFile := s.aoInFile()
	var aoKeys [2]int // not in the file, in the file
	for _, m := range s.aoRing.MKTs() {
		good, bad := m.Counters()
		add(aoLabels(m.Peer(), m.SendID(), m.RecvID()), good, bad)
		if inFile[m] {
			aoKeys[1]++
		} else {
			aoKeys[0]++
		}
	}
	md5Keys := 0
	for _, k := range s.md5Key {
		if k != nil {
			good, bad := k.Counters()
			add(md5Labels(k.Peer()), good, bad)
			md5Keys++
		}
	}
	out.gauge(descKeyring, float64(aoKeys[1]), kindAO, "true")
	out.gauge(descKeyring, float64(aoKeys[0]), kindAO, "false")
	out.gauge(descKeyring, float64(md5Keys), kindMD5, "true")
	out.gauge(descKeyring, float64(max(s.md5Ring.Len()-md5Keys, 0)), kindMD5, "false")
	for _, l := range order {
		v := keySums[l]
		out.counter(descSegments, v[0], l.peer, l.kind, l.sndid, l.rcvid, verdictGood.String())
		out.counter(descSegments, v[1], l.peer, l.kind, l.sndid, l.rcvid, verdictBadMAC.String())
	}
	s.collectLifetimes(out)
}

// collectPeers: per peer prefix, the verdicts no key counts; under s.mu.
func (s *Shim) collectPeers(out emit, t *peerTable) {
	// Per peer prefix: the other verdicts, by kind; zeros left out but
	// for the peer's own kinds (so a query finds the series before the
	// first drop).
	for _, e := range append(append([]*peerEntry(nil), t.entries...), t.other) {
		for ki, kind := range kindByIndex {
			own := (kind == kindAO && e.ao) || (kind == kindMD5 && e.md5)
			for v := verdictUnsigned; v < numVerdicts; v++ {
				if n := e.counts.drops[ki][v].Load(); n > 0 || own {
					out.counter(descSegments, n, e.label, kind, "", "", v.String())
				}
			}
		}
	}
}

// collectLayer: the layer's totals; under s.mu.
func (s *Shim) collectLayer(out emit) {
	lc := s.layer.Counters()
	out.counter(descPackets, lc.Passed, "passed")
	out.counter(descPackets, lc.Signed, "signed")
	out.counter(descPackets, lc.Verified, "verified")
	d := lc.Dropped
	for _, r := range []struct {
		name string
		n    uint64
	}{{"bad_mac", d.BadMAC}, {"unsigned", d.Unsigned}, {"key_not_found", d.KeyNotFound}, {"no_conn", d.NoConn},
		{"fragment", d.Fragment}, {"no_room", d.NoRoom}, {"malformed", d.Malformed}, {"full", d.Full},
		{"icmp", d.ICMP}, {"other", d.Other}, {"queue_message", s.malformed.Load()}} {
		out.counter(descDropped, r.n, r.name)
	}
	out.counter(descSessionEvents, lc.Started, "started")
	out.counter(descSessionEvents, lc.Closed, "closed")
	out.counter(descSessionEvents, lc.Expired, "expired")
	out.counter(descResumed, s.seeded)
	u := s.unseen.counts()
	out.gauge(descUnseen, float64(u.len))
	for l, n := range u.evicted {
		out.counter(descUnseenEvicted, n, unseenEvidence[l])
	}
	out.counter(descUnseenSuppressed, u.suppressed)
}

// collectQueues: the kernel's counts of each queue; under s.mu.
func (s *Shim) collectQueues(out emit) {
	for _, q := range s.queues {
		st, err := q.Stats()
		if err != nil {
			continue
		}
		num := strconv.Itoa(int(q.Num()))
		out.counter(descQueueDropped, uint64(st.Dropped), num, "queue_full")
		out.counter(descQueueDropped, uint64(st.UserDropped), num, "socket_full")
		out.gauge(descQueueWaiting, float64(st.Waiting), num)
	}
}

// collectSessions: sessions by peer, kind and state, rotations pending
// and done; under s.mu.
func (s *Shim) collectSessions(out emit, t *peerTable) {
	// Sessions, by peer, kind and state; rotations pending, by peer.
	type sessKey struct {
		e     *peerEntry
		kind  string
		state string
	}
	sessions := map[sessKey]int{}
	pending := map[*peerEntry]int{}
	for c := range s.layer.Conns {
		e := t.lookup(c.Remote.Addr())
		kind, state := kindMD5, c.State.String()
		if c.Kind == packetauth.KindAO {
			kind = kindAO
		}
		if c.Revoked {
			state = "revoked"
		}
		sessions[sessKey{e, kind, state}]++
		if c.Kind == packetauth.KindAO && !c.Revoked && c.State != packetauth.StateSynReceived {
			peer := c.Remote.Addr()
			if s.aoRing.LookupSend(peer, c.CurrentKeyID, 0) != s.aoRing.LookupRecv(peer, c.RNextKeyID, 0) {
				pending[e]++
			}
		}
	}
	for _, e := range append(append([]*peerEntry(nil), t.entries...), t.other) {
		for _, kind := range []string{kindAO, kindMD5} {
			if (kind == kindAO && e.ao) || (kind == kindMD5 && e.md5) {
				// The peer's own kind in the states that matter, zero
				// or not, so that absent means "not configured".
				for _, st := range []string{"established", "revoked"} {
					if _, ok := sessions[sessKey{e, kind, st}]; !ok {
						sessions[sessKey{e, kind, st}] = 0
					}
				}
			}
		}
		if e.ao || pending[e] > 0 {
			out.gauge(descPending, float64(pending[e]), e.label)
		}
		if e.ao || e.counts.rotations[0].Load()+e.counts.rotations[1].Load() > 0 {
			out.counter(descRotations, e.counts.rotations[0].Load(), e.label, "current")
			out.counter(descRotations, e.counts.rotations[1].Load(), e.label, "rnext")
		}
	}
	for k, n := range sessions {
		out.gauge(descSessions, float64(n), k.e.label, k.kind, k.state)
	}
}

// collectReloads: keys and reloads; under s.mu.
func (s *Shim) collectReloads(out emit) {
	o := &s.obs
	out.gauge(descKeys, float64(len(s.keys.AO)), kindAO)
	out.gauge(descKeys, float64(len(s.keys.MD5)), kindMD5)
	out.counter(descReloads, o.reloadsOK.Load(), "success")
	out.counter(descReloads, o.reloadsFailed.Load(), "failure")
	out.gauge(descLastGood, float64(o.lastGood.Load())/1e9)
	ok := 1.0
	if o.lastFailed.Load() {
		ok = 0
	}
	out.gauge(descLastOK, ok)
}

// buildInfo is tcpsig_shim_build_info: 1, with the module version, the
// commit and the Go version as labels.
func buildInfo() prometheus.Collector {
	version, revision, goVersion := "(devel)", "", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		goVersion = bi.GoVersion
		for _, kv := range bi.Settings {
			if kv.Key == "vcs.revision" {
				revision = kv.Value
			}
		}
	}
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "tcpsig_shim_build_info",
		Help:        "1, labelled with the tcpsig module version, the commit it was built from and the Go version.",
		ConstLabels: prometheus.Labels{"version": version, "revision": revision, "goversion": goVersion},
	}, func() float64 { return 1 })
}
