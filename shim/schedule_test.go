package shim

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestLoadKeysSchedule: a keys file whose lifetimes leave a peer without
// a send key from some moment on (its only key's send lifetime ends) is
// refused with ErrSchedule; the same peer with a successor key is not.
func TestLoadKeysSchedule(t *testing.T) {
	end := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "keys.json")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gap := write(fmt.Sprintf(`{"md5": [{"peer": "192.0.2.1/32", "key": "text:old", "send_lifetime": {"end": %q}, "accept_lifetime": {"end": %q}}]}`, end, end))
	if _, err := loadKeys(gap); !errors.Is(err, ErrSchedule) {
		t.Fatalf("a schedule that ends: %v, want ErrSchedule", err)
	}
	ok := write(fmt.Sprintf(`{"md5": [{"peer": "192.0.2.1/32", "key": "text:old", "send_lifetime": {"end": %q}, "accept_lifetime": {"end": %q}},
	  {"peer": "192.0.2.1/32", "key": "text:new", "send_lifetime": {"start": %q}, "accept_lifetime": {"start": %q}}]}`, end, end, end, end))
	k, err := loadKeys(ok)
	if err != nil {
		t.Fatalf("a schedule with a successor: %v", err)
	}
	k.wipe()
}
