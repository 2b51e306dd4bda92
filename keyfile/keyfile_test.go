package keyfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/md5sig"
)

func TestParseFields(t *testing.T) {
	f, err := Parse([]byte(`{
	  "ao": [
	    {"alg": "HMAC-SHA-1-96", "key": "hex:0A0b0c", "sndid": 0, "rcvid": 255, "peer": "192.0.2.0/24"},
	    {"name": "m0", "alg": "cmac(aes128)", "key": "hex:000102030405060708090a0b0c0d0e0f", "sndid": 1, "rcvid": 2,
	     "peer": "::ffff:198.51.100.1", "maclen": 0, "exclude_options": true, "ifindex": 0},
	    {"alg": "hmac(sha256)", "key": "text:k", "sndid": 1, "rcvid": 2, "peer": "2001:db8::/32", "maclen": 16, "ifindex": 7},
	    {"alg": "HMAC-SHA256-128", "key": "text:0123456789abcdef0123456789abcdef", "sndid": 3, "rcvid": 4, "peer": "2001:db8::/32"},
	    {"alg": "kmac256-128", "key": "text:0123456789abcdef0123456789abcdef", "sndid": 5, "rcvid": 6, "peer": "2001:db8::/32", "maclen": 16}
	  ],
	  "md5": [{"peer": "192.0.2.1", "key": "text:secret"}, {"name": "v", "peer": "2001:db8::/64", "key": "text:s", "ifindex": 3}]
	}`))
	if err != nil {
		t.Fatal(err)
	}
	want := &File{
		AO: []AO{
			{Config: keys.AO{Peer: netip.MustParsePrefix("192.0.2.0/24"), SendID: 0, RecvID: 255, Algorithm: "hmac(sha1)", Key: []byte{10, 11, 12}, MACLen: 12}},
			{Name: "m0", Config: keys.AO{Peer: netip.MustParsePrefix("198.51.100.1/32"), SendID: 1, RecvID: 2, Algorithm: "cmac(aes128)",
				Key: []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, MACLen: 12, ExcludeOptions: true, HasIfIndex: true}},
			{Config: keys.AO{Peer: netip.MustParsePrefix("2001:db8::/32"), SendID: 1, RecvID: 2, Algorithm: "hmac(sha256)", Key: []byte("k"),
				MACLen: 16, IfIndex: 7, HasIfIndex: true}},
			{Config: keys.AO{Peer: netip.MustParsePrefix("2001:db8::/32"), SendID: 3, RecvID: 4, Algorithm: "hmac-sha256-128",
				Key: []byte("0123456789abcdef0123456789abcdef"), MACLen: 16}},
			{Config: keys.AO{Peer: netip.MustParsePrefix("2001:db8::/32"), SendID: 5, RecvID: 6, Algorithm: "kmac256-128",
				Key: []byte("0123456789abcdef0123456789abcdef"), MACLen: 16}},
		},
		MD5: []MD5{
			{Config: keys.MD5{Peer: netip.MustParsePrefix("192.0.2.1/32"), Key: []byte("secret")}},
			{Name: "v", Config: keys.MD5{Peer: netip.MustParsePrefix("2001:db8::/64"), Key: []byte("s"), IfIndex: 3, HasIfIndex: true}},
		},
	}
	if !reflect.DeepEqual(f, want) {
		t.Fatalf("got\n%#v\nwant\n%#v", f.AO, want.AO) // redacted, but the fields differ visibly
	}
}

// TestErrors: every refusal names the entry and field, wraps its kind, and
// never shows the key.
func TestErrors(t *testing.T) {
	const key = `"key": "text:TOPSECRET"`
	ao1 := `{"alg": "hmac(sha1)", ` + key + `, "sndid": 1, "rcvid": 2, "peer": "192.0.2.1"`
	for _, tc := range []struct {
		name, in            string
		kind                error
		entry, field, other string
		msg                 string
	}{
		{"empty", ``, ErrSyntax, "", "", "", "unexpected end"},
		{"not object", `[]`, ErrSyntax, "", "", "", "want a JSON object, got a list"},
		{"no keys", `{}`, ErrEmpty, "", "", "", "no keys"},
		{"empty lists", `{"ao": [], "md5": []}`, ErrEmpty, "", "", "", "no keys"},
		{"top unknown", `{"AO": []}`, ErrUnknownField, "", "AO", "", `unknown top-level field "AO" (did you mean "ao"?); want "ao" and/or "md5"`},
		{"top twice", `{"ao": [], "ao": []}`, ErrSyntax, "", "ao", "", "given twice"},
		{"ao not list", `{"ao": {}}`, ErrSyntax, "", "ao", "", "want a list, got an object"},
		{"syntax", "{\"ao\": [\n" + ao1 + ",}]}", ErrSyntax, "", "", "", "line 2, column"},
		{"trailing", `{"ao": [` + ao1 + `}]} x`, ErrSyntax, "", "", "", "line 1, column 103: data after the end of the keys object"},
		{"trailing object", `{"ao": [` + ao1 + `}]}{}`, ErrSyntax, "", "", "", "data after the end"},
		{"entry not object", `{"ao": [1]}`, ErrSyntax, "ao[0]", "", "", "want a JSON object, got a number"},
		{"unknown field", `{"ao": [` + ao1 + `, "sndId": 1}]}`, ErrUnknownField, "ao[0]", "sndId", "", `ao[0]: unknown field "sndId" (did you mean "sndid"?)`},
		{"entry typo", `{"ao": [` + ao1 + `, "macln": 12}]}`, ErrUnknownField, "ao[0]", "macln", "", `ao[0]: unknown field "macln" (did you mean "maclen"?)`},
		{"entry typo case", `{"ao": [` + ao1 + `, "Exclude_Option": true}]}`, ErrUnknownField, "ao[0]", "Exclude_Option", "", `(did you mean "exclude_options"?)`},
		{"md5 typo", `{"md5": [{"peer": "192.0.2.1", ` + key + `, "ifidx": 3}]}`, ErrUnknownField, "md5[0]", "ifidx", "", `(did you mean "ifindex"?)`},
		{"top typo", `{"md": []}`, ErrUnknownField, "", "md", "", `unknown top-level field "md" (did you mean "md5"?)`},
		{"pcap", "\xd4\xc3\xb2\xa1\x02\x00\x04\x00TOPSECRET", ErrSyntax, "", "", "", "not a JSON keys file: this is a pcap capture"},
		{"pcapng", "\x0a\x0d\x0d\x0a\x1c\x00\x00\x00", ErrSyntax, "", "", "", "not a JSON keys file: this is a pcapng capture"},
		{"gzip", "\x1f\x8b\x08\x00", ErrSyntax, "", "", "", "not a JSON keys file: this is gzip-compressed"},
		{"binary", "\x00\x01TOPSECRET\xff", ErrSyntax, "", "", "", "not a JSON keys file: binary data"},
		{"text", "peer 192.0.2.1 key TOPSECRET\n", ErrSyntax, "", "", "", "not a JSON keys file: text that does not start with {"},
		{"field twice", `{"ao": [` + ao1 + `, "sndid": 1}]}`, ErrSyntax, "ao[0]", "sndid", "", "given twice"},
		{"missing", `{"ao": [{"alg": "hmac(sha1)", ` + key + `, "sndid": 1, "peer": "192.0.2.1"}]}`, ErrMissing, "ao[0]", "rcvid", "", "missing"},
		{"named", `{"ao": [{"name": "r1", "alg": "hmac(sha1)", ` + key + `, "sndid": 1, "peer": "192.0.2.1"}]}`, ErrMissing, `ao[0] ("r1")`, "rcvid", "", "missing"},
		{"name type", `{"ao": [` + ao1 + `, "name": 3}]}`, ErrValue, "ao[0]", "name", "", "want a string, got a number"},
		{"alg", `{"ao": [{"alg": "hmac(md4)", ` + key + `, "sndid": 1, "rcvid": 2, "peer": "192.0.2.1"}]}`, ErrValue, "ao[0]", "alg", "", "known:"},
		{"alg md5", `{"ao": [{"alg": "tcp-md5", ` + key + `, "sndid": 1, "rcvid": 2, "peer": "192.0.2.1"}]}`, ErrValue, "ao[0]", "alg", "", `unknown algorithm (a TCP-MD5 key is an "md5" entry)`},
		{"key prefix", `{"ao": [{"alg": "hmac(sha1)", "key": "TOPSECRET", "sndid": 1, "rcvid": 2, "peer": "192.0.2.1"}]}`, ErrValue, "ao[0]", "key", "", `want "hex:`},
		{"key hex", `{"ao": [{"alg": "hmac(sha1)", "key": "hex:0aTOPSECRET", "sndid": 1, "rcvid": 2, "peer": "192.0.2.1"}]}`, ErrValue, "ao[0]", "key", "", "offset 2"},
		{"key odd", `{"ao": [{"alg": "hmac(sha1)", "key": "hex:0a0", "sndid": 1, "rcvid": 2, "peer": "192.0.2.1"}]}`, ErrValue, "ao[0]", "key", "", "odd number"},
		{"key empty", `{"ao": [{"alg": "hmac(sha1)", "key": "text:", "sndid": 1, "rcvid": 2, "peer": "192.0.2.1"}]}`, ErrValue, "ao[0]", "key", "", "0 bytes, want 1..80"},
		{"key long", `{"ao": [{"alg": "hmac(sha1)", "key": "text:` + strings.Repeat("x", 81) + `", "sndid": 1, "rcvid": 2, "peer": "192.0.2.1"}]}`, ErrValue, "ao[0]", "key", "", "81 bytes"},
		{"key type", `{"ao": [{"alg": "hmac(sha1)", "key": 12, "sndid": 1, "rcvid": 2, "peer": "192.0.2.1"}]}`, ErrValue, "ao[0]", "key", "", "want a string, got a number"},
		{"cmac key size", `{"ao": [{"alg": "cmac(aes)", ` + key + `, "sndid": 1, "rcvid": 2, "peer": "192.0.2.1"}]}`, ErrValue, "ao[0]", "key", "", "takes 16"},
		{"sndid range", `{"ao": [{"alg": "hmac(sha1)", ` + key + `, "sndid": 256, "rcvid": 2, "peer": "192.0.2.1"}]}`, ErrValue, "ao[0]", "sndid", "", "256 is not a KeyID"},
		{"rcvid negative", `{"ao": [{"alg": "hmac(sha1)", ` + key + `, "sndid": 1, "rcvid": -1, "peer": "192.0.2.1"}]}`, ErrValue, "ao[0]", "rcvid", "", "-1 is not a KeyID"},
		{"sndid fraction", `{"ao": [{"alg": "hmac(sha1)", ` + key + `, "sndid": 1.5, "rcvid": 2, "peer": "192.0.2.1"}]}`, ErrValue, "ao[0]", "sndid", "", "1.5 is not"},
		{"sndid string", `{"ao": [{"alg": "hmac(sha1)", ` + key + `, "sndid": "1", "rcvid": 2, "peer": "192.0.2.1"}]}`, ErrValue, "ao[0]", "sndid", "", "want a number, got a string"},
		{"sndid null", `{"ao": [{"alg": "hmac(sha1)", ` + key + `, "sndid": null, "rcvid": 2, "peer": "192.0.2.1"}]}`, ErrValue, "ao[0]", "sndid", "", "got null"},
		{"peer", `{"ao": [{"alg": "hmac(sha1)", ` + key + `, "sndid": 1, "rcvid": 2, "peer": "router1"}]}`, ErrValue, "ao[0]", "peer", "", "not an address"},
		{"peer host bits", `{"ao": [{"alg": "hmac(sha1)", ` + key + `, "sndid": 1, "rcvid": 2, "peer": "192.0.2.1/24"}]}`, ErrValue, "ao[0]", "peer", "", "did you mean 192.0.2.0/24?"},
		{"peer zone", `{"ao": [{"alg": "hmac(sha1)", ` + key + `, "sndid": 1, "rcvid": 2, "peer": "fe80::1%eth0"}]}`, ErrValue, "ao[0]", "peer", "", "not an address"},
		{"maclen long", `{"ao": [` + ao1 + `, "maclen": 17}]}`, ErrValue, "ao[0]", "maclen", "", "17 is not in 1..16 for hmac(sha1) (0 means 12)"},
		{"maclen digest", `{"ao": [{"alg": "cmac(aes128)", "key": "hex:000102030405060708090a0b0c0d0e0f", "sndid": 1, "rcvid": 2, "peer": "192.0.2.1", "maclen": 16}, ` +
			`{"alg": "hmac(md5)", ` + key + `, "sndid": 3, "rcvid": 4, "peer": "192.0.2.1", "maclen": 16}, ` +
			`{"alg": "hmac(sha1)", ` + key + `, "sndid": 5, "rcvid": 6, "peer": "192.0.2.1", "maclen": -1}]}`, ErrValue, "ao[2]", "maclen", "", "-1 is not"},
		{"draft key short", `{"ao": [{"alg": "KMAC256-128", ` + key + `, "sndid": 1, "rcvid": 2, "peer": "192.0.2.1"}]}`, ErrValue, "ao[0]", "key", "", "kmac256-128 needs a master key of at least 32 bytes (256 bits), got 9"},
		{"draft maclen", `{"ao": [{"alg": "hmac-sha256-128", "key": "text:` + strings.Repeat("x", 32) + `", "sndid": 1, "rcvid": 2, "peer": "192.0.2.1", "maclen": 12}]}`,
			ErrValue, "ao[0]", "maclen", "", "12, but hmac-sha256-128 has 16-byte MACs only (0 means 16)"},
		{"exclude", `{"ao": [` + ao1 + `, "exclude_options": "yes"}]}`, ErrValue, "ao[0]", "exclude_options", "", "want true or false"},
		{"ifindex", `{"ao": [` + ao1 + `, "ifindex": -2}]}`, ErrValue, "ao[0]", "ifindex", "", "not an interface index"},
		{"dup sndid", `{"ao": [` + ao1 + `}, {"name": "b", "alg": "hmac(sha256)", "key": "text:other", "sndid": 1, "rcvid": 9, "peer": "192.0.2.1/32"}]}`,
			ErrDuplicate, `ao[1] ("b")`, "sndid", "ao[0]", "KeyID 1 for peer 192.0.2.1/32 is also the sndid of ao[0]"},
		{"dup rcvid", `{"ao": [{"name": "a", "alg": "hmac(sha1)", ` + key + `, "sndid": 7, "rcvid": 2, "peer": "::ffff:192.0.2.1"}, ` + ao1 + `}]}`,
			ErrDuplicate, "ao[1]", "rcvid", `ao[0] ("a")`, "also the rcvid of ao[0]"},
		{"dup bound and unbound", `{"ao": [` + ao1 + `}, ` + ao1 + `, "ifindex": 3}]}`, ErrDuplicate, "ao[1]", "sndid", "ao[0]", "also"},
		{"exact dup", `{"ao": [` + ao1 + `}, {"sndid": 1, "rcvid": 2, "peer": "192.0.2.1", "alg": "HMAC-SHA-1-96", ` + key + `, "maclen": 0}]}`,
			ErrDuplicate, "ao[1]", "", "ao[0]", "the same MKT as ao[0]"},
		{"md5 unknown", `{"md5": [{"peer": "192.0.2.1", ` + key + `, "alg": "md5"}]}`, ErrUnknownField, "md5[0]", "alg", "", "unknown field"},
		{"md5 missing", `{"md5": [{"peer": "192.0.2.1"}]}`, ErrMissing, "md5[0]", "key", "", "missing"},
		{"md5 key", `{"md5": [{"peer": "192.0.2.1", "key": "text:` + strings.Repeat("x", 81) + `"}]}`, ErrValue, "md5[0]", "key", "", "81 bytes, want 1..80"},
		{"md5 dup peer", `{"md5": [{"peer": "192.0.2.1", ` + key + `}, {"name": "z", "peer": "192.0.2.1/32", "key": "text:other"}]}`,
			ErrDuplicate, `md5[1] ("z")`, "peer", "md5[0]", "192.0.2.1/32 already has a key in md5[0]"},
		{"md5 exact dup", `{"md5": [{"peer": "192.0.2.1", ` + key + `}, {"peer": "192.0.2.1", ` + key + `}]}`,
			ErrDuplicate, "md5[1]", "", "md5[0]", "the same key as md5[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, want an *Error", err)
			}
			if !errors.Is(err, tc.kind) || e.Entry != tc.entry || e.Field != tc.field || e.Other != tc.other {
				t.Errorf("err = %v: kind %v entry %q field %q other %q, want %v %q %q %q", err, e.Err, e.Entry, e.Field, e.Other, tc.kind, tc.entry, tc.field, tc.other)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %q, want it to contain %q", err, tc.msg)
			}
			if strings.Contains(err.Error(), "TOPSECRET") || strings.Contains(err.Error(), "xxxx") {
				t.Errorf("err = %q shows key material", err)
			}
			if tc.entry != "" && !strings.HasPrefix(err.Error(), tc.entry) {
				t.Errorf("err = %q does not begin with the entry %q", err, tc.entry)
			}
		})
	}
}

// TestNotDuplicates: entries a keyring takes side by side, or that are
// the keys of two endpoints, are not duplicates.
func TestNotDuplicates(t *testing.T) {
	for _, in := range []string{
		// one peer, IDs mirrored: the two ends of one loopback connection
		`{"ao": [{"alg": "hmac(sha1)", "key": "text:k", "sndid": 100, "rcvid": 200, "peer": "127.0.0.1"},
		         {"alg": "hmac(sha1)", "key": "text:k", "sndid": 200, "rcvid": 100, "peer": "127.0.0.1"}]}`,
		// the same IDs for different peers, and in different VRFs
		`{"ao": [{"alg": "hmac(sha1)", "key": "text:k", "sndid": 1, "rcvid": 1, "peer": "192.0.2.1"},
		         {"alg": "hmac(sha1)", "key": "text:k", "sndid": 1, "rcvid": 1, "peer": "192.0.2.0/24"},
		         {"alg": "hmac(sha1)", "key": "text:k", "sndid": 1, "rcvid": 1, "peer": "192.0.2.9", "ifindex": 4},
		         {"alg": "hmac(sha1)", "key": "text:k", "sndid": 1, "rcvid": 1, "peer": "192.0.2.9", "ifindex": 5}],
		 "md5": [{"peer": "192.0.2.1", "key": "text:k"}, {"peer": "192.0.2.1", "key": "text:k", "ifindex": 4}]}`,
	} {
		if _, err := Parse([]byte(in)); err != nil {
			t.Errorf("%v", err)
		}
	}
}

// countingReader counts what is read from it; it never ends.
type countingReader struct{ n int64 }

func (r *countingReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	r.n += int64(len(p))
	return len(p), nil
}

func TestSizeLimit(t *testing.T) {
	r := &countingReader{}
	if _, err := Read(r); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Read of an endless stream: %v, want ErrTooLarge", err)
	}
	if r.n > MaxSize+64<<10 {
		t.Errorf("Read read %d bytes of an endless stream, want about %d", r.n, MaxSize+1)
	}
	if _, err := Parse(make([]byte, MaxSize+1)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Parse of MaxSize+1 bytes: %v", err)
	}
	// A 200 MB file (sparse) is refused from its size.
	path := filepath.Join(t.TempDir(), "big.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(200 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := Load(path); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "209715200 bytes") {
		t.Errorf("Load of 200 MB: %v", err)
	}
	// Just under the limit is read (and refused for its content).
	b := append(bytes.Repeat([]byte(" "), MaxSize-2), '{', '}')
	if _, err := Parse(b); !errors.Is(err, ErrEmpty) {
		t.Errorf("Parse of MaxSize bytes: %v, want ErrEmpty", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "none.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of a missing file: %v", err)
	}
}

const sample = `{"ao": [{"name": "a", "alg": "hmac(sha1)", "key": "text:TOPSECRET", "sndid": 1, "rcvid": 2, "peer": "192.0.2.1", "ifindex": 2, "exclude_options": true}],
 "md5": [{"name": "b", "peer": "192.0.2.0/24", "key": "hex:544f50534543524554"}]}`

func TestRedacted(t *testing.T) {
	f, err := Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%X", "%q", "%d"} {
		for _, v := range []any{f, *f, f.AO[0], f.MD5[0], f.AO, f.MD5, &f.AO[0]} {
			s := fmt.Sprintf(verb, v)
			for _, secret := range []string{"TOPSECRET", "544f50534543524554", "544F50534543524554", "84 79 80"} {
				if strings.Contains(s, secret) {
					t.Errorf("Sprintf(%q, %T) = %q shows the key", verb, v, s)
				}
			}
		}
	}
	if got, want := f.String(), "ao[0] \"a\" hmac(sha1) peer 192.0.2.1/32 sndid 1 rcvid 2 maclen 12 exclude_options ifindex 2 key [9 bytes]\nmd5[0] \"b\" peer 192.0.2.0/24 key [9 bytes]\n"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	f, err := Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	g, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f, g) {
		t.Errorf("round trip differs:\n%s", b)
	}
	f.AO = append(f.AO, f.AO[0])
	if _, err := f.Marshal(); !errors.Is(err, ErrDuplicate) {
		t.Errorf("Marshal of a duplicate: %v", err)
	}
}

// addEach adds every entry of f to a keyring of its own: what Parse
// accepts, the engine must accept (keyfile validates with package keys
// and derives nothing; the keyrings derive). It returns the first refusal.
func addEach(f *File) error {
	for i, e := range f.AO {
		if _, err := ao.NewKeyring(nil).Add(e.Config); err != nil {
			return fmt.Errorf("%s: %w", Label("ao", i, e.Name), err)
		}
	}
	for i, e := range f.MD5 {
		if _, err := md5sig.NewKeyring(nil).Add(e.Config); err != nil {
			return fmt.Errorf("%s: %w", Label("md5", i, e.Name), err)
		}
	}
	return nil
}

func TestKeyringsAccept(t *testing.T) {
	f, err := Parse([]byte(`{"ao": [{"alg": "hmac(sha1)", "key": "text:k", "sndid": 1, "rcvid": 2, "peer": "192.0.2.1"},
	  {"name": "wide", "alg": "hmac(sha1)", "key": "text:k", "sndid": 1, "rcvid": 3, "peer": "192.0.2.0/24"},
	  {"alg": "cmac(aes128)", "key": "text:not sixteen bytes", "sndid": 5, "rcvid": 6, "peer": "::ffff:192.0.2.0/120", "maclen": 16}],
	  "md5": [{"peer": "198.51.100.1", "key": "text:m"}, {"peer": "::ffff:198.51.100.0/120", "key": "text:m", "ifindex": 3}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := addEach(f); err != nil {
		t.Fatal(err)
	}
	// Both MKTs for 192.0.2.x are valid, but one keyring refuses the
	// second beside the first (SendID 1 on overlapping peers): that is
	// the keyring's to say, not the file's.
	ring := ao.NewKeyring(nil)
	if _, err := ring.Add(f.AO[0].Config); err != nil {
		t.Fatal(err)
	}
	if _, err := ring.Add(f.AO[1].Config); !errors.Is(err, ao.ErrKeyExists) {
		t.Fatalf("second MKT beside the first: %v, want ao.ErrKeyExists", err)
	}
	// The file in one call: refused whole, naming the entry as the
	// file's own errors do.
	ring = ao.NewKeyring(nil)
	var ee *keys.EntryError
	if _, err := ring.AddAll(f.AOConfigs()); !errors.Is(err, ao.ErrKeyExists) || !errors.As(err, &ee) ||
		!strings.HasPrefix(err.Error(), Label("ao", 1, "wide")+": ao: ") || ee.Index != 1 || ring.Len() != 0 {
		t.Fatalf("AddAll of the file: %v (%+v), Len %d", err, ee, ring.Len())
	}
	ms, err := md5sig.NewKeyring(nil).AddAll(f.MD5Configs())
	if err != nil || len(ms) != 2 || ms[1].Peer() != netip.MustParsePrefix("198.51.100.0/24") {
		t.Fatalf("AddAll of the md5 entries: %v, %v", ms, err)
	}
	cfgs, names := f.AOConfigs()
	if len(cfgs) != 3 || !reflect.DeepEqual(names, []string{"", "wide", ""}) || cfgs[1].Peer != f.AO[1].Config.Peer {
		t.Fatalf("AOConfigs: %v %q", cfgs, names)
	}
	if c, n := (*File)(nil).AOConfigs(); c != nil || n != nil {
		t.Fatal("AOConfigs of a nil File")
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte(`{"ao": [{"alg": "cmac(aes128)", "key": "hex:000102030405060708090a0b0c0d0e0f", "sndid": 1, "rcvid": 2, "peer": "::/0", "maclen": 4}]}`))
	f.Add([]byte(`{"ao": [{"alg": "KMAC256-128", "key": "text:0123456789abcdef0123456789abcdef", "sndid": 1, "rcvid": 2, "peer": "::/0", "maclen": 16},
		{"alg": "hmac-sha256-128", "key": "hex:000102030405060708090a0b0c0d0e0f000102030405060708090a0b0c0d0e0f", "sndid": 3, "rcvid": 4, "peer": "192.0.2.0/24"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		kf, err := Parse(b)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("not an *Error: %v", err)
			}
			return
		}
		out, err := kf.Marshal()
		if err != nil {
			t.Fatalf("Marshal of a parsed file: %v", err)
		}
		again, err := Read(bytes.NewReader(out))
		if err != nil || !reflect.DeepEqual(kf, again) {
			t.Fatalf("round trip: %v", err)
		}
		if err := addEach(kf); err != nil {
			t.Fatalf("parsed, but a keyring refuses it: %v", err)
		}
		_ = io.Discard
	})
}

// An algorithm with one MAC length (the draft's) gets it when the entry
// gives none, and any other is refused at the maclen field.
func TestDraftMACLen(t *testing.T) {
	key := `"hex:` + strings.Repeat("5a", 32) + `"`
	f, err := Parse([]byte(`{"ao": [{"alg": "KMAC256-128", "key": ` + key + `, "sndid": 1, "rcvid": 2, "peer": "192.0.2.1"}]}`))
	if err != nil || f.AO[0].Config.MACLen != 16 || f.AO[0].Config.Algorithm != "kmac256-128" {
		t.Fatalf("Parse = %v, %v; want maclen 16", f, err)
	}
	if err := addEach(f); err != nil {
		t.Fatal(err)
	}
	_, err = Parse([]byte(`{"ao": [{"alg": "hmac-sha256-128", "key": ` + key + `, "sndid": 1, "rcvid": 2, "peer": "192.0.2.1", "maclen": 12}]}`))
	var e *Error
	if !errors.As(err, &e) || e.Field != "maclen" || !errors.Is(err, ErrValue) {
		t.Fatalf("maclen 12 for hmac-sha256-128: %v, want ErrValue at maclen", err)
	}
	_, err = Parse([]byte(`{"ao": [{"alg": "hmac-sha256-128", "key": "text:short", "sndid": 1, "rcvid": 2, "peer": "192.0.2.1"}]}`))
	if !errors.As(err, &e) || e.Field != "key" || !errors.Is(err, ErrValue) {
		t.Fatalf("10-byte master key for hmac-sha256-128: %v, want ErrValue at key", err)
	}
}

// TestReadNil: Read of a nil reader is ErrNilReader, not a panic.
func TestReadNil(t *testing.T) {
	if f, err := Read(nil); f != nil || !errors.Is(err, ErrNilReader) {
		t.Fatalf("Read(nil) = %v, %v; want nil, ErrNilReader", f, err)
	}
}
