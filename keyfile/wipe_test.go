package keyfile

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWipe: the buffers a key is unquoted into, and the file's bytes Read
// and Load read, are zero once they return; so are the keys of entries
// refused part way, of a whole file refused at a later entry, of the
// copy Marshal parses to check itself, and of a File after Wipe.
func TestWipe(t *testing.T) {
	var unquoted, decoded [][]byte
	testHook = func(u, k []byte) {
		unquoted = append(unquoted, u)
		if k != nil {
			decoded = append(decoded, k)
		}
	}
	defer func() { testHook = nil }()
	zero := func(what string, bufs [][]byte) {
		t.Helper()
		for _, b := range bufs {
			if len(b) == 0 {
				continue
			}
			if !bytes.Equal(b, make([]byte, len(b))) {
				t.Errorf("%s: %q not wiped", what, b)
			}
		}
	}
	reset := func() { unquoted, decoded = nil, nil }

	// A good file: the unquoted buffers are wiped, the keys are the
	// File's until Wipe.
	f, err := Parse([]byte(redactFile))
	if err != nil {
		t.Fatal(err)
	}
	zero("unquoted buffers of a parsed file", unquoted)
	if len(decoded) != 3 || !bytes.Equal(decoded[0], aoKey) || &decoded[0][0] != &f.AO[0].Config.Key[0] {
		t.Fatalf("decoded %q, want the File's keys", decoded)
	}
	f.Wipe()
	zero("keys after File.Wipe", decoded)
	(*File)(nil).Wipe()

	// An entry refused after its key was decoded; a file refused at its
	// second entry, after the first was accepted.
	for _, in := range []string{
		`{"ao": [{"alg": "hmac(sha1)", "key": "text:` + string(aoKey) + `", "sndid": 1, "rcvid": 2, "peer": "not-an-address"}]}`,
		`{"ao": [{"alg": "hmac(sha1)", "key": "text:` + string(aoKey) + `", "sndid": 1, "rcvid": 2, "peer": "192.0.2.1", "maclen": 99}]}`,
		`{"md5": [{"peer": "192.0.2.1", "key": "text:` + string(md5Key) + `"}, {"peer": "192.0.2.1", "key": "hex:` + hex.EncodeToString(binKey) + `"}]}`,
		`{"md5": [{"peer": "192.0.2.1", "key": "text:` + string(md5Key) + `"}], "a0": []}`,
	} {
		reset()
		if _, err := Parse([]byte(in)); err == nil {
			t.Fatalf("%s: parsed", in)
		}
		if len(decoded) == 0 {
			t.Fatalf("%s: no key decoded before the error", in)
		}
		zero("keys of a refused file ("+in+")", decoded)
		zero("unquoted buffers of a refused file", unquoted)
	}

	// Marshal parses its own output to check it, and wipes that copy.
	f, _ = Parse([]byte(redactFile))
	reset()
	out, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if len(decoded) != 3 {
		t.Fatalf("Marshal checked %d keys", len(decoded))
	}
	zero("Marshal's check", decoded)
	if !bytes.Contains(out, []byte(hex.EncodeToString(aoKey))) || !bytes.Equal(f.AO[0].Config.Key, aoKey) {
		t.Error("Marshal wiped the File or its own result")
	}

	// Read and Load wipe what they read: the reader sees every buffer
	// readAll reads into, the first ones it outgrew included.
	for _, size := range []int{0, 100} {
		r := &recordingReader{data: []byte(redactFile + strings.Repeat(" ", 5000))}
		if _, err := read(r, size); err != nil {
			t.Fatal(err)
		}
		if len(r.bufs) < 2 && size == 0 {
			t.Errorf("read %d times: the test wants readAll to grow its buffer", len(r.bufs))
		}
		zero(fmt.Sprintf("Read's buffers (hint %d)", size), r.bufs)
	}
	path := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(path, []byte(redactFile), 0o600); err != nil {
		t.Fatal(err)
	}
	reset()
	if _, err := Load(path); err != nil {
		t.Fatal(err)
	}
	zero("Load's unquoted buffers", unquoted)
}

// recordingReader serves data in pieces and keeps every slice it was
// asked to read into, as far as it wrote.
type recordingReader struct {
	data []byte
	bufs [][]byte
}

func (r *recordingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.data[:min(len(r.data), 700)])
	r.data = r.data[n:]
	r.bufs = append(r.bufs, p[:n])
	return n, nil
}

// TestParseLeavesInput: Parse keeps no reference to its input and does
// not change it (the caller may reuse it, as the demo's embedded file).
func TestParseLeavesInput(t *testing.T) {
	in := []byte(redactFile)
	keep := bytes.Clone(in)
	f, err := Parse(in)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(in, keep) {
		t.Fatal("Parse changed its input")
	}
	clear(in)
	if !bytes.Equal(f.AO[0].Config.Key, aoKey) || f.AO[0].Name != "r1" || f.MD5[0].Name != "r2" {
		t.Fatalf("the File shares the input's memory: %v", f)
	}
}

// TestUnquote: the key's unquoting matches encoding/json's.
func TestUnquote(t *testing.T) {
	for _, s := range []string{
		`""`, `"text:abc"`, `"a\"b\\c\/d\be\ff\ng\rh\ti"`, `"\u0041\u00e9\u20AC"`, `"\ud83d\ude00"`,
		`"\ud83d"`, `"\ud83dx"`, `"\ude00\ud83d"`, `"\ud83d\u0041"`, `"é€😀"`, "\"\xff\xfe\"", `"\u0000"`,
	} {
		checkUnquote(t, []byte(s))
	}
}

func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`"text:abc"`, `"\ud83d\ude00"`, `"\ud83d\u0041"`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		b = bytes.TrimSpace(b) // a value as the parser holds it: no space around
		if len(b) < 2 || b[0] != '"' || !json.Valid(b) {
			return
		}
		checkUnquote(t, b)
	})
}

func checkUnquote(t *testing.T, b []byte) {
	t.Helper()
	var want string
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatalf("%q: %v", b, err)
	}
	if got := unquote(b); string(got) != want || cap(got) < len(got) {
		t.Errorf("unquote(%q) = %q, want %q", b, got, want)
	}
}
