package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/keyfile"
)

// demoKeys is the built-in sample's keys file.
func demoKeys(t testing.TB) []byte {
	t.Helper()
	return demoKeysJSON
}

// Garbage instead of a capture: exit 2 and one line naming the file, on
// stderr only (issue 29: a report of nothing came on stdout too; -json
// keeps its summary, which names the error).
func TestGarbageCaptures(t *testing.T) {
	good := pcapFile(ltEthernet, false, [][]byte{make([]byte, 60)})
	badRecord := bytes.Clone(good)
	binary.LittleEndian.PutUint32(badRecord[24+8:], 1<<30)
	wifi := bytes.Clone(good)
	binary.LittleEndian.PutUint32(wifi[20:], 105)
	shortNG := pcapngFile(ltEthernet, [][]byte{make([]byte, 60)})
	badNG := bytes.Clone(shortNG)
	binary.LittleEndian.PutUint32(badNG[28+4:], 13) // the IDB's length
	noIface := pcapngFile(ltEthernet, [][]byte{make([]byte, 60)})
	binary.LittleEndian.PutUint32(noIface[len(noIface)-len(make([]byte, 60))-32+8:], 3) // EPB interface 3
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		file []byte
		path string
		want string
	}{
		{name: "empty", file: []byte{}, want: "empty file"},
		{name: "text", file: []byte("this is not a capture at all\n"), want: "not a pcap or pcapng capture"},
		{name: "short", file: []byte{0xd4, 0xc3}, want: "not a pcap or pcapng capture"},
		{name: "header-only-half", file: good[:12], want: "file header truncated"},
		{name: "truncated-record", file: good[:len(good)-7], want: "frame 1: the file ends in the middle of a packet"},
		{name: "record-header-only", file: good[:24+16], want: "frame 1: the file ends in the middle of a packet"},
		{name: "huge-record", file: badRecord, want: "frame 1: pcap: capture length exceeds snap length: 1073741824 > 1048576"},
		{name: "linktype", file: wifi, want: "link type 105"},
		{name: "pcapng-block", file: badNG, want: "pcapng: block of length 13"},
		{name: "pcapng-truncated", file: shortNG[:len(shortNG)-3], want: "truncated capture"},
		{name: "pcapng-no-interface", file: noIface, want: "Interface id 3 not present"},
		{name: "gzip", file: []byte{0x1f, 0x8b, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, want: "gzip"},
		{name: "missing", path: filepath.Join(dir, "nope.pcap"), want: "no such file"},
		{name: "directory", path: dir, want: "is a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.path
			if p == "" {
				p = writeFile(t, tc.name+".pcap", tc.file)
			}
			k := writeFile(t, "k.json", demoKeys(t))
			code, out, errOut := cli(t, "verify", "-keys", k, p)
			if code != 2 || out != "" {
				t.Errorf("exit %d, want 2; stdout %q, want none", code, out)
			}
			oneLine(t, errOut)
			if !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, p) {
				t.Errorf("stderr %q lacks %q or the file name", errOut, tc.want)
			}
			code, out, _ = cli(t, "verify", "-json", "-keys", k, p)
			if _, sum := jsonLines(t, out); code != 2 || len(sum.Summary.Files) != 1 || !strings.Contains(sum.Summary.Files[0].Error, tc.want) {
				t.Errorf("-json: exit %d, summary %+v", code, sum.Summary)
			}
		})
	}
}

// Bad keys files: exit 2, one line naming the entry and the field, never
// the key.
func TestBadKeysFiles(t *testing.T) {
	const ok = `"alg": "hmac(sha1)", "sndid": 1, "rcvid": 2, "peer": "192.0.2.1/32"`
	for _, tc := range []struct{ keys, want string }{
		{`not json`, "line 1, column 2: invalid character 'o'"},
		{"{\n  \"ao\": [\n    {\"alg\": }\n]}", "line 3, column"},
		{`{}`, `no keys`},
		{`{"a0": []}`, `unknown top-level field "a0"`},
		{`{"ao": {}}`, `ao: want a list, got an object`},
		{`{"ao": [{}]}`, `ao[0].alg: missing`},
		{`{"ao": [{` + ok + `}]}`, `ao[0].key: missing`},
		{`{"ao": [{"key": "text:s3cr3t", "alg": "hmac(sha9)", "sndid": 1, "rcvid": 2, "peer": "192.0.2.1"}]}`, `ao[0].alg: unknown algorithm (known:`},
		{`{"ao": [{"key": "s3cr3t", ` + ok + `}]}`, `ao[0].key: want "hex:…" or "text:…"`},
		{`{"ao": [{"key": "hex:5333cr3t", ` + ok + `}]}`, `ao[0].key: not hex: invalid character at offset 5`},
		{`{"ao": [{"key": "hex:533", ` + ok + `}]}`, `ao[0].key: not hex: odd number of digits`},
		{`{"ao": [{"key": "text:", ` + ok + `}]}`, `ao[0].key: 0 bytes, want 1..80`},
		{`{"ao": [{"key": "text:` + strings.Repeat("s3cr3t", 14) + `", ` + ok + `}]}`, `ao[0].key: 84 bytes, want 1..80`},
		{`{"ao": [{"key": "text:s3cr3t", "alg": "cmac(aes)", "sndid": 1, "rcvid": 2, "peer": "192.0.2.1/32"}]}`, `ao[0].key: 6 bytes, cmac(aes) takes 16 or 32`},
		{`{"ao": [{"key": "text:s3cr3t", "alg": "hmac(sha1)", "sndid": 256, "rcvid": 2, "peer": "192.0.2.1/32"}]}`, `ao[0].sndid: 256 is not a KeyID`},
		{`{"ao": [{"key": "text:s3cr3t", "alg": "hmac(sha1)", "sndid": "1", "rcvid": 2, "peer": "192.0.2.1/32"}]}`, `ao[0].sndid: want a number, got a string`},
		{`{"ao": [{"key": "text:s3cr3t", "alg": "hmac(sha1)", "sndid": 1.5, "rcvid": 2, "peer": "192.0.2.1/32"}]}`, `ao[0].sndid: 1.5 is not a KeyID (0..255)`},
		{`{"ao": [{"key": "text:s3cr3t", "alg": "hmac(sha1)", "sndid": 1, "rcvid": 2, "peer": "192.0.2.1/24"}]}`, `ao[0].peer: the prefix has host bits set (did you mean 192.0.2.0/24?)`},
		{`{"ao": [{"key": "text:s3cr3t", "alg": "hmac(sha1)", "sndid": 1, "rcvid": 2, "peer": "router"}]}`, `ao[0].peer: not an address or prefix`},
		{`{"ao": [{"key": "text:s3cr3t", ` + ok + `, "maclen": 20}]}`, `ao[0].maclen: 20 is not in 1..16 for hmac(sha1) (0 means 12)`},
		{`{"ao": [{"key": "text:s3cr3t", ` + ok + `, "exclude_options": "yes"}]}`, `ao[0].exclude_options: want true or false, got a string`},
		{`{"ao": [{"key": "text:s3cr3t", ` + ok + `, "sndId": 3}]}`, `ao[0]: unknown field "sndId" (did you mean "sndid"?)`},
		{`{"ao": [{"key": "text:s3cr3t", ` + ok + `, "comment": "x"}]}`, `ao[0]: unknown field "comment"`},
		{`{"ao": [{"key": "text:s3cr3t", ` + ok + `}, {"name": "router-b", "key": "text:s3cr3t", "alg": "hmac(sha1)", "sndid": 1, "peer": "192.0.2.1"}]}`, `ao[1] ("router-b").rcvid: missing`},
		{`{"ao": [{"key": "text:s3cr3t", ` + ok + `}, 7]}`, `ao[1]: want a JSON object, got a number`},
		{`{"md5": [{"peer": "192.0.2.1"}]}`, `md5[0].key: missing`},
		{`{"md5": [{"key": "text:s3cr3t"}]}`, `md5[0].peer: missing`},
		{`{"md5": [{"peer": "192.0.2.1", "key": "text:` + strings.Repeat("s3cr3t", 14) + `"}]}`, `md5[0].key: 84 bytes, want 1..80`},
		{`{"md5": [{"peer": "192.0.2.1", "key": "text:s3cr3t", "flags": 1}]}`, `md5[0]: unknown field "flags"`},
		{`{"ao": [], "md5": []} {}`, `line 1, column 23: data after the end of the keys object`},
	} {
		t.Run(tc.want, func(t *testing.T) {
			code, _, errOut := cli(t, "verify", "-keys", writeFile(t, "keys.json", []byte(tc.keys)), writeFile(t, "c.pcap", demoPcap))
			if code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			oneLine(t, errOut)
			if !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "keys.json") {
				t.Errorf("stderr %q\nwant %q", errOut, tc.want)
			}
			// The key, raw or in hex (the temporary path is random digits,
			// so only the whole hex string counts).
			if strings.Contains(errOut, "s3cr3t") || strings.Contains(errOut, hex.EncodeToString([]byte("s3cr3t"))) {
				t.Errorf("stderr shows key material: %q", errOut)
			}
		})
	}
}

// Command-line mistakes: exit 2, one line.
func TestUsageErrors(t *testing.T) {
	k := writeFile(t, "k.json", demoKeys(t))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "tcpsig help"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"verify", "-bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"verify", "-isn", "10.0.0.1=5"}, "endpoint is not ip:port"},
		{[]string{"verify", "-isn", "10.0.0.1:179"}, "want ENDPOINT=N"},
		{[]string{"verify", "-isn", "10.0.0.1:179=0x1ffffffff"}, "not a 32-bit number"},
		{[]string{"verify", "-isn", "10.0.0.1:179=1", "-isn", "10.0.0.1:179=2"}, "10.0.0.1:179 given twice"},
		{[]string{"verify", "-sne", "[2001:db8::1]:179=x"}, `"x" is not a 32-bit number`},
		{[]string{"verify", "c.pcap"}, "-keys FILE is required"},
		{[]string{"verify", "-keys", k}, "no CAPTURE"},
		{[]string{"verify", "-keys", filepath.Join(t.TempDir(), "none.json"), "c.pcap"}, "none.json: no such file"},
		{[]string{"bench", "extra"}, `unexpected argument "extra"`},
		{[]string{"bench", "-time", "0s"}, "-time 0s is too short"},
		{[]string{"bench", "-alg", "sha1"}, `unknown algorithm "sha1"`},
	} {
		code, _, errOut := cli(t, tc.args...)
		if code != 2 {
			t.Errorf("%q: exit %d, want 2", tc.args, code)
		}
		oneLine(t, errOut)
		if !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: stderr %q lacks %q", tc.args, errOut, tc.want)
		}
	}
	for _, args := range [][]string{{"help"}, {"verify", "-h"}, {"help", "verify"}} {
		code, out, _ := cli(t, args...)
		if code != 0 || !strings.Contains(out, "tcpsig verify [-keys FILE]") {
			t.Errorf("%q: exit %d", args, code)
		}
	}
}

// Issue 21 item 2: each command's -h, -help, --help and tcpsig help CMD
// print the same text: that command's usage, every flag it takes and an
// example; every list of the commands names shim.
func TestCommandHelp(t *testing.T) {
	for cmd, flags := range map[string][]string{
		"verify":  {"keys", "json", "v", "isn", "sne", "i", "port", "w", "every"},
		"bench":   {"json", "time", "alg"},
		"shim":    {"keys", "queue", "status", "state", "v"},
		"version": nil,
	} {
		code, want, errOut := cli(t, "help", cmd)
		if code != 0 || errOut != "" {
			t.Fatalf("help %s: exit %d, stderr %q", cmd, code, errOut)
		}
		if !strings.HasPrefix(want, "usage: tcpsig "+cmd) || !strings.Contains(want, "\nExample") {
			t.Errorf("help %s does not begin with its usage or lacks an example:\n%s", cmd, want)
		}
		if strings.Contains(want, "bench measures") != (cmd == "bench") || strings.Contains(want, "Verdicts:") != (cmd == "verify") {
			t.Errorf("help %s tells of another command:\n%s", cmd, want)
		}
		for _, f := range flags {
			if !strings.Contains(want, "\n  -"+f+" ") {
				t.Errorf("help %s lacks its flag -%s", cmd, f)
			}
		}
		for _, h := range []string{"-h", "-help", "--help"} {
			code, out, errOut := cli(t, cmd, h)
			if code != 0 || out != want || errOut != "" {
				t.Errorf("%s %s: exit %d, stderr %q, and not the text of help %s:\n%s", cmd, h, code, errOut, cmd, out)
			}
		}
	}
	_, global, _ := cli(t, "help")
	for _, cmd := range []string{"verify", "bench", "shim", "version", "help"} {
		if !strings.Contains(global, "\n  "+cmd+" ") {
			t.Errorf("tcpsig help does not list %s:\n%s", cmd, global)
		}
	}
	for _, args := range [][]string{nil, {"frobnicate"}} {
		_, _, errOut := cli(t, args...)
		if !strings.Contains(errOut, "verify, bench, shim, keys, version or help") {
			t.Errorf("%q: %q does not list every command", args, errOut)
		}
	}
	if code, _, errOut := cli(t, "help", "frobnicate"); code != 2 || !strings.Contains(errOut, `no topic "frobnicate"`) {
		t.Errorf("help frobnicate: exit %d %q", code, errOut)
	}
	if code, _, errOut := cli(t, "version", "extra"); code != 2 || !strings.Contains(errOut, `unexpected argument "extra"`) {
		t.Errorf("version extra: exit %d %q", code, errOut)
	}
}

// tcpsig help keys names every field of the keys file, and each is one
// keyfile knows: one letter off, keyfile suggests it.
func TestHelpKeys(t *testing.T) {
	_, text, _ := cli(t, "help", "keys")
	for kind, fields := range map[string][]string{
		"ao":  {"name", "alg", "key", "sndid", "rcvid", "peer", "maclen", "exclude_options", "ifindex"},
		"md5": {"name", "peer", "key", "ifindex"},
	} {
		for _, f := range fields {
			if !strings.Contains(text, "\n  "+f) && !strings.Contains(text, ", "+f) && !strings.Contains(text, "has "+f) {
				t.Errorf("help keys does not describe the %s field %q", kind, f)
			}
			_, err := keyfile.Parse([]byte(`{"` + kind + `": [{"x` + f + `": 1}]}`))
			if err == nil || !strings.Contains(err.Error(), `(did you mean "`+f+`"?)`) {
				t.Errorf("%s field %q: keyfile does not know it: %v", kind, f, err)
			}
		}
	}
	if strings.Contains(text, "go doc github.com/") {
		t.Error("help keys gives go doc advice that fails outside a clone")
	}
}

// Flags may follow the capture, "-" reads standard input, "--" ends flags.
func TestArgumentOrderAndStdin(t *testing.T) {
	k := writeFile(t, "k.json", demoKeys(t))
	c := writeFile(t, "c.pcap", demoPcap)
	if code, out, errOut := cli(t, "verify", c, "-keys", k); code != 0 {
		t.Fatalf("exit %d %s %s", code, errOut, out)
	}
	if code, _, errOut := cli(t, "verify", "-keys", k, "--", c); code != 0 {
		t.Fatalf("--: exit %d %s", code, errOut)
	}
	f, err := os.Open(c)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	old := os.Stdin
	os.Stdin = f
	defer func() { os.Stdin = old }()
	code, out, errOut := cli(t, "verify", "-keys", k, "-json", "-")
	if _, sum := jsonLines(t, out); code != 0 || sum.Summary.Checked == 0 {
		t.Fatalf("stdin: exit %d %s", code, errOut)
	}
}

// Several captures: frames numbered per file, "file" in each JSON object,
// one summary.
func TestSeveralCaptures(t *testing.T) {
	k := writeFile(t, "k.json", demoKeys(t))
	a, b := writeFile(t, "a.pcap", demoPcap), writeFile(t, "b.pcap", demoPcap)
	code, out, _ := cli(t, "verify", "-json", "-keys", k, a, b)
	segs, sum := jsonLines(t, out)
	if code != 0 || len(sum.Summary.Files) != 2 || segs[0].File != a || segs[len(segs)-1].File != b || segs[len(segs)-1].Frame != len(segs)/2 {
		t.Fatalf("exit %d, %d files, first %+v last %+v", code, len(sum.Summary.Files), segs[0], segs[len(segs)-1])
	}
}

// The benchmark table's shape (numbers are the machine's).
func TestBench(t *testing.T) {
	code, out, errOut := cli(t, "bench", "-json", "-time", "1ms", "-alg", "hmac(sha1)", "-alg", "md5", "-alg", "KMAC256-128", "-alg", "HMAC-SHA256-128")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Scan()
	var cpu map[string]cpuInfo
	if err := json.Unmarshal(sc.Bytes(), &cpu); err != nil || cpu["cpu"].GOMAXPROCS == 0 {
		t.Fatalf("cpu line %q: %v", sc.Text(), err)
	}
	rows := 0
	var clone benchRow
	for sc.Scan() {
		var r benchRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.NsPerSegment <= 0 || r.Gbps1 <= 0 || (r.GbpsAll > 0) == (r.AllCoresOut != "") || r.SegmentBytes < 20+r.Payload ||
			r.NsMin > r.NsPerSegment || r.NsMax < r.NsPerSegment || r.Rounds != benchRounds(time.Millisecond) ||
			(r.GbpsAll > 0 && (r.GbpsAllMin > r.GbpsAll || r.GbpsAllMax < r.GbpsAll)) {
			t.Errorf("row %+v", r)
		}
		// The ratio follows from the two medians.
		if r.Backend == "rekey" && math.Abs(r.RekeyOverClone-r.NsPerSegment/clone.NsPerSegment) > 1e-9 {
			t.Errorf("row %+v: ratio, clone's median %v", r, clone.NsPerSegment)
		}
		clone = r
		// The draft's algorithms: a 20-byte option (16-byte MAC) after the timestamps.
		if (r.Alg == "kmac256-128" || r.Alg == "hmac-sha256-128") && r.SegmentBytes != 20+12+20+r.Payload {
			t.Errorf("row %+v: segment of %d bytes", r, r.SegmentBytes)
		}
		// A rekey row follows its clone row and compares with it; only
		// TCP-MD5's says its two backends do the same work.
		if (r.Backend == "rekey") != (rows%2 == 1) || (r.Backend == "rekey") != (r.RekeyOverClone > 0) ||
			(r.SameWork != "") != (r.Backend == "rekey" && r.Alg == "md5") {
			t.Errorf("row %d: %+v", rows, r)
		}
		rows++
	}
	if want := 4 * len(benchBackends) * len(benchPayloads) * 2; rows != want {
		t.Errorf("%d rows, want %d", rows, want)
	}
	code, out, _ = cli(t, "bench", "-time", "1ms", "-alg", "cmac(aes128)", "-alg", "hmac(rmd160)")
	if code != 0 || !strings.Contains(out, "CPU: ") || !strings.Contains(out, "REKEY/CLONE") ||
		!regexp.MustCompile(`cmac\(aes128\) +verify +8948 +\d+ \(\d+-\d+\) +\d+ \(\d+-\d+\) +\d+\.\d\d `).MatchString(out) ||
		!strings.Contains(out, "hmac(rmd160): clone and rekey do the same work") || strings.Contains(out, "cmac(aes128): clone and rekey") {
		t.Errorf("text table:\n%s", out)
	}
	// Every row's ratio follows from its printed medians (to their
	// rounding), and its all-cores cell is a figure with its spread or,
	// left out, "-" with the reason below the table.
	row := regexp.MustCompile(`(?m)^\S+ +(sign|verify) +\d+ +(\d+) \(\d+-\d+\) +(\d+) \(\d+-\d+\) +(\d+\.\d\d) +[\d.]+ *(.*)$`)
	matches := row.FindAllStringSubmatch(out, -1)
	if len(matches) != 2*len(benchPayloads)*2 {
		t.Fatalf("%d rows in\n%s", len(matches), out)
	}
	for _, m := range matches {
		c, _ := strconv.ParseFloat(m[2], 64)
		r, _ := strconv.ParseFloat(m[3], 64)
		ratio, _ := strconv.ParseFloat(m[4], 64)
		if q := r / c; math.Abs(ratio-q) > 0.005+q*(0.5/c+0.5/r) {
			t.Errorf("%q: ratio %v, the medians give %.3f", m[0], ratio, q)
		}
		if all := m[5]; runtime.GOMAXPROCS(0) > 1 && all != "-" && !regexp.MustCompile(`^[\d.]+ \([\d.]+-[\d.]+\)$`).MatchString(all) {
			t.Errorf("%q: all-cores cell %q", m[0], all)
		}
		if m[5] == "-" && !strings.Contains(out, "\n-: ") {
			t.Errorf("a cell left out without the reason:\n%s", out)
		}
	}
}

// withStdin runs f with os.Stdin reading b.
func withStdin(t *testing.T, b []byte, f func()) {
	t.Helper()
	p := writeFile(t, "stdin", b)
	in, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	old := os.Stdin
	os.Stdin = in
	defer func() { os.Stdin = old }()
	f()
}

// Issue 14 item 4: "-keys -" reads the keys file from standard input
// (before, it looked for a file named "-"); it cannot share it with a
// capture.
func TestKeysFromStdin(t *testing.T) {
	c := writeFile(t, "c.pcap", demoPcap)
	withStdin(t, demoKeys(t), func() {
		if code, out, errOut := cli(t, "verify", "-keys", "-", c); code != 0 {
			t.Fatalf("exit %d %s %s", code, errOut, out)
		}
	})
	withStdin(t, []byte(`{"ao": [{}]}`), func() {
		code, _, errOut := cli(t, "verify", "-keys", "-", c)
		if code != 2 || !strings.Contains(errOut, "keys from standard input: ao[0].alg: missing") {
			t.Fatalf("exit %d %q", code, errOut)
		}
	})
	code, _, errOut := cli(t, "verify", "-keys", "-", "-")
	if code != 2 || !strings.Contains(errOut, "cannot both read standard input") {
		t.Fatalf("exit %d %q", code, errOut)
	}
}

// Issue 14 item 4: maclen 0 means 12, as the help says (before, it was
// refused).
func TestMACLenZero(t *testing.T) {
	keys := strings.ReplaceAll(string(demoKeys(t)), `"maclen": 12`, `"maclen": 0`)
	if !strings.Contains(keys, `"maclen": 0`) {
		t.Fatal("the sample's keys have no maclen 12 to replace")
	}
	code, _, errOut := cli(t, "verify", "-keys", writeFile(t, "k.json", []byte(keys)), writeFile(t, "c.pcap", demoPcap))
	if code != 0 {
		t.Fatalf("exit %d %s", code, errOut)
	}
}

// Issue 14 item 4: a 200 MB keys file is refused from its size, not read
// into memory (the file is sparse: reading it would take seconds and
// 200 MB).
func TestHugeKeysFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "huge.json")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(200 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	code, _, errOut := cli(t, "verify", "-keys", p, writeFile(t, "c.pcap", demoPcap))
	runtime.ReadMemStats(&after)
	if code != 2 || !strings.Contains(errOut, "huge.json: 209715200 bytes, more than the") {
		t.Fatalf("exit %d %q", code, errOut)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Errorf("refusing a 200 MB keys file allocated %d bytes", grew)
	}
}

// Issue 14 item 5: the command the built-in sample suggests, run from the
// top of a clone, verifies the same capture with the same verdicts (before,
// it pointed -keys at a file that is not a keys file).
func TestDemoCommandWorks(t *testing.T) {
	_, out, _ := cli(t, "verify")
	if !strings.Contains(out, demoCommand) {
		t.Fatalf("the sample's report does not show %q:\n%s", demoCommand, out)
	}
	args := strings.Fields(demoCommand)[1:]
	for i, a := range args {
		if strings.HasPrefix(a, "cmd/tcpsig/") {
			args[i] = filepath.Join("..", "..", a) // the test runs in cmd/tcpsig
		}
	}
	code, out, errOut := cli(t, args...)
	if code != 0 || !strings.Contains(out, "49 segments judged: 49 good") {
		t.Fatalf("%q: exit %d %s\n%s", args, code, errOut, out)
	}
}

// Issue 14 item 8: bench's help says the CPU object comes first (it
// does), the -alg error lists md5 (which -alg accepts), and a -time too
// short to measure is refused instead of printing 0.00 Gbit/s; small
// throughputs keep three significant digits.
func TestBenchFixes(t *testing.T) {
	_, help, _ := cli(t, "help", "bench")
	if !strings.Contains(help, "the CPU as one JSON object, then one per measurement") {
		t.Errorf("help does not say the CPU object comes first:\n%s", help)
	}
	code, _, errOut := cli(t, "bench", "-alg", "sha1")
	if code != 2 || !strings.Contains(errOut, ", md5)") || !strings.Contains(errOut, "hmac(sha1)") {
		t.Errorf("-alg sha1: exit %d %q", code, errOut)
	}
	code, _, errOut = cli(t, "bench", "-time", "1ns", "-alg", "md5")
	if code != 2 || !strings.Contains(errOut, "-time 1ns is too short to measure anything: at least 1ms") {
		t.Errorf("-time 1ns: exit %d %q", code, errOut)
	}
	for v, want := range map[float64]string{123.4: "123", 12.34: "12.3", 1.234: "1.23", 0.01234: "0.0123", 0.0004: "0.0004"} {
		if got := gbps(v); got != want {
			t.Errorf("gbps(%v) = %q, want %q", v, got, want)
		}
	}
}

// Issue 29: tcpsig help -h (and -help, --help) prints the usage and
// exits 0; it said `no topic "-h"` and exited 2.
func TestHelpHelpFlag(t *testing.T) {
	_, usageOut, _ := cli(t, "help")
	for _, flag := range []string{"-h", "-help", "--help"} {
		code, out, errOut := cli(t, "help", flag)
		if code != 0 || errOut != "" || out != usageOut {
			t.Errorf("tcpsig help %s: exit %d, stderr %q, %d bytes on stdout (the usage is %d)", flag, code, errOut, len(out), len(usageOut))
		}
	}
}

// Issue 29: the shim words a keys file it cannot read as verify does
// ("nope.json: no such file or directory", not "stat nope.json: …").
func TestShimKeysFileWording(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("tcpsig shim runs on Linux only")
	}
	nope := filepath.Join(t.TempDir(), "nope.json")
	code, _, shimErr := cli(t, "shim", "-keys", nope)
	_, _, verifyErr := cli(t, "verify", "-keys", nope, "x.pcap")
	want := "tcpsig shim: " + nope + ": no such file or directory\n"
	if code != 2 || shimErr != want || strings.Replace(verifyErr, "verify", "shim", 1) != want {
		t.Errorf("shim (exit %d): %q\nverify: %q\nwant %q", code, shimErr, verifyErr, want)
	}
	bad := writeFile(t, "bad.json", []byte(`{"ao": [{"alg": "hmac(sha1)", "key": "text:k", "sndid": 1, "rcvid": 300, "peer": "192.0.2.2"}]}`))
	_, _, shimErr = cli(t, "shim", "-keys", bad)
	_, _, verifyErr = cli(t, "verify", "-keys", bad, "x.pcap")
	if want := "tcpsig shim: " + bad + ": ao[0].rcvid: 300 is not a KeyID (0..255)\n"; shimErr != want || strings.Replace(verifyErr, "verify", "shim", 1) != want {
		t.Errorf("bad keys file: shim %q, verify %q, want %q", shimErr, verifyErr, want)
	}
}
