package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// docBlocks returns the fenced code blocks of the markdown file at path
// (relative to the clone's top: "README.md", "docs/verify.md") in the
// section whose heading line is heading ("## Run it"), in order. The
// heading "" names the file's opening: what comes before its first "## ".
func docBlocks(t *testing.T, path, heading string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	sec := string(b)
	if heading == "" {
		sec, _, _ = strings.Cut(sec, "\n## ")
	} else {
		var ok bool
		if _, sec, ok = strings.Cut(sec, "\n"+heading+"\n"); !ok {
			t.Fatalf("%s has no %q", path, heading)
		}
		level := heading[:strings.IndexByte(heading, ' ')+1] // "## "
		if i := strings.Index(sec, "\n"+level); i >= 0 {
			sec = sec[:i]
		}
	}
	var blocks []string
	for {
		_, rest, ok := strings.Cut(sec, "```")
		if !ok {
			return blocks
		}
		_, rest, _ = strings.Cut(rest, "\n")
		block, after, ok := strings.Cut(rest, "```")
		if !ok {
			t.Fatalf("%s %q: an unclosed code block", path, heading)
		}
		blocks = append(blocks, block)
		sec = after
	}
}

// readmeSection returns the fenced code blocks of the README section
// whose heading line is heading, in order.
func readmeSection(t *testing.T, heading string) []string {
	t.Helper()
	return docBlocks(t, "README.md", heading)
}

// shellWords splits a command line as sh would for the README's commands:
// blanks separate words, single quotes group, # starts a comment.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	in, quoted := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quoted && c == '\'':
			quoted = false
		case quoted:
			w.WriteByte(c)
		case c == '\'':
			quoted, in = true, true
		case c == '#' && !in:
			i = len(line)
		case c == ' ' || c == '\t':
			if in {
				words, in = append(words, w.String()), false
				w.Reset()
			}
		case strings.IndexByte("|;&<>$`\"\\", c) >= 0:
			t.Fatalf("README command %q: this test runs only plain commands", line)
		default:
			w.WriteByte(c)
			in = true
		}
	}
	if in {
		words = append(words, w.String())
	}
	return words
}

// inClone runs the rest of the test from a directory that looks like the
// clone's top (cmd/ is this tree's), where the README's commands may
// write files.
func inClone(t *testing.T) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(root, "cmd"), filepath.Join(dir, "cmd")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
}

// Issue 21 item 1: the tcpsig commands of the README and of the capture
// guide (docs/verify.md) run as written from the clone's top directory,
// and those whose output the guide shows print exactly that.
func TestReadmeCommands(t *testing.T) {
	run1 := readmeSection(t, "## Run it")
	cmdSec := docBlocks(t, "docs/verify.md", "## The `tcpsig` command")
	exitSec := docBlocks(t, "docs/verify.md", "## Exit status")
	outSec := docBlocks(t, "docs/verify.md", "") // the guide opens with what tcpsig verify prints
	inClone(t)

	var lines []string
	for _, l := range strings.Split(run1[0], "\n") {
		if rest, ok := strings.CutPrefix(l, "go run ./cmd/tcpsig "); ok {
			lines = append(lines, rest)
		}
	}
	for _, l := range strings.Split(cmdSec[0], "\n") {
		if rest, ok := strings.CutPrefix(l, "tcpsig "); ok {
			lines = append(lines, rest)
		}
	}
	if len(lines) < 10 {
		t.Fatalf("found %d tcpsig commands in the README's Run it and docs/verify.md's tcpsig command sections: the test no longer reads them", len(lines))
	}
	for _, l := range lines {
		args := shellWords(t, l)
		code, out, errOut := cli(t, args...)
		if code != 0 || out == "" {
			t.Errorf("the docs' tcpsig %s: exit %d, stderr %q", l, code, errOut)
		}
		if len(args) == 1 && args[0] == "verify" {
			// docs/verify.md opens with what tcpsig verify prints.
			if want := outSec[0]; out != want {
				t.Errorf("tcpsig verify printed\n%s\ndocs/verify.md shows\n%s", out, want)
			}
		}
	}

	// The exit-status example: "$ head -c 24 SRC > DST; tcpsig verify ARGS",
	// then its output.
	ex := exitSec[0]
	cmdLine, want, _ := strings.Cut(ex, "\n")
	head, verify, ok := strings.Cut(strings.TrimPrefix(cmdLine, "$ "), "; tcpsig ")
	hw := strings.Fields(head)
	if !ok || len(hw) != 6 || strings.Join(hw[:3], " ") != "head -c 24" || hw[4] != ">" {
		t.Fatalf("the exit-status example %q is not head -c 24 SRC > DST; tcpsig ...", cmdLine)
	}
	src, dst := hw[3], hw[5]
	b, err := os.ReadFile(src)
	if err != nil || len(b) < 24 {
		t.Fatalf("exit-status example: %v", err)
	}
	if err := os.WriteFile(dst, b[:24], 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := cli(t, shellWords(t, verify)...)
	if code != 3 || out != want {
		t.Errorf("exit-status example: exit %d, printed\n%s\ndocs/verify.md shows (exit 3)\n%s", code, out, want)
	}
}

// The keys guide's examples (docs/keys.md, "## The format"): each keys
// file piped to tcpsig verify -keys - is refused (exit 2) with the line
// the guide shows on stderr.
func TestReadmeKeysFileExample(t *testing.T) {
	var exs []string
	for _, b := range docBlocks(t, "docs/keys.md", "## The format") {
		if strings.HasPrefix(b, "$ echo '") {
			exs = append(exs, b)
		}
	}
	if len(exs) < 2 {
		t.Fatalf(`docs/keys.md's format section has %d "$ echo '…' | tcpsig verify -keys - …" examples, want 2`, len(exs))
	}
	inClone(t)
	for _, ex := range exs {
		js, rest, ok := strings.Cut(strings.TrimPrefix(ex, "$ echo '"), "' |\n")
		cmdLine, want, _ := strings.Cut(rest, "\n")
		verify, ok2 := strings.CutPrefix(strings.TrimSpace(cmdLine), "tcpsig ")
		if !ok || !ok2 {
			t.Fatalf("the keys file example is not $ echo '…' |\\n  tcpsig …:\n%s", ex)
		}
		withStdin(t, []byte(js+"\n"), func() {
			code, _, errOut := cli(t, shellWords(t, verify)...)
			if code != 2 || errOut != want {
				t.Errorf("keys file example: exit %d, stderr\n%s\ndocs/keys.md shows (exit 2)\n%s", code, errOut, want)
			}
		})
		if strings.Contains(ex, "text:my-secret") && strings.Contains(want, "my-secret") {
			t.Errorf("the keys file example quotes the value it says it never quotes:\n%s", want)
		}
	}
}

// docs/keys.md opens with tcpsig keys check on the demo keys file, as git
// checks it out (0644): the entries redacted, the mode's warning, exit 1.
func TestKeysDocCheck(t *testing.T) {
	ex := docBlocks(t, "docs/keys.md", "")[0]
	cmdLine, want, _ := strings.Cut(ex, "\n")
	args, ok := strings.CutPrefix(cmdLine, "$ tcpsig ")
	if !ok {
		t.Fatalf("docs/keys.md does not open with a $ tcpsig command: %q", cmdLine)
	}
	words := shellWords(t, args)
	file := words[len(words)-1]
	b, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(file)))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, filepath.FromSlash(file))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil { // whatever the umask
		t.Fatal(err)
	}
	t.Chdir(dir)
	code, out, errOut := cli(t, words...)
	if code != 1 || out != want {
		t.Errorf("tcpsig %s: exit %d, printed\n%s%s\ndocs/keys.md shows (exit 1)\n%s", args, code, out, errOut, want)
	}
}

// The "$ tcpsig bench …" outputs of docs/algorithms.md: run for 1 ms a
// cell, the table has the guide's text lines and column heads, and every
// row the guide keeps (algorithm, operation, payload) comes in that order.
func TestReadmeBenchOutputs(t *testing.T) {
	var blocks []string
	for _, h := range []string{"## What they cost: `tcpsig bench`", "## Clone against rekey: `tcpsig bench`"} {
		for _, b := range docBlocks(t, "docs/algorithms.md", h) {
			if strings.HasPrefix(b, "$ tcpsig bench ") {
				blocks = append(blocks, b)
			}
		}
	}
	if len(blocks) != 2 {
		t.Fatalf("found %d \"$ tcpsig bench\" outputs in docs/algorithms.md, want 2", len(blocks))
	}
	for _, b := range blocks {
		cmdLine, shown, _ := strings.Cut(strings.TrimPrefix(b, "$ tcpsig "), "\n")
		code, out, errOut := cli(t, append(shellWords(t, cmdLine), "-time", "1ms")...)
		if code != 0 {
			t.Fatalf("tcpsig %s: exit %d: %s", cmdLine, code, errOut)
		}
		text, rows := benchLines(out)
		wantText, wantRows := benchLines(shown)
		if strings.Join(text, "\n") != strings.Join(wantText, "\n") {
			t.Errorf("tcpsig %s prints\n%s\ndocs/algorithms.md shows\n%s", cmdLine, strings.Join(text, "\n"), strings.Join(wantText, "\n"))
		}
		i := 0
		for _, r := range rows {
			if i < len(wantRows) && r == wantRows[i] {
				i++
			}
		}
		if i < len(wantRows) {
			t.Errorf("tcpsig %s: docs/algorithms.md's row %q is not among its rows, in order", cmdLine, wantRows[i])
		}
	}
}

// benchLines splits a bench table into its text lines (without those
// that name the machine, the time or its load) and its rows' first three
// columns.
func benchLines(out string) (text, rows []string) {
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		switch {
		case l == "" || strings.HasPrefix(l, "CPU: ") || strings.HasPrefix(l, "SHA/AES features: ") || strings.HasPrefix(l, "Each cell ran for ") ||
			strings.HasPrefix(l, "-: "): // the cells the machine's load left out
		case len(f) > 3 && strings.Trim(f[2], "0123456789") == "":
			rows = append(rows, strings.Join(f[:3], " "))
		default:
			text = append(text, l)
		}
	}
	return text, rows
}

// Every flag of the shim's usage line in docs/shim.md is one tcpsig help
// shim documents, and every flag tcpsig help shim documents is in it.
func TestReadmeShimUsage(t *testing.T) {
	usage := docBlocks(t, "docs/shim.md", "## Usage")[0]
	if !strings.HasPrefix(usage, "tcpsig shim ") {
		t.Fatalf("docs/shim.md's usage section's first block is not its usage: %q", usage)
	}
	_, help, _ := cli(t, "help", "shim")
	if help == "" {
		_, help, _ = cli(t, "shim", "-h")
	}
	for _, w := range strings.Fields(usage) {
		flag := strings.Trim(w, "[]")
		if !strings.HasPrefix(flag, "-") {
			continue
		}
		if !strings.Contains(help, "\n  "+flag+" ") {
			t.Errorf("docs/shim.md's shim usage has %s, which tcpsig help shim does not document", flag)
		}
	}
	_, flags, _ := strings.Cut(help, "\nFlags:\n\n")
	flags, _, _ = strings.Cut(flags, "\n\n")
	for _, l := range strings.Split(flags, "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(l, "  -") && !slices.Contains(strings.Fields(strings.NewReplacer("[", " ", "]", " ").Replace(usage)), f[0]) {
			t.Errorf("tcpsig help shim documents %s, which docs/shim.md's usage lacks", f[0])
		}
	}
}
