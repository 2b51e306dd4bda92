//go:build linux

package shim

import (
	"errors"
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// ErrNotify is Notify's error when the notification could not be sent.
var ErrNotify = errors.New("shim: systemd notification failed")

// Notify sends state (newline-separated assignments: "READY=1",
// "STATUS=…") to the service manager as sd_notify(3) does: one datagram to
// the unix socket $NOTIFY_SOCKET names (a leading '@' for the abstract
// namespace). It reports false, and does nothing, when NOTIFY_SOCKET is
// unset: not started by systemd as a Type=notify service.
func Notify(state string) (bool, error) {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return false, nil
	}
	if path[0] != '/' && path[0] != '@' {
		return false, fmt.Errorf("%w: NOTIFY_SOCKET %q is neither a path nor an abstract socket", ErrNotify, path)
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrNotify, err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(state)); err != nil {
		return false, fmt.Errorf("%w: %w", ErrNotify, err)
	}
	return true, nil
}

// notify passes state to Config.Notify, if set.
func (s *Shim) notify(state string) {
	if s.cfg.Notify != nil {
		s.cfg.Notify(state)
	}
}

// monotonicUsec is CLOCK_MONOTONIC in microseconds, for RELOADING=1's
// MONOTONIC_USEC (systemd 253 and later check it is recent).
func monotonicUsec() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return ts.Nano() / 1000
}
