package keys

import (
	"encoding/json"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// TestWindow: half-open windows, open ends, overlap and widening.
func TestWindow(t *testing.T) {
	t0 := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	h := time.Hour
	w := Window{Start: t0, End: t0.Add(h)}
	for _, c := range []struct {
		what      string
		got, want bool
	}{
		{"contains its start", w.Contains(t0), true},
		{"not its end", w.Contains(t0.Add(h)), false},
		{"open end", Window{Start: t0}.Contains(t0.AddDate(50, 0, 0)), true},
		{"open start", Window{End: t0}.Contains(time.Time{}), true},
		{"always", Window{}.Contains(t0), true},
		{"touching windows do not overlap", w.Overlaps(Window{Start: t0.Add(h)}), false},
		{"1ns of overlap", w.Overlaps(Window{Start: t0.Add(h - 1)}), true},
		{"always overlaps", Window{}.Overlaps(w), true},
		{"open ends overlap", Window{End: t0.Add(1)}.Overlaps(Window{Start: t0}), true},
		{"widened", w.Widen(time.Minute).Contains(t0.Add(-time.Minute)), true},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
		}
	}
	if s := w.String(); s != "from 2027-01-01T00:00:00Z until 2027-01-01T01:00:00Z" {
		t.Errorf("String = %q", s)
	}
}

// TestLifetimeValidate: Validate refuses an end at or before its start
// and a negative tolerance, and a configuration's Validate refuses them
// too.
func TestLifetimeValidate(t *testing.T) {
	t0 := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		l    Lifetime
		ok   bool
	}{
		{"zero", Lifetime{}, true},
		{"send", Lifetime{Send: Window{Start: t0, End: t0.Add(1)}}, true},
		{"send ends at its start", Lifetime{Send: Window{Start: t0, End: t0}}, false},
		{"accept ends before", Lifetime{Accept: Window{Start: t0, End: t0.Add(-1)}}, false},
		{"negative tolerance", Lifetime{Tolerance: -time.Second}, false},
	} {
		err := c.l.Validate()
		if c.ok != (err == nil) || err != nil && !errors.Is(err, ErrLifetime) {
			t.Errorf("%s: %v", c.name, err)
		}
		_, err = MD5{Peer: netip.MustParsePrefix("192.0.2.1/32"), Key: []byte("k"), Lifetime: c.l}.Validate()
		if c.ok != (err == nil) || err != nil && (!errors.Is(err, ErrLifetime) || !errors.Is(err, ErrInvalid)) {
			t.Errorf("%s: MD5.Validate = %v", c.name, err)
		}
		_, err = AO{Peer: netip.MustParsePrefix("192.0.2.1/32"), Algorithm: "hmac(sha1)", Key: []byte("k"), Lifetime: c.l}.Validate()
		if c.ok != (err == nil) {
			t.Errorf("%s: AO.Validate = %v", c.name, err)
		}
	}
}

// TestLifetimePrinted: a configuration without a lifetime prints and
// marshals as before; one with a lifetime shows it.
func TestLifetimePrinted(t *testing.T) {
	c := MD5{Peer: netip.MustParsePrefix("192.0.2.1/32"), Key: []byte("k")}
	b, _ := json.Marshal(c)
	if strings.Contains(string(b), "Lifetime") || strings.Contains(c.String(), "send") {
		t.Errorf("no lifetime: %s, %s", b, c)
	}
	c.Lifetime.Send.Start = time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	b, _ = json.Marshal(c)
	if !strings.Contains(string(b), `"Lifetime":{"Send":{"Start":"2027-01-01T00:00:00Z"`) || !strings.Contains(c.String(), "send from 2027-01-01T00:00:00Z") {
		t.Errorf("with a lifetime: %s, %s", b, c)
	}
}
