//go:build linux

package shim

import (
	"bytes"
	"errors"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/internal/redact"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/packetauth"
	"github.com/tcpsig/tcpsig/segment"
	"github.com/tcpsig/tcpsig/shim/nfqueue"
)

// The metrics tests' keys: a TCP-AO MKT for one host and a TCP-MD5 key
// for a /24, whose bytes must never reach the log or the metrics.
const (
	metricsAOKey  = "Metrics-AO-Key-Xq7"
	metricsMD5Key = "Metrics-MD5-Key-Zk9"
	metricsKeys   = `{"ao": [{"alg": "hmac(sha1)", "key": "text:` + metricsAOKey + `", "sndid": 1, "rcvid": 2, "peer": "192.0.2.1/32"}],
 "md5": [{"peer": "198.51.100.0/24", "key": "text:` + metricsMD5Key + `"}]}`
)

var (
	aoPeer  = netip.MustParseAddr("192.0.2.1")
	md5Peer = netip.MustParseAddr("198.51.100.7")
)

// metricsShim is a shim (not running) with metricsKeys and one seeded
// TCP-AO session with aoPeer, and the peer's end of that session, which
// signs what it sends.
func metricsShim(t *testing.T, log *bytes.Buffer) (*Shim, *ao.Conn) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "keys.json")
	if err := os.WriteFile(path, []byte(metricsKeys), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Keys: path, Queue: 1, Status: filepath.Join(dir, "shim.sock"),
		Log: slog.New(slog.NewTextHandler(log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	local := netip.AddrPortFrom(shimAddr, 40000)
	if err := s.layer.Seed(ao.Endpoint{Local: local, Remote: netip.AddrPortFrom(aoPeer, 179), Established: true,
		LocalISN: 1, RemoteISN: 1000, SendSeq: 2, RecvSeq: 1001, CurrentSendID: 1, RNextRecvID: 2}); err != nil {
		t.Fatal(err)
	}
	ring := ao.NewKeyring(nil)
	if _, err := ring.Add(keys.AO{Peer: netip.PrefixFrom(shimAddr, 32), SendID: 2, RecvID: 1, Algorithm: "hmac(sha1)", Key: []byte(metricsAOKey)}); err != nil {
		t.Fatal(err)
	}
	peer := new(ao.Conn)
	if err := peer.Init(ring, ao.Endpoint{Local: netip.AddrPortFrom(aoPeer, 179), Remote: local, LocalISN: 1000, RemoteISN: 1,
		Established: true, SendSeq: 1001, RecvSeq: 2, CurrentSendID: 2, RNextRecvID: 1}, ao.Policy{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Close() })
	return s, peer
}

// aoSegment is a segment from aoPeer with a TCP-AO option of KeyID keyid,
// signed by peer when sign is set (its MAC zero otherwise).
func aoSegment(t *testing.T, peer *ao.Conn, keyid uint8, sign bool, seq uint32) []byte {
	t.Helper()
	var opt [20]byte
	pkt, err := segment.AppendPacket(nil, segment.IP{Src: aoPeer, Dst: shimAddr},
		segment.Fields{SrcPort: 179, DstPort: 40000, Seq: seq, Ack: 2, Flags: segment.ACK | segment.PSH, Window: 65535,
			Options: [][]byte{ao.AppendOption(opt[:0], 12)}},
		[]byte("data"))
	if err != nil {
		t.Fatal(err)
	}
	seg, err := segment.ParsePacket(pkt)
	if err != nil {
		t.Fatal(err)
	}
	if sign {
		if err := peer.Sign(&seg); err != nil {
			t.Fatal(err)
		}
	}
	seg.Header()[seg.Auth().AO+2] = keyid
	return pkt
}

// inbound passes pkt through the shim's layer as a queue reader does:
// a refusal is counted and logged by the drop path.
func inbound(t *testing.T, s *Shim, pkt []byte) error {
	t.Helper()
	_, err := s.layer.Inbound(nil, pkt)
	if err != nil {
		s.noteDrop(&nfqueue.Packet{Hook: nfqueue.HookInput, Payload: pkt}, err)
	}
	return err
}

// scrape reads /metrics from the status socket and parses it as
// Prometheus does; it returns the text too.
func scrape(t *testing.T, s *Shim) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	code, body := getStatus(t, s.cfg.Status, "/metrics")
	if code != 200 {
		t.Fatalf("GET /metrics: %d\n%s", code, body)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v\n%s", err, body)
	}
	return fams, string(body)
}

// value returns the value of the series of family name whose labels are
// labels (name=value pairs), and whether there is one.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		}
	}
	return 0, false
}

// TestMetrics: a shim's /metrics (on its status socket) parses as
// Prometheus' text format, counts a TCP-AO key's good and bad segments
// from the key's counters, the other refusals by peer prefix, kind and
// verdict, the sessions and the reloads, names configured peers and keys
// only, and holds no key byte; promtool check metrics finds nothing.
func TestMetrics(t *testing.T) {
	var log bytes.Buffer
	s, peer := metricsShim(t, &log)
	ln, err := s.serveStatus()
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	if err := inbound(t, s, aoSegment(t, peer, 2, true, 1001)); err != nil {
		t.Fatalf("the peer's signed segment: %v", err)
	}
	bad := aoSegment(t, peer, 2, true, 1005)
	bad[len(bad)-1] ^= 1 // the payload, after the MAC
	for _, c := range []struct {
		name string
		pkt  []byte
	}{
		{"bad MAC", bad},
		{"unknown KeyID", aoSegment(t, peer, 9, true, 1005)},
		{"unsigned, TCP-AO peer", packet(t, aoPeer, segment.ACK, 1005, 2, "forged")},
		{"unsigned, TCP-MD5 peer", packet(t, md5Peer, segment.ACK, 1, 1, "forged")},
	} {
		if err := inbound(t, s, c.pkt); err == nil {
			t.Fatalf("%s: accepted", c.name)
		}
	}
	fams, text := scrape(t, s)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"tcpsig_shim_segments_total", []string{"peer", "192.0.2.1/32", "kind", "ao", "sndid", "1", "rcvid", "2", "verdict", "good"}, 1},
		{"tcpsig_shim_segments_total", []string{"peer", "192.0.2.1/32", "kind", "ao", "sndid", "1", "rcvid", "2", "verdict", "bad_mac"}, 1},
		{"tcpsig_shim_segments_total", []string{"peer", "192.0.2.1/32", "kind", "ao", "sndid", "", "verdict", "no_key"}, 1},
		{"tcpsig_shim_segments_total", []string{"peer", "192.0.2.1/32", "kind", "ao", "sndid", "", "verdict", "unsigned"}, 1},
		{"tcpsig_shim_segments_total", []string{"peer", "198.51.100.0/24", "kind", "md5", "verdict", "unsigned"}, 1},
		{"tcpsig_shim_segments_total", []string{"peer", "198.51.100.0/24", "kind", "md5", "verdict", "good"}, 0},
		{"tcpsig_shim_packets_total", []string{"result", "verified"}, 1},
		{"tcpsig_shim_packets_dropped_total", []string{"reason", "bad_mac"}, 1},
		{"tcpsig_shim_packets_dropped_total", []string{"reason", "unsigned"}, 2},
		{"tcpsig_shim_sessions", []string{"peer", "192.0.2.1/32", "kind", "ao", "state", "established"}, 1},
		{"tcpsig_shim_sessions", []string{"peer", "198.51.100.0/24", "kind", "md5", "state", "established"}, 0},
		{"tcpsig_shim_sessions_rotation_pending", []string{"peer", "192.0.2.1/32"}, 0},
		{"tcpsig_shim_keys", []string{"kind", "ao"}, 1},
		{"tcpsig_shim_keys", []string{"kind", "md5"}, 1},
		{"tcpsig_shim_reloads_total", []string{"result", "success"}, 0},
		{"tcpsig_shim_last_reload_successful", nil, 1},
		{"tcpsig_shim_build_info", nil, 1},
	} {
		if got, ok := value(fams, c.name, c.labels...); !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if v, _ := value(fams, "tcpsig_shim_last_reload_success_timestamp_seconds"); v < 1e9 {
		t.Errorf("last reload success timestamp %v: want the start's load, in seconds since the epoch", v)
	}
	// Bounded labels: peers are the configured prefixes, never a session.
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "peer" && l.GetValue() != "192.0.2.1/32" && l.GetValue() != "198.51.100.0/24" {
					t.Errorf("%s: peer label %q is not a configured prefix", f.GetName(), l.GetValue())
				}
			}
		}
	}
	for _, k := range []string{metricsAOKey, metricsMD5Key} {
		if leak := redact.Leak(text, []byte(k)); leak != "" {
			t.Errorf("/metrics shows a key (%q)", leak)
		}
		if leak := redact.Leak(log.String(), []byte(k)); leak != "" {
			t.Errorf("the log shows a key (%q)", leak)
		}
	}
	// Each refusal was logged, with its peer and (for TCP-AO) KeyIDs.
	for _, want := range []string{
		`verdict=no_key peer=192.0.2.1/32 kind=ao dir=in local=203.0.113.1:40000 remote=192.0.2.1:179 keyid=9 rnext=1`,
		`verdict=unsigned peer=198.51.100.0/24 kind=md5`,
		`verdict=unsigned peer=192.0.2.1/32 kind=ao`,
	} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log has no %q:\n%s", want, &log)
		}
	}
	promtoolCheck(t, text)
}

// promtoolCheck runs promtool check metrics (Debian's prometheus
// package) on a scrape, as CI does; without promtool it says so and skips
// that part.
func promtoolCheck(t *testing.T, text string) {
	t.Helper()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Log("promtool not found (apt-get install prometheus): the scrape's lint is not checked here")
		return
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// TestMetricsReload: reloads are counted by result, a refused one sets
// tcpsig_shim_last_reload_successful to 0 and keeps the time of the last
// good one; a key kept across a reload keeps its counts, and a replaced
// one's label set carries on from them.
func TestMetricsReload(t *testing.T) {
	var log bytes.Buffer
	s, peer := metricsShim(t, &log)
	ln, err := s.serveStatus()
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := inbound(t, s, aoSegment(t, peer, 2, true, 1001)); err != nil {
		t.Fatal(err)
	}
	fams, _ := scrape(t, s)
	first, _ := value(fams, "tcpsig_shim_last_reload_success_timestamp_seconds")

	// Others may read the file: refused whole.
	if err := os.Chmod(s.cfg.Keys, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.reloadObserved(); err == nil {
		t.Fatal("a reload of a world-readable keys file was applied")
	}
	fams, _ = scrape(t, s)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"tcpsig_shim_reloads_total", []string{"result", "failure"}, 1},
		{"tcpsig_shim_reloads_total", []string{"result", "success"}, 0},
		{"tcpsig_shim_last_reload_successful", nil, 0},
		{"tcpsig_shim_last_reload_success_timestamp_seconds", nil, first},
	} {
		if got, ok := value(fams, c.name, c.labels...); !ok || got != c.want {
			t.Errorf("after a refused reload: %s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}

	// The same MKT under a new key: its label set goes on from 1.
	body := strings.Replace(metricsKeys, metricsAOKey, metricsAOKey+"-2", 1)
	if err := os.WriteFile(s.cfg.Keys, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(s.cfg.Keys, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.reloadObserved(); err != nil {
		t.Fatal(err)
	}
	fams, text := scrape(t, s)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"tcpsig_shim_reloads_total", []string{"result", "success"}, 1},
		{"tcpsig_shim_last_reload_successful", nil, 1},
		{"tcpsig_shim_segments_total", []string{"peer", "192.0.2.1/32", "kind", "ao", "sndid", "1", "rcvid", "2", "verdict", "good"}, 1},
	} {
		if got, ok := value(fams, c.name, c.labels...); !ok || got != c.want {
			t.Errorf("after a reload: %s%v = %v, want %v\n%s", c.name, c.labels, got, c.want, text)
		}
	}
	if got, _ := value(fams, "tcpsig_shim_last_reload_success_timestamp_seconds"); got < first {
		t.Errorf("last reload success %v, before the start's %v", got, first)
	}
}

// TestMetricsRotationPending: a session whose RNext is a new MKT the peer
// has not asked for is pending until the peer's RNextKeyID moves its
// current key there; the ticker counts both changes.
func TestMetricsRotationPending(t *testing.T) {
	var log bytes.Buffer
	s, _ := metricsShim(t, &log)
	ln, err := s.serveStatus()
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s.watchSessions()
	body := strings.Replace(metricsKeys, `"peer": "192.0.2.1/32"}]`,
		`"peer": "192.0.2.1/32"}, {"alg": "hmac(sha1)", "key": "text:rotated", "sndid": 3, "rcvid": 4, "peer": "192.0.2.1/32"}]`, 1)
	if err := os.WriteFile(s.cfg.Keys, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.reloadObserved(); err != nil {
		t.Fatal(err)
	}
	s.watchSessions()
	fams, text := scrape(t, s)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"tcpsig_shim_sessions_rotation_pending", []string{"peer", "192.0.2.1/32"}, 1},
		{"tcpsig_shim_rotations_total", []string{"peer", "192.0.2.1/32", "key", "rnext"}, 1},
		{"tcpsig_shim_rotations_total", []string{"peer", "192.0.2.1/32", "key", "current"}, 0},
		{"tcpsig_shim_keys", []string{"kind", "ao"}, 2},
	} {
		if got, ok := value(fams, c.name, c.labels...); !ok || got != c.want {
			t.Errorf("%s%v = %v, want %v\n%s", c.name, c.labels, got, c.want, text)
		}
	}
}

// TestClassify: the layer's errors get the verdicts the metrics and the
// drop log name.
func TestClassify(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{ao.ErrBadMAC, "bad_mac"},
		{ao.ErrMACLength, "bad_mac"},
		{ao.ErrKeyNotFound, "no_key"},
		{ao.ErrAORequired, "unsigned"},
		{ao.ErrUnexpected, "unexpected_option"},
		{segment.ErrBothAuth, "unexpected_option"},
		{segment.ErrOptionLength, "malformed"},
		{packetauth.ErrRevoked, "revoked"},
		{packetauth.ErrUnsigned, "unsigned"},
		{packetauth.ErrNoConn, "no_session"},
		{packetauth.ErrFragment, "fragment"},
		{packetauth.ErrICMP, "icmp_ignored"},
		{packetauth.ErrFull, "table_full"},
		{md5sig.ErrUnexpected, "unexpected_option"},
		{md5sig.ErrMissing, "unsigned"},
		{errors.New("something new"), "other"},
	} {
		if got := classify(c.err).String(); got != c.want {
			t.Errorf("classify(%v) = %s, want %s", c.err, got, c.want)
		}
	}
}

// TestDropLogFlood: a flood of one forgery logs the verdict's burst and
// no more (the clock stands still), and the other reasons still get their
// lines; no line shows a key.
func TestDropLogFlood(t *testing.T) {
	var log bytes.Buffer
	s, peer := metricsShim(t, &log)
	now := time.Unix(5000, 0)
	s.obs.drops.now = func() time.Time { return now }
	for i := range 1000 {
		if err := inbound(t, s, packet(t, aoPeer, segment.ACK, uint32(2000+i), 2, "forged")); err == nil {
			t.Fatal("an unsigned segment was accepted")
		}
	}
	if err := inbound(t, s, aoSegment(t, peer, 9, true, 1005)); err == nil {
		t.Fatal("an unknown KeyID was accepted")
	}
	if n := strings.Count(log.String(), "verdict=unsigned"); n != dropLogBurst {
		t.Errorf("%d lines for 1000 unsigned segments, want the burst of %d:\n%s", n, dropLogBurst, &log)
	}
	if !strings.Contains(log.String(), "verdict=no_key") {
		t.Error("the flood of unsigned segments hid the unknown KeyID's line")
	}
	now = now.Add(dropLogEvery)
	inbound(t, s, packet(t, aoPeer, segment.ACK, 9999, 2, "forged"))
	if !strings.Contains(log.String(), "verdict=unsigned peer=192.0.2.1/32") || !strings.Contains(log.String(), "suppressed=990") {
		t.Errorf("the line after the refill does not say how many it stands for:\n%s", &log)
	}
	if leak := redact.Leak(log.String(), []byte(metricsAOKey)); leak != "" {
		t.Errorf("the log shows the key (%q)", leak)
	}
}
