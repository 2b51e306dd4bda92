package keyfile

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/tcpsig/tcpsig/internal/redact"
)

// The keys of these tests: every printed form holds letters (hex 5a65…,
// base64 WmVi…), so no number in an output matches one by chance.
var (
	aoKey  = []byte("Zebra-Quokka-AO-Key-1")
	md5Key = []byte("Yak-Narwhal-MD5-Key-2")
	binKey = []byte{0xfe, 0xa7, 'Z', 'e', 'b', 0x00, 0xc3, 'K', 'e', 'y', 0x9b, 0xde, 0xad, 0xbe, 0xef}
)

// redactFile is a file holding the three keys, in text and hex.
var redactFile = `{"ao": [{"name": "r1", "alg": "hmac(sha1)", "key": "text:` + string(aoKey) + `", "sndid": 1, "rcvid": 2, "peer": "192.0.2.1", "ifindex": 2},
  {"alg": "hmac(sha256)", "key": "hex:` + hex.EncodeToString(binKey) + `", "sndid": 3, "rcvid": 4, "peer": "2001:db8::/32", "exclude_options": true}],
 "md5": [{"name": "r2", "peer": "198.51.100.0/24", "key": "text:` + string(md5Key) + `"}]}`

// leaks returns the first form of any of the keys in out.
func leaks(out string) string {
	for _, k := range [][]byte{aoKey, md5Key, binKey} {
		if f := redact.Leak(out, k); f != "" {
			return f
		}
	}
	return ""
}

// redactValues are the file's printable values: the File, its entries,
// by value and pointer, in slices, maps and struct fields.
func redactValues(t *testing.T) []any {
	f, err := Parse([]byte(redactFile))
	if err != nil {
		t.Fatal(err)
	}
	return []any{f, *f, f.AO[0], f.AO[1], f.MD5[0], &f.AO[0], &f.MD5[0], f.AO, f.MD5,
		map[string]AO{"a": f.AO[1]}, struct{ F *File }{f}, struct{ E MD5 }{f.MD5[0]}, []*File{f}}
}

// TestRedactFormat: no fmt verb shows a key.
func TestRedactFormat(t *testing.T) {
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%X", "%q", "%d", "% x", "%8.3v"} {
		for _, v := range redactValues(t) {
			if out := fmt.Sprintf(verb, v); leaks(out) != "" {
				t.Errorf("%s of %T shows %q: %s", verb, v, leaks(out), out)
			}
		}
	}
	f, _ := Parse([]byte(redactFile))
	if got := f.GoString(); got != f.String() || !strings.Contains(got, "key [21 bytes]") {
		t.Errorf("GoString = %q", got)
	}
}

// TestRedactJSON: json.Marshal writes the file's own format with every
// key "[redacted]", which Parse refuses; Marshal still writes the keys.
func TestRedactJSON(t *testing.T) {
	for _, v := range redactValues(t) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("json.Marshal(%T): %v", v, err)
		}
		if f := leaks(string(b)); f != "" {
			t.Errorf("json.Marshal(%T) shows %q: %s", v, f, b)
		}
		if !bytes.Contains(b, []byte(`"key":"[redacted]"`)) {
			t.Errorf("json.Marshal(%T) = %s, want keys redacted", v, b)
		}
	}
	f, _ := Parse([]byte(redactFile))
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"ao":[{"name":"r1","alg":"hmac(sha1)","key":"[redacted]","sndid":1,"rcvid":2,"peer":"192.0.2.1/32","maclen":12,"exclude_options":false,"ifindex":2},` +
		`{"alg":"hmac(sha256)","key":"[redacted]","sndid":3,"rcvid":4,"peer":"2001:db8::/32","maclen":12,"exclude_options":true}],` +
		`"md5":[{"name":"r2","peer":"198.51.100.0/24","key":"[redacted]"}]}`
	if string(b) != want {
		t.Errorf("json.Marshal(File) =\n%s\nwant\n%s", b, want)
	}
	if _, err := Parse(b); !errors.Is(err, ErrValue) {
		t.Errorf("Parse of the redacted JSON: %v, want ErrValue", err)
	}
	if b, _ := json.Marshal(File{}); string(b) != "{}" {
		t.Errorf("json.Marshal(File{}) = %s", b)
	}
	m, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(m, []byte(hex.EncodeToString(aoKey))) || !bytes.Contains(m, []byte(hex.EncodeToString(binKey))) {
		t.Errorf("Marshal lost the keys:\n%s", m)
	}
}

// TestRedactLog: slog's text and JSON handlers show no key, for the
// File, an entry, in a group, and in a logger's attributes.
func TestRedactLog(t *testing.T) {
	for _, h := range []struct {
		name string
		new  func(*bytes.Buffer) slog.Handler
	}{
		{"text", func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) }},
		{"json", func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) }},
	} {
		for _, v := range redactValues(t) {
			var buf bytes.Buffer
			log := slog.New(h.new(&buf))
			log.Info("keys", "v", v, slog.Group("g", "v", v))
			log.With("v", v).Error("again", "err", fmt.Errorf("wrapped: %v", v))
			if f := leaks(buf.String()); f != "" {
				t.Errorf("%s handler, %T: shows %q: %s", h.name, v, f, buf.String())
			}
		}
	}
	f, _ := Parse([]byte(redactFile))
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("loaded", "file", f)
	for _, want := range []string{"file.ao[0].name=r1", "file.ao[0].peer=192.0.2.1/32", "file.ao[0].key=[redacted]", "file.ao[1].exclude_options=true", "file.md5[0].name=r2", "file.md5[0].key=[redacted]"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text handler: %q lacks %q", buf.String(), want)
		}
	}
}

// TestRedactErrors: a key pasted into any other field (as text, as hex,
// bare, with its prefix), or given where the file is not JSON, is never
// quoted by the error: the error names the entry and the field.
func TestRedactErrors(t *testing.T) {
	const ok = `"sndid": 1, "rcvid": 2`
	k := string(aoKey)
	x := hex.EncodeToString(aoKey)
	for _, tc := range []struct {
		name, in string
		field    string
	}{
		{"peer text", `{"ao": [{"alg": "hmac(sha1)", "key": "text:k", ` + ok + `, "peer": "text:` + k + `"}]}`, "peer"},
		{"peer hex", `{"ao": [{"alg": "hmac(sha1)", "key": "text:k", ` + ok + `, "peer": "hex:` + x + `"}]}`, "peer"},
		{"peer bare", `{"ao": [{"alg": "hmac(sha1)", "key": "text:k", ` + ok + `, "peer": "` + k + `"}]}`, "peer"},
		{"peer bare hex", `{"md5": [{"key": "text:k", "peer": "` + x + `"}]}`, "peer"},
		{"peer slash", `{"md5": [{"key": "text:k", "peer": "` + k + `/24"}]}`, "peer"},
		{"alg text", `{"ao": [{"alg": "text:` + k + `", "key": "text:k", ` + ok + `, "peer": "192.0.2.1"}]}`, "alg"},
		{"alg bare", `{"ao": [{"alg": "` + k + `", "key": "text:k", ` + ok + `, "peer": "192.0.2.1"}]}`, "alg"},
		{"alg hex", `{"ao": [{"alg": "` + x + `", "key": "text:k", ` + ok + `, "peer": "192.0.2.1"}]}`, "alg"},
		{"name", `{"ao": [{"name": "text:` + k + `", "alg": "hmac(sha1)", "key": "text:k", ` + ok + `, "peer": "192.0.2.1"}]}`, "name"},
		{"md5 name", `{"md5": [{"name": "hex:` + x + `", "peer": "192.0.2.1", "key": "text:k"}]}`, "name"},
		{"sndid", `{"ao": [{"alg": "hmac(sha1)", "key": "text:k", "sndid": "` + k + `", "rcvid": 2, "peer": "192.0.2.1"}]}`, "sndid"},
		{"maclen", `{"ao": [{"alg": "hmac(sha1)", "key": "text:k", ` + ok + `, "peer": "192.0.2.1", "maclen": "hex:` + x + `"}]}`, "maclen"},
		{"exclude", `{"ao": [{"alg": "hmac(sha1)", "key": "text:k", ` + ok + `, "peer": "192.0.2.1", "exclude_options": "` + k + `"}]}`, "exclude_options"},
		{"ifindex", `{"md5": [{"key": "text:k", "peer": "192.0.2.1", "ifindex": "text:` + k + `"}]}`, "ifindex"},
		{"key bare", `{"md5": [{"key": "` + k + `", "peer": "192.0.2.1"}]}`, "key"},
		{"key bad hex", `{"md5": [{"key": "hex:` + x + `zz", "peer": "192.0.2.1"}]}`, "key"},
		{"key odd hex", `{"md5": [{"key": "hex:` + x + `a", "peer": "192.0.2.1"}]}`, "key"},
		{"key long", `{"md5": [{"key": "text:` + strings.Repeat(k, 4) + `", "peer": "192.0.2.1"}]}`, "key"},
		{"key short draft", `{"ao": [{"alg": "hmac-sha256-128", "key": "text:` + k + `", ` + ok + `, "peer": "192.0.2.1"}]}`, "key"},
		{"key cmac size", `{"ao": [{"alg": "cmac(aes)", "key": "text:` + k + `", ` + ok + `, "peer": "192.0.2.1"}]}`, "key"},
		{"key then bad peer", `{"ao": [{"alg": "hmac(sha1)", "key": "text:` + k + `", ` + ok + `, "peer": "nowhere"}]}`, "peer"},
		{"md5 dup", `{"md5": [{"key": "text:` + k + `", "peer": "192.0.2.1"}, {"key": "text:` + k + `", "peer": "192.0.2.1/32"}]}`, ""},
		{"ao dup", `{"ao": [{"alg": "hmac(sha1)", "key": "text:` + k + `", ` + ok + `, "peer": "192.0.2.1"}, {"alg": "hmac(sha1)", "key": "hex:` + x + `", ` + ok + `, "peer": "192.0.2.1"}]}`, ""},
		{"field name", `{"md5": [{"` + k + `": 1, "key": "text:k", "peer": "192.0.2.1"}]}`, k}, // a name, quoted as such: see below
		{"unquoted key", `{"md5": [{"key": ` + k + `, "peer": "192.0.2.1"}]}`, ""},
		{"raw key file", k, ""},
		{"raw binary key file", string(binKey), ""},
		{"trailing key", `{"md5": [{"key": "text:k", "peer": "192.0.2.1"}]} ` + k, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, want an *Error", err)
			}
			if tc.field != "" && e.Field != tc.field {
				t.Errorf("err = %v: field %q, want %q", err, e.Field, tc.field)
			}
			if tc.name == "field name" {
				return // an unknown field's name is quoted, to say which; names are not values
			}
			for _, s := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
				if f := leaks(s); f != "" {
					t.Errorf("%q shows the key as %q", s, f)
				}
			}
		})
	}
	// A key-looking value says so, without quoting it.
	_, err := Parse([]byte(`{"md5": [{"key": "text:k", "peer": "text:` + k + `"}]}`))
	if err == nil || !strings.Contains(err.Error(), `md5[0].peer: not an address or prefix`) || !strings.Contains(err.Error(), `starts with "text:", as a key does`) {
		t.Errorf("peer holding a key: %v", err)
	}
}
