//go:build !linux

package capture

import (
	"errors"
	"fmt"
	"time"
)

// Options configure [Start].
type Options struct {
	// Interface is the name of the interface to capture on; "" means "lo".
	Interface string
	// Filter, if not nil, decides from the IP packet whether to keep it.
	Filter func(ip []byte) bool
}

// ErrDropped is returned (wrapped) by [Capture.Stop] when the kernel
// dropped packets.
var ErrDropped = errors.New("capture: kernel dropped packets")

// Capture is a running capture; live capture is implemented on Linux only.
type Capture struct{}

// Start returns an error wrapping [errors.ErrUnsupported] outside Linux.
func Start(opts Options) (*Capture, error) {
	return nil, fmt.Errorf("capture: live capture needs Linux: %w", errors.ErrUnsupported)
}

// LinkType returns the link type of the captured packets.
func (c *Capture) LinkType() LinkType { return 0 }

// Packets returns the packets kept so far.
func (c *Capture) Packets() []Packet { return nil }

// Len returns the number of packets kept so far.
func (c *Capture) Len() int { return 0 }

// WaitIdle returns at once outside Linux.
func (c *Capture) WaitIdle(idle, limit time.Duration) bool { return true }

// Stop ends the capture.
func (c *Capture) Stop() error { return nil }

// WriteFile writes the packets kept so far to a pcap file at path.
func (c *Capture) WriteFile(path string) error { return WriteFile(path, 0, nil) }
