package tcpsig_test

import (
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// goCmd runs the go command in dir and returns its output.
func goCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("needs the go command: %v", err)
	}
	cmd := exec.Command(goBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Issue 21 item 5: the root package doc (go doc .) names every package a
// program may import, and the gVisor module, one line each, and nothing
// that is not a package.
func TestRootDocNamesEveryPackage(t *testing.T) {
	const prefix = "github.com/tcpsig/tcpsig/"
	want := map[string]bool{"netstack": true}
	for _, p := range strings.Fields(goCmd(t, ".", "list", "./...")) {
		rel, ok := strings.CutPrefix(p, prefix)
		if ok && !strings.HasPrefix(rel, "internal/") && !strings.Contains(rel, "/internal/") && rel != "harness/kernellab/guest" {
			want[rel] = true
		}
	}
	got := map[string]bool{}
	for _, l := range strings.Split(goCmd(t, ".", "doc", "."), "\n") {
		if name, _, ok := strings.Cut(strings.TrimPrefix(l, "  - "), ": "); ok && strings.HasPrefix(l, "  - ") {
			if got[name] {
				t.Errorf("the root doc lists %s twice", name)
			}
			got[name] = true
		}
	}
	for p := range want {
		if !got[p] {
			t.Errorf("the root package doc (doc.go) does not list %s: add a line \"  - %s: what it is\"", p, p)
		}
	}
	for p := range got {
		if !want[p] {
			t.Errorf("the root package doc lists %s, which is not a package of the module", p)
		}
	}
}

// go doc ./segment Flags shows the flags' names (a const block with iota
// shows only its first line).
func TestGoDocSegmentFlags(t *testing.T) {
	out := goCmd(t, ".", "doc", "./segment", "Flags")
	for _, f := range []string{"FIN", "SYN", "RST", "PSH", "ACK", "URG", "ECE", "CWR"} {
		if !strings.Contains(out, f) {
			t.Errorf("go doc ./segment Flags does not name %s:\n%s", f, out)
		}
	}
}

// exampleOutput returns the // Output: of the example called name in the
// test files of dir.
func exampleOutput(t *testing.T, dir, name string) string {
	t.Helper()
	fset := token.NewFileSet()
	matches, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
	var files []*ast.File
	for _, m := range matches {
		f, err := parser.ParseFile(fset, m, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	for _, ex := range doc.Examples(files...) {
		if "Example"+ex.Name == name || (ex.Name == "" && name == "Example") {
			if ex.Output == "" {
				t.Errorf("%s %s has no // Output:, so go test does not check what it prints", dir, name)
			}
			return ex.Output
		}
	}
	t.Fatalf("no %s in %s", name, dir)
	return ""
}

// guides are the markdown files whose code this package's tests hold to
// the tree: the README and the guides of docs/ (docs/shim-service.md has
// its own tests in cmd/tcpsig, servicedoc_test.go; docs/interop.md, the
// qemu lab's, its own).
func guides(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	matches, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range matches {
		if m = filepath.ToSlash(m); m != "docs/shim-service.md" && m != "docs/interop.md" {
			files = append(files, m)
		}
	}
	return files
}

// readDoc returns the text of the markdown file at path (from the top).
func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.FromSlash(path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// docBlock is one fenced code block of a guide: its info string ("go",
// "sh", "" for output), its text, and the headings of its section: the
// nearest "## " or "### " heading, and the nearest "## " ("" for both in
// the guide's opening, before its first heading).
type docBlock struct{ info, body, section, top string }

// docBlocks returns the fenced code blocks of the markdown file at path
// in the section whose heading line is heading ("## Layers", its "### "
// subsections included; or a "### " one alone), in order; heading "" is
// the file's opening, before its first "## ", and "*" the whole file.
func docBlocks(t *testing.T, path, heading string) []docBlock {
	t.Helper()
	doc := readDoc(t, path)
	if heading != "" && heading != "*" && !strings.Contains(doc, "\n"+heading+"\n") {
		t.Fatalf("%s has no section %q", path, heading)
	}
	var blocks []docBlock
	section, top := "", ""
	rest := doc
	for {
		pre, after, ok := strings.Cut(rest, "```")
		if !ok {
			return blocks
		}
		for _, l := range strings.Split(pre, "\n") {
			switch {
			case strings.HasPrefix(l, "## "):
				section, top = l, l
			case strings.HasPrefix(l, "### "):
				section = l
			}
		}
		info, after, _ := strings.Cut(after, "\n")
		body, next, ok := strings.Cut(after, "```")
		if !ok {
			t.Fatalf("%s: an unclosed code block", path)
		}
		if b := (docBlock{info, body, section, top}); heading == "*" || b.top == heading || b.section == heading {
			blocks = append(blocks, b)
		}
		rest = next
	}
}

// exampleSource returns the source of the example called name in the test
// files of dir, from "func name() {" to its closing brace, without its
// // Output: comment: the code a guide shows beside the output.
func exampleSource(t *testing.T, dir, name string) string {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		_, fn, ok := strings.Cut(string(b), "\nfunc "+name+"() {\n")
		if !ok {
			continue
		}
		fn, _, _ = strings.Cut(fn, "\n}\n")
		fn, _, _ = strings.Cut(fn, "\t// Output:")
		return "func " + name + "() {\n" + strings.TrimRight(fn, "\n") + "\n}\n"
	}
	t.Fatalf("no %s in %s", name, dir)
	return ""
}

// guideExamples are the examples whose output (and, where the guide shows
// it whole, whose code) a guide shows: after the anchor, the first block
// without an info string is the output; a ```go block before it that
// holds "func <example>() {" is its code.
var guideExamples = []struct{ file, anchor, dir, example string }{
	{"docs/library.md", "The package's `Example`\n(`ao/example_test.go`", "ao", "Example"},
	{"docs/library.md", "From `ExampleTrafficKey` (`ao/example_test.go`)", "ao", "ExampleTrafficKey"},
	{"docs/library.md", "From the package's `Example` (`keys/example_test.go`)", "keys", "Example"},
	{"docs/library.md", "From `ExampleTrafficKey_reset` (`ao/example_test.go`)", "ao", "ExampleTrafficKey_reset"},
	{"docs/library.md", "`ExampleConn_Init_established` (`ao/example_test.go`)", "ao", "ExampleConn_Init_established"},
	{"docs/library.md", "From\n`ExampleKeyring_AddAll` (`ao/example_test.go`)", "ao", "ExampleKeyring_AddAll"},
	{"docs/library.md", "From\n`ExamplePolicy_contexts` (`ao/example_contexts_test.go`)", "ao", "ExamplePolicy_contexts"},
	{"docs/library.md", "`md5sig`'s `ExampleKeyring_AddAll` (`md5sig/example_test.go`)", "md5sig", "ExampleKeyring_AddAll"},
	{"docs/library.md", "From the package's `Example`\n(`md5sig/example_test.go`", "md5sig", "Example"},
	{"docs/packetauth.md", "The\npackage's `Example`\n(`packetauth/example_test.go`", "packetauth", "Example"},
	{"docs/packetauth.md", "`Example_keyfile` (`packetauth/example_keyfile_test.go`)", "packetauth", "Example_keyfile"},
	{"docs/packetauth.md", "`Example_md5` (`packetauth/example_md5_test.go`)", "packetauth", "Example_md5"},
	{"docs/packetauth.md", "`ExampleLayer_Seed` (`packetauth/example_test.go`)", "packetauth", "ExampleLayer_Seed"},
	{"docs/netstack.md", "Real output of the package's `Example` (a gonet server", "netstack", "Example"},
	{"docs/linuxsock.md", "The package's `Example` (`linuxsock/example_test.go`", "linuxsock", "Example"},
	{"docs/algorithms.md", "`ExampleKeyring_Add_draftAlgorithms`\n(`ao/example_draft_test.go`", "ao", "ExampleKeyring_Add_draftAlgorithms"},
	{"docs/verify.md", "checks a capture with it in a few lines (`pcapverify/example_test.go`", "pcapverify", "Example"},
}

// Issue 21 item 5 and issue 29 item 3: where a guide shows what an
// example prints, the example has that // Output: (go test checks it);
// where it shows the example's code whole, the code is the example's.
func TestReadmeExampleOutputs(t *testing.T) {
	shownWhole := map[string]bool{}
	for _, c := range guideExamples {
		doc := readDoc(t, c.file)
		_, after, ok := strings.Cut(doc, c.anchor)
		if !ok {
			t.Errorf("%s no longer says %q", c.file, c.anchor)
			continue
		}
		var shown, code string
		for {
			_, rest, ok := strings.Cut(after, "```")
			if !ok {
				t.Fatalf("%s: no output block after %q", c.file, c.anchor)
			}
			info, body, _ := strings.Cut(rest, "\n")
			block, next, _ := strings.Cut(body, "```")
			if info == "" {
				shown = block
				break
			}
			if info == "go" && strings.Contains(block, "func "+c.example+"() {") {
				code = block
			}
			after = next
		}
		if got := exampleOutput(t, c.dir, c.example); strings.TrimSpace(got) != strings.TrimSpace(shown) {
			t.Errorf("%s shows for %s %s\n%s\nits // Output: is\n%s", c.file, c.dir, c.example, shown, got)
		}
		if code != "" {
			shownWhole[c.file+" "+c.example] = true
			if want := exampleSource(t, c.dir, c.example); code != want {
				t.Errorf("%s shows %s %s as\n%s\nits source is\n%s", c.file, c.dir, c.example, code, want)
			}
		}
	}
	// Every example a guide shows whole is one of the above.
	for _, f := range guides(t) {
		for _, b := range docBlocks(t, f, "*") {
			if name, ok := strings.CutPrefix(b.body, "func Example"); ok && b.info == "go" {
				name, _, _ = strings.Cut(name, "(")
				if !shownWhole[f+" Example"+name] {
					t.Errorf("%s shows Example%s whole, which TestReadmeExampleOutputs does not hold to its source", f, name)
				}
			}
		}
	}
}

// The README's advice for reading an example prints the example with its
// output.
func TestReadmeReadingExamples(t *testing.T) {
	sedBin, err := exec.LookPath("sed")
	if err != nil {
		t.Skipf("needs sed: %v", err)
	}
	blocks := docBlocks(t, "README.md", "## Reading the examples")
	if len(blocks) != 1 {
		t.Fatalf("the README's Reading the examples has %d blocks, want 1", len(blocks))
	}
	line := strings.TrimSpace(blocks[0].body)
	// sed -n '/^func NAME(/,/^}/p' DIR/FILE
	prog, file, ok := strings.Cut(strings.TrimPrefix(line, "sed -n '"), "' ")
	name, _, _ := strings.Cut(strings.TrimPrefix(prog, "/^func "), "(")
	if !ok || !strings.HasPrefix(line, "sed -n '/^func ") || strings.ContainsAny(file, " *?") {
		t.Fatalf("the README's advice %q is not sed -n '/^func NAME(/,/^}/p' FILE", line)
	}
	out, err := exec.Command(sedBin, "-n", prog, file).Output()
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	want := "\t// Output:\n"
	for _, l := range strings.Split(strings.TrimRight(exampleOutput(t, filepath.Dir(file), name), "\n"), "\n") {
		want += strings.TrimRight("\t// "+l, " ") + "\n"
	}
	if !strings.HasPrefix(string(out), "func "+name+"() {\n") || !strings.HasSuffix(string(out), want+"}\n") {
		t.Errorf("%s printed\n%s\nwant the example ending in its output\n%s}", line, out, want)
	}
}

// The netstack guide's snippet builds its layer as the package doc and its
// example do: each keyring filled in one call from the keys file, and
// StackChecksums (netstack fills every checksum, so the layer may update
// it rather than sum the segment again).
func TestReadmeNetstackSnippet(t *testing.T) {
	var code string
	for _, b := range docBlocks(t, "docs/netstack.md", "## Wrapping a link endpoint") {
		if b.info == "go" {
			code = b.body
			break
		}
	}
	for _, want := range []string{"packetauth.New(", "StackChecksums: true", "aoRing.AddAll(f.AOConfigs())", "md5Ring.AddAll(f.MD5Configs())"} {
		if !strings.Contains(code, want) {
			t.Errorf("docs/netstack.md's snippet does not have %s:\n%s", want, code)
		}
	}
}

// The layout (docs/library.md, "## Layers") names only paths that exist,
// and every top-level directory holding a package of the module.
func TestReadmeLayoutMatchesTree(t *testing.T) {
	blocks := docBlocks(t, "docs/library.md", "## Layers")
	if len(blocks) != 1 {
		t.Fatalf("docs/library.md's Layers has %d blocks, want the tree alone", len(blocks))
	}
	tree := blocks[0].body
	named := map[string]bool{}
	for _, l := range strings.Split(tree, "\n") {
		for _, w := range strings.Fields(l) {
			if !strings.Contains(w, "/") && !strings.HasSuffix(w, ".go") {
				break
			}
			if !strings.Contains(w, "*") {
				if _, err := os.Stat(strings.TrimSuffix(w, "/")); err != nil {
					t.Errorf("the layout names %s: %v", w, err)
				}
			}
			top, _, _ := strings.Cut(w, "/")
			named[top] = true
		}
	}
	const prefix = "github.com/tcpsig/tcpsig/"
	for _, p := range strings.Fields(goCmd(t, ".", "list", "./...")) {
		if rel, ok := strings.CutPrefix(p, prefix); ok {
			if top, _, _ := strings.Cut(rel, "/"); !named[top] {
				t.Errorf("the layout does not name %s/ (package %s)", top, rel)
			}
		}
	}
}

// slug is the anchor GitHub gives a heading: lower case, the letters,
// digits, '-' and '_' kept, spaces made '-', the rest dropped.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimLeft(heading, "# ")) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the anchors of the markdown file at path's headings
// (a repeated one gets -1, -2, … as GitHub does).
func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	seen := map[string]int{}
	got := map[string]bool{}
	inCode := false
	for _, l := range strings.Split(readDoc(t, path), "\n") {
		if strings.HasPrefix(l, "```") {
			inCode = !inCode
		}
		if inCode || !strings.HasPrefix(l, "#") {
			continue
		}
		a := slug(l)
		if n := seen[a]; n > 0 {
			got[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			got[a] = true
		}
		seen[a]++
	}
	return got
}

// mdLink matches a markdown link's target.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// Issue 29 item 1: the README is short and links every guide of docs/;
// every relative link of the README and the guides names a file of the
// tree and, with a #fragment, a heading of that file; each guide opens
// with a program or command and its output (a code block before its first
// "## ").
func TestDocsLayout(t *testing.T) {
	readme := readDoc(t, "README.md")
	if n := strings.Count(readme, "\n"); n > 250 {
		t.Errorf("README.md has %d lines, more than 250: move the detail into a guide of docs/", n)
	}
	matches, _ := filepath.Glob(filepath.Join("docs", "*.md"))
	if len(matches) < 9 {
		t.Errorf("docs/ has %d guides, want at least 9", len(matches))
	}
	for _, m := range matches {
		if m = filepath.ToSlash(m); !strings.Contains(readme, "]("+m+")") && !strings.Contains(readme, "]("+m+"#") {
			t.Errorf("the README does not link %s", m)
		}
	}
	for _, f := range guides(t) {
		doc := readDoc(t, f)
		// Links in code blocks are not links.
		var prose strings.Builder
		for i, part := range strings.Split(doc, "```") {
			if i%2 == 0 {
				prose.WriteString(part)
			}
		}
		for _, m := range mdLink.FindAllStringSubmatch(prose.String(), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			path := f
			if file != "" {
				path = filepath.ToSlash(filepath.Join(filepath.Dir(f), file))
			}
			if _, err := os.Stat(filepath.FromSlash(path)); err != nil {
				t.Errorf("%s links %s: %v", f, target, err)
				continue
			}
			if frag != "" && strings.HasSuffix(path, ".md") && !anchors(t, path)[frag] {
				t.Errorf("%s links %s: %s has no heading with the anchor #%s", f, target, path, frag)
			}
		}
		if f != "README.md" && len(docBlocks(t, f, "")) == 0 {
			t.Errorf("%s does not open with a program or command and its output (no code block before its first ## section)", f)
		}
	}
}

// runnable blocks of the guides, by file and section, and the test that
// runs or checks each (or why none can). A block is runnable when it is
// ```sh, a ```go program (func main) or example shown whole, or a "$ …"
// transcript (the "# …" transcripts of root's commands are real output of
// runs as root, named beside them).
var runnable = map[string]string{
	"README.md ## Run it":                                                 "cmd/tcpsig TestReadmeCommands",
	"README.md ## Install":                                                "cmd/tcpsig TestInstallFromClone",
	"README.md ## Test":                                                   "the test run itself (CI: bash .ci/run)",
	"README.md ## Reading the examples":                                   "TestReadmeReadingExamples",
	"docs/verify.md ## The `tcpsig` command":                              "cmd/tcpsig TestReadmeCommands (the first block; the second names the reader's own files)",
	"docs/verify.md ## Exit status":                                       "cmd/tcpsig TestReadmeCommands",
	"docs/keys.md ":                                                       "cmd/tcpsig TestKeysDocCheck",
	"docs/troubleshooting.md ## What failed, and why":                     "cmd/tcpsig TestTroubleshootingDoc",
	"docs/troubleshooting.md ## Without a capture":                        "cmd/tcpsig TestTroubleshootingDoc",
	"docs/troubleshooting.md ## Without the keys":                         "cmd/tcpsig TestTroubleshootingNoKeysDoc",
	"docs/troubleshooting.md ## Fixed":                                    "cmd/tcpsig TestTroubleshootingDoc",
	"docs/keys.md ## The format":                                          "cmd/tcpsig TestReadmeKeysFileExample",
	"docs/library.md ":                                                    "TestReadmeExampleOutputs",
	"docs/library.md ## Using tcpsig from your module":                    "TestModuleFromOutside",
	"docs/netstack.md ":                                                   "TestModuleFromOutside",
	"docs/packetauth.md ":                                                 "TestReadmeExampleOutputs",
	"docs/linuxsock.md ":                                                  "TestReadmeExampleOutputs",
	"docs/algorithms.md ":                                                 "TestReadmeExampleOutputs",
	"docs/algorithms.md ## What they cost: `tcpsig bench`":                "cmd/tcpsig TestReadmeBenchOutputs",
	"docs/algorithms.md ## Clone against rekey: `tcpsig bench`":           "cmd/tcpsig TestReadmeBenchOutputs",
	"docs/shim.md ## Usage":                                               "cmd/tcpsig TestReadmeShimUsage (the flags; running it needs root: TestShimReloadAO runs the status command)",
	"docs/proofs.md ":                                                     "TestProofsReplay",
	"docs/rotation.md ":                                                   "cmd/tcpsig TestRotationDoc",
	"docs/rotation.md ## Check both ends: `tcpsig keys check`":            "cmd/tcpsig TestRotationDoc",
	"docs/rotation.md ## A peer without a keys file: a router's password": "cmd/tcpsig TestRotationDoc",
	"docs/rotation.md ## Key chains from routers: `tcpsig keys import` and `export`": "cmd/tcpsig TestRotationDoc (the transcript) and keychain TestImportExample (the yanglint command, on the example)",
}

// Issue 29 item 1: every runnable block of the README and the guides is
// run or checked by a test (or says why none can), and every test, fuzz
// target, benchmark and example the guides name exists.
func TestGuidesRunnableBlocksTested(t *testing.T) {
	used := map[string]bool{}
	for _, f := range guides(t) {
		for _, b := range docBlocks(t, f, "*") {
			isProgram := b.info == "go" && (strings.Contains(b.body, "\nfunc main() {") || strings.HasPrefix(b.body, "func Example"))
			isTranscript := b.info == "" && strings.HasPrefix(b.body, "$ ")
			if b.info != "sh" && !isProgram && !isTranscript {
				continue
			}
			key := f + " " + b.top
			if runnable[key] == "" {
				t.Errorf("%s, section %q: a runnable block no test runs; add it to runnable (docs_test.go) with the test that does\n%s", f, b.section, b.body)
			}
			used[key] = true
		}
	}
	for k := range runnable {
		if !used[k] {
			t.Errorf("runnable names %q, which has no runnable block", k)
		}
	}

	defined := testFuncs(t)
	name := regexp.MustCompile("`((?:Test|Fuzz|Benchmark|Example)[A-Za-z0-9_]*)`")
	for _, f := range guides(t) {
		for _, m := range name.FindAllStringSubmatch(readDoc(t, f), -1) {
			if !defined[m[1]] {
				t.Errorf("%s names %s, which no test file of the tree defines", f, m[1])
			}
		}
	}
	for _, v := range runnable {
		for _, w := range strings.Fields(v) {
			if strings.HasPrefix(w, "Test") && !defined[w] {
				t.Errorf("runnable names %s, which no test file defines", w)
			}
		}
	}
}

// testFuncs returns the names of the functions the tree's test files
// define (the netstack module's included).
func testFuncs(t *testing.T) map[string]bool {
	t.Helper()
	defined := map[string]bool{}
	fn := regexp.MustCompile(`(?m)^func ((?:Test|Fuzz|Benchmark|Example)[A-Za-z0-9_]*)\(`)
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range fn.FindAllStringSubmatch(string(b), -1) {
			defined[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return defined
}

// The proofs guide opens with go test ./packetauth -run Replay -v and what
// it prints: the test run again prints the same, but for its timings.
func TestProofsReplay(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the go command")
	}
	blocks := docBlocks(t, "docs/proofs.md", "")
	if len(blocks) < 2 || blocks[0].info != "sh" {
		t.Fatalf("docs/proofs.md does not open with a command and its output")
	}
	args := strings.Fields(strings.TrimSpace(blocks[0].body))
	if len(args) < 2 || args[0] != "go" || args[1] != "test" {
		t.Fatalf("docs/proofs.md's first command %q is not go test", blocks[0].body)
	}
	out := goCmd(t, ".", append(args[1:], "-count=1")...)
	timing := regexp.MustCompile(`\(\d+\.\d+s\)|\t\d+\.\d+s$`)
	norm := func(s string) string {
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
			lines = append(lines, timing.ReplaceAllString(l, "(…)"))
		}
		return strings.Join(lines, "\n")
	}
	if got, want := norm(out), norm(blocks[1].body); got != want {
		t.Errorf("%s prints\n%s\ndocs/proofs.md shows\n%s", blocks[0].body, got, want)
	}
}
