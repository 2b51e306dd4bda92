//go:build linux

package shim

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tcpsig/tcpsig/keyfile"
)

// TestKeysOwner: a 0600 keys file owned by uid 65534 (neither root nor
// the shim's user) is refused at start and at reload, as the state file
// is, with one message naming the file, the owner and the fix; the keys
// in force stay.
func TestKeysOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown to uid 65534 needs root")
	}
	path := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(path, []byte(`{"md5": [{"key": "text:k", "peer": "192.0.2.1/32"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Keys: path})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	_, newErr := New(Config{Keys: path})
	want := path + ": owned by uid 65534, neither root nor this process's user (uid 0): the keys file must be owned by one of them (chown root " + path + ")"
	for name, err := range map[string]error{"New": newErr, "reload": s.reload()} {
		if !errors.Is(err, keyfile.ErrOwner) || !strings.HasSuffix(err.Error(), want) || strings.Count(err.Error(), path) != 2 {
			t.Errorf("%s with a keys file owned by uid 65534: %v, want keyfile.ErrOwner %q", name, err, want)
		}
	}
	if len(s.keys.MD5) != 1 {
		t.Errorf("a refused reload changed the keys: %d MD5 keys", len(s.keys.MD5))
	}
}
