//go:build linux

package main

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestShimReloadRefusesLifetimes: a keys file that gained a lifetime is a
// reload the shim refuses (it does not honour lifetimes yet), naming the
// entry; the keys it runs with stay.
func TestShimReloadRefusesLifetimes(t *testing.T) {
	needQueue(t)
	_, nsB := newPair(t)
	dir := shortDir(t)
	keyPath := writeKeys(t, dir, "keys.json", fmtKeysMD5(addrA4, "tcpsig-lifetime-secret"))
	sh, sock := startShim(t, nsB, dir, "-keys", keyPath, "-queue", "47")
	// One key, with a lifetime: without the refusal the shim would load
	// it, and sign and accept it after its end.
	writeKeys(t, dir, "keys.json", fmt.Sprintf(`{"md5": [{"name": "old", "peer": "%v/32", "key": "text:tcpsig-lifetime-next",
	  "lifetime": {"end": "2027-01-01T00:00:00Z"}}, {"peer": "198.51.100.7/32", "key": "text:other"}]}`, addrA4))
	if err := sh.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	const want = `md5[0] (\"old\"): has a lifetime`
	if !waitFor(5*time.Second, func() bool { return strings.Contains(sh.Log(), "reload refused") && strings.Contains(sh.Log(), want) }) {
		t.Fatalf("no refused reload naming the entry logged:\n%s", sh.Log())
	}
	st, err := shimStatusOf(sock)
	if err != nil {
		t.Fatal(err)
	}
	if st.Keys["md5"] != 1 || strings.Contains(sh.Log(), "keys reloaded") {
		t.Errorf("after the refused reload: keys %v\n%s", st.Keys, sh.Log())
	}
}
