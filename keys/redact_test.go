package keys

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"testing"

	"github.com/tcpsig/tcpsig/internal/redact"
	"github.com/tcpsig/tcpsig/mac"
)

// redactKey's every printed form holds letters (hex 5a65…, base64
// WmVi…), so no number in the output can match it by chance.
var redactKey = []byte("Zebra-Quokka-Key-7\xfe\xa7")

// The values to print: both kinds, valid or not, by value, by pointer,
// in a slice, a map and a struct field.
func redactValues() []any {
	a := AO{Peer: netip.MustParsePrefix("192.0.2.0/24"), SendID: 1, RecvID: 2, Algorithm: "hmac(sha1)", Key: redactKey, IfIndex: 3, HasIfIndex: true}
	m := MD5{Peer: netip.MustParsePrefix("198.51.100.1/32"), Key: redactKey}
	return []any{a, m, &a, &m, []AO{a}, []MD5{m}, map[string]AO{"a": a}, struct{ A AO }{a}, struct{ M *MD5 }{&m}}
}

// TestRedactFormat: no fmt verb shows the key's bytes.
func TestRedactFormat(t *testing.T) {
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%X", "%q", "%d", "% x", "%10.4v"} {
		for _, v := range redactValues() {
			out := fmt.Sprintf(verb, v)
			if f := redact.Leak(out, redactKey); f != "" {
				t.Errorf("%s of %T shows the key as %q: %s", verb, v, f, out)
			}
		}
	}
	for _, s := range []fmt.GoStringer{AO{Key: redactKey}, MD5{Key: redactKey}} {
		if out := s.GoString(); redact.Leak(out, redactKey) != "" || !strings.Contains(out, redact.Marker) {
			t.Errorf("GoString = %q", out)
		}
	}
}

// TestRedactJSON: json.Marshal writes every field but the key, which is
// the marker, and the result does not decode back into a key.
func TestRedactJSON(t *testing.T) {
	for _, v := range redactValues() {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%T: %v", v, err)
		}
		if f := redact.Leak(string(b), redactKey); f != "" {
			t.Errorf("json.Marshal(%T) shows the key as %q: %s", v, f, b)
		}
		if !bytes.Contains(b, []byte(`"Key":"[redacted]"`)) {
			t.Errorf("json.Marshal(%T) = %s, want the key redacted", v, b)
		}
	}
	b, _ := json.Marshal(AO{Peer: netip.MustParsePrefix("192.0.2.0/24"), SendID: 1, RecvID: 2, Algorithm: "hmac(sha1)", Key: redactKey, MACLen: 12})
	const want = `{"Peer":"192.0.2.0/24","SendID":1,"RecvID":2,"Algorithm":"hmac(sha1)","MACLen":12,"ExcludeOptions":false,"IfIndex":0,"HasIfIndex":false,"Key":"[redacted]"}`
	if string(b) != want {
		t.Errorf("json.Marshal(AO) =\n%s\nwant\n%s", b, want)
	}
	var back AO
	if err := json.Unmarshal(b, &back); err == nil {
		t.Errorf("the redacted JSON decoded into a key: %v", back.Key)
	}
	if b, _ := json.Marshal(MD5{}); !bytes.Contains(b, []byte(`"Key":""`)) {
		t.Errorf("json.Marshal(MD5{}) = %s: no key is not a redacted key", b)
	}
}

// TestRedactLog: slog's text and JSON handlers, with the value as an
// attribute, inside a group and inside a slice, show no key bytes.
func TestRedactLog(t *testing.T) {
	for _, h := range []struct {
		name string
		new  func(*bytes.Buffer) slog.Handler
	}{
		{"text", func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) }},
		{"json", func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) }},
	} {
		for _, v := range redactValues() {
			var buf bytes.Buffer
			log := slog.New(h.new(&buf))
			log.Info("key", "cfg", v, slog.Group("g", "cfg", v))
			log.With("cfg", v).Warn("again")
			out := buf.String()
			if f := redact.Leak(out, redactKey); f != "" {
				t.Errorf("%s handler, %T: shows the key as %q: %s", h.name, v, f, out)
			}
		}
	}
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("mkt", "cfg", AO{Peer: netip.MustParsePrefix("192.0.2.0/24"), SendID: 1, RecvID: 2, Algorithm: "hmac(sha1)", Key: redactKey})
	for _, want := range []string{"cfg.peer=192.0.2.0/24", "cfg.sendid=1", "cfg.recvid=2", "cfg.alg=hmac(sha1)", "cfg.key=[redacted]"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text handler: %q lacks %q", buf.String(), want)
		}
	}
}

// TestRedactErrors: a key pasted into the algorithm, and every other
// refusal, is not quoted by Validate's error.
func TestRedactErrors(t *testing.T) {
	for _, c := range []AO{
		{Peer: netip.MustParsePrefix("192.0.2.0/24"), Algorithm: string(redactKey), Key: redactKey},
		{Peer: netip.MustParsePrefix("192.0.2.0/24"), Algorithm: "hmac(sha1)", Key: redactKey, MACLen: 99},
		{Peer: netip.MustParsePrefix("192.0.2.1/24"), Algorithm: "hmac(sha1)", Key: redactKey},
		{Algorithm: "cmac(aes)", Key: redactKey},
	} {
		_, err := c.Validate()
		if err == nil {
			t.Fatalf("%v: no error", c)
		}
		if f := redact.Leak(err.Error(), redactKey); f != "" {
			t.Errorf("Validate: %q shows the key as %q", err, f)
		}
	}
	_, err := AO{Peer: netip.MustParsePrefix("192.0.2.0/24"), Algorithm: "text:" + string(redactKey), Key: redactKey}.Validate()
	if !errors.Is(err, ErrInvalid) || !errors.Is(err, mac.ErrUnknownAlgorithm) {
		t.Errorf("unknown algorithm: %v, want ErrInvalid and mac.ErrUnknownAlgorithm", err)
	}
	if _, err := (MD5{Key: redactKey}).Validate(); err == nil || redact.Leak(err.Error(), redactKey) != "" {
		t.Errorf("MD5.Validate: %v", err)
	}
}
