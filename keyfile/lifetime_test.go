package keyfile

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/keys"
)

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// scheduleFile has every form: independent lifetimes, the shared one, an
// open end, the file's tolerance and an entry's own, two TCP-MD5 keys of
// one peer with lifetimes.
const scheduleFile = `{
  "accept_tolerance": 60, "clock_skew": 30,
  "ao": [
    {"name": "k1", "alg": "hmac(sha256)", "key": "text:one", "sndid": 1, "rcvid": 1, "peer": "192.0.2.1",
     "send_lifetime": {"start": "2026-12-01T00:00:00Z", "end": "2027-01-01T00:00:00Z"},
     "accept_lifetime": {"start": "2026-12-01T00:00:00Z", "end": "2027-01-01T02:00:00+01:00"}},
    {"name": "k2", "alg": "hmac(sha256)", "key": "text:two", "sndid": 2, "rcvid": 2, "peer": "192.0.2.1",
     "lifetime": {"start": "2027-01-01T00:00:00Z"}, "accept_tolerance": 0}
  ],
  "md5": [
    {"name": "m1", "peer": "198.51.100.1", "key": "text:old", "lifetime": {"end": "2027-01-01T00:00:00Z"}},
    {"name": "m2", "peer": "198.51.100.1", "key": "text:new", "lifetime": {"start": "2026-12-31T00:00:00Z"}}
  ]
}`

// TestLifetimeParse: each form gives the lifetime it says, the entry's
// tolerance wins over the file's, and the boundaries are exact to the
// nanosecond: signing from the send start up to, not including, the
// send end; verifying inside the accept lifetime widened by the
// tolerance.
func TestLifetimeParse(t *testing.T) {
	f, err := Parse([]byte(scheduleFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Wipe()
	if f.AcceptTolerance != time.Minute || f.ClockSkew != 30*time.Second {
		t.Errorf("file tolerance %v, skew %v", f.AcceptTolerance, f.ClockSkew)
	}
	dec1, jan1 := mustTime(t, "2026-12-01T00:00:00Z"), mustTime(t, "2027-01-01T00:00:00Z")
	k1 := f.AO[0].Config.Lifetime
	want1 := keys.Lifetime{Send: keys.Window{Start: dec1, End: jan1}, Accept: keys.Window{Start: dec1, End: jan1.Add(time.Hour)}, Tolerance: time.Minute}
	if !sameLifetime(k1, want1) {
		t.Errorf("k1: %v, want %v", k1, want1)
	}
	k2 := f.AO[1].Config.Lifetime
	if !sameLifetime(k2, keys.Lifetime{Send: keys.Window{Start: jan1}, Accept: keys.Window{Start: jan1}}) {
		t.Errorf("k2: %v", k2)
	}
	ns := time.Nanosecond
	for _, c := range []struct {
		what string
		got  bool
		want bool
	}{
		{"k1 sends at its start", k1.SendActive(dec1), true},
		{"k1 sends 1ns before its start", k1.SendActive(dec1.Add(-ns)), false},
		{"k1 sends 1ns before its end", k1.SendActive(jan1.Add(-ns)), true},
		{"k1 sends at its end", k1.SendActive(jan1), false},
		{"k1 accepts 60s after its accept end, 1ns short", k1.AcceptActive(jan1.Add(time.Hour + time.Minute - ns)), true},
		{"k1 accepts 60s after its accept end", k1.AcceptActive(jan1.Add(time.Hour + time.Minute)), false},
		{"k1 accepts 60s before its start", k1.AcceptActive(dec1.Add(-time.Minute)), true},
		{"k1 accepts 60s and 1ns before its start", k1.AcceptActive(dec1.Add(-time.Minute - ns)), false},
		{"k2 (tolerance 0) accepts 1ns before its start", k2.AcceptActive(jan1.Add(-ns)), false},
		{"k2 sends for ever", k2.SendActive(jan1.AddDate(100, 0, 0)), true},
		{"m1 sends since always", f.MD5[0].Config.Lifetime.SendActive(time.Time{}.Add(ns)), true},
		{"m2 accepts with the file's tolerance", f.MD5[1].Config.Lifetime.AcceptActive(mustTime(t, "2026-12-30T23:59:00Z")), true},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
		}
	}
	if s := f.AO[0].String(); !strings.Contains(s, "send from 2026-12-01T00:00:00Z until 2027-01-01T00:00:00Z") {
		t.Errorf("String = %q, want the send lifetime", s)
	}
}

func sameLifetime(a, b keys.Lifetime) bool {
	return sameWindow(a.Send, b.Send) && sameWindow(a.Accept, b.Accept) && a.Tolerance == b.Tolerance
}

// TestLifetimeMarshal: Marshal writes the lifetimes and settings so that
// Parse gives the same file back; a file without them is written as
// before (no new field).
func TestLifetimeMarshal(t *testing.T) {
	f, err := Parse([]byte(scheduleFile))
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	g, err := Parse(b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if g.AcceptTolerance != f.AcceptTolerance || g.ClockSkew != f.ClockSkew {
		t.Errorf("settings %v %v", g.AcceptTolerance, g.ClockSkew)
	}
	for i := range f.AO {
		if !sameLifetime(f.AO[i].Config.Lifetime, g.AO[i].Config.Lifetime) {
			t.Errorf("ao[%d]: %v, want %v", i, g.AO[i].Config.Lifetime, f.AO[i].Config.Lifetime)
		}
	}
	for i := range f.MD5 {
		if !sameLifetime(f.MD5[i].Config.Lifetime, g.MD5[i].Config.Lifetime) {
			t.Errorf("md5[%d]: %v, want %v", i, g.MD5[i].Config.Lifetime, f.MD5[i].Config.Lifetime)
		}
	}
	for _, s := range []string{`"lifetime": {"start": "2027-01-01T00:00:00Z"}`, `"accept_tolerance": 0`, `"send_lifetime"`} {
		if !strings.Contains(string(b), s) {
			t.Errorf("Marshal lacks %s:\n%s", s, b)
		}
	}
	f.AO[0].Config.Lifetime.Tolerance = 1500 * time.Millisecond
	if _, err := f.Marshal(); !errors.Is(err, ErrLifetime) {
		t.Errorf("a tolerance of 1.5s: Marshal = %v, want ErrLifetime", err)
	}
	plain, err := (&File{MD5: []MD5{{Config: keys.MD5{Peer: f.MD5[0].Config.Peer, Key: []byte("k")}}}}).Marshal()
	if err != nil || strings.Contains(string(plain), "lifetime") || strings.Contains(string(plain), "tolerance") {
		t.Errorf("without lifetimes: %v\n%s", err, plain)
	}
}

// TestLifetimeErrors: a lifetime that cannot be read or cannot be is
// refused with ErrLifetime (ErrUnknownField for an unknown field of one),
// naming the entry and field, never quoting the value.
func TestLifetimeErrors(t *testing.T) {
	const ao = `{"ao": [{"name": "r1", "alg": "hmac(sha1)", "key": "text:k", "sndid": 1, "rcvid": 1, "peer": "192.0.2.1", %s}]}`
	for _, c := range []struct {
		name, fields string
		file         string // instead of ao
		want         error
		where        string
	}{
		{"end before start", `"send_lifetime": {"start": "2027-01-01T00:00:00Z", "end": "2026-01-01T00:00:00Z"}`, "", ErrLifetime, `ao[0] ("r1").send_lifetime.end:`},
		{"end at start", `"lifetime": {"start": "2027-01-01T00:00:00Z", "end": "2027-01-01T01:00:00+01:00"}`, "", ErrLifetime, `ao[0] ("r1").lifetime.end:`},
		{"unparsable time", `"accept_lifetime": {"start": "text:TOPSECRET"}`, "", ErrLifetime, `ao[0] ("r1").accept_lifetime.start: not an RFC 3339 time`},
		{"date only", `"accept_lifetime": {"start": "2027-01-01"}`, "", ErrLifetime, `ao[0] ("r1").accept_lifetime.start:`},
		{"time not a string", `"lifetime": {"start": 1700000000}`, "", ErrValue, `ao[0] ("r1").lifetime.start: want a string`},
		{"negative tolerance", `"accept_tolerance": -5`, "", ErrLifetime, `ao[0] ("r1").accept_tolerance:`},
		{"tolerance too large", `"accept_tolerance": 4294967296`, "", ErrLifetime, `ao[0] ("r1").accept_tolerance:`},
		{"both forms", `"lifetime": {"start": "2027-01-01T00:00:00Z"}, "send_lifetime": {"start": "2027-01-01T00:00:00Z"}`, "", ErrLifetime, `ao[0] ("r1").lifetime:`},
		{"empty lifetime", `"lifetime": {}`, "", ErrLifetime, `ao[0] ("r1").lifetime:`},
		{"not an object", `"lifetime": "2027-01-01T00:00:00Z"`, "", ErrSyntax, `ao[0] ("r1").lifetime:`},
		{"unknown field", `"lifetime": {"begin": "2027-01-01T00:00:00Z"}`, "", ErrUnknownField, `ao[0] ("r1"): unknown field of lifetime "begin"`},
		{"file tolerance negative", "", `{"accept_tolerance": -1, "md5": [{"peer": "192.0.2.1", "key": "text:k"}]}`, ErrLifetime, "accept_tolerance:"},
		{"clock skew not a number", "", `{"clock_skew": "1m", "md5": [{"peer": "192.0.2.1", "key": "text:k"}]}`, ErrValue, "clock_skew:"},
		{"md5 end before start", "", `{"md5": [{"name": "m", "peer": "192.0.2.1", "key": "text:k", "lifetime": {"start": "2027-01-01T00:00:00Z", "end": "2026-01-01T00:00:00Z"}}]}`, ErrLifetime, `md5[0] ("m").lifetime.end:`},
	} {
		src := c.file
		if src == "" {
			src = strings.Replace(ao, "%s", c.fields, 1)
		}
		_, err := Parse([]byte(src))
		var e *Error
		if !errors.Is(err, c.want) || !errors.As(err, &e) || !strings.HasPrefix(err.Error(), c.where) {
			t.Errorf("%s: %v, want %v at %s", c.name, err, c.want, c.where)
		}
		if err != nil && strings.Contains(err.Error(), "TOPSECRET") {
			t.Errorf("%s: the error quotes the value: %v", c.name, err)
		}
	}
}

// TestMD5Schedule: two TCP-MD5 keys of one peer are a schedule when both
// have lifetimes, and the clash they always were when one has none.
func TestMD5Schedule(t *testing.T) {
	const two = `{"md5": [{"peer": "192.0.2.1", "key": "text:old"%s}, {"peer": "192.0.2.1", "key": "text:%s"%s}]}`
	until := `, "lifetime": {"end": "2027-01-01T00:00:00Z"}`
	from := `, "lifetime": {"start": "2026-12-31T00:00:00Z"}`
	for _, c := range []struct {
		name             string
		first, key, next string
		want             error
	}{
		{"both scheduled", until, "new", from, nil},
		{"first not", "", "new", from, ErrDuplicate},
		{"second not", until, "new", "", ErrDuplicate},
		{"the same key", until, "old", from, ErrDuplicate},
	} {
		src := strings.Replace(strings.Replace(strings.Replace(two, "%s", c.first, 1), "%s", c.key, 1), "%s", c.next, 1)
		_, err := Parse([]byte(src))
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

// TestRefuseLifetimes: a file without lifetimes passes (a tolerance
// alone limits nothing); one with a lifetime is refused, naming the entry
// and the road.
func TestRefuseLifetimes(t *testing.T) {
	f, err := Parse([]byte(`{"accept_tolerance": 5, "md5": [{"peer": "192.0.2.1", "key": "text:k"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.RefuseLifetimes("tcpsig shim"); err != nil || f.Scheduled() {
		t.Errorf("no lifetimes: %v, scheduled %v", err, f.Scheduled())
	}
	if err := (*File)(nil).RefuseLifetimes("x"); err != nil {
		t.Errorf("nil: %v", err)
	}
	f, err = Parse([]byte(scheduleFile))
	if err != nil {
		t.Fatal(err)
	}
	err = f.RefuseLifetimes("tcpsig shim")
	if !errors.Is(err, ErrLifetimeUnsupported) || !strings.HasPrefix(err.Error(), `ao[0] ("k1"): has a lifetime`) ||
		!strings.Contains(err.Error(), "tcpsig shim cannot honour") || !f.Scheduled() {
		t.Errorf("RefuseLifetimes = %v", err)
	}
	f.AO = nil
	if err := f.RefuseLifetimes(""); err == nil || !strings.HasPrefix(err.Error(), `md5[0] ("m1")`) {
		t.Errorf("md5 only: %v", err)
	}
}

// TestMarshalText: an entry marked Text is written "text:…", escaped as
// JSON needs, and reads back to the same bytes; one that is not UTF-8
// falls back to hex.
func TestMarshalText(t *testing.T) {
	p := mustPeer(t, "192.0.2.1/32")
	for _, k := range []string{"Router-Pass_word", "quote\" back\\slash \x01 del\x7f é"} {
		f := &File{MD5: []MD5{{Config: keys.MD5{Peer: p, Key: []byte(k)}, Text: true}}}
		b, err := f.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		g, err := Parse(b)
		if err != nil || string(g.MD5[0].Config.Key) != k || !strings.Contains(string(b), `"key": "text:`) {
			t.Errorf("%q: %v\n%s", k, err, b)
		}
	}
	f := &File{MD5: []MD5{{Config: keys.MD5{Peer: p, Key: []byte{0xff, 0xfe}}, Text: true}}}
	if b, err := f.Marshal(); err != nil || !strings.Contains(string(b), `"key": "hex:fffe"`) {
		t.Errorf("not UTF-8: %v\n%s", err, b)
	}
}

func mustPeer(t *testing.T, s string) netip.Prefix {
	t.Helper()
	p, err := netip.ParsePrefix(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
