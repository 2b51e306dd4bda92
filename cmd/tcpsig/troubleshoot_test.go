package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestTroubleshootingDoc runs the commands of docs/troubleshooting.md
// ("$ tcpsig …" at the top of a block, its output below) from the clone's
// top, with the page's keys file (its json block) as session.keys.json,
// and compares what they print with what the page shows. "| tail -n 1 |
// jq .summary.diagnoses" is the summary object's "diagnoses", indented as
// jq does.
func TestTroubleshootingDoc(t *testing.T) {
	const page = "docs/troubleshooting.md"
	var keys string
	var cmds []string
	for _, b := range docBlocks(t, page, "## The session") {
		if strings.HasPrefix(b, "{") {
			keys = b
		}
	}
	for _, h := range []string{"## What failed, and why", "## Without a capture", "## Fixed"} {
		cmds = append(cmds, docBlocks(t, page, h)...)
	}
	if keys == "" || len(cmds) != 4 {
		t.Fatalf("%s: the keys file (%d bytes) and 4 commands, found %d", page, len(keys), len(cmds))
	}
	opening := docBlocks(t, page, "")
	if len(opening) != 1 {
		t.Fatalf("%s opens with %d blocks, want the diagnosis alone", page, len(opening))
	}
	keyPath := writeFile(t, "session.keys.json", []byte(keys))
	t.Chdir(filepath.Join("..", ".."))
	for _, b := range cmds {
		line, want, _ := strings.Cut(b, "\n")
		cmd, jq, piped := strings.Cut(strings.TrimPrefix(line, "$ "), " | ")
		args := strings.Fields(cmd)
		if args[0] != "tcpsig" {
			t.Fatalf("%s: %q is not a tcpsig command", page, line)
		}
		for i, a := range args {
			if a == "session.keys.json" {
				args[i] = keyPath
			}
		}
		_, out, _ := cli(t, args[1:]...)
		out = strings.ReplaceAll(out, keyPath, "session.keys.json")
		if piped {
			if jq != "tail -n 1 | jq .summary.diagnoses" {
				t.Fatalf("%s: %q: only | tail -n 1 | jq .summary.diagnoses is understood", page, line)
			}
			out = jqDiagnoses(t, out)
		}
		if !piped && strings.Contains(line, "-explain") && strings.Contains(line, "session.keys.json") && !strings.Contains(out, "\n"+opening[0]) {
			t.Errorf("%s opens with\n%s\nwhich %s does not print", page, opening[0], line)
		}
		if out != want {
			t.Errorf("%s: %s printed\n%s\nthe page shows\n%s", page, line, out, want)
		}
	}
}

// jqDiagnoses is verify -json's output through jq .summary.diagnoses.
func jqDiagnoses(t *testing.T, out string) string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var s struct {
		Summary struct {
			Diagnoses json.RawMessage `json:"diagnoses"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &s); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := json.Indent(&b, s.Summary.Diagnoses, "", "  "); err != nil {
		t.Fatal(err)
	}
	return b.String() + "\n"
}
