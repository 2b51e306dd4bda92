package tcpsig_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
		if ok && !strings.HasPrefix(rel, "internal/") && !strings.Contains(rel, "/internal/") && rel != "testvectors/linux/guest" {
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

// Issue 21 item 5: where the README shows what an example prints, the
// example has that // Output: (go test checks it, go doc shows it).
func TestReadmeExampleOutputs(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, c := range []struct{ anchor, dir, example string }{
		{"`ExampleTrafficKey` (`go test ./ao -run ExampleTrafficKey -v`)", "ao", "ExampleTrafficKey"},
		{"From the package's `Example` (`go\ntest ./keys -run Example -v`)", "keys", "Example"},
		{"`ExampleTrafficKey_reset` (`go test ./ao -run ExampleTrafficKey_reset -v`)", "ao", "ExampleTrafficKey_reset"},
		{"`ExampleConn_Init_established` (`go test ./ao -run ExampleConn_Init_established -v`)", "ao", "ExampleConn_Init_established"},
		{"Real output of the package's `Example` (a client's SYN", "packetauth", "Example"},
		{"Real output of the package's `Example` (a gonet server", "netstack", "Example"},
		{"The runnable example `ExampleKeyring_Add_draftAlgorithms`", "ao", "ExampleKeyring_Add_draftAlgorithms"},
		{"checks a capture with it in a few lines (`pcapverify/example_test.go`", "pcapverify", "Example"},
	} {
		_, after, ok := strings.Cut(readme, c.anchor)
		if !ok {
			t.Errorf("the README no longer says %q", c.anchor)
			continue
		}
		// The first code block without an info string: the output.
		var shown string
		for {
			_, rest, ok := strings.Cut(after, "```")
			if !ok {
				t.Fatalf("no output block after %q", c.anchor)
			}
			info, body, _ := strings.Cut(rest, "\n")
			block, next, _ := strings.Cut(body, "```")
			if info == "" {
				shown = block
				break
			}
			after = next
		}
		if got := exampleOutput(t, c.dir, c.example); strings.TrimSpace(got) != strings.TrimSpace(shown) {
			t.Errorf("README shows for %s %s\n%s\nits // Output: is\n%s", c.dir, c.example, shown, got)
		}
	}
}

// The README's netstack snippet builds its layer as the package doc and
// its example do: with StackChecksums (netstack fills every checksum, so
// the layer may update it rather than sum the segment again).
func TestReadmeNetstackSnippet(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, _ := strings.Cut(string(b), "\n## gVisor netstack")
	_, code, _ := strings.Cut(sec, "```go\n")
	code, _, _ = strings.Cut(code, "```")
	if !strings.Contains(code, "packetauth.New(") || !strings.Contains(code, "StackChecksums: true") {
		t.Errorf("the README's netstack snippet does not set StackChecksums: true:\n%s", code)
	}
}

// The README's layout ("## Layers") names only paths that exist, and every
// top-level directory holding a package of the module.
func TestReadmeLayoutMatchesTree(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, _ := strings.Cut(string(b), "\n## Layers\n")
	_, tree, _ := strings.Cut(sec, "```\n")
	tree, _, _ = strings.Cut(tree, "```")
	named := map[string]bool{}
	for _, l := range strings.Split(tree, "\n") {
		for _, w := range strings.Fields(l) {
			if !strings.Contains(w, "/") && !strings.HasSuffix(w, ".go") {
				break
			}
			if !strings.Contains(w, "*") {
				if _, err := os.Stat(strings.TrimSuffix(w, "/")); err != nil {
					t.Errorf("the README's layout names %s: %v", w, err)
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
				t.Errorf("the README's layout does not name %s/ (package %s)", top, rel)
			}
		}
	}
}
