//go:build linux

package shim

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// freshShim is a shim (not running) with the keys statusShim has, no
// session and Config.State at state, logging to log.
func freshShim(t *testing.T, dir, state string, log io.Writer) *Shim {
	t.Helper()
	keys := filepath.Join(dir, "keys.json")
	body := `{"ao": [{"alg": "hmac(sha1)", "key": "text:one", "sndid": 1, "rcvid": 2, "peer": "192.0.2.1/32"}]}`
	if err := os.WriteFile(keys, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Keys: keys, Queue: 1, State: state, Log: slog.New(slog.NewTextHandler(log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// savedShim is statusShim (one TCP-AO session) saving its state to state.
func savedShim(t *testing.T, dir, state string, log io.Writer) *Shim {
	t.Helper()
	s := statusShim(t, dir, log)
	s.cfg.State = state
	return s
}

// setUmask sets the process's umask for the rest of the test.
func setUmask(t *testing.T, mask int) {
	t.Helper()
	old := syscall.Umask(mask)
	t.Cleanup(func() { syscall.Umask(old) })
}

// checkState fails the test unless path is a regular file of mode 0600
// holding the one session statusShim tracks.
func checkState(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != stateMode {
		t.Errorf("state file %s: mode %v, want a regular file of mode %#o", path, fi.Mode(), stateMode)
	}
	st, err := readState(path)
	if err != nil || len(st.Sessions) != 1 || st.Sessions[0].LocalISN != 1000 {
		t.Errorf("state file %s: %+v, %v; want the one session", path, st, err)
	}
}

// dirNames lists dir's entries.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// TestStateSymlinkTmp: symlinks planted where a temporary state file could
// be (state.tmp and other plausible names) are neither followed nor
// replaced: the file they point to is untouched, and the state is written.
func TestStateSymlinkTmp(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	planted := []string{state + ".tmp", state + ".new", state + "~", filepath.Join(dir, ".state.json.tmp"), state + ".0.tmp"}
	for _, p := range planted {
		if err := os.Symlink(victim, p); err != nil {
			t.Fatal(err)
		}
	}
	var log bytes.Buffer
	s := savedShim(t, dir, state, &log)
	s.saveState()
	s.saveState() // over an existing state file too
	if b, err := os.ReadFile(victim); err != nil || string(b) != "precious" {
		t.Errorf("the symlinks' target changed: %q, %v", b, err)
	}
	if fi, err := os.Stat(victim); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("the symlinks' target's mode changed: %v, %v", fi, err)
	}
	for _, p := range planted {
		if dst, err := os.Readlink(p); err != nil || dst != victim {
			t.Errorf("%s: no longer the planted symlink (%q, %v)", p, dst, err)
		}
	}
	checkState(t, state)
	want := []string{"keys.json", "state.json"}
	for _, p := range planted {
		want = append(want, filepath.Base(p))
	}
	slices.Sort(want)
	if got := dirNames(t, dir); !slices.Equal(got, want) {
		t.Errorf("directory holds %q, want %q (no temporary file left)", got, want)
	}
	if strings.Contains(log.String(), "level=WARN") {
		t.Errorf("warnings:\n%s", &log)
	}

	// The temporary file's open refuses any symlink, dangling or not, and
	// creates nothing at its target.
	dangling := filepath.Join(t.TempDir(), "nothing")
	for _, target := range []string{victim, dangling} {
		link := filepath.Join(dir, "link")
		os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		if f, err := openExcl(link); !errors.Is(err, fs.ErrExist) {
			f.Close()
			t.Errorf("openExcl of a symlink to %s: %v, want ErrExist", target, err)
		}
	}
	if _, err := os.Lstat(dangling); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("openExcl created the dangling symlink's target: %v", err)
	}
}

// TestStateMode: the state file is 0600 whatever the umask, and whatever
// the mode of a file already at state.tmp or at the state path.
func TestStateMode(t *testing.T) {
	setUmask(t, 0)
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	if err := os.WriteFile(state+".tmp", []byte("old tmp"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(state+".tmp", 0o644); err != nil { // not narrowed by a umask
		t.Fatal(err)
	}
	s := savedShim(t, dir, state, io.Discard)
	s.saveState()
	checkState(t, state)

	if err := os.Chmod(state, 0o666); err != nil {
		t.Fatal(err)
	}
	s.saveState()
	checkState(t, state)
}

// errWrite is the failure TestStateWriteFails's writer returns.
var errWrite = errors.New("write failed")

// TestStateWriteFails: a write that fails halfway, or a rename that
// fails, leaves the state file as it was and no temporary file behind.
func TestStateWriteFails(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	if err := os.WriteFile(state, []byte("old state"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := writeFileAtomic(state, stateMode, func(w io.Writer) error {
		if _, err := w.Write([]byte(`{"sessions": [`)); err != nil {
			return err
		}
		return errWrite
	})
	if !errors.Is(err, errWrite) {
		t.Errorf("writeFileAtomic: %v, want errWrite", err)
	}
	if b, err := os.ReadFile(state); err != nil || string(b) != "old state" {
		t.Errorf("state file after a failed write: %q, %v", b, err)
	}
	if got := dirNames(t, dir); !slices.Equal(got, []string{"state.json"}) {
		t.Errorf("directory holds %q after a failed write, want only state.json", got)
	}

	// The rename fails: a directory is at the path.
	sub := filepath.Join(dir, "sub")
	if err := os.MkdirAll(filepath.Join(sub, "inside"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := writeFileAtomic(sub, stateMode, func(w io.Writer) error { _, err := w.Write([]byte("{}")); return err }); err == nil {
		t.Error("writeFileAtomic over a directory: no error")
	}
	if got := dirNames(t, dir); !slices.Equal(got, []string{"state.json", "sub"}) {
		t.Errorf("directory holds %q after a failed rename, want state.json and sub", got)
	}
}

// TestStateDiskFull: a state write that meets a full file system (a
// one-page tmpfs holding the last state) leaves that state file whole and
// no temporary file behind, and says so in the log.
func TestStateDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: mounts a tmpfs in a mount namespace of its own")
	}
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	var log bytes.Buffer
	s := savedShim(t, t.TempDir(), state, &log)
	done := make(chan error)
	go func() {
		// The mount namespace is this thread's only; the thread ends with
		// the goroutine (never unlocked).
		runtime.LockOSThread()
		done <- func() error {
			if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
				return err
			}
			if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
				return err
			}
			if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=4k,mode=0700"); err != nil {
				return err
			}
			s.saveState()
			before, err := os.ReadFile(state)
			if err != nil {
				return err
			}
			log.Reset()
			s.saveState()
			if !strings.Contains(log.String(), "writing the state file") || !strings.Contains(log.String(), "no space left") {
				t.Errorf("no warning of the failed write:\n%s", &log)
			}
			after, err := os.ReadFile(state)
			if err != nil || !bytes.Equal(before, after) {
				t.Errorf("state file after a failed write: %q, %v; want %q", after, err, before)
			}
			if got := dirNames(t, dir); !slices.Equal(got, []string{"state.json"}) {
				t.Errorf("directory holds %q after a failed write, want only state.json", got)
			}
			return nil
		}()
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestStateReadRefuses: a state file reached through a symlink, not a
// regular file, owned by another user or writable by others resumes
// nothing and is warned about; the same state in a sound file resumes.
func TestStateReadRefuses(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	savedShim(t, t.TempDir(), good, io.Discard).saveState()
	body, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	copyOf := func(name string, mode fs.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, body, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	// A FIFO that would hand a reader the good state: a writer waits for
	// the reader's open (so a reader that does not refuse it resumes rather
	// than hangs), and the cleanup's own open releases a writer still
	// waiting.
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			f.Write(body)
			f.Close()
		}
	}()
	t.Cleanup(func() {
		if f, err := os.OpenFile(fifo, os.O_RDONLY|unix.O_NONBLOCK, 0); err == nil {
			<-wrote
			f.Close()
		}
	})
	cases := []struct {
		name, path, why string
		root            bool // the case needs root (chown)
	}{
		{"symlink", link, "is a symlink", false},
		{"fifo", fifo, "not a regular file", false},
		{"directory", t.TempDir(), "not a regular file", false},
		{"world-writable", copyOf("w.json", 0o602), "writable by group or others", false},
		{"group-writable", copyOf("g.json", 0o620), "writable by group or others", false},
		{"other owner", copyOf("nobody.json", 0o600), "owned by uid 65534", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.root {
				if os.Geteuid() != 0 {
					t.Skip("needs root: chown to nobody")
				}
				if err := os.Chown(c.path, 65534, 65534); err != nil {
					t.Fatal(err)
				}
			}
			var log bytes.Buffer
			s := freshShim(t, t.TempDir(), c.path, &log)
			s.seedFromState()
			if s.seeded != 0 {
				t.Errorf("resumed %d sessions from it", s.seeded)
			}
			if !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), c.why) {
				t.Errorf("log does not warn %q:\n%s", c.why, &log)
			}
		})
	}
	var log bytes.Buffer
	s := freshShim(t, t.TempDir(), good, &log)
	s.seedFromState()
	if s.seeded != 1 || strings.Contains(log.String(), "level=WARN") {
		t.Errorf("the sound state file: resumed %d, want 1; log:\n%s", s.seeded, &log)
	}
	// No state file at all: nothing resumed, nothing warned.
	log.Reset()
	s = freshShim(t, t.TempDir(), filepath.Join(dir, "none.json"), &log)
	s.seedFromState()
	if s.seeded != 0 || log.Len() != 0 {
		t.Errorf("no state file: resumed %d; log:\n%s", s.seeded, &log)
	}
}
