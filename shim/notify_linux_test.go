//go:build linux

package shim

import (
	"errors"
	"net"
	"path/filepath"
	"testing"
)

// TestNotify: Notify sends one datagram to the unixgram socket
// NOTIFY_SOCKET names, a path or an abstract ("@") name, as systemd
// reads it; it does nothing without NOTIFY_SOCKET and refuses a name that
// is neither.
func TestNotify(t *testing.T) {
	for _, name := range []string{filepath.Join(t.TempDir(), "notify"), "@tcpsig-notify-test-" + t.Name()} {
		c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		t.Setenv("NOTIFY_SOCKET", name)
		sent, err := Notify("READY=1\nSTATUS=test")
		if err != nil || !sent {
			t.Fatalf("Notify to %s: %v, %v", name, sent, err)
		}
		buf := make([]byte, 256)
		n, _, err := c.ReadFromUnix(buf)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(buf[:n]); got != "READY=1\nSTATUS=test" {
			t.Errorf("%s got %q", name, got)
		}
	}
	t.Setenv("NOTIFY_SOCKET", "")
	if sent, err := Notify("READY=1"); sent || err != nil {
		t.Errorf("without NOTIFY_SOCKET: %v, %v; want false, nil", sent, err)
	}
	t.Setenv("NOTIFY_SOCKET", "relative/path")
	if _, err := Notify("READY=1"); !errors.Is(err, ErrNotify) {
		t.Errorf("NOTIFY_SOCKET relative/path: %v, want ErrNotify", err)
	}
}
