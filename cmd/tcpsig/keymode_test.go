package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestVerifyKeysModeWarning: verify reads a keys file that group or
// others may read or write, with one warning line on stderr naming the
// file and its mode; the report is the same as for a 0600 file, and a
// 0600 or 0400 file gets no warning.
func TestVerifyKeysModeWarning(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("mode bits do not say who may read a file on Windows")
	}
	capture := writeFile(t, "c.pcap", demoPcap)
	keysAt := func(mode os.FileMode) string {
		p := filepath.Join(t.TempDir(), "keys.json")
		if err := os.WriteFile(p, demoKeys(t), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	wantCode, wantOut, wantErr := cli(t, "verify", "-keys", keysAt(0o600), capture)
	if wantCode == 2 || strings.Contains(wantErr, "warning") {
		t.Fatalf("0600 keys file: exit %d, stderr %q", wantCode, wantErr)
	}
	for _, tc := range []struct {
		mode os.FileMode
		warn string // "" for none
	}{
		{0o600, ""},
		{0o400, ""},
		{0o644, "permissions 0644 are too open: the keys file must not be readable by group or others (chmod 600)"},
		{0o640, "permissions 0640 are too open: the keys file must not be readable by group or others (chmod 600)"},
		{0o604, "permissions 0604 are too open: the keys file must not be readable by group or others (chmod 600)"},
		{0o620, "permissions 0620 are too open: the keys file must not be writable by group or others (chmod 600)"},
	} {
		t.Run(fmt.Sprintf("%04o", tc.mode), func(t *testing.T) {
			p := keysAt(tc.mode)
			code, out, errOut := cli(t, "verify", "-keys", p, capture)
			if code != wantCode || out != wantOut {
				t.Errorf("exit %d, stdout differs from the 0600 run's (%d): verify must still run", code, wantCode)
			}
			want := wantErr
			if tc.warn != "" {
				want = "tcpsig verify: warning: " + p + ": " + tc.warn + "\n" + want
			}
			if errOut != want {
				t.Errorf("stderr %q, want %q", errOut, want)
			}
		})
	}
}

// TestKeysOwnerWarning: verify and keys check read a 0600 keys file owned
// by another user (uid 65534) with one warning naming the owner and the
// fix, where the shim refuses it: they only read keys, and a user
// verifying a capture with a keys file of their own is not troubled.
func TestKeysOwnerWarning(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a Windows file has no uid to check")
	}
	if os.Geteuid() != 0 {
		t.Skip("chown to uid 65534 needs root")
	}
	capture := writeFile(t, "c.pcap", demoPcap)
	p := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(p, demoKeys(t), 0o600); err != nil {
		t.Fatal(err)
	}
	wantCode, wantOut, wantErr := cli(t, "verify", "-keys", p, capture)
	if err := os.Chown(p, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	warn := p + ": owned by uid 65534, neither root nor this process's user (uid 0): the keys file must be owned by one of them (chown root " + p + ")"
	code, out, errOut := cli(t, "verify", "-keys", p, capture)
	if code != wantCode || out != wantOut {
		t.Errorf("verify: exit %d, stdout differs from the root-owned file's run (%d): verify must still run", code, wantCode)
	}
	if want := "tcpsig verify: warning: " + warn + "\n" + wantErr; errOut != want {
		t.Errorf("verify: stderr %q, want %q", errOut, want)
	}
	code, out, _ = cli(t, "keys", "check", p)
	if code != 1 || !strings.Contains(out, "warning: "+warn+"; tcpsig shim refuses it\n") {
		t.Errorf("keys check: exit %d, stdout %q, want the owner warning", code, out)
	}
}
