package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestTroubleshootingNoKeysDoc runs the commands of the "Without the
// keys" section of docs/troubleshooting.md from the clone's top and
// compares what they print with what the page shows. A command may be
// piped through "tail -n N" (its last N lines) and "jq
// .summary.diagnoses" (the summary object's "diagnoses", indented as jq
// does).
func TestTroubleshootingNoKeysDoc(t *testing.T) {
	const page = "docs/troubleshooting.md"
	blocks := docBlocks(t, page, "## Without the keys")
	if len(blocks) != 2 {
		t.Fatalf("%s: \"Without the keys\" has %d blocks, want 2", page, len(blocks))
	}
	t.Chdir(filepath.Join("..", ".."))
	for _, b := range blocks {
		line, want, _ := strings.Cut(b, "\n")
		stages := strings.Split(strings.TrimPrefix(line, "$ "), " | ")
		args := strings.Fields(stages[0])
		if args[0] != "tcpsig" || strings.Contains(stages[0], "-keys") || !strings.Contains(stages[0], "-explain") {
			t.Fatalf("%s: %q is not tcpsig verify -explain without -keys", page, line)
		}
		_, out, _ := cli(t, args[1:]...)
		for _, s := range stages[1:] {
			switch n, isTail := strings.CutPrefix(s, "tail -n "); {
			case isTail:
				k, err := strconv.Atoi(n)
				if err != nil {
					t.Fatalf("%s: %q", page, s)
				}
				lines := strings.SplitAfter(strings.TrimSuffix(out, "\n"), "\n")
				out = strings.Join(lines[max(0, len(lines)-k):], "") + "\n"
			case s == "jq .summary.diagnoses":
				out = jqDiagnoses(t, out)
			default:
				t.Fatalf("%s: %q: only tail -n N and jq .summary.diagnoses are understood", page, s)
			}
		}
		if out != want {
			t.Errorf("%s: %s printed\n%s\nthe page shows\n%s", page, line, out, want)
		}
	}
}
