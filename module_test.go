package tcpsig_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestModuleFromOutside (issue 21): "Using tcpsig from your module" in
// docs/library.md and the opening of docs/netstack.md work as written from
// a module outside the clone: their go.mod files, their programs and their
// commands, run in a throwaway directory that holds the clone (a link to
// this tree) beside the new module, print what the guides show; the
// README's go.mod is the library guide's.
func TestModuleFromOutside(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds two programs with the go command")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("needs the go command: %v", err)
	}
	var blocks []string
	for _, b := range docBlocks(t, "docs/library.md", "## Using tcpsig from your module") {
		blocks = append(blocks, b.body)
	}
	for _, b := range docBlocks(t, "docs/netstack.md", "") {
		blocks = append(blocks, b.body)
	}
	if len(blocks) != 8 {
		t.Fatalf("docs/library.md's section and docs/netstack.md's opening have %d code blocks, want 8 (go.mod, main.go, commands, output; netstack's go.mod, main.go, commands, output)", len(blocks))
	}
	if readme := docBlocks(t, "README.md", "### Using tcpsig from your module"); len(readme) != 1 || readme[0].body != blocks[0] {
		t.Errorf("the README's go.mod (### Using tcpsig from your module) is not docs/library.md's:\n%v\n%s", readme, blocks[0])
	}
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(root, filepath.Join(dir, "tcpsig")); err != nil {
		t.Fatal(err)
	}
	try := func(name, goMod, mainGo, commands, want string) {
		t.Helper()
		mod := filepath.Join(dir, name)
		if err := os.Mkdir(mod, 0o755); err != nil {
			t.Fatal(err)
		}
		for file, body := range map[string]string{"go.mod": goMod, "main.go": mainGo} {
			if err := os.WriteFile(filepath.Join(mod, file), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		var got []byte
		for _, line := range strings.Split(commands, "\n") {
			line, _, _ = strings.Cut(line, "#")
			for _, c := range strings.Split(line, "&&") {
				args := strings.Fields(c)
				if len(args) == 0 {
					continue
				}
				if args[0] != "go" {
					t.Fatalf("%s: the guide's command %q is not a go command", name, c)
				}
				cmd := exec.Command(goBin, args[1:]...)
				cmd.Dir = mod
				cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
				out, err := cmd.CombinedOutput()
				if err != nil && offline(out) {
					t.Skipf("%s: %s needs the module proxy, which is not reachable here:\n%s", name, c, out)
				}
				if err != nil {
					t.Fatalf("%s: %s: %v\n%s", name, c, err, out)
				}
				got = out
			}
		}
		if string(got) != want {
			t.Errorf("%s: the last command printed\n%s\nthe guide shows\n%s", name, got, want)
		}
	}
	try("hello", blocks[0], blocks[1], blocks[2], blocks[3])
	// docs/library.md's go doc advice, from that module.
	cmd := exec.Command(goBin, "doc", "github.com/tcpsig/tcpsig/keyfile")
	cmd.Dir = filepath.Join(dir, "hello")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "package keyfile // import \"github.com/tcpsig/tcpsig/keyfile\"") {
		t.Errorf("go doc github.com/tcpsig/tcpsig/keyfile from the module: %v\n%s", err, out)
	}
	try("hellonetstack", blocks[4], blocks[5], blocks[6], blocks[7])
}

// offline reports whether go command output says the network was not
// reachable (go mod tidy fetches checksums through the module proxy).
func offline(out []byte) bool {
	for _, s := range []string{"dial tcp", "no such host", "i/o timeout", "connection refused", "network is unreachable"} {
		if strings.Contains(string(out), s) {
			return true
		}
	}
	return false
}
