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

// A 0600 keys file owned by a user other than root and the process's
// own (uid 65534, nobody) is refused by CheckMode and LoadPrivate with
// ErrOwner, naming the owner and the fix; once chowned back it loads.
func TestCheckModeOwner(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a Windows file has no uid to check")
	}
	if os.Geteuid() != 0 {
		t.Skip("chown to uid 65534 needs root")
	}
	path := filepath.Join(t.TempDir(), "keys.json")
	const body = `{"md5": [{"key": "text:k", "peer": "192.0.2.1/32"}]}`
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	_, loadErr := LoadPrivate(path)
	for name, err := range map[string]error{"CheckMode": CheckMode(path), "LoadPrivate": loadErr} {
		var e *Error
		if !errors.Is(err, ErrOwner) || errors.Is(err, ErrMode) || !errors.As(err, &e) {
			t.Errorf("%s of a file owned by uid 65534: %v, want an *Error wrapping ErrOwner", name, err)
			continue
		}
		const want = ": owned by uid 65534, neither root nor this process's user (uid 0): the keys file must be owned by one of them (chown root "
		if msg := err.Error(); msg != path+want+path+")" {
			t.Errorf("%s: %q, want %q", name, msg, path+want+path+")")
		}
	}
	if err := os.Chown(path, 0, 0); err != nil {
		t.Fatal(err)
	}
	f, err := LoadPrivate(path)
	if err != nil || len(f.MD5) != 1 {
		t.Fatalf("LoadPrivate of root's 0600 file: %v", err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadPrivate(path); !errors.Is(err, ErrMode) {
		t.Errorf("LoadPrivate of a 0640 file: %v, want ErrMode", err)
	}
}

// The owner rule without root: root and the process's user own a keys
// file that may be trusted, anyone else does not, and the message says
// how to fix it for a process that is not root.
func TestCheckOwner(t *testing.T) {
	for _, tc := range []struct {
		uid  uint32
		euid int
		want string // "" for nil
	}{
		{0, 0, ""},
		{0, 1000, ""},
		{1000, 1000, ""},
		{65534, 0, "keys.json: owned by uid 65534, neither root nor this process's user (uid 0): the keys file must be owned by one of them (chown root keys.json)"},
		{65534, 1000, "keys.json: owned by uid 65534, neither root nor this process's user (uid 1000): the keys file must be owned by one of them (chown 1000 keys.json, or chown root)"},
		{1000, 0, "keys.json: owned by uid 1000, neither root nor"},
	} {
		err := checkOwner("keys.json", tc.uid, tc.euid)
		if tc.want == "" {
			if err != nil {
				t.Errorf("uid %d, euid %d: %v", tc.uid, tc.euid, err)
			}
			continue
		}
		if !errors.Is(err, ErrOwner) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("uid %d, euid %d: %v, want ErrOwner %q", tc.uid, tc.euid, err, tc.want)
		}
	}
}

// An Error a careless caller built, zero or nil, says so and unwraps to
// ErrNoCause (keys.ErrNoCause): never a panic, never an empty message.
func TestErrorMisuse(t *testing.T) {
	for _, c := range []struct {
		e    *Error
		want string
	}{
		{&Error{}, "keys: entry error without a cause"},
		{&Error{Entry: "ao[1]", Field: "sndid"}, "ao[1].sndid: keys: entry error without a cause"},
		{&Error{Err: ErrValue}, "keyfile: bad value"},
		{nil, "keyfile: nil *Error"},
	} {
		want := ErrNoCause
		if c.e != nil && c.e.Err != nil {
			want = c.e.Err
		}
		if msg := c.e.Error(); msg != c.want || !errors.Is(c.e, want) {
			t.Errorf("%#v: %q (Is %v), want %q", c.e, msg, errors.Is(c.e, want), c.want)
		}
	}
}
