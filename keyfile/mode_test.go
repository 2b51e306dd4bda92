package keyfile

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestCheckMode(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("mode bits do not say who may read a file on Windows")
	}
	for _, tc := range []struct {
		perm os.FileMode
		want string // "" for nil; else the message
	}{
		{0o600, ""},
		{0o400, ""},
		{0o700, ""},
		{0o200, ""},
		{0o644, "permissions 0644 are too open: the keys file must not be readable by group or others (chmod 600)"},
		{0o640, "permissions 0640 are too open: the keys file must not be readable by group or others (chmod 600)"},
		{0o604, "permissions 0604 are too open"},
		{0o666, "permissions 0666 are too open"},
		{0o620, "permissions 0620 are too open: the keys file must not be writable by group or others (chmod 600)"},
		{0o602, "permissions 0602 are too open: the keys file must not be writable"},
	} {
		path := filepath.Join(t.TempDir(), "keys.json")
		if err := os.WriteFile(path, []byte(`{}`), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, tc.perm); err != nil {
			t.Fatal(err)
		}
		err := CheckMode(path)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%04o: %v, want nil", tc.perm, err)
			}
			continue
		}
		if !errors.Is(err, ErrMode) {
			t.Errorf("%04o: %v, want ErrMode", tc.perm, err)
			continue
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%04o: %T, want *Error", tc.perm, err)
		}
		if msg := err.Error(); !strings.HasPrefix(msg, path+": ") || !strings.Contains(msg, tc.want) {
			t.Errorf("%04o: %q, want %q after the path", tc.perm, msg, tc.want)
		}
	}
}

func TestCheckModeMissing(t *testing.T) {
	err := CheckMode(filepath.Join(t.TempDir(), "nope.json"))
	if !errors.Is(err, os.ErrNotExist) || errors.Is(err, ErrMode) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
}

func TestCheckModeExample(t *testing.T) {
	err := checkPerm("keys.json", 0o644)
	const want = "keys.json: permissions 0644 are too open: the keys file must not be readable by group or others (chmod 600)"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}
