package keychain

import (
	"bytes"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/keys"
)

var (
	endA = netip.MustParsePrefix("192.0.2.1/32")
	endB = netip.MustParsePrefix("192.0.2.2/32")
	t0   = time.Date(2027, 1, 10, 0, 0, 0, 0, time.UTC)
)

// zeros is a Rand that makes every new key the same: the test's keys
// are known, not secret.
type zeros struct{}

func (zeros) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = byte(i + 7)
	}
	return len(b), nil
}

// pair is a session's two ends with one TCP-AO key, without lifetimes,
// as keys gen writes them: A's entry (peer B) and B's (peer A).
func pair(key string) (a, b *keyfile.File) {
	mk := func(peer netip.Prefix, s, r uint8) *keyfile.File {
		return &keyfile.File{AO: []keyfile.AO{{Name: "s/1", Config: keys.AO{Peer: peer, SendID: s, RecvID: r, Algorithm: "hmac(sha256)", Key: []byte(key), MACLen: 12}}}}
	}
	return mk(endB, 1, 2), mk(endA, 2, 1)
}

// TestRotateAO: a rotation adds a key and its mirror with fresh KeyIDs,
// ends the old key's send lifetime at the new one's start and keeps both
// accepted for the overlap on each side; the two files' timelines then
// have a sender at every moment, each accepted on the other end.
func TestRotateAO(t *testing.T) {
	a, b := pair("Typed-Password-1")
	r := Rotation{Peer: endB, At: t0, Overlap: time.Hour, Rand: zeros{}}
	got, err := Rotate(a, b, r)
	if err != nil {
		t.Fatal(err)
	}
	if got.Old != 0 || got.New != 1 || got.MirrorOld != 0 || got.MirrorNew != 1 || got.MD5 {
		t.Errorf("Rotated = %+v", got)
	}
	old, nw, mirror := a.AO[0].Config, a.AO[1].Config, b.AO[1].Config
	if nw.SendID != 3 || nw.RecvID != 4 || mirror.SendID != 4 || mirror.RecvID != 3 || a.AO[1].Name != "s/2" || b.AO[1].Name != "s/2" {
		t.Errorf("new key %v (%q), mirror %v", nw, a.AO[1].Name, mirror)
	}
	if !bytes.Equal(nw.Key, mirror.Key) || len(nw.Key) != 16 || !printable(nw.Key) || !a.AO[1].Text || bytes.Equal(nw.Key, old.Key) {
		t.Errorf("new key: %d bytes, text %v", len(nw.Key), a.AO[1].Text)
	}
	if !old.Lifetime.Send.End.Equal(t0) || !old.Lifetime.Accept.End.Equal(t0.Add(time.Hour)) ||
		!nw.Lifetime.Send.Start.Equal(t0) || !nw.Lifetime.Accept.Start.Equal(t0.Add(-time.Hour)) ||
		!b.AO[0].Config.Lifetime.Send.End.Equal(t0) || !mirror.Lifetime.Accept.Start.Equal(t0.Add(-time.Hour)) {
		t.Errorf("lifetimes: old %v, new %v, mirror old %v", old.Lifetime, nw.Lifetime, b.AO[0].Config.Lifetime)
	}
	// The send keys hand over at t0 exactly: the old one signs 1ns
	// before, the new one from t0.
	if !old.Lifetime.SendActive(t0.Add(-1)) || old.Lifetime.SendActive(t0) || !nw.Lifetime.SendActive(t0) || nw.Lifetime.SendActive(t0.Add(-1)) {
		t.Error("the send lifetimes do not hand over at t0")
	}
	for _, dir := range []struct{ f, other *keyfile.File }{{a, b}, {b, a}} {
		tl := Check(dir.f, dir.other, t0.Add(-2*time.Hour))
		if len(tl.Problems) > 0 || len(tl.Peers) != 1 {
			t.Errorf("timeline: %v, %d peers", tl.Problems, len(tl.Peers))
		}
	}
	// A second rotation takes the next IDs and the chain's next name.
	if _, err := Rotate(a, b, Rotation{Peer: endB, At: t0.Add(24 * time.Hour), Overlap: time.Hour, Rand: zeros{}}); err != nil {
		t.Fatal(err)
	}
	if c := a.AO[2]; c.Config.SendID != 5 || c.Config.RecvID != 6 || c.Name != "s/3" || !a.AO[1].Config.Lifetime.Send.End.Equal(t0.Add(24*time.Hour)) {
		t.Errorf("second rotation: %v, key 2 %v", c, a.AO[1].Config.Lifetime)
	}
	if tl := Check(a, b, t0.Add(-2*time.Hour)); len(tl.Problems) > 0 {
		t.Errorf("after two rotations: %v", tl.Problems)
	}
}

// TestRotateMD5BothEnds: a file with both ends of a TCP-MD5 session is
// its own mirror's file; a key with one ID for both directions keeps one.
func TestRotateMD5BothEnds(t *testing.T) {
	f := &keyfile.File{MD5: []keyfile.MD5{
		{Config: keys.MD5{Peer: endB, Key: []byte{1, 2, 3, 0xff}}},
		{Config: keys.MD5{Peer: endA, Key: []byte{1, 2, 3, 0xff}}},
	}}
	got, err := Rotate(f, f, Rotation{Peer: endB, At: t0, Overlap: time.Minute, Rand: zeros{}})
	if err != nil {
		t.Fatal(err)
	}
	if !got.MD5 || got.New != 2 || got.MirrorOld != 1 || got.MirrorNew != 3 || len(f.MD5) != 4 || f.MD5[2].Text {
		t.Fatalf("Rotated %+v, %d entries", got, len(f.MD5))
	}
	if f.MD5[3].Config.Peer != endA || !bytes.Equal(f.MD5[2].Config.Key, f.MD5[3].Config.Key) {
		t.Errorf("mirror %v", f.MD5[3])
	}
	b, err := f.Marshal() // two keys of a peer, both with lifetimes: a schedule
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keyfile.Parse(b); err != nil {
		t.Fatal(err)
	}
	if tl := Check(f, f, t0.Add(-time.Hour)); len(tl.Problems) > 0 {
		t.Errorf("timeline: %v", tl.Problems)
	}
	ao := &keyfile.File{AO: []keyfile.AO{{Config: keys.AO{Peer: endB, SendID: 7, RecvID: 7, Algorithm: "hmac(sha1)", Key: []byte("k"), MACLen: 12}},
		{Config: keys.AO{Peer: endA, SendID: 7, RecvID: 7, Algorithm: "hmac(sha1)", Key: []byte("k"), MACLen: 12}}}}
	if _, err := Rotate(ao, ao, Rotation{Peer: endB, At: t0, Rand: zeros{}}); err != nil || ao.AO[2].Config.SendID != 8 || ao.AO[2].Config.RecvID != 8 {
		t.Errorf("one ID: %v, %v", err, ao.AO[2:])
	}
}

// TestRotateRefuses: no key for the peer, no mirror, a time that is not
// after the current key's start; the files stay as they were.
func TestRotateRefuses(t *testing.T) {
	a, b := pair("k")
	for _, c := range []struct {
		name   string
		mirror *keyfile.File
		r      Rotation
		want   string
	}{
		{"no such peer", b, Rotation{Peer: endA, At: t0}, "no entry for peer 192.0.2.1/32"},
		{"no mirror", &keyfile.File{}, Rotation{Peer: endB, At: t0}, `ao[0] ("s/1") has no mirror`},
		{"no time", b, Rotation{Peer: endB}, "want a time"},
		{"negative overlap", b, Rotation{Peer: endB, At: t0, Overlap: -1}, "want a time"},
	} {
		_, err := Rotate(a, c.mirror, c.r)
		if !errors.Is(err, ErrRotate) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := Rotate(a, b, Rotation{Peer: endB, At: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := Rotate(a, b, Rotation{Peer: endB, At: t0.Add(-time.Hour)}); !errors.Is(err, ErrRotate) || !strings.Contains(err.Error(), "already starts sending") {
		t.Errorf("before the newest key's start: %v", err)
	}
	if len(a.AO) != 2 || len(b.AO) != 2 {
		t.Errorf("a refused rotation changed the files: %d, %d entries", len(a.AO), len(b.AO))
	}
}

// TestCheckProblems: a moment with no send key, a send key the other end
// does not accept for one nanosecond, a send key without a mirror, and a
// tolerance below the file's clock_skew.
func TestCheckProblems(t *testing.T) {
	a, b := pair("k")
	if _, err := Rotate(a, b, Rotation{Peer: endB, At: t0, Overlap: time.Hour, Rand: zeros{}}); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(-2 * time.Hour)
	gap := clone(a)
	gap.AO[1].Config.Lifetime.Send.Start = t0.Add(time.Minute)
	tl := Check(gap, b, now)
	if len(tl.Problems) != 1 || !strings.Contains(tl.Problems[0], "peer 192.0.2.2/32: from 2027-01-10T00:00:00Z until 2027-01-10T00:01:00Z: no key sends") {
		t.Errorf("a gap: %v", tl.Problems)
	}
	late := clone(b)
	late.AO[1].Config.Lifetime.Accept.Start = t0.Add(1) // the mirror accepts 1ns after the new key sends
	tl = Check(a, late, now)
	if len(tl.Problems) != 1 || !strings.Contains(tl.Problems[0], `peer 192.0.2.2/32: from 2027-01-10T00:00:00Z: ao[1] ("s/2") sends, but the other end accepts no mirror of it then`) {
		t.Errorf("1ns late: %v", tl.Problems)
	}
	if tl := Check(a, &keyfile.File{}, now); len(tl.Problems) != 2 || !strings.Contains(tl.Problems[0], "has no mirror") {
		t.Errorf("no mirrors: %v", tl.Problems)
	}
	a.ClockSkew = 30 * time.Second
	if tl := Check(a, nil, now); len(tl.Problems) != 0 || len(tl.Warnings) != 2 || !strings.Contains(tl.Warnings[0], "accept tolerance 0s is smaller than the file's clock_skew 30s") {
		t.Errorf("skew: %v %v", tl.Problems, tl.Warnings)
	}
	var out strings.Builder
	Check(a, b, now).Write(&out)
	want := `timeline of peer 192.0.2.2/32 (TCP-AO):
  2027-01-09T22:00:00Z .. 2027-01-09T23:00:00Z  sends ao[0] ("s/1"); accepts ao[0] ("s/1")
  2027-01-09T23:00:00Z .. 2027-01-10T00:00:00Z  sends ao[0] ("s/1"); accepts ao[0] ("s/1"), ao[1] ("s/2")
  2027-01-10T00:00:00Z .. 2027-01-10T01:00:00Z  sends ao[1] ("s/2"); accepts ao[0] ("s/1"), ao[1] ("s/2")
  2027-01-10T01:00:00Z .. (no end)              sends ao[1] ("s/2"); accepts ao[1] ("s/2")
`
	if out.String() != want {
		t.Errorf("Write:\n%s\nwant\n%s", out.String(), want)
	}
	// A file without lifetimes has no timeline and no problem.
	c, d := pair("k")
	if tl := Check(c, d, now); len(tl.Peers)+len(tl.Problems)+len(tl.Warnings) != 0 {
		t.Errorf("no lifetimes: %+v", tl)
	}
}

// TestCheckStaleOtherEnd: the other end's file from before the rotation
// (its key without lifetimes) keeps sending the old key, which this end
// stops accepting an overlap after the hand-over: Check(other, f) finds
// it, though the other file has no lifetime.
func TestCheckStaleOtherEnd(t *testing.T) {
	a, b := pair("k")
	stale := clone(b)
	if _, err := Rotate(a, b, Rotation{Peer: endB, At: t0, Overlap: time.Hour, Rand: zeros{}}); err != nil {
		t.Fatal(err)
	}
	tl := Check(stale, a, t0.Add(-2*time.Hour))
	if len(tl.Problems) != 1 || !strings.Contains(tl.Problems[0], `peer 192.0.2.1/32: from 2027-01-10T01:00:00Z: ao[0] ("s/1") sends, but the other end accepts no mirror of it then`) {
		t.Errorf("stale other end: %v", tl.Problems)
	}
	if tl := Check(a, stale, t0.Add(-2*time.Hour)); len(tl.Problems) != 1 || !strings.Contains(tl.Problems[0], `ao[1] ("s/2") sends, but the other end has no mirror`) {
		t.Errorf("this end against the stale one: %v", tl.Problems)
	}
}

// TestMirror: a file's keys for one peer, mirrored for the other end,
// are a mirror Rotate finds, and the two files' schedules agree.
func TestMirror(t *testing.T) {
	a, _ := pair("k")
	a.AO = append(a.AO, keyfile.AO{Config: keys.AO{Peer: netip.MustParsePrefix("198.51.100.0/24"), SendID: 9, RecvID: 9, Algorithm: "hmac(sha1)", Key: []byte("x"), MACLen: 12}})
	m := Mirror(a, endB, endA)
	if len(m.AO) != 1 || m.AO[0].Config.Peer != endA || m.AO[0].Config.SendID != 2 || m.AO[0].Config.RecvID != 1 {
		t.Fatalf("Mirror = %v", m)
	}
	if _, err := Rotate(a, m, Rotation{Peer: endB, At: t0, Overlap: time.Hour, Rand: zeros{}}); err != nil {
		t.Fatal(err)
	}
	if len(m.AO) != 2 {
		t.Fatalf("the mirror's file has %d entries", len(m.AO))
	}
	for _, dir := range []struct{ f, other *keyfile.File }{{a, m}, {m, a}} {
		if tl := Check(dir.f, dir.other, t0.Add(-2*time.Hour)); len(tl.Problems) > 0 {
			t.Errorf("timeline: %v", tl.Problems)
		}
	}
}
