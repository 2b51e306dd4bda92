package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cli runs the command in-process and returns its exit status and output.
func cli(t testing.TB, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

// writeFile writes b into the test's temporary directory.
func writeFile(t testing.TB, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o600); err != nil { // a keys file others may read draws a warning
		t.Fatal(err)
	}
	return p
}

// jsonLines decodes verify -json output into its segment objects and the
// summary.
func jsonLines(t testing.TB, out string) (segs []segmentJSON, sum summaryJSON) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		line := sc.Bytes()
		if bytes.HasPrefix(line, []byte(`{"table"`)) { // a live run's flow table so far
			continue
		}
		if bytes.HasPrefix(line, []byte(`{"summary"`)) {
			if err := json.Unmarshal(line, &sum); err != nil {
				t.Fatalf("summary: %v: %s", err, line)
			}
			continue
		}
		var s segmentJSON
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&s); err != nil {
			t.Fatalf("segment line: %v: %s", err, line)
		}
		segs = append(segs, s)
	}
	return segs, sum
}

// verdictsOf counts the verdicts of segment objects.
func verdictsOf(segs []segmentJSON) map[string]int {
	m := map[string]int{}
	for _, s := range segs {
		m[s.Verdict]++
	}
	return m
}

// oneLine checks that an error output is one line, and not a panic.
func oneLine(t testing.TB, stderr string) {
	t.Helper()
	if strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
		t.Errorf("stderr is not one line: %q", stderr)
	}
	if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine") {
		t.Errorf("stderr shows a crash: %q", stderr)
	}
}
