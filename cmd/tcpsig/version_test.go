package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// Issue 14 item 7: the README's install command works from a clone (the
// module is not on the public proxy, so "go install …@latest" cannot),
// and "tcpsig version" names the commit it was built from. Before, there
// was no version command.
func TestInstallFromClone(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	const install = "go install ./cmd/tcpsig"
	if !strings.Contains(string(readme), install) {
		t.Fatalf("README does not give %q", install)
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: cannot clone the repository")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("%s is not a git checkout: %v", root, err)
	}
	clone := filepath.Join(t.TempDir(), "tcpsig")
	if out, err := exec.Command("git", "clone", "-q", root, clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	bin := t.TempDir()
	// -buildvcs=true: stamp the commit even where GOFLAGS turns it off.
	cmd := exec.Command(goCmd, "install", "-buildvcs=true", "./cmd/tcpsig")
	cmd.Dir, cmd.Env = clone, append(os.Environ(), "GOBIN="+bin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s in a clone: %v\n%s", install, err, out)
	}
	exe := filepath.Join(bin, "tcpsig")
	out, err := exec.Command(exe, "version").Output()
	if err != nil {
		t.Fatalf("tcpsig version: %v", err)
	}
	v := strings.TrimSpace(string(out))
	// The version is a pseudo-version of the commit (or "(devel)").
	if !strings.HasPrefix(v, "tcpsig ") || !strings.Contains(v, " commit "+strings.TrimSpace(string(head))+" ") || !strings.HasSuffix(v, runtime.Version()) ||
		strings.Contains(v, "uncommitted") {
		t.Errorf("tcpsig version = %q, want the commit %s and %s", v, head, runtime.Version())
	}
	// The installed binary verifies its built-in sample.
	if out, err := exec.Command(exe, "verify").CombinedOutput(); err != nil || !strings.Contains(string(out), "every checked segment is good") {
		t.Errorf("installed tcpsig verify: %v\n%s", err, out)
	}
}

// "tcpsig version" in-process: one line, the release, the module's
// version and Go's; the README's install section shows the release.
func TestVersion(t *testing.T) {
	code, out, errOut := cli(t, "version")
	if code != 0 || errOut != "" || strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, "tcpsig "+release+" ") || !strings.Contains(out, runtime.Version()) {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	install := readmeSection(t, "## Install")
	if len(install) < 2 || !strings.HasPrefix(install[1], "tcpsig "+release+" ") {
		t.Errorf("the README's install section shows tcpsig version as %q, want the release %s first", install, release)
	}
}

// Issue 29: a version a user can name. The release is a semantic
// version, and CHANGELOG.md's newest entry is about it.
func TestReleaseIsChangelogs(t *testing.T) {
	if !regexp.MustCompile(`^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$`).MatchString(release) {
		t.Fatalf("release %q is not a semantic version vMAJOR.MINOR.PATCH", release)
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	newest := regexp.MustCompile(`(?m)^## (\S+)`).FindSubmatch(b)
	if newest == nil || string(newest[1]) != release {
		t.Errorf("CHANGELOG.md's newest entry is %q, tcpsig version prints %s", newest, release)
	}
}
